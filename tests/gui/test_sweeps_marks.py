"""Sweep data says which points fit and what is offloaded (issue 18 items 4 and 10), Qt-free.

Llama-3.1-8B Q8_0 with llama.cpp on an RTX 4080 16GB: 8.5 GB of Q8_0 weights plus a bf16 KV cache
of 128 KiB per token (2 × 8 KV heads × 128 × 32 layers × 2 bytes) fill 16 GB near 56k tokens, so
the sweep's 64k and 128k points leave layers in CPU RAM. Full fine-tuning of Llama-3-8B with ZeRO-3
on H100 80GB: 16 bytes per parameter of model states (ZeRO paper, mixed-precision Adam) are 128 GB,
more than one GPU holds and less than two hold (64 GB each, plus activations)."""

from __future__ import annotations

import itertools

from llmplan.gui import sweeps
from llmplan.gui.backend import default_plan
from llmplan.plan.evaluate import evaluate_plan
from llmplan.plan.overrides import apply_overrides

GIB = 2**30


def _scenario(*overrides: str):
    return evaluate_plan(apply_overrides(default_plan(), overrides))[0]


def test_memory_sweep_carries_the_offloaded_bytes_and_where_offload_starts():
    s = _scenario("workload=inference", "model.id=meta-llama/Llama-3.1-8B", "hardware.gpu=nvidia-rtx-4080-16gb",
                  "inference.engine=llama.cpp", "inference.weight_format=q8_0")
    m = sweeps.memory_vs_seq(s)
    assert m.offload_from == 65_536
    assert all(h == 0 for x, h in zip(m.xs, m.host, strict=True) if x < 65_536)
    assert all(h > 0 for x, h in zip(m.xs, m.host, strict=True) if x >= 65_536)
    totals = [y + h for y, h in zip(m.ys, m.host, strict=True)]
    assert all(b > a for a, b in itertools.pairwise(totals))  # the total grows with the context
    assert all(y <= m.capacity + 1 for y in m.ys)  # the GPU part stays under the capacity line
    # 128k tokens of bf16 KV: 16 GiB in all, most of it past the GPU
    assert (totals[-1] - totals[0]) / GIB >= 14


def test_memory_sweep_of_a_plan_all_on_the_gpu_has_no_offload():
    s = _scenario("workload=inference", "model.id=meta-llama/Meta-Llama-3-8B", "hardware.gpu=nvidia-rtx-4090-24gb",
                  "inference.engine=llama.cpp", "inference.weight_format=q4_k_m")
    m = sweeps.memory_vs_batch(s)
    assert m.xs and m.offload_from is None and not any(m.host)


def test_throughput_sweep_flags_setups_that_do_not_fit():
    s = _scenario("workload=finetune", "training.method=full", "model.id=meta-llama/Meta-Llama-3-8B",
                  "hardware.gpu=nvidia-h100-sxm-80gb", "training.zero_stage=3", "training.offload=none",
                  "training.recompute=full")
    g = sweeps.throughput_vs_gpus(s)
    assert g.xs[:2] == (1, 2) and len(g.fits) == len(g.xs)
    # one GPU cannot hold 8B with Adam; 2 GPUs sit at the capacity's margin (76 of 79 GiB with the fine-tuning
    # batch of 64 sequences, gradients accumulated); from there on every point fits: more replicas shard more
    first = g.fits.index(True)
    assert g.fits[0] is False and first <= 2 and all(g.fits[first:])
