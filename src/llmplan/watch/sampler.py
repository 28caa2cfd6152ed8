"""The sampler: every GPU source and the host, one row each per sample, into preallocated rings.

`open_sampler` finds the sources (NVML, then amd-smi/rocm-smi, then Apple's IOKit statistics);
with no driver or no GPU it says why and watches the host alone. `Sampler.sample` reads every
device *outside* the lock and appends under it, so a reader (`snapshot`) never waits on a driver
call. `Watcher` runs `sample` in its own daemon thread at the chosen interval, which is how the
GUI stays responsive whatever NVML does. Peaks are kept in running maxima next to the rings, so
the run file's peak is exact even after the ring has wrapped.
"""

from __future__ import annotations

import importlib
import math
import platform
import threading
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from llmplan.errors import InputError
from llmplan.watch.host import open_host
from llmplan.watch.metrics import GPU_INDEX as G
from llmplan.watch.metrics import GPU_METRICS, HOST_METRICS
from llmplan.watch.process import pid_alive
from llmplan.watch.ring import Ring
from llmplan.watch.source import DeviceLost, GpuInfo, GpuProcess, GpuSource

MIN_INTERVAL_S, MAX_INTERVAL_S, DEFAULT_INTERVAL_S = 0.1, 10.0, 1.0
DEFAULT_CAPACITY = 86_400  # rows per ring: a day at the default 1 s interval
MAX_EVENTS = 256


def check_interval(interval_s: float) -> float:
    if not isinstance(interval_s, int | float) or not math.isfinite(interval_s) \
            or not MIN_INTERVAL_S <= interval_s <= MAX_INTERVAL_S:
        raise InputError(f"interval must be between {MIN_INTERVAL_S:g} and {MAX_INTERVAL_S:g} s, got {interval_s!r}")
    return float(interval_s)


@dataclass(frozen=True)
class Event:
    """Something that happened during the watch: a GPU stopped, the watched process exited."""

    t: float
    kind: str  # "gpu_stopped" | "process_exited" | "attached"
    text: str
    gpu: int | None = None


@dataclass
class GpuTrack:
    info: GpuInfo
    source: GpuSource
    slot: int
    ring: Ring
    stopped: str | None = None
    peak_used_bytes: float = math.nan
    peak_proc_bytes: float = math.nan
    util_sum: float = 0.0
    util_n: int = 0


@dataclass(frozen=True)
class GpuView:
    info: GpuInfo
    t: np.ndarray
    values: np.ndarray
    stopped: str | None
    peak_used_bytes: float
    peak_proc_bytes: float
    mean_util_pct: float


@dataclass(frozen=True)
class Snapshot:
    """Copies of what was recorded (within the asked window), safe to read in any thread."""

    started: float
    now: float
    gpus: tuple[GpuView, ...]
    host_t: np.ndarray
    host: np.ndarray
    events: tuple[Event, ...]
    reasons: tuple[str, ...]
    pid: int | None
    process_exited_at: float | None
    samples: int
    host_reason: str | None = None
    extra: dict = field(default_factory=dict)


class Sampler:
    def __init__(self, sources: list[tuple[GpuSource, list[GpuInfo]]], host, *, pid: int | None = None,
                 capacity: int = DEFAULT_CAPACITY, reasons: tuple[str, ...] = (), clock=time.time,
                 alive=pid_alive):
        self.gpus = [GpuTrack(info, src, slot, Ring(capacity, len(GPU_METRICS)))
                     for src, infos in sources for slot, info in enumerate(infos)]
        self._sources = [src for src, _ in sources]
        self.host = host
        self.host_ring = Ring(capacity, len(HOST_METRICS))
        self.reasons = tuple(reasons)
        self.events: deque[Event] = deque(maxlen=MAX_EVENTS)
        self.clock, self._alive = clock, alive
        self.started = clock()
        self.samples = 0
        self.pid: int | None = None
        self.process_exited_at: float | None = None
        self.host_error: str | None = None
        self._lock = threading.Lock()
        if pid is not None:
            self.set_pid(pid)

    # ---- the watched process ---------------------------------------------------------------
    def set_pid(self, pid: int | None) -> None:
        """Attach to ``pid`` (None: detach); its memory is shown alone from the next sample."""
        if pid is not None and (not isinstance(pid, int) or pid <= 0):
            raise InputError(f"a process id is a positive whole number, got {pid!r}")
        if pid is not None and self._alive(pid) is False:
            raise InputError(f"no running process with id {pid}")
        with self._lock:
            self.pid, self.process_exited_at = pid, None
            for g in self.gpus:
                g.peak_proc_bytes = math.nan
            if pid is not None:
                self.events.append(Event(self.clock(), "attached", f"watching process {pid}"))

    @property
    def process_exited(self) -> bool:
        return self.process_exited_at is not None

    # ---- sampling --------------------------------------------------------------------------
    def sample(self, now: float | None = None) -> None:
        """Read every live GPU and the host once and record the rows."""
        now = self.clock() if now is None else now
        pid = None if self.process_exited else self.pid
        rows: list[tuple[GpuTrack, np.ndarray | None, str | None]] = []
        for g in self.gpus:
            if g.stopped is not None:
                continue
            try:
                rows.append((g, g.source.read(g.slot, pid, now), None))
            except DeviceLost as exc:
                rows.append((g, None, str(exc) or "the GPU stopped answering"))
            except Exception as exc:  # a parser bug must stop one GPU, not the watch
                rows.append((g, None, f"sampling failed: {exc!r}"))
        try:
            host = self.host.read(now)
        except Exception as exc:  # a host reader's bug costs that sample's host row, not the watch
            host = np.full(len(HOST_METRICS), np.nan)
            self.host_error = f"host metrics failed: {exc!r}"
        exited = pid is not None and self._alive(pid) is False
        with self._lock:
            for g, row, lost in rows:
                if row is None:
                    g.stopped = lost
                    self.events.append(Event(now, "gpu_stopped", f"GPU {g.info.index} stopped: {lost}", g.info.index))
                    continue
                g.ring.append(now, row)
                g.peak_used_bytes = np.fmax(g.peak_used_bytes, row[G["mem_used_bytes"]])
                g.peak_proc_bytes = np.fmax(g.peak_proc_bytes, row[G["proc_mem_bytes"]])
                if math.isfinite(row[G["util_pct"]]):
                    g.util_sum += row[G["util_pct"]]
                    g.util_n += 1
            self.host_ring.append(now, host)
            if exited:
                self.process_exited_at = now
                self.events.append(Event(now, "process_exited", f"process {pid} exited"))
            self.samples += 1

    def processes(self, gpu: int) -> list[GpuProcess]:
        """The compute processes on GPU ``gpu`` (position in `gpus`) at the last sample."""
        g = self.gpus[gpu]
        return [] if g.stopped else g.source.processes(g.slot)

    def snapshot(self, window_s: float | None = None) -> Snapshot:
        with self._lock:
            gpus = tuple(GpuView(g.info, *g.ring.window(window_s), g.stopped, float(g.peak_used_bytes),
                                 float(g.peak_proc_bytes), g.util_sum / g.util_n if g.util_n else math.nan)
                         for g in self.gpus)
            host_t, host = self.host_ring.window(window_s)
            return Snapshot(self.started, self.host_ring.last_time(), gpus, host_t, host, tuple(self.events),
                            self.reasons, self.pid, self.process_exited_at, self.samples,
                            self.host_error or getattr(self.host, "reason", None))

    def close(self) -> None:
        for src in self._sources:
            src.close()


def _open_nvml(nvml_module=None) -> tuple[list, list[str]]:
    from llmplan.hw.nvidia import nvml_error_reason
    from llmplan.watch.nvml import NvmlSource

    try:
        nvml = nvml_module or importlib.import_module("pynvml")
    except ImportError:
        return [], ["NVML Python bindings not installed (pip install nvidia-ml-py)"]
    src = NvmlSource(nvml)
    try:
        infos = src.open()
    except DeviceLost as exc:
        src.close()
        return [], [str(exc)]
    except Exception as exc:
        if isinstance(exc, nvml.NVMLError):
            return [], [nvml_error_reason(exc)]
        return [], [f"NVML failed: {exc!r}"]
    if not infos:
        src.close()
        return [], ["NVML reports no NVIDIA GPU"]
    return [(src, infos)], []


def _open_amd() -> tuple[list, list[str]]:
    from dataclasses import replace

    from llmplan.hw.amd import probe_amd
    from llmplan.watch.amd import AmdSource

    src = AmdSource()
    try:
        infos = src.open()
    except LookupError as exc:
        return [], [str(exc)]
    names = {g.index: g.name for g in probe_amd().gpus}  # amd-smi metric has no names; static has them
    return [(src, [replace(i, name=names.get(i.index, i.name)) for i in infos])], []


def _open_apple() -> tuple[list, list[str]]:
    if platform.system() != "Darwin" or platform.machine() != "arm64":
        return [], []
    from llmplan.hw.apple import probe_apple
    from llmplan.watch.apple import AppleSource

    probe = probe_apple()
    gpu = probe.gpus[0] if probe.gpus else None
    src = AppleSource(gpu.name if gpu else "Apple GPU", gpu.usable_memory_bytes if gpu else None)
    try:
        return [(src, src.open())], []
    except LookupError as exc:
        return [], [str(exc)]


def open_sources(nvml_module=None) -> tuple[list, tuple[str, ...]]:
    """Every GPU source that answers, and why the others did not. Never raises."""
    found, reasons = [], []
    for opener in (lambda: _open_nvml(nvml_module), _open_amd, _open_apple):
        try:
            srcs, why = opener()
        except Exception as exc:
            srcs, why = [], [f"GPU probe failed unexpectedly: {exc!r}"]
        found += srcs
        reasons += why
        if found:
            return found, ()  # one vendor per machine is the common case; the first that answers wins
    return [], tuple(reasons)


def open_sampler(pid: int | None = None, capacity: int = DEFAULT_CAPACITY, nvml_module=None) -> Sampler:
    """A sampler over this machine's GPUs (host only, with reasons, when there are none)."""
    sources, reasons = open_sources(nvml_module)
    return Sampler(sources, open_host(), pid=pid, capacity=capacity, reasons=reasons)


class Watcher:
    """Runs `Sampler.sample` every ``interval_s`` in a daemon thread; `stop` ends it within one interval."""

    def __init__(self, sampler: Sampler, interval_s: float = DEFAULT_INTERVAL_S):
        self.sampler = sampler
        self.interval_s = check_interval(interval_s)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: str | None = None

    def set_interval(self, interval_s: float) -> None:
        self.interval_s = check_interval(interval_s)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self.running:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="llmplan-watch", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        due = time.monotonic()
        while not self._stop.is_set():
            try:
                self.sampler.sample()
            except Exception as exc:  # never die silently: the panel shows it
                self.error = f"sampling stopped: {exc!r}"
                return
            due += self.interval_s
            if due < time.monotonic():  # a sample slower than the interval (amd-smi): wait a full one
                due = time.monotonic() + self.interval_s
            self._stop.wait(max(due - time.monotonic(), 0.0))

    def stop(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
