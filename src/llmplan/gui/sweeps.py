"""Chart data (Qt-free): the plan's estimate re-run with one knob swept.

Every point is a real ``estimate`` of a variant of the scenario; points where the
engine refuses the variant (a layout rule) are simply left out. Points that run but do
not fit in GPU memory are kept and flagged (``Series.fits``), so a chart can mark them
instead of plotting them as valid setups (issue 18 item 10). Memory series also carry
what each point keeps off the GPUs, host RAM and NVMe per node (``Series.host``,
``Series.nvme``; ``fit.tiers.off_gpu_bytes``, the numbers of the memory bar's legend,
the results table and the CLI): under llama.cpp's partial offload the GPU part *falls*
as the context grows (layers move to the CPU), so a chart of GPU memory alone reads as
if longer contexts were cheaper. A ``Sweeps`` object is computed off the UI thread by
``charts.SweepJob``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from llmplan.core.hardware import ClusterSpec
from llmplan.core.result import Estimate
from llmplan.core.workload import Scenario
from llmplan.fit.tiers import off_gpu_bytes
from llmplan.gui.backend import run_estimate

MAX_POINTS = 10
MAX_NODE_GPUS = 8  # without a network, the sweep grows the node up to a common 8-GPU server


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    x_label: str
    y_label: str
    xs: tuple[float, ...]
    ys: tuple[float, ...]
    current_x: float | None = None
    capacity: float | None = None  # bytes: the line memory must stay under
    host: tuple[float, ...] = ()  # memory series: host RAM per node of an offload at each point (0: no offload)
    fits: tuple[bool, ...] = ()  # each point fits in GPU memory (empty: all do)
    nvme: tuple[float, ...] = ()  # memory series: NVMe per node of an offload at each point (empty: none anywhere)

    @property
    def offload_from(self) -> float | None:
        """The first x at which part of the plan is offloaded to CPU RAM or NVMe (None: nowhere)."""
        off = zip(self.xs, self.host, self.nvme or (0.0,) * len(self.xs), strict=False)
        return next((x for x, h, n in off if h > 0 or n > 0), None)


class _Points:
    """A memory series' points as they are estimated: x, memory per GPU, host RAM and NVMe per node, fits."""

    def __init__(self) -> None:
        self.xs: list[float] = []
        self.ys: list[float] = []
        self.host: list[float] = []
        self.nvme: list[float] = []
        self.fits: list[bool] = []

    def add(self, x: float, variant: Scenario, est: Estimate) -> None:
        off = dict(off_gpu_bytes(variant, est))
        self.xs.append(x)
        self.ys.append(est.memory.total.value)
        self.host.append(off.get("host_ram", 0.0))
        self.nvme.append(off.get("nvme", 0.0))
        self.fits.append(bool(est.memory.fits))

    def series(self, name: str, x_label: str, current: float, s: Scenario) -> Series:
        return Series(name, x_label, "memory per GPU", tuple(self.xs), tuple(self.ys), current,
                      s.cluster.gpu.usable_memory_bytes, tuple(self.host), tuple(self.fits),
                      tuple(self.nvme) if any(self.nvme) else ())


@dataclass(frozen=True, slots=True)
class Roofline:
    peak_flops: float  # FLOP/s, achievable ceiling for the plan's dtype
    bandwidth: float  # B/s
    points: tuple[tuple[str, float, float], ...]  # (label, FLOP/byte, FLOP/s)


@dataclass(frozen=True, slots=True)
class Sweeps:
    memory_vs_seq: Series | None = None
    memory_vs_batch: Series | None = None
    throughput_vs_gpus: Series | None = None
    roofline: Roofline | None = None
    errors: tuple[str, ...] = field(default=())


def _try(s: Scenario) -> Estimate | None:
    try:
        return run_estimate(s)
    except Exception:  # an infeasible variant is a missing point, not an error
        return None


def _doubling(start: int, stop: int) -> list[int]:
    out, v = [], max(start, 1)
    while v <= stop and len(out) < MAX_POINTS:
        out.append(v)
        v *= 2
    return out


def _with(s: Scenario, section: str, **changes) -> Scenario:
    return s.model_copy(update={section: getattr(s, section).model_copy(update=changes)})


def memory_vs_seq(s: Scenario, cancelled=lambda: False) -> Series:
    points = _Points()
    if s.workload == "inference":
        current = s.inference.prompt_tokens + s.inference.output_tokens
        top = max(s.model.max_position_embeddings, current)
        start = max(top >> (MAX_POINTS - 1), 256)
        while start <= s.inference.output_tokens:  # every point needs at least one prompt token
            start *= 2
        for ctx in _doubling(start, top):
            if cancelled():
                break
            variant = _with(s, "inference", prompt_tokens=ctx - s.inference.output_tokens)
            est = _try(variant)
            if est is not None:
                points.add(ctx, variant, est)
        x_label = "context (prompt + output tokens)"
    else:
        current = s.training.seq_len
        top = max(current * 4, 8192)
        for seq in _doubling(max(top >> (MAX_POINTS - 1), 256), top):
            if cancelled():
                break
            variant = _with(s, "training", seq_len=seq)
            est = _try(variant)
            if est is not None:
                points.add(seq, variant, est)
        x_label = "sequence length (tokens)"
    title = "Memory vs context length" if s.workload == "inference" else "Memory vs sequence length"
    return points.series(title, x_label, current, s)


def memory_vs_batch(s: Scenario, cancelled=lambda: False) -> Series:
    points = _Points()
    inference = s.workload == "inference"
    current = s.inference.batch if inference else s.training.micro_batch
    for b in _doubling(1, max(current * 4, 64 if inference else 16)):
        if cancelled():
            break
        variant = _with(s, "inference", batch=b) if inference else _with(s, "training", micro_batch=b)
        est = _try(variant)
        if est is not None:
            points.add(b, variant, est)
    return points.series("Memory vs batch", "concurrent sequences" if inference else "micro-batch (sequences per GPU)",
                         current, s)


def throughput_vs_gpus(s: Scenario, cancelled=lambda: False) -> Series:
    """Data-parallel replicas of the plan's layout: 1, 2, 4 … replicas (more nodes as needed;
    with no network, a bigger node of up to 8 GPUs). Each point says whether it fits in GPU memory:
    data parallelism replicates the model, so a layout that does not fit one replica fits none."""
    xs, ys, fits = [], [], []
    per_replica = s.parallelism.tp * s.parallelism.pp * s.parallelism.cp
    current = s.parallelism.gpus
    for dp in _doubling(1, max(s.parallelism.dp * 8, 8)):
        if cancelled():
            break
        gpus = per_replica * dp
        per_node = s.cluster.gpus_per_node
        nodes = math.ceil(gpus / per_node)
        if nodes > 1 and s.cluster.network.node_bandwidth(s.cluster.gpus_per_node) <= 0:
            if gpus > MAX_NODE_GPUS:
                break  # no network: cannot grow past one (up to 8-GPU) node
            per_node, nodes = gpus, 1
        try:
            cluster = ClusterSpec.model_validate({**s.cluster.model_dump(), "nodes": nodes,
                                                  "gpus_per_node": per_node})
        except Exception:
            break
        variant = s.model_copy(update={"cluster": cluster,
                                       "parallelism": s.parallelism.model_copy(update={"dp": dp})})
        est = _try(variant)
        if est is None:
            continue
        tps = est.inference.tokens_per_s if est.inference is not None else (
            est.compute.tokens_per_s if est.compute is not None else None)
        if tps is not None:
            xs.append(gpus)
            ys.append(tps.value)
            fits.append(bool(est.memory.fits))
    return Series("Throughput vs GPU count", "GPUs", "tokens/s", tuple(xs), tuple(ys), current, fits=tuple(fits))


def roofline(s: Scenario, est: Estimate) -> Roofline:
    """The GPU's roofs and where the workload sits. Inference: decode and prefill phases
    at the intensity implied by the estimate's own figures; training: its achieved FLOP/s."""
    gpu = s.cluster.gpu
    dtype = s.training.precision if s.workload != "inference" else (
        "fp8" if s.inference.weight_format in ("fp8",) else "bf16")
    peak = gpu.peak_flops.for_dtype(dtype)
    points: list[tuple[str, float, float]] = []
    if est.inference is not None:
        inf = est.inference
        flops_per_token = 2.0 * est.params.active
        batch = s.inference.batch
        kv = inf.kv_bytes_per_token.value * (s.inference.prompt_tokens + s.inference.output_tokens / 2) * batch
        bytes_per_step = inf.weight_bytes.value + kv
        if bytes_per_step > 0 and inf.tpot_s.value > 0:
            intensity = flops_per_token * batch / bytes_per_step
            points.append(("decode", intensity, flops_per_token * batch / inf.tpot_s.value / max(s.parallelism.gpus, 1)))
        if inf.ttft_s.value > 0 and inf.weight_bytes.value > 0:
            tokens = s.inference.prompt_tokens * batch
            intensity = flops_per_token * tokens / inf.weight_bytes.value
            points.append(("prefill", intensity, flops_per_token * tokens / inf.ttft_s.value / max(s.parallelism.gpus, 1)))
    elif est.compute is not None:
        achieved = est.compute.mfu.value * peak
        tokens_per_gpu_step = s.training.micro_batch * s.training.seq_len
        points.append(("training step", float(tokens_per_gpu_step), achieved))
    return Roofline(peak, gpu.memory_bandwidth, tuple(points))


SERIES = ("memory_vs_seq", "memory_vs_batch", "throughput_vs_gpus")  # the swept series, each its own estimates
_SWEEP = {"memory_vs_seq": memory_vs_seq, "memory_vs_batch": memory_vs_batch, "throughput_vs_gpus": throughput_vs_gpus}


def compute(s: Scenario, est: Estimate, which: tuple[str, ...] = SERIES, cancelled=lambda: False) -> Sweeps:
    """The series named in ``which`` (the others stay None) and the roofline, which needs no estimate.
    The charts ask only for the series of the chart on show: each series is 4 to 10 estimates."""
    # The line memory must stay under is the estimate's own capacity (a serving engine
    # may take only part of the GPU: vLLM 90 %), the same number the verdict compares with.
    cap = est.memory.capacity.value
    out: dict[str, Series] = {}
    for name in which:
        series = _SWEEP[name](s, cancelled)
        out[name] = dataclasses.replace(series, capacity=cap) if name != "throughput_vs_gpus" else series
    return Sweeps(**out, roofline=roofline(s, est))
