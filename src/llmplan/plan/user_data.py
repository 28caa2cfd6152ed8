"""Everything the user's own data files did not give, in one list: the app's lasting notice and
``llmplan-cli catalog problems`` both read it, so the two can never disagree.

User data never stops the app (issue 17): each user catalog kind (models, GPUs, nodes and
networks, engines, training frameworks, system presets) and the saved calibration is read file by file, a file that
cannot be used is skipped with its reason, and the built-in catalog keeps working. Entries that
replace a built-in one are not problems, but are said (``notes``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UserDataReport:
    problems: tuple[str, ...]  # skipped: file (or entry) and why
    notes: tuple[str, ...]  # user entries that replace a built-in one


def user_data_report() -> UserDataReport:
    """Read every catalog (cached, so cheap after the first call) and gather what was skipped."""
    from llmplan.catalog.engines import engine_notes, engine_problems
    from llmplan.catalog.frameworks import framework_problems
    from llmplan.catalog.hardware import load_hardware_catalog
    from llmplan.catalog.models import load_model_catalog
    from llmplan.catalog.system_presets import system_problems
    from llmplan.plan.calibrated import load_calibration_quietly

    problems: list[str] = []
    notes: list[str] = []
    models = load_model_catalog()
    problems += [f"models/{p}" for p in models.problems]
    notes += models.notes
    hardware = load_hardware_catalog()
    problems += hardware.problems
    notes += hardware.notes
    problems += engine_problems()
    problems += framework_problems()
    notes += engine_notes()
    problems += system_problems()
    _cal, note = load_calibration_quietly()
    if note:
        problems.append(note)
    return UserDataReport(tuple(problems), tuple(notes))
