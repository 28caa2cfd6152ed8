"""The longest context that fits with an MoE model's routed experts in host RAM (llama.cpp ``--n-cpu-moe``):
where the plan leaves the placement open, the answer moves experts to host RAM as llama.cpp's users do for a
longer context, the fewest MoE layers' worth that hold the model's trained context (core/inference/context_fit.py,
docs/inference.md "Longest context with experts in host RAM").

Bytes by hand, tolerance 0 B (up to llama.cpp's 256-token KV cells): the gpt-oss-120b MXFP4_MOE tensors of
tests/core/inference/test_cpu_moe.py (ggml-common.h block sizes, the model's config.json); the KV cache fp16,
2 (K, V) x 8 KV heads x 64 x 2 B = 2,048 B per token per layer, 18 full-attention layers growing with the
context and 18 sliding ones holding the 128-token window (config.json sliding_window); the compute buffer holds
one layer's experts for a prompt micro-batch of >= 32 tokens (ggml-cuda.cu op offload, core/inference/cpu_moe.py).
"""

from __future__ import annotations

from llmplan.core.inference.context_fit import longest_context
from tests.core.inference.test_cpu_moe import OSS_EMBED, OSS_EXPERTS, OSS_HEAD, OSS_REST, scenario

GIB = 2**30
KV_FULL = 18 * 2048  # B per token: the full-attention layers
KV_SLIDING = 18 * 2048 * 128  # the sliding layers' 128-token window
CELL = 256  # llama.cpp's KV cells (engines.toml kv_block_tokens)


def _fixed(sc) -> int:
    """What a card holds besides weights and KV: the CUDA context and ggml's framework share (engines.toml), the
    fp32 logits of one sequence (201,088 x 4 B), and the activations of a 512-token micro-batch, 2 B x 512 x
    (2 x 2,880 residual + 4,096 + 2 x 512 q/k/v + 2 x 4 x 2,880 gated experts)."""
    e = sc.engine_profile
    return e.cuda_context_bytes + e.framework_bytes + 201_088 * 4 + 2 * 512 * (2 * 2880 + 4096 + 1024 + 8 * 2880)


def _longest_by_hand(sc, n_moe: int) -> int:
    weights = 36 * (OSS_EXPERTS + OSS_REST) + OSS_HEAD - n_moe * OSS_EXPERTS  # OSS_EMBED stays in host RAM
    left = 24 * GIB - weights - OSS_EXPERTS - _fixed(sc) - KV_SLIDING  # OSS_EXPERTS: the compute buffer's copy
    return left // KV_FULL // CELL * CELL


def test_gpt_oss_120b_on_a_24gb_card_moves_the_experts_the_trained_context_needs():
    """gpt-oss-120b, one RTX 3090, placement open: with every expert on the card no context fits (58 GiB of
    weights); --n-cpu-moe 27 is the fewest that holds the trained 131,072 tokens (26 does not), and at 27 the
    memory allows 176,128 tokens. Before this, the answer assumed every expert on the GPU: "none"."""
    sc = scenario("openai/gpt-oss-120b", "mxfp4_moe", None)
    fit = longest_context(sc)
    assert _longest_by_hand(sc, 26) < 131_072 <= _longest_by_hand(sc, 27)
    assert fit.experts_flag == "--n-cpu-moe 27" and fit.host_moe_layers == 27 and fit.experts_chosen
    assert fit.tokens == _longest_by_hand(sc, 27) == 176_128
    assert fit.limited_by_training
    assert OSS_EMBED > 0  # named for the reader: the embedding is never on the card (llama.cpp keeps token_embd)


def test_a_stated_placement_is_honoured():
    """--n-cpu-moe 30 stated: the longest context at 30, by hand; nothing chosen."""
    sc = scenario("openai/gpt-oss-120b", "mxfp4_moe", 30)
    fit = longest_context(sc)
    assert fit.tokens == _longest_by_hand(sc, 30) and fit.experts_flag == "--n-cpu-moe 30"
    assert not fit.experts_chosen


def test_short_of_the_trained_context_every_expert_goes_to_host_ram():
    """The 2024 build (no flash attention) keeps the score matrix, 4 B x 512 x 65 x T per token on top of the KV
    cache (core/inference/score_buffer.py): even --cpu-moe holds fewer than 131,072 tokens, so the answer is
    --cpu-moe's longest, not the trained context."""
    fit = longest_context(scenario("openai/gpt-oss-120b", "mxfp4_moe", None, engine="llama-cpp"))
    assert fit.experts_flag == "--cpu-moe" and fit.host_moe_layers == 36
    assert 0 < fit.tokens < 131_072


def test_a_model_whose_trained_context_fits_keeps_its_experts_on_the_gpu():
    """gpt-oss-20b (11.27 GiB of MXFP4 tensors) on a 24 GB card: the trained context fits with every expert on
    the card, so none is moved (each one moved slows decoding)."""
    fit = longest_context(scenario("openai/gpt-oss-20b", "mxfp4_moe", None))
    assert fit.experts_flag == "" and fit.host_moe_layers == 0 and fit.tokens >= 131_072


def test_a_card_too_small_even_for_cpu_moe_says_so():
    """A 2 GiB card: 36 layers' attention and the head (1.67 GB by hand above), one layer's experts in the compute
    buffer (1.70 GB) and the CUDA context do not fit even with --cpu-moe: "none, even with --cpu-moe", not the
    words for whole layers."""
    from llmplan.core import present

    sc = scenario("openai/gpt-oss-120b", "mxfp4_moe", None)
    small = sc.model_copy(update={"cluster": sc.cluster.model_copy(update={
        "gpu": sc.cluster.gpu.model_copy(update={"memory_bytes": 2 * GIB})})})
    fit = longest_context(small)
    assert fit.tokens == 0 and fit.experts_flag == "--cpu-moe"
    assert present.context_fit(fit.tokens, 1, True, fit.experts_flag).startswith("none, even with --cpu-moe")
