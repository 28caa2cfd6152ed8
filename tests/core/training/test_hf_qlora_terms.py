"""QLoRA on the Hugging Face stack: the time terms read from bitsandbytes' and PEFT's code, each on its own.

Sources (read 2026-11-27):
- bitsandbytes (commit 95f9af3, 0.50.2.dev0) ``backends/cuda/ops.py``: the forward of more than 1,536 tokens
  (``_gemm_4bit_custom_max_m``) and every backward (``MatMul4Bit.backward`` → ``functional.dequantize_4bit``)
  dequantise the whole weight to bf16, then run cuBLAS. With double quantisation the fp32 absmax is rebuilt
  first: ``dequantize_blockwise`` of the 8-bit absmax, ``+ offset``, then ``cdequantize_blockwise_bf16_nf4``
  (three launches; bitsandbytes PR #2051 describes the same three). ``nn.Linear4bit.forward`` returns
  ``.to(inp_dtype)``.
- PEFT (commit 5d602fd) ``tuners/lora/bnb.py`` ``Linear4bit.forward``: ``result = result.clone()`` after the
  base layer; no cast of the input to the adapter's dtype under autocast (``requires_conversion``).
- PyTorch autocast: a frozen weight's cast (``_to_copy`` of a tensor that does not require grad) has no
  backward; the linear's backward reuses the saved bf16 copy.
Tolerance: exact (the byte counts are the formulas themselves, evaluated on Llama-3.1-8B at 1 × 2,048).
"""

from dataclasses import replace

import pytest

from llmplan.core.params import count_params
from llmplan.core.training import kernel_rates as kr
from llmplan.core.training import op_time as ot
from llmplan.core.training import timing
from llmplan.core.training.layout import resolve as lay_of
from llmplan.core.training.lora import nf4_dequant_bytes, nf4_dequant_launches
from llmplan.core.training.ops import head_ops, layer_ops
from llmplan.core.workload import TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan

T = 2048
H, KV, INTER = 4096, 1024, 14336  # Llama-3.1-8B: hidden, k/v width (8 heads × 128), MLP width


def _ops(framework="hf-trainer", method="qlora", **kw):
    training = TrainingSettings(method=method, micro_batch=1, global_batch=1, seq_len=T, recompute="full",
                                zero_stage=0, offload="none", optimizer="adamw", lora_rank=16,
                                framework=framework, **kw)
    doc = PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-8B"), hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb"),
                       workload="finetune", training=training)
    sc, _ = evaluate_plan(doc)
    lay = lay_of(sc)
    pb = count_params(sc.model)
    ops = layer_ops(sc.model, pb, lay, sc.training, sc.framework)
    return sc, lay, pb, ops


def _named(ops, name):
    return [e for e in ops.elementwise if e.name == name]


def test_nf4_dequantisation_moves_its_kernels_bytes():
    """Per weight: codes 0.5 B + fp32 absmax 4/64 B read, bf16 2 B written; the nested absmax adds its 8-bit
    read and fp32 write (1 + 4 per 64) and the offset add's read and write (4 + 4 per 64)."""
    assert nf4_dequant_bytes(True) == pytest.approx(2.5 + 17 / 64)
    assert nf4_dequant_bytes(False) == pytest.approx(2.5 + 4 / 64)
    assert (nf4_dequant_launches(True), nf4_dequant_launches(False)) == (3, 1)
    _, _, _, ops = _ops()
    assert ops.dequant_bytes == nf4_dequant_bytes(True) and ops.dequant_kernels == 3
    _, _, _, plain = _ops(qlora_double_quant=False)
    assert plain.dequant_bytes == nf4_dequant_bytes(False) and plain.dequant_kernels == 1


def test_peft_clones_each_4bit_base_output():
    """The clone reads and writes every adapted projection's base output once: fp32 for q, k, v, gate, up and
    down (prepare_model_for_kbit_training's fp32 stream comes back out of bitsandbytes in fp32), bf16 for o
    (its input is SDPA's bf16 output). Its backward passes the gradient through (no bytes)."""
    _, _, _, ops = _ops()
    (clone,) = _named(ops, "PEFT 4-bit LoRA output clone")
    fp32_outs = H + 2 * KV + 2 * INTER + H  # q, k, v, gate, up, down
    assert clone.bytes == (8 * fp32_outs + 4 * H) * T
    assert clone.kernels == 7 and clone.backward == 0.0


def test_no_clone_without_peft_on_a_bitsandbytes_4bit_base():
    for framework, method, kw in (("hf-trainer", "lora", {}), ("torchtune", "qlora", {}),
                                  ("hf-trainer", "qlora", {"torch_compile": True}),
                                  ("hf-trainer", "qlora", {"quant_base": "gptq"})):
        _, _, _, ops = _ops(framework, method, **kw)
        assert not _named(ops, "PEFT 4-bit LoRA output clone"), (framework, method, kw)


def test_bitsandbytes_casts_back_every_output_but_o_proj():
    """Linear4bit returns ``.to(inp_dtype)``: fp32 (read 2, write 4 B) for the six projections that read fp32,
    nothing for o_proj, whose input is already bf16."""
    _, _, _, ops = _ops()
    (casts,) = _named(ops, "bitsandbytes output casts to fp32")
    assert casts.bytes == 6 * (H + 2 * KV + 2 * INTER + H) * T and casts.kernels == 6


def test_the_peft_4bit_adapter_path_follows_its_input_dtypes():
    """Dropout (read, write, 1-byte mask) on the input as it comes and autocast's cast of an fp32 dropped copy
    to bf16 for lora_A; scale (2 + 2 B) and add (out + 2 + out B) over the output. q: fp32 in and out."""
    _, _, _, ops = _ops(lora_targets=("q",))
    (lora,) = [e for e in ops.elementwise if e.name.startswith("LoRA")]
    assert lora.bytes == ((9 + 6) * H + (6 + 8) * H) * T
    _, _, _, o_only = _ops(lora_targets=("o",))  # bf16 in and out
    (lora,) = [e for e in o_only.elementwise if e.name.startswith("LoRA")]
    assert lora.bytes == (5 * H + 10 * H) * T


def test_a_frozen_fp32_head_is_cast_once_a_trained_one_twice():
    """QLoRA's fp32 lm_head (frozen): autocast's cast in the forward only, 6 B per weight, an fp32 -> bf16 copy at
    the pointwise rate. A trained fp32 head (AMP full fine-tune) also casts its bf16 gradient back up: 6 B more, at
    the bf16 -> fp32 cast's rate (``kernel_rates.EW_RATIO``; H100 SXM, 2026-11-28)."""
    sc, lay, pb, ops = _ops()
    r, _ = timing.rates(sc.cluster.gpu, sc.efficiency, sc.training.precision)
    head = head_ops(sc.model, pb, lay, sc.training, sc.framework, ops.residual_bytes)
    assert not head.gemm.trainable and head.cast_params == 128256 * H
    down = head.cast_params * 6 / r.pointwise
    assert ot.head_time(head, r).casts == pytest.approx(down)
    trained = replace(head, gemm=replace(head.gemm, trainable=True))
    up = head.cast_params * 6 / (r.pointwise * kr.EW_RATIO[kr.EW_UPCAST])
    assert ot.head_time(trained, r).casts == pytest.approx(down + up)
