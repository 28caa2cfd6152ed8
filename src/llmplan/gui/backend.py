"""The GUI's one door to the rest of llmplan (Qt-free, so it is testable on its own).

Everything the window shows comes from here: catalogs, plan resolution, ``estimate``,
the auto-planner and detection. Each piece is imported lazily and, where a piece is
missing from this build, the failure becomes a plain sentence shown in the window
instead of a crash: the GUI stays usable while parts of the engine are still landing.
No number is computed here by hand; ``evaluate`` only calls ``estimate``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from llmplan.core.hardware import ClusterSpec, GpuSpec, NetworkSpec
from llmplan.core.model import ModelSpec
from llmplan.core.result import Estimate
from llmplan.core.workload import Scenario, TrainingSettings
from llmplan.errors import CatalogError, LayoutError, LlmplanError
from llmplan.io.plan_document import HardwareRef, ModelRef, PlanDocument

DEFAULT_MODEL_ID = "meta-llama/Meta-Llama-3-8B"
DEFAULT_GPU_ID = "nvidia-h100-sxm-80gb"


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of evaluating one plan: an estimate, or the sentence saying why not.

    ``kind`` is "ok", "layout" (the layout breaks a rule), "input" (another user
    error), "missing" (a part of llmplan this build lacks) or "internal" (a bug).
    """

    doc: PlanDocument
    scenario: Scenario | None
    estimate: Estimate | None
    kind: str
    message: str
    elapsed_s: float

    @property
    def ok(self) -> bool:
        return self.estimate is not None


# ---- catalogs ------------------------------------------------------------------------

def model_catalog() -> Any | None:
    """The model catalog, or None when this build has none."""
    try:
        from llmplan.catalog.models import load_model_catalog
    except ImportError:
        return None
    return load_model_catalog()


def refresh_model_catalog() -> Any | None:
    try:
        from llmplan.catalog.models import load_model_catalog
    except ImportError:
        return None
    return load_model_catalog(refresh=True)


def hardware_catalog() -> Any | None:
    try:
        from llmplan.catalog.hardware import load_hardware_catalog
    except ImportError:
        return None
    return load_hardware_catalog()


def gpu_entries() -> list[Any]:
    cat = hardware_catalog()
    return list(getattr(cat, "gpus", []) or []) if cat is not None else []


def network_entries() -> list[Any]:
    cat = hardware_catalog()
    return list(getattr(cat, "networks", []) or []) if cat is not None else []


def node_entries() -> list[Any]:
    cat = hardware_catalog()
    return list(getattr(cat, "nodes", []) or []) if cat is not None else []


def _entry_spec(entry: Any) -> Any:
    return getattr(entry, "spec", entry)


def find_gpu(gpu_id: str) -> GpuSpec:
    for e in gpu_entries():
        spec = _entry_spec(e)
        if getattr(e, "id", getattr(spec, "id", None)) == gpu_id:
            return spec
    if hardware_catalog() is None:
        raise CatalogError(f"no hardware catalog in this build to look up GPU '{gpu_id}'; pick a custom GPU")
    raise CatalogError(f"'{gpu_id}' is not a GPU in the catalog; pick one from the hardware list")


def find_network(network_id: str) -> NetworkSpec:
    if network_id in ("", "none"):
        return NetworkSpec()
    for e in network_entries():
        spec = _entry_spec(e)
        if getattr(e, "id", getattr(spec, "id", None)) == network_id:
            return spec if isinstance(spec, NetworkSpec) else NetworkSpec.model_validate(spec)
    raise CatalogError(f"'{network_id}' is not a network preset in the catalog; pick one from the list")


def model_spec_for(ref: ModelRef) -> ModelSpec:
    inline = getattr(ref, "spec", None)
    if inline is not None:
        return inline
    if ref.config:
        from llmplan.io.hf_config import spec_from_config

        return spec_from_config(ref.config, name=ref.name or ref.id or "custom model")
    cat = model_catalog()
    if cat is None:
        raise CatalogError(f"no model catalog in this build to look up '{ref.id}'; import a config.json instead")
    return cat.get(ref.id or "").spec


# ---- plan -> scenario -> estimate ---------------------------------------------------

def resolve(doc: PlanDocument) -> Scenario:
    """The plan's Scenario: ``llmplan.io.resolve`` when this build has it, else the same
    lookups done here from the catalogs (ids) or the plan's inline specs."""
    try:
        from llmplan.io.resolve import resolve as io_resolve
    except ImportError:
        io_resolve = None
    if io_resolve is not None:
        return io_resolve(doc)
    hw = doc.hardware
    gpu = hw.gpu_spec or find_gpu(hw.gpu)
    net = getattr(hw, "network_spec", None) or find_network(hw.network)
    try:
        cluster = ClusterSpec(gpu=gpu, gpus_per_node=hw.gpus_per_node, nodes=hw.nodes, network=net,
                              price_per_gpu_hour=hw.price_per_gpu_hour)
        from llmplan.core.hardware import Efficiency

        return Scenario(model=model_spec_for(doc.model), cluster=cluster, workload=doc.workload,
                        training=doc.training, inference=doc.inference, parallelism=doc.parallelism,
                        efficiency=doc.efficiency.apply(Efficiency()))
    except ValidationError as exc:
        raise LlmplanError(_validation_text(exc)) from None


def _validation_text(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg']}" if where else first["msg"]


def run_estimate(scenario: Scenario) -> Estimate:
    from llmplan.core.estimate import estimate

    return estimate(scenario)


def evaluate(doc: PlanDocument) -> Outcome:
    """Resolve and estimate one plan; every failure becomes a sentence, never an exception."""
    t0 = time.perf_counter()
    scenario = None
    try:
        scenario = resolve(doc)
        est = run_estimate(scenario)
        return Outcome(doc, scenario, est, "ok", "", time.perf_counter() - t0)
    except LayoutError as exc:
        kind, msg = "layout", str(exc)
    except LlmplanError as exc:
        kind, msg = "input", str(exc)
    except ValidationError as exc:
        kind, msg = "input", _validation_text(exc)
    except ImportError as exc:
        kind, msg = "missing", f"this build of llmplan lacks part of the engine ({exc.name or exc}); " \
                               "update llmplan to get estimates"
    except Exception as exc:  # a bug in the engine must not take the window down
        kind, msg = "internal", f"internal error in the engine: {type(exc).__name__}: {exc}"
    return Outcome(doc, scenario, None, kind, msg, time.perf_counter() - t0)


# ---- defaults ------------------------------------------------------------------------

def default_plan(gpu_id: str | None = None) -> PlanDocument:
    """A LoRA fine-tune of Llama-3-8B on one GPU (this machine's when detected, else an
    H100): the question most people bring, and one the default answer is useful for."""
    return PlanDocument(
        name="Untitled plan",
        model=ModelRef(id=DEFAULT_MODEL_ID),
        hardware=HardwareRef(gpu=gpu_id or DEFAULT_GPU_ID, gpus_per_node=1, nodes=1),
        workload="finetune",
        training=TrainingSettings(method="lora", seq_len=4096, micro_batch=1),
    )


@lru_cache(maxsize=1)
def version() -> str:
    from llmplan import __version__

    return __version__
