"""Two different cards in one machine with llama.cpp's layer split (and host RAM for what fits nowhere).

The split follows llama.cpp's rule (layers in proportion to --tensor-split, by default each device's free
memory; the output head on the last device; the input embedding in host RAM), so these tests check it by
hand; the speed adds each device's own time, since a token visits the devices in turn."""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference.multi_gpu import split_layers
from llmplan.core.quant import quantized_weights
from llmplan.core.workload import InferenceSettings, Scenario
from llmplan.errors import InputError
from llmplan.formats.hf_config import spec_from_config
from tests.core.inference.models import LLAMA3_8B

L70 = dict(model_type="llama", vocab_size=128256, hidden_size=8192, num_hidden_layers=80, num_attention_heads=64,
           num_key_value_heads=8, intermediate_size=28672, max_position_embeddings=131072)  # meta-llama/Llama-3.1-70B
CAT = load_hardware_catalog()
RTX5090 = CAT.gpu("nvidia-rtx-5090-32gb").spec
RTX3090 = CAT.gpu("nvidia-rtx-3090-24gb").spec
RTX4090 = CAT.gpu("nvidia-rtx-4090-24gb").spec


def scenario(cfg, fmt, engine="llama-cpp", gpu=RTX5090, **inf):
    return Scenario(model=spec_from_config(cfg), cluster=ClusterSpec(gpu=gpu), workload="inference",
                    inference=InferenceSettings(engine=engine, weight_format=fmt, kv_dtype="fp16", prompt_tokens=4096,
                                                output_tokens=256, **inf),
                    engine_profile=engine_profile(engine))


def test_70b_q4_k_m_splits_by_free_memory_and_fits():
    p = split_layers(scenario(L70, "q4_k_m"), [RTX5090, RTX3090])
    big, small = p.cards
    share = RTX5090.usable_memory_bytes / (RTX5090.usable_memory_bytes + RTX3090.usable_memory_bytes)
    assert 45 < 80 * share < 46  # 31.8 of 55.8 GiB
    # llama.cpp llm_load_tensors (2024 and since): with the head offloaded it counts as one more layer, layer i goes
    # to the first card whose cumulative share exceeds i / 81: i / 81 < 0.570 gives layers 0..46 to the 5090
    assert big.layers == 47
    assert (small.layers, small.has_output, big.has_output) == (33, True, False)
    assert p.fits and p.host_layers == 0
    q = quantized_weights(spec_from_config(L70), "q4_k_m")
    embed = q.bytes_where(lambda g: g.name == "embed_tokens")
    assert big.weights + small.weights + embed == pytest.approx(q.total_bytes, rel=1e-9)
    # decode: each card streams its weights and KV at 0.869 of its bandwidth, plus 105.8 µs per layer: with every
    # layer on two CUDA GPUs 2024 builds pipeline the split and replay no CUDA graph (86.7 µs on one GPU)
    for c in p.cards:
        assert c.decode_s == pytest.approx((c.weights + c.kv_cache) / (c.gpu.memory_bandwidth * 0.869)
                                           + 105.8e-6 * c.layers, rel=1e-9)
    assert p.tpot_s == pytest.approx(big.decode_s + small.decode_s, rel=1e-9)


def test_what_fits_nowhere_stays_in_host_ram_and_sets_the_pace():
    q4 = split_layers(scenario(L70, "q4_k_m"), [RTX5090, RTX3090])
    q8 = split_layers(scenario(L70, "q8_0"), [RTX5090, RTX3090])  # ~70 GB of weights on 56 GB of cards
    assert q8.fits and 0 < q8.host_layers < 80
    assert q8.gpu_layers + q8.host_layers == 80
    assert not any(c.has_output for c in q8.cards)  # the head stays with the host's layers
    assert q8.tpot_s > 5 * q4.tpot_s  # host RAM at ~70 GB/s against GDDR at ~1-1.8 TB/s
    one_more = split_layers(scenario(L70, "q8_0"), [RTX5090, RTX3090], gpu_layers=q8.gpu_layers + 1)
    assert not one_more.fits


def test_explicit_tensor_split_and_a_single_card_agree_with_the_estimate():
    even = split_layers(scenario(L70, "q4_k_m"), [RTX5090, RTX3090], tensor_split=[1, 1])
    assert [c.layers for c in even.cards] == [41, 39]  # i / 81 < 0.5: layers 0..40; the head is the 81st
    sc = scenario(LLAMA3_8B, "q4_k_m", gpu=RTX4090)
    one = split_layers(sc, [RTX4090]).cards[0]
    assert one.total == pytest.approx(estimate(sc).memory.total.value, rel=0.005)


def test_engines_without_layer_split_and_empty_machines_are_refused():
    with pytest.raises(InputError, match=r"llama\.cpp"):
        split_layers(scenario(L70, "bf16", engine="vllm"), [RTX5090, RTX3090])
    with pytest.raises(InputError, match="at least one GPU"):
        split_layers(scenario(L70, "q4_k_m"), [])
    with pytest.raises(InputError, match="tensor_split"):
        split_layers(scenario(L70, "q4_k_m"), [RTX5090, RTX3090], tensor_split=[1])


def _floors(plan) -> set[float]:
    """The per-layer decode floor each card of ``plan`` paid (seconds), from its decode time less its streaming."""
    eff = engine_profile("llama-cpp").decode_bandwidth_efficiency
    return {round((c.decode_s - (c.weights + c.kv_cache) / (c.gpu.memory_bandwidth * eff)) / c.layers, 10)
            for c in plan.cards if c.layers}


def test_a_full_split_over_cuda_cards_decodes_without_cuda_graphs():
    """llama.cpp pipelines a split only when every layer and the output are on the GPUs (llama_new_context_with_model:
    ``pipeline_parallel``); then 2024 builds replay no CUDA graph (engines.toml: PR #6766's runs without graphs, 105.8
    µs a layer; PR #13814 fixed it in 2025). With layers left in host RAM, on one card, on Vulkan, or with the 2026
    profile, each card keeps the one-GPU floor."""
    full = split_layers(scenario(L70, "q4_k_m"), [RTX5090, RTX3090])
    assert _floors(full) == {105.8e-6}
    partial = split_layers(scenario(L70, "q8_0"), [RTX5090, RTX3090])
    assert partial.host_layers and _floors(partial) == {86.7e-6}
    assert _floors(split_layers(scenario(LLAMA3_8B, "q4_k_m", gpu=RTX4090), [RTX4090])) == {86.7e-6}
    vulkan = split_layers(scenario(L70, "q4_k_m", backend="vulkan"), [RTX5090, RTX3090])
    assert _floors(vulkan) == {86.7e-6}
    current = engine_profile("llama-cpp-2026")
    assert current.decode_layer_s_pipelined is None
    now = split_layers(scenario(L70, "q4_k_m", engine="llama-cpp-2026"), [RTX5090, RTX3090])
    one_gpu = current.decode_floor_per_layer(apple=False)
    assert all(c.decode_s == pytest.approx((c.weights + c.kv_cache) / (c.gpu.memory_bandwidth
               * current.decode_bandwidth_efficiency) + one_gpu * c.layers, rel=1e-9) for c in now.cards)


@pytest.mark.parametrize("engine", ["llama-cpp", "llama-cpp-2026"])
def test_a_mixture_of_experts_reads_and_multiplies_only_its_routed_experts(engine):
    # gpt-oss-20b (4 of 32 experts per token) on one card: the layer split prices it as the one-GPU estimate does
    # (a decode token reads 1/8 of the experts, a prompt token multiplies 1/8 of them); before, the split read and
    # multiplied every expert, 2.3x slow at batch 1 (tolerance 2%: the two paths round the head differently).
    from llmplan.catalog.models import load_model_catalog

    sc = Scenario(model=load_model_catalog().get("openai/gpt-oss-20b").spec, cluster=ClusterSpec(gpu=RTX4090),
                  workload="inference", engine_profile=engine_profile(engine),
                  inference=InferenceSettings(engine=engine, weight_format="mxfp4_moe", kv_dtype="fp16",
                                              prompt_tokens=512, output_tokens=128))
    one, e = split_layers(sc, [RTX4090]), estimate(sc)
    assert one.tpot_s == pytest.approx(e.inference.tpot_s.value, rel=0.02)
    assert one.ttft_s == pytest.approx(e.inference.ttft_s.value, rel=0.02)
