"""The Hugging Face transformers engine (eager generate(), DynamicCache) against runs on a real H100.

Measured on an H100 SXM 80GB HBM3, torch 2.11 / transformers 5.17, 2026-11-24: Llama-3.1-8B built from its
config with random weights, bf16, SDPA, batch 1, greedy ``model.generate()`` with the default DynamicCache;
TTFT = median wall time of generate(max_new_tokens=1); time per output token = (time for n tokens - TTFT)
/ (n - 1); memory = torch.cuda.max_memory_reserved + the 0.5 GiB CUDA context. These numbers judge the
estimate; nothing in the engine profile was read off them (its figures come from microbenchmarks).
Tolerances: time per output token 35%, TTFT 25%, memory 5%.
"""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.workload import InferenceSettings, Scenario
from llmplan.formats.hf_config import spec_from_config
from tests.core.inference.models import LLAMA3_8B

CONTEXT = 536_870_912  # the CUDA context nvidia-smi adds to what PyTorch reserves
LLAMA31_8B = {**LLAMA3_8B, "max_position_embeddings": 131072}

# (prompt, new tokens, TTFT s, s per output token, peak reserved bytes), measured as the module docstring says
ROWS = {
    512: (128, 0.03772759200001019, 0.0615764718582676, 16_349_396_992),
    8192: (32, 0.2592950769999902, 0.05067256282258141, 18_712_887_296),
}


def h100_estimate(prompt: int, new: int):
    cat = load_hardware_catalog()
    gpu_id = "nvidia-h100-sxm-80gb"
    sc = Scenario(model=spec_from_config(LLAMA31_8B), cluster=ClusterSpec(gpu=cat.gpu(gpu_id).spec),
                  workload="inference", efficiency=cat.efficiency_for(gpu_id),
                  inference=InferenceSettings(engine="transformers", batch=1, prompt_tokens=prompt,
                                              output_tokens=new),
                  engine_profile=engine_profile("transformers"))
    return estimate(sc)


@pytest.mark.parametrize("prompt", sorted(ROWS))
def test_time_per_output_token_is_host_bound_and_matches(prompt):
    new, _, tpot, _ = ROWS[prompt]
    e = h100_estimate(prompt, new)
    assert e.inference.tpot_s.value == pytest.approx(tpot, rel=0.35)
    assert e.inference.decode_bound == "host (kernel launches)"
    # The GPU alone would stream the 16 GB of weights in ~5.5 ms: the host, not HBM, sets the pace.
    assert e.inference.tpot_s.inputs["memory_s"] < 0.2 * e.inference.tpot_s.value


def test_long_prompt_ttft_is_gpu_bound_and_matches():
    new, ttft, _, _ = ROWS[8192]
    e = h100_estimate(8192, new)
    assert e.inference.ttft_s.value == pytest.approx(ttft, rel=0.25)
    assert e.inference.prefill_bound == "compute"


@pytest.mark.xfail(strict=True, reason=(
    "measured TTFT at 512 tokens (37.7 ms, set-up and a whole forward) is shorter than the measured decode step "
    "(61.6 ms, one forward of one token): no host model that charges both forwards the same eager ops can hold "
    "both; llmplan charges the prefill the host cost of a decode step and overestimates this TTFT (~71 ms)"))
def test_short_prompt_ttft():
    new, ttft, _, _ = ROWS[512]
    assert h100_estimate(512, new).inference.ttft_s.value == pytest.approx(ttft, rel=0.25)


@pytest.mark.parametrize("prompt", sorted(ROWS))
def test_memory_matches_reserved_plus_context(prompt):
    new, _, _, reserved = ROWS[prompt]
    e = h100_estimate(prompt, new)
    assert e.memory.total.value == pytest.approx(reserved + CONTEXT, rel=0.05)


def test_profile_says_what_it_describes():
    p = engine_profile("transformers")
    assert "eager" in p.describes and "static" in p.describes and "torch.compile" in p.describes


def test_host_cost_scales_with_layers_not_parameters():
    # Host-bound decode: a model with half the layers takes about half as long per token, whatever its width.
    full = h100_estimate(512, 128).inference.tpot_s.value
    cat = load_hardware_catalog()
    half = {**LLAMA31_8B, "num_hidden_layers": 16, "hidden_size": 2048, "intermediate_size": 8192,
            "num_attention_heads": 32, "num_key_value_heads": 8}
    sc = Scenario(model=spec_from_config(half), cluster=ClusterSpec(gpu=cat.gpu("nvidia-h100-sxm-80gb").spec),
                  workload="inference", inference=InferenceSettings(engine="transformers", prompt_tokens=512,
                                                                    output_tokens=128),
                  engine_profile=engine_profile("transformers"))
    small = estimate(sc).inference.tpot_s.value
    assert small == pytest.approx(full * (16 * 119 + 127) / (32 * 119 + 127), rel=0.01)


# Two more generate() runs, on an H200 SXM 141GB (torch 2.11 / transformers 5.17, 2026-11-27; the same harness and
# readings as above, other models, one at batch 4): (model, batch, prompt, new tokens, TTFT s, s per output token,
# peak reserved bytes). Targets only: nothing was set from them.
H200_ROWS = {
    "qwen2.5-7b": ("Qwen/Qwen2.5-7B", 1, 512, 64, 0.02581781199998545, 0.05646294503174631, 15_573_450_752),
    "llama-3.2-3b-b4": ("meta-llama/Llama-3.2-3B", 4, 1024, 64, 0.059786392999995996, 0.05855542189682536,
                        7_369_392_128),
}


def h200_estimate(name: str):
    from llmplan.catalog.models import load_model_catalog

    model, batch, prompt, new = H200_ROWS[name][:4]
    cat, gpu_id = load_hardware_catalog(), "nvidia-h200-sxm-141gb"
    sc = Scenario(model=load_model_catalog().get(model).spec, cluster=ClusterSpec(gpu=cat.gpu(gpu_id).spec),
                  workload="inference", efficiency=cat.efficiency_for(gpu_id),
                  inference=InferenceSettings(engine="transformers", batch=batch, prompt_tokens=prompt,
                                              output_tokens=new),
                  engine_profile=engine_profile("transformers"))
    return estimate(sc)


@pytest.mark.parametrize("name", sorted(H200_ROWS))
def test_h200_time_per_output_token_and_memory(name):
    """Recorded 2026-11-27: 53.6 vs 56.5 ms (-5.1%) and 53.6 vs 58.6 ms (-8.5%); memory -1.6% and -2.7%."""
    *_, tpot, reserved = H200_ROWS[name]
    e = h200_estimate(name)
    assert e.inference.tpot_s.value == pytest.approx(tpot, rel=0.35)
    assert e.inference.decode_bound == "host (kernel launches)"
    assert e.memory.total.value == pytest.approx(reserved + CONTEXT, rel=0.05)


def test_h200_ttft_of_a_batch_of_long_prompts():
    """4 × 1,024 tokens: 63.8 vs 59.8 ms (+6.7%). The 512-token single prompt (25.8 ms measured, 63.8 ours) is the
    short-prompt case of the xfail above: its prefill is charged a decode step's host cost."""
    ttft = H200_ROWS["llama-3.2-3b-b4"][4]
    assert h200_estimate("llama-3.2-3b-b4").inference.ttft_s.value == pytest.approx(ttft, rel=0.25)
