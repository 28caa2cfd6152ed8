"""fp8 training as the frameworks run it (``core.training.fp8_casts``): linears in fp8, the rest in bf16, and
the casts around each fp8 matmul as memory-bound passes.

Sources: torchao ``float8_linear.py``/``float8_ops.py`` at eab345c2 and torchtitan ``float8.py`` at 9dec370a
(the versions of torchtitan's H100 performance rows, docs/performance.md at d4c86e37); Transformer Engine's
delayed-scaling recipe (the fp8_casts module doc). The fp8 GEMM rate comes from square e4m3 GEMMs measured on
an H100 SXM 80GB, torch 2.11 / cuBLAS, 2026-11-24 — not from any training run.
"""

from __future__ import annotations

import pytest

from llmplan.catalog.frameworks import framework_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.engine import estimate
from llmplan.core.params import count_params
from llmplan.core.training import kernel_rates as kr
from llmplan.core.training import timing
from llmplan.core.training.fp8_casts import block_casts
from llmplan.core.training.ops import layer_gemms
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan

L31_8B = "meta-llama/Llama-3.1-8B"


def _scenario(precision: str, framework: str = "fsdp2", tp: int = 1, zero: int = 3):
    tr = TrainingSettings(framework=framework, seq_len=8192, micro_batch=2, global_batch=2 * 8 // tp,
                          recompute="selective_op" if framework == "fsdp2" else "selective", zero_stage=zero,
                          flash_attention=True, offload="none", precision=precision)
    doc = PlanDocument(model=ModelRef(id=L31_8B), workload="pretrain", training=tr,
                       hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb", gpus_per_node=8, nodes=1,
                                            network="roce-400"),
                       parallelism=ParallelLayout(dp=8 // tp, tp=tp, sequence_parallel=tp > 1))
    return evaluate_plan(doc)[0]


@pytest.mark.parametrize(("n", "measured_s"), [(4096, 124.56e-6), (8192, 770.22e-6)])
def test_fp8_gemm_rate_reproduces_the_measured_square_gemms(n, measured_s):
    """e4m3 square GEMMs on an H100 SXM (torch 2.11 / cuBLAS, 2026-11-24, CUDA-event-timed): 124.6 µs at 4,096
    and 770.2 µs at 8,192. The model (kernel_rates module doc: the best-shape bf16 share of peak ×
    FP8_MATMUL_RATIO at full clock, 1-byte operands, + the 3 µs GEMM fixed cost and the harness's own 15.5 µs
    dispatch latency, which these timings hold) gives −7.9% and +2.4%. Tolerance: 15%."""
    h100 = load_hardware_catalog().efficiency_for("nvidia-h100-sxm-80gb")
    rate = kr.gemm_rate(1978.9e12, h100.matmul * kr.FP8_MATMUL_RATIO)  # a short burst: full clock
    t = kr.gemm_time(n, n, n, rate, 3.35e12 * h100.memory_bandwidth, 1.0, 2.0) + kr.HARNESS_LATENCY_S
    assert t == pytest.approx(measured_s, rel=0.15)
    assert pytest.approx(0.901, abs=5e-4) == kr.FP8_MATMUL_RATIO


def test_torchao_casts_of_a_llama_block_by_hand():
    """Llama 3.1 8B, one block, 2 × 8,192 tokens on one GPU, no TP, FSDP (weights cast on the shard). Distinct
    inputs: the attention norm's output (q, k, v), the attention output (o), the MLP norm's (gate, up), the
    down projection's (14,336 wide): 3 × 4,096 + 14,336 = 26,624 elements per token. Output gradients: q 4,096,
    k 1,024, v 1,024, o 4,096, gate and up 14,336 each, down 4,096: 43,008 per token. Weights: 218,103,808.
    Forward 5 B per input element (amax 2, cast 3); backward 5 B per output-gradient element, 2 B per weight
    (its column-major fp8 copy), 2 B per output-gradient and input element (the grad_weight copies);
    selective_op recompute: 3 B per input element (amax saved). Exact."""
    tokens = 2 * 8192
    sc = _scenario("fp8")
    lay_shape = timing.OpShape(1, 1, 1, 2, 8192, False, False)
    gemms = layer_gemms(sc.model, count_params(sc.model), lay_shape, sc.training)  # type: ignore[arg-type]
    c = block_casts(gemms, "torchao-tensorwise", True)
    x, go, w = 26624 * tokens, 43008 * tokens, 218103808
    assert sum(g.n * g.k for g in gemms) == w
    assert c.forward == 5 * x
    assert c.backward == 5 * go + 2 * w + 2 * (go + x)
    assert c.recompute == 3 * x
    assert (c.forward_kernels, c.backward_kernels, c.recompute_kernels) == (8, 3 * 7 + 7 + 4, 4)


def test_transformer_engine_casts_fuse_with_the_norms():
    """Transformer Engine (delayed scaling): the norm-fed inputs (q/k/v, gate/up) only get their transposed fp8
    copy (2 B), the attention and MLP outputs a cast_transpose (4 B), every output gradient a cast_transpose
    (4 B); no amax pass and no per-micro-batch weight cast. Exact."""
    tokens = 2 * 8192
    sc = _scenario("fp8")
    gemms = layer_gemms(sc.model, count_params(sc.model), timing.OpShape(1, 1, 1, 2, 8192, False, False),
                        sc.training)  # type: ignore[arg-type]
    c = block_casts(gemms, "transformer-engine", False)
    assert c.forward == (2 * 2 * 4096 + 4 * (4096 + 14336)) * tokens
    assert c.backward == 4 * 43008 * tokens


def test_sequence_parallel_casts_the_shards_before_gathering():
    """torchao Float8ColwiseParallel casts the sequence-sharded input before its fp8 all-gather, and
    Float8RowwiseParallel the output gradient before its backward all-gather (float8_tensor_parallel.py at
    eab345c2): with TP 8 and sequence parallelism those amax + cast passes move 1/8 of the gathered tensor."""
    sc = _scenario("fp8", tp=8)
    gemms = layer_gemms(sc.model, count_params(sc.model), timing.OpShape(8, 1, 1, 2, 8192, True, False),
                        sc.training)  # type: ignore[arg-type]
    whole, sharded = block_casts(gemms, "torchao-tensorwise", True), block_casts(gemms, "torchao-tensorwise", True, 8)
    tokens = 2 * 8192
    column_inputs = 2 * 4096 * tokens  # the two norm outputs, gathered
    row_grads = 2 * 4096 * tokens  # o and down output gradients, gathered
    assert whole.forward - sharded.forward == pytest.approx(5 * column_inputs * 7 / 8)
    assert whole.backward - sharded.backward == pytest.approx(5 * row_grads * 7 / 8)


def test_fp8_runs_the_linears_only():
    """Attention and the head keep their bf16 rate (torchtitan filters the ``output`` linear; SDPA and Megatron's
    output layer are not fp8 modules), the linears' GEMMs get faster, and the casts show in the breakdown. Only the
    clock moves attention: fp8 GEMMs take less of the step, so the GPU holds more of its full clock (within the
    H100's held-clock range, 0.869-1)."""
    bf16, fp8 = estimate(_scenario("bf16")).compute, estimate(_scenario("fp8")).compute
    assert 0.869 * bf16.breakdown["attention"] <= fp8.breakdown["attention"] <= bf16.breakdown["attention"]
    assert 0.5 < fp8.breakdown["gemm"] / bf16.breakdown["gemm"] < 0.7
    assert fp8.breakdown["fp8_casts"] > 0 and "fp8_casts" not in bf16.breakdown
    assert sum(v for k, v in fp8.breakdown.items()) == pytest.approx(fp8.step_time_s.value, rel=1e-9)


def test_fp8_step_never_beats_the_2x_of_the_peaks():
    """Under both recipes the fp8 step is slower than half the bf16 step (the fp8 peak is 2× bf16's on an
    H100): the casts, the bf16 attention and head, and an fp8 GEMM at 0.90 of bf16's share of its peak.
    Recorded 2026-11-27 (Llama 3.1 8B, 8 H100 SXM, 2 × 8,192 tokens): FSDP2 (torchao, uncompiled as torchtitan's
    default) 1.26×, Megatron (Transformer Engine) 1.39×; moved when kern28 + head28 + eager28 combined (1.32× and
    1.38× before: the eager modules' kernels do not get faster in fp8)."""
    for fw in ("fsdp2", "megatron"):
        zero = 3 if fw == "fsdp2" else 1
        b = estimate(_scenario("bf16", fw, zero=zero)).compute.step_time_s.value
        f = estimate(_scenario("fp8", fw, zero=zero)).compute.step_time_s.value
        assert 1.15 < b / f < 1.6, fw


def test_profiles_name_their_recipe():
    assert framework_profile("fsdp2").fp8_recipe == "torchao-tensorwise"
    assert framework_profile("megatron").fp8_recipe == "transformer-engine"
