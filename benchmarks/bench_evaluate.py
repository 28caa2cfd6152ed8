"""Speed of one plan evaluation: resolve (catalog ids -> specs), the default policy's estimate and the system
report (``plan.evaluate.evaluate_plan``), what the CLI runs for a plan and the app for each knob change.

Each call evaluates a new document (the sequence length or prompt length changes, as a knob does), so that no
cache keyed by the document answers; the catalogs' own caches do (their files are checked on disk, not parsed).
The plans are those of ``bench_gui.WORKLOAD_EDITS``: a LoRA fine-tune and an inference plan of Llama-3-8B on
one H100, and a pre-training of it on two 8-GPU nodes. Prints CPU and wall medians; asserts nothing.

Run: .venv/bin/python benchmarks/bench_evaluate.py
"""

from __future__ import annotations

import statistics
import time

from llmplan.core.workload import InferenceSettings, ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan

MODEL = ModelRef(id="meta-llama/Meta-Llama-3-8B")
H100 = "nvidia-h100-sxm-80gb"
PLANS = {  # (plan, the knob a change turns)
    "fine-tune": (PlanDocument(model=MODEL, hardware=HardwareRef(gpu=H100), workload="finetune",
                               training=TrainingSettings(method="lora", seq_len=4096, tokens=1e8)), "seq_len"),
    "pre-train": (PlanDocument(model=MODEL, workload="pretrain", parallelism=ParallelLayout(tp=8, dp=2),
                               hardware=HardwareRef(gpu=H100, gpus_per_node=8, nodes=2, node="dgx-h100",
                                                    network="ib-ndr-400")), "seq_len"),
    "inference": (PlanDocument(model=MODEL, hardware=HardwareRef(gpu=H100), workload="inference",
                               inference=InferenceSettings(engine="vllm")), "prompt_tokens"),
}


def _changed(doc: PlanDocument, knob: str, value: int) -> PlanDocument:
    part = "inference" if doc.workload == "inference" else "training"
    return doc.model_copy(update={part: getattr(doc, part).model_copy(update={knob: value})})


def plan_evaluation_ms(batches: int = 15, n: int = 40) -> dict[str, tuple[float, float]]:
    """Per plan: (CPU ms, wall ms) of one ``evaluate_plan``, medians over ``batches`` batches of ``n`` calls."""
    out = {}
    for name, (doc, knob) in PLANS.items():
        docs = [_changed(doc, knob, 1024 * (1 + i % 8)) for i in range(batches * n)]
        evaluate_plan(docs[0])  # the catalogs and the engine's per-shape caches are filled
        cpu, wall = [], []
        for b in range(batches):
            c0, t0 = time.process_time(), time.perf_counter()
            for d in docs[b * n:(b + 1) * n]:
                evaluate_plan(d)
            cpu.append((time.process_time() - c0) / n * 1e3)
            wall.append((time.perf_counter() - t0) / n * 1e3)
        out[name] = (statistics.median(cpu), statistics.median(wall))
    return out


def catalog_read_saving_ms(changes: int = 1000) -> dict[str, tuple[float, float]]:
    """Per plan: (CPU ms without, CPU ms with) the one catalog read and the kept framework profile, for the GUI's
    estimate part of a knob change: the training tabs' profile of the new document, then ``backend.evaluate``.
    Without: ``catalog_read`` made a no-op, the profile not kept, and the frameworks loaded twice per profile as
    the code before them did. The two ways alternate change by change in one process, so that the machine's
    load falls on both alike (processes run in turn did not separate them). Thread CPU, medians."""
    import contextlib

    from llmplan.catalog import snapshot
    from llmplan.gui import backend  # Qt-free
    from llmplan.plan import resolve as resolve_module

    read, catalog = snapshot.catalog_read, resolve_module.framework_catalog
    out = {}
    try:
        for name, (doc, knob) in PLANS.items():
            docs = [_changed(doc, knob, 1024 * (1 + i % 8) + i // 8) for i in range(changes)]
            backend.evaluate(docs[0])
            cpu: tuple[list[float], list[float]] = ([], [])
            for i, d in enumerate(docs):
                without = i % 2
                snapshot.catalog_read = contextlib.nullcontext if without else read
                resolve_module.framework_catalog = (lambda: None) if without else catalog
                c0 = time.thread_time()
                resolve_module.plan_framework_profile(d)
                if without:
                    resolve_module._LAST_PROFILE = None
                backend.evaluate(d)
                cpu[without].append(time.thread_time() - c0)
            out[name] = (statistics.median(cpu[1]) * 1e3, statistics.median(cpu[0]) * 1e3)
    finally:
        snapshot.catalog_read, resolve_module.framework_catalog = read, catalog
    return out


def main() -> None:
    for name, (cpu, wall) in plan_evaluation_ms().items():
        print(f"one plan evaluation ({name}): CPU median {cpu:.2f} ms, wall median {wall:.2f} ms")
    for name, (without, with_read) in catalog_read_saving_ms().items():
        print(f"knob change's estimate ({name}), without → with one catalog read: CPU median {without:.2f} → "
              f"{with_read:.2f} ms")


if __name__ == "__main__":
    main()
