"""The longest context that fits one GPU: the bisection agrees with the memory plan at its edge, and the
answer moves the way the KV cache's arithmetic says (vLLM's PagedAttention sizing, Kwon et al. 2023 §4)."""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference.context_fit import longest_context
from llmplan.core.workload import InferenceSettings, Scenario
from llmplan.formats.hf_config import spec_from_config
from tests.core.inference.gpus import H100, RTX4090
from tests.core.inference.models import DEEPSEEK_V3, LLAMA3_8B


def scenario(gpu, engine, **inf):
    return Scenario(model=spec_from_config(LLAMA3_8B), cluster=ClusterSpec(gpu=gpu), workload="inference",
                    inference=InferenceSettings(engine=engine, output_tokens=256, **inf),
                    engine_profile=engine_profile(engine))


def fits(sc, tokens):
    """Everything on the GPU: llama.cpp would otherwise leave layers in host RAM and still 'fit'."""
    layers = sc.model.num_layers if sc.engine_profile.partial_offload else None
    inf = sc.inference.model_copy(update={"prompt_tokens": tokens - 256, "output_tokens": 256, "gpu_layers": layers})
    return estimate(sc.model_copy(update={"inference": inf})).fits


@pytest.mark.parametrize(("gpu", "engine", "fmt", "kv"), [
    (RTX4090, "llama-cpp", "q4_k_m", "fp16"), (H100, "vllm", "bf16", "bf16"), (RTX4090, "transformers", "bf16", "bf16"),
])
def test_the_answer_fits_and_one_block_more_does_not(gpu, engine, fmt, kv):
    sc = scenario(gpu, engine, weight_format=fmt, kv_dtype=kv)
    fit = longest_context(sc)
    assert fits(sc, fit.tokens)
    block = engine_profile(engine).kv_block_tokens
    assert not fits(sc, fit.tokens + block)


def test_llama_cpp_on_a_24gb_card_by_hand():
    """Llama-3-8B: 2 (K, V) x 8 KV heads x 128 x 32 layers x 2 bytes = 131,072 bytes per token of fp16 KV. The
    2024 builds run without flash attention (core/inference/score_buffer.py): past a few thousand tokens the
    compute buffer is the score phase, 4 B x n_ubatch 512 x (T x (32 heads + mask) + residual and kqv 2 x 4,096),
    plus the F16 pool copy, 2 B x 512 x 32 heads x T: 67,584 + 32,768 = 100,352 bytes more per token."""
    sc = scenario(RTX4090, "llama-cpp", weight_format="q4_k_m", kv_dtype="fp16")
    fit = longest_context(sc)
    m = estimate(sc).memory
    cuda_context = engine_profile("llama-cpp").cuda_context_bytes
    left = m.capacity.value - m.weights.value - cuda_context - m.buffers.value - 4 * 512 * 2 * 4096
    by_hand = left // (131_072 + 100_352) // 256 * 256  # whole 256-token cells
    assert fit.tokens == pytest.approx(by_hand, abs=256)
    assert fit.tokens > fit.trained_context == 8192  # memory allows more than the model was trained on
    assert fit.limited_by_training
    flash = longest_context(scenario(RTX4090, "llama-cpp-2026", weight_format="q4_k_m", kv_dtype="fp16"))
    assert fit.tokens < 0.6 * flash.tokens  # current builds (flash attention) hold no score matrix


def test_a_smaller_kv_type_and_a_larger_batch_move_it_as_the_cache_says():
    base = longest_context(scenario(RTX4090, "llama-cpp", weight_format="q4_k_m", kv_dtype="fp16")).tokens
    q8 = longest_context(scenario(RTX4090, "llama-cpp", weight_format="q4_k_m", kv_dtype="q8_0")).tokens
    four = longest_context(scenario(RTX4090, "llama-cpp", weight_format="q4_k_m", kv_dtype="fp16", batch=4)).tokens
    # q8_0: 34 bytes per 32 values = 8.5 bits; the 100,352 score bytes per token (above) do not shrink with it
    assert q8 / base == pytest.approx((131_072 + 100_352) / (131_072 * 8.5 / 16 + 100_352), rel=0.03)
    assert four == pytest.approx(base / 4, rel=0.02)


def test_a_model_that_does_not_fit_has_no_context():
    sc = Scenario(model=spec_from_config(DEEPSEEK_V3), cluster=ClusterSpec(gpu=H100), workload="inference",
                  inference=InferenceSettings(engine="vllm", weight_format="fp8"), engine_profile=engine_profile("vllm"))
    assert longest_context(sc).tokens == 0


def _split_scenario(model_id: str, gpu):
    from llmplan.catalog.models import load_model_catalog

    return Scenario(model=load_model_catalog().get(model_id).spec, cluster=ClusterSpec(gpu=gpu), workload="inference",
                    inference=InferenceSettings(engine="llama-cpp", weight_format="q4_k_m", kv_dtype="fp16",
                                                prompt_tokens=1024, output_tokens=256),
                    engine_profile=engine_profile("llama-cpp"))


def test_split_over_different_cards_fits_at_the_answer_and_not_one_token_more():
    """2x RTX 3090 + RTX 4090, Llama 3.1 70B Q4_K_M (llama.cpp's layer split of 80 layers + the head over
    shares 0.333 / 0.667 / 1: layer i < 0.333 x 81 on the first card, 28 + 27 + 25 layers + head): the answer is
    where the first card runs out (a 3090), every layer still on a card. Each card holds a whole layer's score
    matrix (64 heads) and its F16 pool copy: 133,120 + 65,536 B per token beside 4,096 B of KV per layer."""
    from llmplan.catalog.hardware import load_hardware_catalog
    from llmplan.core.inference.context_fit import longest_context_split
    from llmplan.core.inference.multi_gpu import split_layers

    cat = load_hardware_catalog()
    cards = [cat.gpu(g).spec for g in ("nvidia-rtx-3090-24gb", "nvidia-rtx-3090-24gb", "nvidia-rtx-4090-24gb")]
    sc = _split_scenario("meta-llama/Llama-3.1-70B", cards[0])
    fit = longest_context_split(sc, cards)

    def split_at(tokens):
        inf = sc.inference.model_copy(update={"prompt_tokens": tokens - 256})
        return split_layers(sc.model_copy(update={"inference": inf}), cards, gpu_layers=80)

    assert 30_000 < fit.tokens < 40_000  # 320 KiB of fp16 KV per token over 80 layers, + the score matrix
    assert split_at(fit.tokens).fits and not split_at(fit.tokens + 1).fits
    assert [c.layers for c in split_at(fit.tokens).cards] == [28, 27, 25]
    assert fit.capacity == cards[0].usable_memory_bytes  # a 3090 (27 layers) is the fullest card


def test_split_over_one_card_gives_the_one_gpu_answer():
    """The split's memory per card and the one-GPU memory plan count the same bytes: on one RTX 4090 both
    searches give 89,856 tokens for Llama 3.1 8B Q4_K_M (the docs' worked example; 156,416 with flash attention)."""
    from llmplan.catalog.hardware import load_hardware_catalog
    from llmplan.core.inference.context_fit import longest_context_split

    r4090 = load_hardware_catalog().gpu("nvidia-rtx-4090-24gb").spec
    sc = _split_scenario("meta-llama/Llama-3.1-8B", r4090)
    assert longest_context_split(sc, [r4090]).tokens == longest_context(sc).tokens == 89_856
