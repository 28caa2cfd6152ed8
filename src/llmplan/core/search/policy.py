"""One rule for the training knobs a plan leaves automatic, shared by the CLI and the app.

A knob is *automatic* when the plan does not state it (it is not in the plan file, not given
with ``--set``, not edited in the app): ``automatic_knobs``. The rule:

- when the layout is automatic too (the CLI without ``parallelism.*``, the app's Auto…), the
  auto-planner chooses the layout and the automatic knobs together: the fastest that the engine
  says fits, the stated knobs held (``search(keep=...)``);
- when the layout is given, the automatic knobs keep their defaults if the plan fits as it is;
  if it does not, they move one step at a time, cheapest in speed first, to the first setting the
  engine says fits (``apply_policy``): full recompute (Korthikanti et al. 2022 §5: ~33% more
  compute, activations down to one input per layer), micro-batch 1, ZeRO-3 (Rajbhandari et al.
  2020, needs data parallelism), CPU offload of the optimizer (ZeRO-Offload, Ren et al. 2021).
  If nothing fits, the verdict stays "does not fit" and shows the step of the ladder that needs the
  least memory (the plan's own values when no step helps), so "N GiB short" says how close the
  automatic knobs get, not what the plan needs before they move.

Both the CLI and the app say which values were chosen ("auto: full recompute").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from llmplan.core.result import Estimate
from llmplan.core.workload import Scenario
from llmplan.errors import LlmplanError

AUTOMATIC = ("micro_batch", "zero_stage", "recompute", "offload")  # the planner's KEEPABLE knobs
LADDER = (("recompute", "full"), ("micro_batch", 1), ("zero_stage", 3), ("offload", "cpu"))
_WORDS = {"recompute": "{} recompute", "micro_batch": "micro-batch {}", "zero_stage": "ZeRO-{}",
          "offload": "{} offload"}


@dataclass(frozen=True, slots=True)
class AutoChoice:
    """The scenario to estimate and the knobs the policy set for the user (knob, value).

    ``estimate`` is the engine's estimate of ``scenario`` when the policy already ran it (None when it
    did not: inference, nothing automatic, an invalid plan), so the caller need not run the engine twice
    on the same scenario (the app's knob → verdict path)."""

    scenario: Scenario
    chosen: tuple[tuple[str, object], ...] = ()
    estimate: Estimate | None = None

    def label(self) -> str:
        """E.g. "auto: full recompute, micro-batch 1"; "" when nothing was chosen."""
        if not self.chosen:
            return ""
        words = [_WORDS[k].format(str(v).upper() if k == "offload" else v) for k, v in self.chosen]
        return "auto: " + ", ".join(words)


def automatic_knobs(stated: Iterable[str]) -> tuple[str, ...]:
    """The knobs of ``AUTOMATIC`` not among ``stated`` (training field names the plan states)."""
    given = set(stated)
    return tuple(k for k in AUTOMATIC if k not in given)


def held_knobs(stated: Iterable[str]) -> tuple[str, ...]:
    """The knobs of ``AUTOMATIC`` the plan states: the auto-planner holds them (``search(keep=...)``)."""
    given = set(stated)
    return tuple(k for k in AUTOMATIC if k in given)


def formats_to_try(stated: Iterable[str]) -> tuple[str, ...]:
    """Every weight format the engine knows when the plan leaves ``inference.weight_format`` open
    (``stated``: the inference fields the plan states), else none: the search tries them, largest
    first, only when nothing fits in the plan's own format."""
    from llmplan.core.quant import known_formats

    if "weight_format" in set(stated):
        return ()
    # TQ1_0/TQ2_0 store ternary weights: only for models trained ternary (BitNet b1.58, Ma et al. 2024)
    return tuple(f for f in known_formats() if not f.startswith("tq"))


def apply_policy(scenario: Scenario, automatic: Iterable[str], engine: Callable[[Scenario], Estimate]
                 ) -> AutoChoice:
    """The plan as it is when it fits (or is not training); else the first step of ``LADDER`` over
    the ``automatic`` knobs at which ``engine`` says it fits (see module doc)."""
    auto = set(automatic)
    if scenario.workload == "inference" or not auto:
        return AutoChoice(scenario)
    try:
        as_is = engine(scenario)
    except LlmplanError:
        return AutoChoice(scenario)  # the plan itself is invalid: the caller reports that
    if as_is.fits:
        return AutoChoice(scenario, estimate=as_is)
    t, p = scenario.training, scenario.parallelism
    updates: dict[str, object] = {}
    closest = AutoChoice(scenario, estimate=as_is)
    for knob, value in LADDER:
        if knob not in auto or getattr(t, knob) == value:
            continue
        if knob == "zero_stage" and (p.dp * p.cp == 1 or p.pp > 1):
            continue  # nothing to shard over, or DeepSpeed refuses ZeRO-3 with pipeline stages
        trial = scenario.model_copy(update={"training": t.model_copy(update={**updates, knob: value})})
        try:
            est = engine(trial)
        except LlmplanError:
            continue  # this step is not valid for the layout: skip it
        updates[knob] = value
        if est.fits:
            return AutoChoice(trial, tuple(updates.items()), est)
        if est.memory.total.value < closest.estimate.memory.total.value:
            closest = AutoChoice(trial, tuple(updates.items()), est)
    return closest
