"""Scripted device and host sources for sampler and diagnosis tests: metric values as functions of time."""

from __future__ import annotations

import math

import numpy as np

from llmplan.watch.metrics import GPU_INDEX, HOST_INDEX, HOST_METRICS
from llmplan.watch.source import DeviceLost, GpuInfo, GpuProcess, empty_row

GIB = 2**30


class ScriptedSource:
    vendor = "scripted"

    def __init__(self, script, n: int = 1, total: int = 80 * GIB, link: float | None = 31.5e9, lost_at=None):
        self.script, self.n, self.total, self.link, self.lost_at = script, n, total, link, lost_at
        self.closed = False
        self.reads = 0

    def open(self):
        return [GpuInfo(i, f"Scripted GPU {i}", "scripted", self.total, self.link) for i in range(self.n)]

    def read(self, slot, pid, now):
        self.reads += 1
        if self.lost_at is not None and now >= self.lost_at and slot == 0:
            raise DeviceLost("a GPU fell off the bus (NVML_ERROR_GPU_IS_LOST): reboot or reset the GPU")
        row = empty_row()
        row[GPU_INDEX["mem_total_bytes"]] = self.total
        for key, value in self.script(slot, now).items():
            row[GPU_INDEX[key]] = value
        return row

    def processes(self, slot):
        return [GpuProcess(1234, GIB)]

    def close(self):
        self.closed = True


class ScriptedHost:
    reason = None

    def __init__(self, script=lambda now: {}):
        self.script = script

    def read(self, now):
        row = np.full(len(HOST_METRICS), math.nan)
        for key, value in self.script(now).items():
            row[HOST_INDEX[key]] = value
        return row


def run(sampler, seconds: float, interval: float = 1.0, start: float = 1000.0):
    """Sample at ``start, start+interval, ...`` up to ``start+seconds`` inclusive; returns the last time."""
    steps = round(seconds / interval)
    for k in range(steps + 1):
        sampler.sample(now=start + k * interval)
    return start + steps * interval
