"""The GUI's one door to the rest of llmplan (Qt-free, so it is testable on its own).

Everything the window shows comes from here: catalogs, plan resolution, ``estimate``,
the auto-planner and detection. The plan's evaluation (the first paint shows its result) is imported
with this module; the auto-planner, detection and what only some tabs ask for are imported when first
used. A failure becomes a plain sentence shown in the window instead of a crash.
No number is computed here by hand; ``evaluate`` runs the same pipeline as the CLI.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from llmplan.catalog.snapshot import one_catalog_read
from llmplan.core.result import Estimate
from llmplan.core.system import Evaluation
from llmplan.core.workload import Scenario, TrainingSettings
from llmplan.errors import CatalogError, LayoutError, LlmplanError
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import automatic_choice, evaluate_scenario
from llmplan.plan.resolve import resolve

DEFAULT_MODEL_ID = "meta-llama/Meta-Llama-3-8B"
DEFAULT_GPU_ID = "nvidia-h100-sxm-80gb"
FINETUNE_TOKENS = 1e8  # the default plan's fine-tune length (see default_plan)


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of evaluating one plan: an estimate, or the sentence saying why not.

    ``kind`` is "ok", "layout" (the layout breaks a rule), "input" (another user
    error) or "internal" (a bug).
    """

    doc: PlanDocument
    scenario: Scenario | None
    estimate: Evaluation | None  # the engine's estimate with its system report
    kind: str
    message: str
    elapsed_s: float
    automatic: str = ""  # what the default policy chose for the user, e.g. "auto: full recompute"
    cards: Any = None  # MixedPlan: the layer split over the plan's hardware.cards (inference), else None

    @property
    def ok(self) -> bool:
        return self.estimate is not None


# ---- catalogs ------------------------------------------------------------------------

def model_catalog() -> Any:
    from llmplan.catalog.models import load_model_catalog

    return load_model_catalog()


def refresh_model_catalog() -> Any:
    from llmplan.catalog.models import load_model_catalog

    return load_model_catalog(refresh=True)


def hardware_catalog() -> Any:
    from llmplan.catalog.hardware import load_hardware_catalog

    return load_hardware_catalog()


def user_data_problems() -> list[str]:
    """Every user catalog file (models, GPUs, engines, system presets, calibration) that was skipped, and
    why: the window's lasting notice. Never raises: the notice must not be what stops the app."""
    from llmplan.plan.user_data import user_data_report

    try:
        return list(user_data_report().problems)
    except Exception as exc:  # a shipped catalog error is shown where it is used
        return [f"the catalogs could not be read ({type(exc).__name__}: {str(exc)[:200]})"]


def gpu_entries() -> list[Any]:
    return list(hardware_catalog().gpus)


def network_entries() -> list[Any]:
    return list(hardware_catalog().networks)


def node_entries() -> list[Any]:
    return list(hardware_catalog().nodes)


def engine_choices() -> list[tuple[str, str, str]]:
    """(id, display name, tooltip) of every serving-engine profile in ``catalogs/engines.toml`` plus the
    user's own, so a new engine in the catalog shows in the menu the day it lands. The tooltip says what run
    the profile describes where the catalog says it (``describes``: how "llama.cpp" and "llama.cpp (2025+
    build)" differ), then its source."""
    from llmplan.catalog.engines import load_engine_profiles

    return [(key, p.name, f"{p.name} ({key})" + (f": {p.describes}" if p.describes else "") + f". Source: {p.source}")
            for key, p in load_engine_profiles().items()]


ANY_KV_DTYPES = ("bf16", "fp16", "fp8", "q8_0", "q4_0")  # listed for an engine whose kv_dtypes is open (a user's)


def engine_kv_dtypes(engine: str) -> tuple[str, ...]:
    """The KV cache types ``engine`` takes (``kv_dtypes`` in engines.toml, from its docs), for the app's list;
    an engine that states none, or an unknown id, lists the common ones."""
    from llmplan.catalog.engines import engine_profile

    try:
        return engine_profile(engine).kv_dtypes or ANY_KV_DTYPES
    except LlmplanError:
        return ANY_KV_DTYPES


def kv_refusal(kv_dtype: str, engine: str) -> str | None:
    """Why ``engine`` has no ``kv_dtype`` cache (``core.kvcache.kv_dtype_refusal``), or None."""
    from llmplan.catalog.engines import engine_profile
    from llmplan.core.kvcache import kv_dtype_refusal

    try:
        prof = engine_profile(engine)
    except LlmplanError:
        return None
    return kv_dtype_refusal(kv_dtype, prof.name, prof.kv_dtypes)


def engine_aliases() -> dict[str, str]:
    """Other spellings a plan may hold for an engine id ('llama.cpp' for 'llama-cpp')."""
    from llmplan.catalog.engines import ALIASES

    return dict(ALIASES)


@lru_cache(maxsize=1)
def system_catalog() -> Any:
    """The "beyond the GPU" presets (storage, failures, PUE, prices, grid) and their defaults,
    for the editors' lists: read once per session (three tabs list them; each read parses
    four TOML files). Estimates still read the presets afresh through ``llmplan.plan.evaluate``."""
    from llmplan.catalog.system_presets import load_system_catalog

    return load_system_catalog()


def weight_formats() -> tuple[str, ...]:
    """Every weight format the engine accepts (``llmplan.core.quant.known_formats``)."""
    from llmplan.core.quant import known_formats

    return known_formats()


def weight_format_words() -> dict[str, str]:
    """Each format of ``weight_formats`` with its one line: what it is and its bits per weight
    (``llmplan.core.quant_words``, read from the quantiser definitions the estimate prices), wrapped for a
    tooltip (``gui.tooltips``)."""
    from llmplan.core.quant_words import format_words
    from llmplan.gui.tooltips import wrap_tip

    return {f: wrap_tip(format_words(f)) for f in weight_formats()}


def framework_choices() -> list[tuple[str, str]]:
    """(id, label) of every training-framework profile, "auto" first; a broken user file leaves the shipped ones."""
    from llmplan.catalog.frameworks import load_framework_profiles

    try:
        profiles = load_framework_profiles()
    except CatalogError:
        profiles = {}
    return [("auto", "Auto")] + [
        (key, p.name) for key, p in sorted(profiles.items())]


# ---- plan -> scenario -> estimate ---------------------------------------------------

def run_estimate(scenario: Scenario) -> Estimate:
    """The GPU engine alone (the charts' sweeps: many variants, no system report needed)."""
    from llmplan.core import engine

    return engine.estimate(scenario)


def _validation_text(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg']}" if where else first["msg"]


def single_gpu_doc(doc: PlanDocument) -> PlanDocument:
    """The plan the window's one-GPU estimate evaluates: a plan listing its machine's cards with llama.cpp's row
    split keeps the row split for the cards (``cards_split``) and the layer split for ``hardware.gpu`` alone, which
    has no rows to split (``core.inference.row_split``)."""
    if doc.hardware.cards and doc.inference.split_mode == "row":
        return doc.model_copy(update={"inference": doc.inference.model_copy(update={"split_mode": "layer"})})
    return doc


def cards_split(doc: PlanDocument) -> Any:
    """The layer split over the plan's different cards (``plan.evaluate.estimate_cards``) for an inference
    plan with ``hardware.cards`` and an engine that splits layers; None otherwise or when it cannot be
    estimated (the Inference tab's cards pane then says why)."""
    if not doc.hardware.cards or doc.workload != "inference":
        return None
    from llmplan.plan.evaluate import estimate_cards

    try:
        return estimate_cards(doc)[0]
    except LlmplanError:
        return None


@one_catalog_read
def evaluate(doc: PlanDocument) -> Outcome:
    """Resolve and estimate one plan (``llmplan.plan.evaluate``, the same pipeline as the CLI);
    every failure becomes a sentence, never an exception. The catalogs are checked on disk and loaded once
    for the whole of it (``one_catalog_read``): a user's edit of their catalog files shows on the next one."""
    t0 = time.perf_counter()
    scenario = None
    m = doc.model
    if m.hub is not None and m.config is None and m.spec is None and not m.id:
        # A plan naming only a Hub repo: the model picker reads it in the background (hub_panel); the UI
        # thread never waits on the network.
        return Outcome(doc, None, None, "input", f"Reading {m.hub.repo} from the Hugging Face Hub…", 0.0)
    try:
        one = single_gpu_doc(doc)
        scenario = resolve(one)
        choice = automatic_choice(one, scenario)
        est = evaluate_scenario(choice.scenario, doc.system, choice.estimate)  # the policy's estimate, reused
        return Outcome(doc, choice.scenario, est, "ok", "", time.perf_counter() - t0, choice.label(),
                       cards_split(doc))
    except LayoutError as exc:
        kind, msg = "layout", str(exc)
    except LlmplanError as exc:
        kind, msg = "input", str(exc)
    except ValidationError as exc:
        kind, msg = "input", _validation_text(exc)
    except Exception as exc:  # a bug in the engine must not take the window down
        kind, msg = "internal", f"internal error in the engine: {type(exc).__name__}: {exc}"
    from llmplan.gui.wording import for_app

    return Outcome(doc, scenario, None, kind, for_app(msg), time.perf_counter() - t0)


# ---- defaults ------------------------------------------------------------------------

def default_plan(gpu_id: str | None = None) -> PlanDocument:
    """A LoRA fine-tune of Llama-3-8B on one GPU (this machine's when detected, else an
    H100): the question most people bring, and one the default answer is useful for.
    100 M tokens (a few epochs over an instruction set of tens of thousands of examples)
    instead of the engine's pre-training default of 1 T, which would read "629 days"."""
    return PlanDocument(
        name="Untitled plan",
        model=ModelRef(id=DEFAULT_MODEL_ID),
        hardware=HardwareRef(gpu=gpu_id or DEFAULT_GPU_ID, gpus_per_node=1, nodes=1),
        workload="finetune",
        training=TrainingSettings(method="lora", seq_len=4096, tokens=FINETUNE_TOKENS),
    )


@lru_cache(maxsize=1)
def version() -> str:
    from llmplan import __version__

    return __version__


def stage_memory(scenario: Any) -> tuple[float, ...]:
    """Bytes per GPU of each pipeline stage of a training scenario (() for inference or on error)."""
    if scenario is None or scenario.workload == "inference":
        return ()
    from llmplan.core.training.memory import stage_totals
    from llmplan.errors import LlmplanError

    try:
        return stage_totals(scenario)
    except LlmplanError:
        return ()
