"""llama.cpp's routed experts in host RAM (``--cpu-moe``, ``--n-cpu-moe N``): bytes by hand, the estimate's choice
of experts before whole layers, the refusals, and one published run (core/inference/cpu_moe.py, docs/inference.md
"Experts in host RAM").

Bytes are exact (tolerance 0 B): ggml block sizes from ggml-common.h (MXFP4 17 B per 32 weights, Q8_0 34 B per 32,
Q4_K 144 B per 256, Q6_K 210 B per 256), tensor shapes from each model's config.json, the GGUF presets' type rules
as docs/inference.md lists them (llama.cpp src/llama-quant.cpp)."""

from __future__ import annotations

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference import estimate_inference
from llmplan.core.inference.cpu_moe import first_layers_for, flag_for
from llmplan.core.workload import InferenceSettings, ParallelLayout, Scenario
from llmplan.errors import LayoutError

RTX3090 = load_hardware_catalog().gpu("nvidia-rtx-3090-24gb").spec
GIB = 2**30


def scenario(model: str, fmt: str, n, engine: str = "llama-cpp-2026", cards: int = 1, **inf) -> Scenario:
    settings = dict(engine=engine, weight_format=fmt, kv_dtype="fp16", prompt_tokens=1024, output_tokens=256,
                    cpu_moe_layers=n) | inf
    return Scenario(model=load_model_catalog().get(model).spec, workload="inference",
                    cluster=ClusterSpec(gpu=RTX3090, gpus_per_node=cards), parallelism=ParallelLayout(pp=cards),
                    inference=InferenceSettings(**settings), engine_profile=engine_profile(engine))


# gpt-oss-120b in llama.cpp's MXFP4_MOE file (ggml-org/gpt-oss-120b-GGUF), one layer, by hand:
# experts: gate, up, down, 128 x 2880 x 2880 MXFP4 each, with their F32 biases (128 x 2880)
OSS_EXPERTS = 3 * (128 * 2880 * 2880 * 17 // 32 + 128 * 2880 * 4)  # 1,696,481,280 B
# the rest: q (4096 x 2880) and o Q8_0, k and v (512 x 2880) Q8_0, the q/k/v biases (5120) and o bias (2880) F32,
# the sinks (64) F32, two norms (2880) F32, the router (128 x 2880) and its bias F32
OSS_REST = (2 * 4096 * 2880 + 2 * 512 * 2880) * 34 // 32 + (5120 + 2880 + 64 + 2 * 2880 + 128 * 2880 + 128) * 4
OSS_HEAD = 201088 * 2880 * 34 // 32 + 2880 * 4  # output.weight Q8_0 + output_norm F32, on the GPU with -ngl 99
OSS_EMBED = 201088 * 2880 * 34 // 32  # token_embd Q8_0: always in host RAM


def test_gpt_oss_120b_bytes_by_hand():
    """--cpu-moe and --n-cpu-moe 24 on one RTX 3090: the card holds every layer but the experts kept in host RAM,
    and the head; host RAM the embedding and those experts. The file's total checks the parts: 63,374,323,968 B
    (llama-bench's size column, llama.cpp PR #16991)."""
    assert OSS_EXPERTS == 1_696_481_280 and OSS_REST == 29_731_328
    assert 36 * (OSS_EXPERTS + OSS_REST) + OSS_HEAD + OSS_EMBED == 63_374_323_968
    every = estimate_inference(scenario("openai/gpt-oss-120b", "mxfp4_moe", "all"))
    assert every.memory.weights.value == 36 * OSS_REST + OSS_HEAD == 1_685_668_608
    assert every.memory.host_ram.value == OSS_EMBED + 36 * OSS_EXPERTS == 61_688_655_360
    some = estimate_inference(scenario("openai/gpt-oss-120b", "mxfp4_moe", 24))
    assert some.memory.weights.value == 36 * OSS_REST + 12 * OSS_EXPERTS + OSS_HEAD == 22_043_443_968
    assert some.memory.host_ram.value == OSS_EMBED + 24 * OSS_EXPERTS == 41_330_880_000
    # the compute buffer holds one layer's experts for a prompt micro-batch (512 tokens here: op offload from 32)
    assert some.memory.activations.inputs["expert_upload"] == OSS_EXPERTS
    # the KV cache stays on the card whole: as with every expert on a card that holds them (an H100)
    h100 = load_hardware_catalog().gpu("nvidia-h100-sxm-80gb").spec
    on_h100 = estimate_inference(scenario("openai/gpt-oss-120b", "mxfp4_moe", 0).model_copy(
        update={"cluster": ClusterSpec(gpu=h100, gpus_per_node=1)}))
    assert some.memory.kv_cache.value == on_h100.memory.kv_cache.value


def test_qwen3_30b_a3b_q4_k_m_bytes_by_hand():
    """Qwen3-30B-A3B Q4_K_M with --cpu-moe: 48 MoE layers of 128 experts (768 x 2048). Q4_K_M keeps gate and up in
    Q4_K and gives half the layers' ffn_down (and attn_v) Q6_K (``use_more_bits``); over all 48 layers that is
    exact, so the host and card totals are."""
    gate_up = 2 * 48 * 128 * 768 * 2048 * 144 // 256
    down = 24 * 128 * 2048 * 768 * 210 // 256 + 24 * 128 * 2048 * 768 * 144 // 256
    embed = 151936 * 2048 * 144 // 256  # token_embd Q4_K
    e = estimate_inference(scenario("Qwen/Qwen3-30B-A3B", "q4_k_m", "all"))
    assert e.memory.host_ram.value == embed + gate_up + down == 17_728_192_512
    attn = 48 * (2 * 4096 * 2048 * 144 // 256 + 512 * 2048 * 144 // 256) + 24 * 512 * 2048 * (210 + 144) // 256
    small = 48 * ((2 * 128 + 2 * 2048) * 4 + 128 * 2048 * 4)  # q/k norms, two block norms, the F32 router
    head = 151936 * 2048 * 210 // 256 + 2048 * 4  # output.weight Q6_K, output_norm F32
    assert e.memory.weights.value == attn + small + head == 822_523_904


def test_an_mo_e_model_that_does_not_fit_keeps_experts_before_layers():
    """Left open (``cpu_moe_layers`` None), gpt-oss-120b on one RTX 3090: before, 14 of 36 layers on the card at
    ~27 tokens/s; now every layer on the card with the experts of the first 24 in host RAM (--n-cpu-moe 24, the
    fewest that leave room), faster per token. Stated 0, the whole-layer offload stays."""
    auto = estimate_inference(scenario("openai/gpt-oss-120b", "mxfp4_moe", None))
    layers = estimate_inference(scenario("openai/gpt-oss-120b", "mxfp4_moe", 0))
    assert auto.fits and auto.inference.gpu_layers.value == 36
    assert auto.inference.cpu_moe_layers.value == 24 and auto.inference.cpu_moe_layers.inputs["flag"] == \
        "--n-cpu-moe 24"
    assert layers.inference.gpu_layers.value == 14 and layers.inference.cpu_moe_layers.value == 0
    assert auto.inference.tokens_per_s_per_user.value > 1.5 * layers.inference.tokens_per_s_per_user.value
    # 23 experts' layers would not leave room: the choice is the fewest
    assert not estimate_inference(scenario("openai/gpt-oss-120b", "mxfp4_moe", 23)).fits
    # a model that fits on the card is left alone
    small = estimate_inference(scenario("openai/gpt-oss-20b", "mxfp4_moe", None))
    assert small.inference.cpu_moe_layers.value == 0 and small.memory.host_ram.value < 1 * GIB


def test_layers_count_from_the_first_layer_as_llama_cpp_does():
    """--n-cpu-moe N takes the first N layers by index: DeepSeek-V3's first three are dense, so N = 3 moves no
    expert and the flag for 5 MoE layers is --n-cpu-moe 8."""
    spec = load_model_catalog().get("deepseek-ai/DeepSeek-V3").spec
    assert spec.layer_mlp[:4] == ("dense", "dense", "dense", "moe")
    assert first_layers_for(spec, 5) == 8 and flag_for(spec, 5) == "--n-cpu-moe 8"
    assert flag_for(spec, spec.moe_layer_count) == "--cpu-moe"


def test_several_cards_lose_their_first_layers_experts_first():
    """gpt-oss-120b on 2 x RTX 3090 with --n-cpu-moe 10: 18 layers a card (the stage arithmetic); the first card
    keeps 8 layers' experts, the second (with the head) all 18: it is the fuller one, "per GPU"."""
    e = estimate_inference(scenario("openai/gpt-oss-120b", "mxfp4_moe", 10, cards=2))
    assert e.memory.weights.value == 18 * (OSS_REST + OSS_EXPERTS) + OSS_HEAD
    assert e.memory.host_ram.value == OSS_EMBED + 10 * OSS_EXPERTS


@pytest.mark.parametrize("engine,model,fmt,match", [
    ("ollama", "openai/gpt-oss-120b", "mxfp4_bf16", "Ollama exposes no such option.*llama.cpp"),
    ("llama-cpp-2026", "Qwen/Qwen3-8B", "q4_k_m", "no routed experts"),
])
def test_refusals_name_the_field(engine, model, fmt, match):
    with pytest.raises(ValueError, match=f"inference.cpu_moe_layers=3: .*{match}"):
        scenario(model, fmt, 3, engine=engine)


def test_refusals_that_need_the_layout():
    """Unified memory frees nothing by keeping experts in host RAM. (-ngl below the layer count composes with
    the experts: tests/core/inference/test_cpu_moe_partial.py.)"""
    mac = load_hardware_catalog().gpu("apple-m3-max-40c-128gb").spec
    with pytest.raises(ValueError, match="unified memory"):
        Scenario(**{**dict(scenario("openai/gpt-oss-120b", "mxfp4_moe", 24)), "cluster": ClusterSpec(gpu=mac)})
    with pytest.raises(LayoutError, match="unified memory"):
        estimate_inference(scenario("openai/gpt-oss-120b", "mxfp4_moe", 24).model_copy(
            update={"cluster": ClusterSpec(gpu=mac, gpus_per_node=1)}))


def test_published_rtx_3090_run_gpt_oss_120b_n_cpu_moe_26():
    """Compared, not fitted. Reddit r/LocalLLaMA "Drastically improve prompt processing speed for --n-cpu-moe
    partially offloaded models" (retold at ai-maestro.online, read 2026-11-28): gpt-oss-120b-F16.gguf (MXFP4
    experts, everything else BF16: ``mxfp4_bf16``) on one RTX 3090, llama-bench, -ub 512 (default), --n-cpu-moe 26:
    pp4096 380.27 t/s, tg128 32.29 t/s. The post states neither the CPU nor the RAM: the estimate uses llama.cpp's
    host figure (70 GB/s, Core i9-13900K DDR5-6400, engines.toml).
    Estimate: tg 39.7 t/s (+23%: the per-layer CPU/GPU hand-off is not priced, and the RAM may be slower);
    pp 278 t/s (-27%: the run moved 26 layers' experts, 44 GB, per 512-token micro-batch, i.e. 32.8 GB/s if each
    micro-batch touched every expert, above the card's PCIe 4.0 x16 31.5 GB/s: its prompts touched fewer experts
    than uniform routing, the floor the estimate prices). Bands pinned: tg within +10% .. +35%, pp -35% .. -15%."""
    e = estimate_inference(scenario("openai/gpt-oss-120b", "mxfp4_bf16", 26, prompt_tokens=4096, output_tokens=128))
    tg = 1 / e.inference.tpot_s.value
    pp = 4096 / e.inference.ttft_s.value
    assert e.fits
    assert 1.10 <= tg / 32.29 <= 1.35
    assert 0.65 <= pp / 380.27 <= 0.85


def test_experts_in_host_without_a_host_bandwidth_say_what_stays_there():
    """Lead's review (2026-11-28): a user engine with no host bandwidth, every layer on the GPU but the experts in
    host RAM, read "0 layers stay in host RAM ..."; the error now names the experts."""
    from llmplan.errors import InputError

    sc = scenario("openai/gpt-oss-120b", "mxfp4_moe", "all")
    sc = sc.model_copy(update={
        "cluster": ClusterSpec(gpu=RTX3090.model_copy(update={"pcie_bandwidth": None})),
        "engine_profile": sc.engine_profile.model_copy(update={"host_memory_bandwidth": None})})
    with pytest.raises(InputError, match=r"^the routed experts of 36 layers stay in host RAM"):
        estimate_inference(sc)
