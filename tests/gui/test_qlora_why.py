"""The memory table says why QLoRA needs more memory than LoRA under the Hugging Face Trainer (found by the
2026-11-28 user trial: Llama-3.1-8B on one H100, 60.14 vs 56.02 GiB, with nothing saying why). The cause is PEFT's
prepare_model_for_kbit_training, which casts norms, embeddings and head to fp32 (docs/fine-tuning-frameworks.md);
the Weights and Activations rows' tooltips now name it. The totals are unchanged (exact to 0.01 GiB)."""

from __future__ import annotations

from llmplan.gui.report import rows
from llmplan.plan.document import PlanDocument
from llmplan.plan.evaluate import evaluate_plan


def _tips(method: str):
    doc = PlanDocument.model_validate(dict(name=method, model={"id": "meta-llama/Llama-3.1-8B"}, workload="finetune",
                                           hardware={"gpu": "nvidia-h100-sxm-80gb", "gpus_per_node": 1, "nodes": 1},
                                           training={"method": method}))
    scenario, ev = evaluate_plan(doc)
    return ev.estimate.memory.total.value / 2**30, {r.label: " ".join(r.tooltip().split()) for r in rows(ev, scenario)}


def test_qlora_rows_name_the_fp32_cast_and_lora_rows_do_not():
    lora_total, lora = _tips("lora")
    qlora_total, qlora = _tips("qlora")
    assert round(lora_total, 2) == 56.02 and round(qlora_total, 2) == 60.14
    cause = "fp32 copies of norms, embeddings and head: prepare_model_for_kbit_training"
    assert cause in qlora["Activations"] and "more memory than LoRA" in qlora["Activations"]
    assert cause in qlora["Weights (per GPU)"]
    assert cause not in lora["Activations"] and cause not in lora["Weights (per GPU)"]
