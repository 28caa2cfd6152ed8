"""What axolotl's loader does to the dtypes, as the axolotl profile plans it (issue 26).

Read from axolotl-ai-cloud/axolotl (commit 067b021c8, 2026-07-24; the same in utils/models.py load_model at
15f7910d3, 2024-04-18):
- ``utils/config`` normalize_config: ``bf16: true`` (or auto on a bf16 GPU) sets ``cfg.torch_dtype =
  torch.bfloat16`` and the model is loaded in it. A full fine-tune trains those bf16 weights as loaded
  (nothing upcasts them), so it is pure bf16: 2 B weights and gradients, the optimizer's states in the weights'
  dtype, no master copy (profile ``full_regime = "pure"``). LoRA adapters are fp32 (PEFT's
  ``autocast_adapter_dtype``), so adapter runs stay on the profile's ``regime = "amp"``.
- ``loaders/model.py`` ``_configure_embedding_dtypes``: an adapter run (lora or qlora) sets ``needs_fa2_dtype``,
  and after ``prepare_model_for_kbit_training`` has cast norms, embeddings and head to fp32 it converts the
  norms, ``embed_tokens`` and ``lm_head`` back to the training dtype, so a QLoRA run keeps them in bf16 and a
  16-bit residual stream (profile ``kbit_fp32_modules = false``).
Before (2026-11-27): an axolotl full fine-tune was planned with fp32 weights and gradients (Llama 3.1 8B with
AdamW on one GPU: 16 B per parameter of states, now 8), and an axolotl QLoRA run with fp32 embeddings, head,
norms and residual stream. Nothing here is fitted: the tests check the bytes the code implies.
"""

from __future__ import annotations

import pytest

from llmplan.core.engine import estimate
from llmplan.core.training.ops import residual_bytes
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve

L8 = "meta-llama/Llama-3.1-8B"
H100 = "nvidia-h100-sxm-80gb"


def scenario(framework: str, method: str):
    t = TrainingSettings(framework=framework, method=method, seq_len=2048, micro_batch=1, global_batch=1,
                         recompute="full")
    return resolve(PlanDocument(model=ModelRef(id=L8), hardware=HardwareRef(gpu=H100),
                                workload="finetune" if method != "full" else "pretrain", training=t,
                                parallelism=ParallelLayout()))


def test_axolotl_full_fine_tune_is_pure_bf16():
    sc = scenario("axolotl", "full")
    assert sc.training.regime == "pure"
    m = estimate(sc).memory
    params = estimate(sc).params.total
    assert m.weights.value == pytest.approx(2 * params, rel=1e-3)
    assert m.master_weights.value == 0
    assert m.optimizer.value == pytest.approx(4 * params, rel=1e-3)  # AdamW's two states in bf16
    hf = scenario("hf-trainer", "full")  # the Trainer's own AMP run keeps fp32 parameters
    assert hf.training.regime == "amp" and estimate(hf).memory.weights.value == pytest.approx(4 * params, rel=1e-3)


@pytest.mark.parametrize("method", ["lora", "qlora"])
def test_axolotl_adapter_runs_keep_amp_adapters_and_bf16_embeddings(method):
    sc = scenario("axolotl", method)
    assert sc.training.regime == "amp"
    assert residual_bytes(sc.training, sc.framework_profile) == 2.0
    hf = scenario("hf-trainer", method)
    assert residual_bytes(hf.training, hf.framework_profile) == (4.0 if method == "qlora" else 2.0)
