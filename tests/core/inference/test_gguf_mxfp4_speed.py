"""gpt-oss's MXFP4 GGUF under llama.cpp on CUDA, estimated with the per-format machinery and llama.cpp's MoE prompt
kernels, against published llama-bench rows: compared, not fitted, and the bands pinned (docs/inference.md,
"MXFP4 GGUF" and "MoE prompts in llama.cpp").

How the estimate prices it (nothing here was set from these rows):
- decode: the weight bytes a token reads (the Q8_0 attention and head, 4 of 32 MXFP4 experts) at the engine's
  stream share of bandwidth, plus its per-layer kernel floor: 21 kernels for a dense layer, 25 for an MoE layer
  (router, fused top-k, the experts' mat-vecs by id, weighting and fused sum; counted from ggml-org/ggml d99724f2);
- prompt: 2 FLOP per active weight at the MMQ rate per SM-clock (MXFP4 is an MMQ type: ggml-cuda/mmq.cuh unpacks
  its E2M1 nibbles through a 16-entry table to int8, like IQ4_NL, one of the rows the 2026 rate was measured on),
  the routed experts' GEMMs padded to MMQ's 128 x 128 tiles (mul_mat_id picks the tile's token width for the whole
  micro-batch: a 64-row expert pays a 128-row tile) and the MoE layers' routing and weighted-sum bytes at the copy
  share of bandwidth (core/inference/moe_prompt.py).

Rows (gpt-oss 20B MXFP4 MoE, 11.27 GiB; builds from late 2025, which the ``llama-cpp-2026`` engine follows):
- RTX 4090, pp4096 at n_ubatch 1024 / 2048 / 4096: 11,078.32 / 10,649.30 / 8,950.94 t/s, llama.cpp PR #15631
  ("CUDA: fuse adds, fuse add with rms norm", JohannesGaessler, 2025-09), the master column.
- RTX PRO 6000 Blackwell, pp512 10,560.64 t/s on master c6f6e4f96 (int8 MMQ), 13,304.80 t/s with the native
  FP4 ``m16n8k64`` MMQ of llama.cpp PR #17906 (2025-12-10).
- RTX PRO 6000 Blackwell, n_ubatch 2048, fa 1: pp128 5,127.80 and tg128 391.20 t/s: llama.cpp PR #16991
  ("CUDA: add stream-based concurrency", 2025-11), master.
Estimate / measured with ``llama-cpp-2026``, before the MoE kernels were priced -> after: 4090 ub 1024 2.35 -> 1.37,
ub 2048 2.45 -> 1.59, ub 4096 2.91 -> 2.02; PRO 6000 pp512 3.95 -> 1.87 (native FP4 3.14 -> 1.48), pp128 3.39 ->
1.18; tg128 1.22 -> 1.17. What is left is not explained by the code read (docs/inference.md): it grows with
n_ubatch, where the tile padding shrinks. The default engine (2024 builds, which predate MXFP4) dequantises
micro-batches above 32 tokens and is unchanged: 0.6-1.0x by its slower rates, not by modelling this.
"""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.workload import InferenceSettings, Scenario

CAT = load_hardware_catalog()
CURRENT, ERA_2024 = "llama-cpp-2026", "llama-cpp"
PRO6000, RTX4090 = "nvidia-rtx-pro-6000-blackwell-96gb", "nvidia-rtx-4090-24gb"


def _estimate(gid: str, engine: str, prompt: int, output: int, ubatch: int | None):
    profile = engine_profile(engine)
    if ubatch:
        profile = profile.model_copy(update={"prefill_chunk_tokens": ubatch})  # llama-bench -ub
    sc = Scenario(model=load_model_catalog().get("openai/gpt-oss-20b").spec, cluster=ClusterSpec(gpu=CAT.gpu(gid).spec),
                  workload="inference", engine_profile=profile,
                  inference=InferenceSettings(engine=engine, weight_format="mxfp4_moe", kv_dtype="fp16",
                                              prompt_tokens=prompt, output_tokens=output))
    return estimate(sc).inference


def pp(gid: str, engine: str, tokens: int, ubatch: int | None = None) -> float:
    return tokens / _estimate(gid, engine, tokens, 1, ubatch).ttft_s.value


def tg(gid: str, engine: str) -> float:
    return 1 / _estimate(gid, engine, 1, 128, None).tpot_s.value


PROMPT_ROWS = [(RTX4090, 4096, 1024, 11_078.32), (PRO6000, 512, None, 10_560.64), (PRO6000, 128, 2048, 5_127.80)]
# (row, the band estimate / measured lies in, current engine); before the MoE kernels: 2.35, 3.95, 3.39
CURRENT_BANDS = [(1.25, 1.5), (1.7, 2.05), (1.05, 1.3)]


@pytest.mark.parametrize(("row", "band"), list(zip(PROMPT_ROWS, CURRENT_BANDS, strict=True)))
def test_current_build_prompts_with_the_moe_kernels_priced(row, band):
    gid, tokens, ubatch, measured = row
    assert band[0] < pp(gid, CURRENT, tokens, ubatch) / measured < band[1]


@pytest.mark.parametrize(("ubatch", "measured", "band"), [(2048, 10_649.30, (1.45, 1.75)),
                                                          (4096, 8_950.94, (1.85, 2.2))])
def test_the_gap_left_grows_with_the_micro_batch(ubatch, measured, band):
    # PR #15631, RTX 4090 pp4096: the tile padding shrinks as n_ubatch grows (1.51x at 1024, ~1.0x at 4096), so
    # what the model still misses is something else that grows with it.
    assert band[0] < pp(RTX4090, CURRENT, 4096, ubatch) / measured < band[1]


@pytest.mark.parametrize(("gid", "tokens", "ubatch", "measured"), PROMPT_ROWS)
def test_default_engine_prompts_land_below_by_its_2024_rates(gid, tokens, ubatch, measured):
    assert 0.55 < pp(gid, ERA_2024, tokens, ubatch) / measured < 1.05


def test_native_fp4_mmq_is_below_the_estimate_on_blackwell():
    # PR #17906's native MXFP4 MMQ (1.26x the int8 path on this card, not priced) leaves the estimate 1.48x fast.
    assert 1.35 < pp(PRO6000, CURRENT, 512) / 13_304.80 < 1.6


def test_decode_band():
    assert 1.1 < tg(PRO6000, CURRENT) / 391.20 < 1.25  # +17%: 25 kernels per MoE layer counted, was +22% with 21
    assert 0.6 < tg(PRO6000, ERA_2024) / 391.20 < 0.75  # the 2024 floor, 86.7 µs a layer
