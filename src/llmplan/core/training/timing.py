"""Step time, throughput, MFU and the cost of a training run.

One GPU's step = (matmul time + memory-bound time + exposed TP/CP/EP/PP communication)
stretched by the pipeline bubble, plus the data-parallel reduction that did not hide
behind the last backward. Matmul time is the hardware FLOPs at the dtype's dense peak ×
``efficiency.matmul``. Memory-bound time is the elementwise traffic (norms, activations,
softmax, dropout, residual adds) at HBM bandwidth × ``efficiency.memory_bandwidth``
(roofline, Williams et al. 2009): each activation the backward keeps is written in the
forward, read in the backward, and its gradient written and read once — 4 passes over the
stored bytes, one more when full recompute writes them again.

Pipeline bubble (Narayanan et al. 2021 §2.2): (p-1)/m of the ideal time for 1F1B, (p-1)/(m·v)
interleaved.

Uneven stages: a pipeline moves at the pace of its slowest stage — every micro-batch waits
for it in the steady state, and the fill and drain are made of its time slots too. So the
per-GPU compute is that of the stage with the most layers: the evenly spread time × (slowest
stage's layers / mean layers per stage). 126 layers on 16 stages as 7, 8 ×14, 7: × 8/7.875 =
1.6% longer than if the same layers could be spread evenly. The head and embedding work is
still counted as spread over the stages (as for even splits), so a split that moves layers
off the first and last stage to make room for them is charged its layer imbalance only. MFU follows PaLM App. B: model FLOPs (no recompute) per second over the
cluster's peak; HFU counts the recomputed FLOPs too.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.explain import Figure
from llmplan.core.result import ComputeReport
from llmplan.core.training.flops import StepFlops
from llmplan.core.training.layout import Layout
from llmplan.core.workload import Scenario
from llmplan.errors import InputError

ELEMENTWISE_PASSES = 4


def peak_dtype(precision: str) -> str:
    return {"fp32": "fp32", "fp16": "fp16", "bf16": "bf16", "fp8": "fp8"}[precision]


@dataclass(frozen=True, slots=True)
class ComputeTimes:
    matmul: float
    memory_bound: float
    peak: float  # FLOP/s of one GPU at the training dtype
    hbm: float  # achievable bytes/s
    imbalance: float  # slowest stage's layers / mean layers per stage (1 for an even split)

    @property
    def total(self) -> float:
        return self.matmul + self.memory_bound


def compute_times(sc: Scenario, lay: Layout, sf: StepFlops, layer_act_bytes: float) -> ComputeTimes:
    gpu, eff, tr = sc.cluster.gpu, sc.efficiency, sc.training
    peak = gpu.peak_flops.for_dtype(peak_dtype(tr.precision))
    if peak <= 0:
        raise InputError(
            f"{gpu.name} has no peak FLOP/s for {tr.precision} (nor a wider type it could fall back to); "
            f"set its peak_flops.{peak_dtype(tr.precision)} or choose another training.precision"
        )
    imbalance = lay.split.imbalance()
    matmul = sf.hardware / lay.gpus / (peak * eff.matmul)
    if imbalance != 1.0:  # the slowest stage sets the pace (module doc)
        matmul *= imbalance
    passes = ELEMENTWISE_PASSES + (1 if tr.recompute == "full" else 0)
    hbm = gpu.memory_bandwidth * eff.memory_bandwidth
    mem = passes * layer_act_bytes * lay.max_stage_layers * lay.accumulation / hbm
    return ComputeTimes(matmul, mem, peak, hbm, imbalance)


def bubble_fraction(lay: Layout) -> float:
    if lay.pp == 1:
        return 0.0
    return (lay.pp - 1) / (lay.accumulation * lay.vp)


def report(sc: Scenario, lay: Layout, sf: StepFlops, ct: ComputeTimes, exposed_inner: float,
           exposed_dp: float) -> ComputeReport:
    tr, eff = sc.training, sc.efficiency
    gpus = lay.gpus
    bub = bubble_fraction(lay)
    ideal = ct.total + exposed_inner
    step = ideal * (1 + bub) + exposed_dp
    tokens = lay.tokens_per_step
    tps = tokens / step
    peak_all = ct.peak * gpus
    mfu = sf.model / step / peak_all if peak_all else 0.0
    hfu = sf.hardware / step / peak_all if peak_all else 0.0
    seconds = tr.tokens / tps
    days = seconds / 86400
    gpu_hours = seconds / 3600 * gpus
    price = sc.cluster.hourly_price
    cost = None
    if price is not None:
        cost = Figure.of(gpu_hours * price, "USD", "GPU-hours × price per GPU-hour",
                         {"gpu_hours": gpu_hours, "usd_per_gpu_hour": price}, "assumption")
    src = "megatron-2021"
    split = lay.split
    stages = {"stage_layers": split.describe(), "slowest_stage_layers": split.slowest,
              "mean_stage_layers": sum(split.per_stage) / lay.pp, "stage_imbalance": ct.imbalance}
    uneven: tuple[str, ...] = ()
    if ct.imbalance != 1.0:
        uneven = (f"uneven pipeline: the slowest stage has {split.slowest} layers against a mean of "
                  f"{stages['mean_stage_layers']:.3g}, so every pipeline time slot is {ct.imbalance - 1:.1%} longer "
                  "than an even split's",)
    return ComputeReport(
        flops_per_step=Figure.of(sf.model, "FLOP", "tokens · (3 × forward FLOPs per token; frozen weights 2×)",
                                 {"tokens_per_step": tokens}, "korthikanti"),
        hardware_flops_per_step=Figure.of(sf.hardware, "FLOP", f"model FLOPs {sf.multiplier}",
                                          {"model_flops": sf.model, "recompute_flops": sf.recompute},
                                          "korthikanti"),
        step_time_s=Figure.of(step, "s",
                              "(matmul + memory-bound + exposed TP/CP/EP/PP of the slowest pipeline stage) × "
                              "(1 + bubble) + exposed DP",
                              {"matmul_s": ct.matmul, "memory_bound_s": ct.memory_bound,
                               "exposed_inner_s": exposed_inner, "bubble": bub, "exposed_dp_s": exposed_dp,
                               **stages},
                              src, uneven),
        compute_time_s=Figure.of(ct.total, "s",
                                 "hardware FLOPs / GPUs × stage imbalance / (peak × efficiency.matmul) + "
                                 "elementwise bytes of the slowest stage / (HBM bandwidth × "
                                 "efficiency.memory_bandwidth); stage imbalance = slowest stage's layers / mean",
                                 {"hardware_flops": sf.hardware, "gpus": gpus, "peak_flops": ct.peak,
                                  "matmul_efficiency": eff.matmul, "matmul_s": ct.matmul,
                                  "memory_bound_s": ct.memory_bound, **stages}, "roofline", uneven),
        bubble_fraction=Figure.of(bub, "1", "(p-1)/(m·v), in time slots of the slowest stage",
                                  {"p": lay.pp, "m": lay.accumulation, "v": lay.vp}, src),
        tokens_per_s=Figure.of(tps, "tokens/s", "global_batch · seq_len / step time",
                               {"tokens_per_step": tokens, "step_time_s": step}, src),
        mfu=Figure.of(mfu, "1", "model FLOPs per step / (step time · GPUs · peak)",
                      {"model_flops": sf.model, "step_time_s": step, "gpus": gpus, "peak_flops": ct.peak},
                      "palm-mfu"),
        hfu=Figure.of(hfu, "1", "hardware FLOPs per step / (step time · GPUs · peak)",
                      {"hardware_flops": sf.hardware, "step_time_s": step}, "palm-mfu"),
        training_days=Figure.of(days, "d", "training.tokens / tokens per second / 86400",
                                {"tokens": tr.tokens, "tokens_per_s": tps}, "assumption"),
        gpu_hours=Figure.of(gpu_hours, "h", "training seconds / 3600 × GPUs",
                            {"seconds": seconds, "gpus": gpus}, "assumption"),
        cost_usd=cost,
    )
