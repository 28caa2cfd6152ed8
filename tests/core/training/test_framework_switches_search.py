"""The search's quick model prices the fine-tuning switches as the engine does (issue 26, "one truth").

For eager-kernel profiles (torchtune, unsloth, the Hugging Face Trainer and its configurations) the quick
model's memory is the engine's ``memory.worst_stage`` on each distinct candidate layout
(``search.quick_memory.eager_stage_memory``), so paged optimizer states (outside PyTorch's allocator),
activation offload (two blocks on the GPU), optimizer-in-backward (one gradient at a time), bf16 optimizer
states and ZeRO-offload of the optimizer are counted by the same code; its step time adds the engine's
host-transfer term (``switches.host_transfer_time``), and its data-parallel collectives, optimizer pass
and offload time are the engine's functions. Over the grid below (4 profiles × full/LoRA/QLoRA ×
paged × activation offload × bf16 states × recompute, 1 and 2 GPUs with ZeRO 0-2 and CPU offload, 4k
and 64k tokens) memory and step time agree with the engine's to rounding (measured 2026-11-27: within
3e-16; before, 0.936-1.015 on time, from the quick model's own copies of the gradient reduce-scatter and
the offload formulas). So the planner prices these candidates once, with no full estimate each. The
bounds: 1e-9 on both, and every fit verdict the same.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from llmplan.catalog.frameworks import load_framework_profiles
from llmplan.core.engine import estimate
from llmplan.core.framework_profile import nearest_zero
from llmplan.core.search.quick import Columns, evaluate
from llmplan.core.search.shape import model_shape
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.errors import LlmplanError
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve

MODEL = "meta-llama/Llama-3.2-1B"
# (GPU, GPUs, ZeRO stage, optimizer offload, sequence): one GPU, and plain data parallelism the eager profiles run
SETUPS = {"4090": ("nvidia-rtx-4090-24gb", 1, 0, "none", 4096),
          "4090-64k": ("nvidia-rtx-4090-24gb", 1, 0, "none", 65536),
          "h100-dp2-z2": ("nvidia-h100-sxm-80gb", 2, 2, "none", 4096),
          "4090-dp2-z1-cpu": ("nvidia-rtx-4090-24gb", 2, 1, "cpu", 4096)}


def _pair(framework: str, setup: str, **switches):
    gpu, gpus, zero, offload, seq = SETUPS[setup]
    zero = nearest_zero(load_framework_profiles()[framework], zero, gpus)  # a stage the framework runs (FSDP: no ZeRO-1)
    t = TrainingSettings(framework=framework, seq_len=seq, micro_batch=2, global_batch=2 * gpus, zero_stage=zero,
                         offload=offload, optimizer="adamw", **switches)
    sc = resolve(PlanDocument(model=ModelRef(id=MODEL), hardware=HardwareRef(gpu=gpu, gpus_per_node=gpus),
                              workload="pretrain" if t.method == "full" else "finetune", training=t,
                              parallelism=ParallelLayout(dp=gpus)))
    e = estimate(sc)
    t = sc.training
    one = np.ones(1, dtype=np.int64)
    cols = Columns(tp=one, pp=one, vp=one, dp=one * gpus, cp=one, ep=one, zero=one * zero,
                   offload=one * (offload != "none"), recompute=one * ("none", "selective", "full").index(t.recompute),
                   mb=one * t.micro_batch, accum=one)
    q = evaluate(cols, model_shape(sc.model, t), sc.cluster, t, sc.efficiency, True, sc.framework)
    return e, q


@pytest.mark.parametrize("framework", ["torchtune", "unsloth", "hf-trainer", "axolotl"])
def test_quick_model_prices_the_switches_as_the_engine(framework):
    cells = fits = 0
    for setup, method, paged, offload, bf16, recompute in itertools.product(
            SETUPS, ("full", "lora", "qlora"), (False, True), (False, True), (False, True), ("none", "full")):
        if framework == "unsloth" and method == "full":
            continue  # unsloth's profile fine-tunes adapters
        switches = {"paged_optimizer": paged, "activation_offload": offload, "bf16_optimizer_states": bf16}
        try:
            e, q = _pair(framework, setup, method=method, recompute=recompute,
                         **{k: v for k, v in switches.items() if v})
        except (LlmplanError, ValueError):
            continue  # a switch the profile does not support: refused, as the schema tests check
        mem = q.memory[0] / e.memory.total.value
        step = q.step_time[0] / e.compute.step_time_s.value
        where = (setup, method, switches, recompute)
        assert abs(mem - 1) <= 1e-9, (where, mem)
        assert abs(step - 1) <= 1e-9, (where, step)
        assert (q.memory[0] <= e.memory.capacity.value) == e.fits, where
        cells += 1
        fits += e.fits
    # the grid ran (hf-trainer has no activation offload; unsloth no full nor bf16 states, and no optimizer offload:
    # its CPU-offload setup is refused, catalogs/frameworks.toml offload_targets)
    assert cells >= (3 if framework == "unsloth" else 4) * 16
    assert 0 < fits < cells  # both verdicts occur, so their agreement is tested


def test_paged_states_leave_the_quick_total_as_they_leave_the_engines():
    """bitsandbytes' paged states live in CUDA unified memory: the quick model drops them from the GPU
    total by exactly the engine's optimizer bytes."""
    e_on, q_on = _pair("torchtune", "4090", method="full", paged_optimizer=True)
    e_off, q_off = _pair("torchtune", "4090", method="full", paged_optimizer=False)
    saved_quick = q_off.memory[0] - q_on.memory[0]
    saved_engine = e_off.memory.total.value - e_on.memory.total.value
    assert saved_engine > 1e9  # a 1B model's AdamW states (bf16): gigabytes
    assert saved_quick == pytest.approx(saved_engine, rel=0.02)
    assert q_on.optimizer[0] == 0.0 < q_off.optimizer[0]
