"""The Hugging Face transformers engine (eager generate(), DynamicCache) against runs on a real H100.

Measured on an H100 SXM 80GB HBM3, torch 2.11 / transformers 5.17, 2026-11-24: Llama-3.1-8B built from its
config with random weights, bf16, SDPA, batch 1, greedy ``model.generate()`` with the default DynamicCache;
TTFT = median wall time of generate(max_new_tokens=1); time per output token = (time for n tokens - TTFT)
/ (n - 1); memory = torch.cuda.max_memory_reserved + the 0.5 GiB CUDA context. These numbers judge the
estimate; nothing in the engine profile was read off them (its figures come from microbenchmarks).
Tolerances: time per output token 35%, TTFT 25%, memory 5%.
"""

import statistics

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
    "both; llmplan charges the prefill the host cost of a decode step and overestimates this TTFT (~71 ms). "
    "A newer measurement that timestamped every forward of generate() (H200, 2026-11-28, below) found TTFT ≈ one "
    "decode step (24.3 vs 23.0 ms; prefill forward 21.8, decode forward 21.9 ms), so this 2026-11-24 H100 row "
    "looks like a perturbed decode measurement, not a prefill cheaper than a decode step"))
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
    return h200_plan_estimate(*H200_ROWS[name][:4])


def h200_plan_estimate(model: str, batch: int, prompt: int, new: int):
    from llmplan.catalog.models import load_model_catalog

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


# generate() taken apart, 2026-11-28 (torch 2.11.0+cu130 / transformers 5.17.0, 16-core Xeon VMs): Llama-3.1-8B from
# its config with random weights, bf16, SDPA, DynamicCache, greedy, batch 1, a 512-token prompt, 33 new tokens, eos
# disabled; three runs after a warm-up, TTFT and time per output token in seconds, one value per run.
# - H200 SXM 141GB: forward pre/post hooks and a StoppingCriteria stamped every step. TTFT = the first token's
#   stopping check (24.3, 29.5, 23.8 ms after the call: 2.0-2.7 ms of set-up, then the prompt's forward, 21.5-26.5
#   ms of host time); time per output token = (total − TTFT) / 32 (totals 854.7, 765.4, 740.9 ms): a decode forward
#   (median 21.3-25.7 ms of host time) plus 0.6-0.7 ms of the generate loop's own work.
# - H100 SXM 80GB: the earlier harness's readings, no hooks: TTFT = generate(max_new_tokens=1) (28.3-30.2 ms);
#   time per output token = (generate(33) − the median generate(1)) / 32. Its first generate(33) took 2.81 s, the
#   next two 1.34 and 1.23 s; the same machine's direct forward calls took 24.8 ms (prefill) and 24.0 ms (decode),
#   so this generate() spent 13-17 ms per token outside the forward, which the H200's stamps do not show.
# Targets only: nothing in the engine profile was set from them.
ROWS_2026_11_28 = {
    "h200, stamped steps": ((0.024314, 0.029505, 0.023847), (0.025949, 0.022998, 0.022408)),
    "h100, generate(1) and generate(33)": ((0.030235, 0.028374, 0.028306), (0.087017, 0.040928, 0.037464)),
}
# The estimate over the median run, as measured above (test_2026_11_28_miss_is_pinned): TTFT 71.2 ms, time per
# output token 61.0 ms on both GPUs (the host sets both; its figures do not depend on the GPU).
PINNED_2026_11_28 = {"h200, stamped steps": (2.93, 2.65), "h100, generate(1) and generate(33)": (2.51, 1.49)}


def estimate_2026_11_28(row: str):
    if row.startswith("h200"):
        return h200_plan_estimate("meta-llama/Llama-3.1-8B", 1, 512, 33).inference
    return h100_estimate(512, 33).inference


@pytest.mark.xfail(strict=True, reason=(
    "these 2026-11-28 runs issued a whole eager forward of Llama-3.1-8B in 21-27 ms of host time; the engine "
    "profile charges 61 ms (119 one-element-op times per layer, counted on a CPU, × the 15.5 µs launch measured on "
    "the 2026-11-24 H100 host), which the 2026-11-24 and 2026-11-27 generate() rows above agree with; one host "
    "model cannot hold both"))
@pytest.mark.parametrize("row", sorted(ROWS_2026_11_28))
def test_2026_11_28_ttft_and_time_per_output_token(row):
    ttft, tpot = (statistics.median(r) for r in ROWS_2026_11_28[row])
    e = estimate_2026_11_28(row)
    assert e.ttft_s.value == pytest.approx(ttft, rel=0.25)
    assert e.tpot_s.value == pytest.approx(tpot, rel=0.35)


@pytest.mark.parametrize("row", sorted(ROWS_2026_11_28))
def test_2026_11_28_miss_is_pinned(row):
    """How far the estimate lies above these runs, within 10%: H200 TTFT 71.2 vs 24.3 ms (2.93×), time per output
    token 61.0 vs 23.0 ms (2.65×); H100 TTFT 71.2 vs 28.4 ms (2.51×), time per output token 61.0 vs 40.9 ms (1.49×).
    A change to the host model moves these; docs/inference.md states them."""
    ttft, tpot = (statistics.median(r) for r in ROWS_2026_11_28[row])
    e = estimate_2026_11_28(row)
    ttft_ratio, tpot_ratio = PINNED_2026_11_28[row]
    assert e.ttft_s.value / ttft == pytest.approx(ttft_ratio, rel=0.10)
    assert e.tpot_s.value / tpot == pytest.approx(tpot_ratio, rel=0.10)


def test_2026_11_28_ttft_at_512_tokens_is_about_one_decode_step():
    """What the stamped H200 steps show and the estimate can be checked on: at 512 tokens a prefill is set-up plus
    one forward whose host time is a decode forward's (21.8 vs 21.9 ms, medians over the three runs; 24.8 vs 24.0 ms
    on the H100's direct forward calls), so TTFT ≈ a decode step: 24.3 / 23.0 ms = 1.06 (runs 0.94-1.28). The
    estimate: 71.2 / 61.0 ms = 1.17 (+10%; tolerance 25%). Both phases are the host's: the GPU's share of the
    prefill (1,339 kernels, 17.6 ms under torch.profiler on the H100) and of a decode step (1,500 kernels, 8.1 ms)
    is under the host's 21-27 ms."""
    ttft, tpot = (statistics.median(r) for r in ROWS_2026_11_28["h200, stamped steps"])
    e = estimate_2026_11_28("h200, stamped steps")
    assert e.ttft_s.value / e.tpot_s.value == pytest.approx(ttft / tpot, rel=0.25)
    assert e.prefill_bound == e.decode_bound == "host (kernel launches)"
