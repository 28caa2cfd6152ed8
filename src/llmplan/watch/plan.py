"""The plan beside the run: its predicted peak memory per GPU, the usable capacity, the fit's nearest changes.

The predicted peak is the estimate's per-GPU total *with* the CUDA context and allocator overhead,
because NVML's memory figures (per process or per GPU) include both; the capacity is the usable
memory of the plan's GPU. The nearest changes are those `llmplan.fit` finds for this machine
(the same ones the "This machine" line offers), computed only when asked: they take ~150 ms.
"""

from __future__ import annotations

from llmplan.plan.document import PlanDocument
from llmplan.plan.evaluate import evaluate_plan
from llmplan.watch.diagnose import PlanLink


def plan_link(doc: PlanDocument, label: str = "the plan", with_changes: bool = False) -> PlanLink:
    """Raises LlmplanError (one line) when the plan cannot be estimated."""
    _, est = evaluate_plan(doc)
    changes: tuple[str, ...] = ()
    if with_changes:
        changes = nearest_change_sentences(doc)
    return PlanLink(predicted_peak_bytes=float(est.memory.total.value),
                    capacity_bytes=float(est.memory.capacity.value), label=label, changes=changes)


def nearest_change_sentences(doc: PlanDocument, report=None) -> tuple[str, ...]:
    """What the fit suggests for this machine (empty when detection finds no GPU or the plan fits)."""
    from llmplan.fit.local import fit_this_machine, local_hardware
    from llmplan.hw.detect import detect_all

    try:
        machine = local_hardware(report or detect_all())
        if machine is None:
            return ()
        fit = fit_this_machine(doc, machine)
    except Exception:
        return ()  # the changes are extra help: the diagnosis stands without them
    return tuple(c.sentence for c in fit.changes[:3])
