"""Several identical cards with llama.cpp, and a model that does not fit on them all: the layer split over every
card with the first layers in host RAM (issue 24).

llama.cpp with ``-ngl k`` keeps the first n_layer - k layers on the CPU and splits the k others over every visible
GPU by ``--tensor-split`` (by default free memory: equal on identical cards), layer i of the offloaded run on the
first device whose cumulative share exceeds i / k; the output head goes to a GPU only when every layer does
(llama.cpp ``llm_load_tensors``, 2024 and since). The estimate used one card whenever it offloaded (``plan_memory``
needed tp = pp = 1); identical cards are now the equal-share case of the different-card split
(``core.inference.layer_split``), checked here byte by byte by hand and against ``multi_gpu.split_layers``.
"""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference import estimate_inference
from llmplan.core.inference.multi_gpu import split_layers
from llmplan.core.workload import InferenceSettings, ParallelLayout, Scenario
from llmplan.errors import LayoutError
from llmplan.formats.hf_config import spec_from_config

L70 = dict(model_type="llama", vocab_size=128256, hidden_size=8192, num_hidden_layers=80, num_attention_heads=64,
           num_key_value_heads=8, intermediate_size=28672, max_position_embeddings=131072)  # meta-llama/Llama-3.1-70B
RTX3090 = load_hardware_catalog().gpu("nvidia-rtx-3090-24gb").spec


def scenario(cards: int, spec=None, fmt: str = "q8_0", **inf) -> Scenario:
    settings = dict(engine="llama-cpp", weight_format=fmt, kv_dtype="fp16", prompt_tokens=4096, output_tokens=256)
    return Scenario(model=spec or spec_from_config(L70), cluster=ClusterSpec(gpu=RTX3090, gpus_per_node=cards),
                    workload="inference", parallelism=ParallelLayout(pp=cards),
                    inference=InferenceSettings(**(settings | inf)), engine_profile=engine_profile("llama-cpp"))


# Llama-3.1-70B in Q8_0 (34 B per 32 weights; norms F32), by hand from config.json:
LAYER = (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672) * 34 // 32 + 2 * 8192 * 4  # 909,180,928 B
HEAD = 128256 * 8192 * 34 // 32 + 8192 * 4  # output.weight Q8_0 + output_norm F32: 1,116,372,992 B
EMBED = 128256 * 8192 * 34 // 32  # token_embd Q8_0, always in host RAM: 1,116,340,224 B
KV_LAYER = 4352 * 2 * 8 * 128 * 2  # (4,096 + 256) tokens x K and V x 8 kv heads x 128 x fp16: 17,825,792 B


def test_two_3090s_hold_twice_the_layers_of_one_byte_for_byte():
    """70B Q8_0 (69.8 GiB) on 2 x RTX 3090 (24.0 GiB each): each card holds its layers plus its own CUDA context and
    compute buffer (the runtime, 1.13 GiB here with the score matrix of 2024 builds), so (24.0 GiB - runtime) /
    (layer + its KV) = 26.6: 26 layers a card, 52 on the cards, 28 and the head in host RAM. Before, the estimate
    offloaded on one card only: 26 layers there, 54 in host RAM."""
    e = estimate_inference(scenario(2))
    m = e.memory
    runtime = m.activations.value + m.overhead.value  # the same on each card: CUDA context, buffer, score matrix
    assert m.buffers.value == 0  # the logits belong to the head's device, and the head stays in host RAM
    per_card = int((RTX3090.usable_memory_bytes - runtime) // (LAYER + KV_LAYER))
    assert per_card == 26
    assert e.inference.gpu_layers.value == 2 * per_card == 52
    assert m.weights.value == 26 * LAYER == 23_638_704_128  # the fuller card (here both)
    assert m.kv_cache.value == 26 * KV_LAYER == 463_470_592
    assert m.total.value == 26 * (LAYER + KV_LAYER) + runtime <= RTX3090.usable_memory_bytes
    assert m.host_ram.value == 28 * LAYER + HEAD + EMBED + 28 * KV_LAYER == 28_188_901_376
    one = estimate_inference(scenario(1))
    assert one.inference.gpu_layers.value == 26  # one card: the same 26, the other 54 layers in host RAM


def test_identical_cards_are_the_different_card_split_with_equal_shares():
    """The estimate on pp identical cards and ``split_layers`` on the same cards (the ``--gpu A --gpu A`` path) place
    the same layers and bytes exactly; their times agree within 0.1% (decode: the same sum of each card's layers at
    its bandwidth and the host's layers at the host's, a layer split being a pipeline at batch 1) and 2% (prompt:
    the estimate's roofline adds the hand-off between cards and runs weight streaming beside the matmuls)."""
    sc = scenario(2)
    e = estimate_inference(sc)
    mixed = split_layers(sc.model_copy(update={"cluster": ClusterSpec(gpu=RTX3090), "parallelism": ParallelLayout()}),
                         [RTX3090, RTX3090])
    assert [c.layers for c in mixed.cards] == [26, 26] and mixed.host_layers == 28
    assert e.inference.gpu_layers.value == mixed.gpu_layers
    assert e.memory.weights.value == max(c.weights for c in mixed.cards)
    assert e.memory.total.value == max(c.total for c in mixed.cards)
    assert e.memory.host_ram.value == pytest.approx(mixed.host_bytes, rel=1e-12)
    assert e.inference.tpot_s.value == pytest.approx(mixed.tpot_s, rel=1e-3)
    assert e.inference.ttft_s.value == pytest.approx(mixed.ttft_s, rel=0.02)


def test_decode_by_hand_cards_in_turn_then_host_ram():
    """tpot = Σ over cards (their layers' bytes and KV ÷ (936 GB/s x 0.869) + 86.7 µs a layer: with layers in host
    RAM llama.cpp does not pipeline the split, so CUDA graphs stay on) + (28 layers, head and their KV) ÷ 70 GB/s
    (the profile's host RAM bandwidth, catalogs/engines.toml), at the mean context of 4,224 tokens."""
    profile = engine_profile("llama-cpp")
    e = estimate_inference(scenario(2))
    kv_tok = 2 * 8 * 128 * 2  # per layer per token, fp16
    kv = 4224 * kv_tok
    cards = 52 * (LAYER + kv) / (RTX3090.memory_bandwidth * profile.decode_bandwidth_efficiency) + 52 * 86.7e-6
    host = (28 * (LAYER + kv) + HEAD) / profile.host_memory_bandwidth
    assert profile.host_memory_bandwidth == 70e9 and profile.decode_bandwidth_efficiency == 0.869
    # compute hides under the memory time; the 2 x 8 KB hand-off between the cards adds ~10 µs
    assert e.inference.tpot_s.value == pytest.approx(cards + host, rel=2e-3)


def test_gpt_oss_120b_on_two_3090s_puts_twice_the_layers_on_the_cards():
    """The case that found the gap (2026-11-28): gpt-oss-120b MXFP4 on 2 x RTX 3090 read "fits with offload, one card
    only, 22 layers in RAM, ~29 tokens/s"; llama.cpp puts 14 layers on each card, 8 in RAM (the same split as
    ``--gpu nvidia-rtx-3090-24gb --gpu nvidia-rtx-3090-24gb``). Whole layers only (``cpu_moe_layers = 0``: left
    open, the estimate keeps experts in host RAM instead, tests/core/inference/test_cpu_moe.py)."""
    spec = load_model_catalog().get("openai/gpt-oss-120b").spec
    two = estimate_inference(scenario(2, spec, "mxfp4_moe", kv_dtype="bf16", prompt_tokens=1024, cpu_moe_layers=0))
    one = estimate_inference(scenario(1, spec, "mxfp4_moe", kv_dtype="bf16", prompt_tokens=1024, cpu_moe_layers=0))
    assert (one.inference.gpu_layers.value, two.inference.gpu_layers.value) == (14, 28)
    assert two.inference.tokens_per_s_per_user.value > 1.4 * one.inference.tokens_per_s_per_user.value


def test_a_pinned_gpu_layer_count_splits_over_every_card():
    """``inference.gpu_layers`` (``-ngl``) on several cards: llama.cpp splits those layers over them all; before,
    the estimate refused it unless tp = pp = 1."""
    e = estimate_inference(scenario(2, gpu_layers=41))
    assert e.inference.gpu_layers.value == 41
    assert e.memory.weights.value == 21 * LAYER  # i / 41 < 0.5 for i = 0 … 20: 21 layers on the first card
    with pytest.raises(LayoutError, match="gpu_layers"):
        estimate_inference(scenario(2, gpu_layers=41).model_copy(update={
            "parallelism": ParallelLayout(tp=2), "cluster": ClusterSpec(gpu=RTX3090, gpus_per_node=2)}))
