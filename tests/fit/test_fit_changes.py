"""The change ladder: its sourced quality figures, its ranking, and host RAM as a real limit."""

from __future__ import annotations

import pytest
from hw_fixtures import data_text

from llmplan.core.workload import TrainingSettings
from llmplan.fit.changes import GGUF_LADDER, QUALITY_LOSS, _effective, format_label, weight_distance
from llmplan.fit.local import fit_this_machine, local_hardware
from llmplan.hw.host import parse_meminfo
from llmplan.hw.nvidia import parse_nvidia_smi_csv
from llmplan.hw.types import DetectionReport, HostInfo
from llmplan.plan.document import ModelRef, PlanDocument

GIB = 2**30


def test_quality_loss_is_what_llama_quantize_prints():
    """llama.cpp tools/quantize/quantize.cpp QUANT_OPTIONS, "+x ppl @ Llama-3-8B" (exact)."""
    printed = {"q8_0": 0.0026, "q6_k": 0.0217, "q5_k_m": 0.0569, "q5_k_s": 0.1049, "q4_k_m": 0.1754,
               "q4_k_s": 0.2689, "q3_k_l": 0.5562, "q3_k_m": 0.6569, "q3_k_s": 1.6321, "q2_k": 3.5199}
    assert {k: QUALITY_LOSS[k] for k in printed} == printed


def test_the_ladder_only_gives_up_more_and_distances_follow():
    losses = [QUALITY_LOSS[f] for f in GGUF_LADDER]
    assert losses == sorted(losses)
    assert [weight_distance(f) for f in GGUF_LADDER] == sorted(weight_distance(f) for f in GGUF_LADDER)
    assert weight_distance("q4_k_m") == pytest.approx(0.05 + 2 * 0.1754)
    assert weight_distance("q4_k_m") < 1.0  # Q4_K_M is nearer than halving the context (distance 1.0)
    assert weight_distance("q3_k_m") > 1.0


def test_labels_and_no_op_overrides():
    assert [format_label(f) for f in ("q4_k_m", "bf16", "awq-4bit", "fp8")] == ["Q4_K_M", "bf16", "AWQ 4-bit", "FP8"]
    current = {"parallelism": {"tp": 1, "pp": 1}, "inference": {"engine": "vllm", "gpu_layers": None}}
    kept = _effective(("inference.engine=llama.cpp", "inference.gpu_layers=null", "parallelism.tp=1"), current)
    assert kept == ("inference.engine=llama.cpp",)


def _h100_node(ram_available: int) -> DetectionReport:
    host = HostInfo("AMD EPYC 9654", 192, 96, ram_available, ram_available, "Linux")
    return DetectionReport(gpus=parse_nvidia_smi_csv(data_text("nvidia_smi_8xh100_sxm.csv")), host=host)


def test_zero_offload_is_offered_only_when_host_ram_holds_it():
    """Full fine-tuning of Llama-3.1-70B on 8× H100 at TP 8 needs ~168 GiB per GPU. The offload (the plan's
    framework resolves to Megatron-Core here: --optimizer-cpu-offload) moves the fp32 master weights, Adam states
    and a pinned fp32 gradient buffer (16 B/param, hybrid_optimizer.py at d98e8a6: 70.55e9 × 16 B = 1,051 GiB;
    788 GiB before the gradient buffer was counted) to host RAM: offered on a 1.5 TiB node, not on one with
    23 GiB (the development VM's /proc/meminfo)."""
    # the knobs stated as they are, so the default policy (core.search.policy) leaves them to the ladder
    stated = TrainingSettings(zero_stage=1, recompute="selective", micro_batch=1, offload="none")
    doc = PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-70B"), workload="finetune", training=stated)
    big = fit_this_machine(doc, local_hardware(_h100_node(1536 * GIB)))
    offload = [c for c in big.changes if c.kind == "offload"]
    assert offload and offload[0].overrides == ("training.offload=cpu",)
    assert offload[0].summary.host_needed_bytes / GIB == pytest.approx(70.55e9 * 16 / GIB, rel=0.02)
    _, avail = parse_meminfo(data_text("proc_meminfo.txt"))
    small = fit_this_machine(doc, local_hardware(_h100_node(avail)))
    assert not any(c.kind == "offload" for c in small.changes)
    assert all(c.summary.host_ok for c in small.changes)


@pytest.mark.parametrize(("engine", "fmt", "offered"), [
    ("llama.cpp", "mxfp4_moe", []),
    ("ollama", "mxfp4_bf16", ["Use MXFP4_MOE weights instead of MXFP4_BF16"]),
    ("vllm", "mxfp4", ["Run it with llama.cpp and MXFP4_MOE weights"]),
])
def test_gpt_oss_is_offered_no_preset_that_would_requantise_its_experts(engine, fmt, offered):
    # Every published GGUF quant of gpt-oss keeps the MXFP4 experts (bartowski's gpt-oss-20b card: "the size
    # differences are negligible"); llmplan's Q3_K_M would requantise them to Q3_K and promise a file nobody ships.
    from llmplan.fit.changes import inference_steps
    from llmplan.plan.document import HardwareRef
    from llmplan.plan.overrides import apply_overrides

    doc = PlanDocument(name="x", model=ModelRef(id="openai/gpt-oss-20b"), hardware=HardwareRef(gpu="nvidia-rtx-3060-12gb"))
    doc = apply_overrides(doc, ["workload=inference", f"inference.engine={engine}", f"inference.weight_format={fmt}"])
    steps = [s.what for group in inference_steps(doc, False) for s in group if s.kind in ("weights", "engine")]
    assert steps == offered
