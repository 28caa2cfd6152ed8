"""Checkpoint interval and goodput under failures (Young 1974; Daly 2006).

A synchronous job on N GPUs fails as often as any of its GPUs: with λ interruptions per
GPU-hour the job's mean time between failures is M = 1 / (λ · N). Saving a checkpoint
every τ seconds of work costs δ (the blocking save time) each time; a failure loses on
average τ/2 of work (half an interval) plus R, the time to restart and reload.

Over a wall time W spent to do U seconds of useful work:

    W = U · (1 + δ/τ)  +  (W / M) · (τ/2 + R)
    goodput = U / W = (1 − (τ/2 + R)/M) / (1 + δ/τ)

To first order in δ/τ and τ/M the wasted fraction is δ/τ + τ/(2M) + R/M, which is
smallest at Young's interval τ* = sqrt(2 · δ · M). The exact form above peaks at
sqrt(δ² + 2δ(M − R)) − δ, Young's value with Daly's (2006) correction; the goodput lost by
using Young's interval instead is of order (δ/M), negligible when checkpoints take
seconds to minutes and failures come hours apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmplan.core.explain import Figure

_HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class Goodput:
    mtbf_s: Figure  # mean time between job interruptions
    interval_s: Figure  # work between checkpoints
    waste_fraction: Figure  # first-order wasted share of wall time (Young's objective)
    goodput: Figure  # useful time / wall time (exact form above)
    failures: Figure  # expected interruptions over the run
    ideal_time_s: Figure  # the run without failures or checkpoints
    wall_time_s: Figure  # the run with them


def job_mtbf_s(failures_per_gpu_hour: float, gpus: int) -> float:
    """Mean time between interruptions of a job spanning ``gpus`` GPUs, in seconds."""
    return _HOUR / (failures_per_gpu_hour * gpus)


def young_daly_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """τ* = sqrt(2 · δ · M): the interval minimising ``first_order_waste``."""
    return math.sqrt(2.0 * checkpoint_s * mtbf_s)


def first_order_waste(interval_s: float, checkpoint_s: float, mtbf_s: float, restart_s: float) -> float:
    """Wasted share of wall time to first order: δ/τ + (τ/2 + R)/M."""
    return checkpoint_s / interval_s + (interval_s / 2.0 + restart_s) / mtbf_s


def goodput_fraction(interval_s: float, checkpoint_s: float, mtbf_s: float, restart_s: float) -> float:
    """Useful time / wall time, (1 − (τ/2 + R)/M) / (1 + δ/τ); 0 when failures outpace progress."""
    lost = 1.0 - (interval_s / 2.0 + restart_s) / mtbf_s
    return _clip(lost / (1.0 + checkpoint_s / interval_s))


def _clip(g):  # works on floats and numpy arrays alike (the tests scan intervals as arrays)
    return g * (g > 0)


def goodput_report(*, ideal_time_s: float, checkpoint_s: float, restart_s: float, failures_per_gpu_hour: float,
                   gpus: int, interval_s: float | None, failure_source: str) -> Goodput:
    """Interval (Young/Daly unless fixed), goodput and wall time of a run of ``ideal_time_s``."""
    m = job_mtbf_s(failures_per_gpu_hour, gpus)
    mtbf = Figure.of(m, "s", "3600 / (failures per GPU-hour × GPUs)",
                     {"failures_per_gpu_hour": failures_per_gpu_hour, "gpus": gpus}, failure_source)
    if interval_s is None:
        tau = young_daly_interval_s(checkpoint_s, m) if checkpoint_s > 0 else m
        interval = Figure.of(tau, "s", "sqrt(2 × checkpoint time × MTBF)",
                             {"checkpoint_s": checkpoint_s, "mtbf_s": m}, "young-daly")
    else:
        tau = interval_s
        interval = Figure.of(tau, "s", "set by the user", {"interval_s": interval_s})
    inputs = {"interval_s": tau, "checkpoint_s": checkpoint_s, "mtbf_s": m, "restart_s": restart_s}
    waste = Figure.of(first_order_waste(tau, checkpoint_s, m, restart_s), "1", "δ/τ + (τ/2 + R)/M", inputs,
                      "young-daly")
    g = goodput_fraction(tau, checkpoint_s, m, restart_s)
    good = Figure.of(g, "1", "(1 − (τ/2 + R)/M) / (1 + δ/τ)", inputs, "young-daly",
                     ("failures arrive as a Poisson process; each loses half an interval plus the restart",))
    wall = ideal_time_s / g if g > 0 else math.inf
    return Goodput(
        mtbf_s=mtbf,
        interval_s=interval,
        waste_fraction=waste,
        goodput=good,
        failures=Figure.of(wall / m, "1", "wall time / MTBF", {"wall_time_s": wall, "mtbf_s": m}, failure_source),
        ideal_time_s=Figure.of(ideal_time_s, "s", "training tokens / tokens per second", {}),
        wall_time_s=Figure.of(wall, "s", "ideal time / goodput", {"ideal_time_s": ideal_time_s, "goodput": g},
                              "young-daly"),
    )
