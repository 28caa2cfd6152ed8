"""``detect_all``: every probe at once, each bounded, and one report with the reasons behind the gaps.

The GUI calls this from a background thread; it returns within about ``timeout_s`` even
when a driver hangs, because each probe runs in its own daemon thread and is abandoned,
with a "timed out" reason, when the deadline passes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from llmplan.hw._run import call_with_timeout
from llmplan.hw.amd import probe_amd
from llmplan.hw.apple import probe_apple
from llmplan.hw.host import probe_host
from llmplan.hw.intel import probe_intel
from llmplan.hw.nvidia import probe_nvidia
from llmplan.hw.types import INTEGRATED_SOURCES, DetectionReport, HostInfo, ProbeResult

GpuProbe = Callable[[float], ProbeResult]

GPU_PROBES: tuple[tuple[str, GpuProbe], ...] = (
    ("NVIDIA", probe_nvidia),
    ("AMD", probe_amd),
    ("Apple", probe_apple),
    ("Intel", probe_intel),
)


def detect_all(timeout_s: float = 5.0, probes: tuple[tuple[str, GpuProbe], ...] | None = None) -> DetectionReport:
    """Detect GPUs and host facts within about ``timeout_s`` seconds. Never raises.

    Each GPU probe gets the whole budget (they run in parallel); a probe's own commands use
    a little less so that it can still report which command hung.
    """
    start = time.perf_counter()
    inner = max(timeout_s * 0.8, 0.05)
    chosen = GPU_PROBES if probes is None else probes
    results: dict[str, object] = {}

    def runner(label: str, probe: GpuProbe) -> None:
        results[label] = call_with_timeout(lambda: probe(inner), timeout_s)

    threads = [threading.Thread(target=runner, args=(label, probe), daemon=True) for label, probe in chosen]
    host_box: dict[str, object] = {}
    host_thread = threading.Thread(
        target=lambda: host_box.update(outcome=call_with_timeout(lambda: probe_host(inner), timeout_s)),
        daemon=True,
    )
    for t in (*threads, host_thread):
        t.start()
    deadline = start + timeout_s + 0.2
    for t in (*threads, host_thread):
        t.join(max(deadline - time.perf_counter(), 0.0))

    gpus, reasons = [], []
    for label, _ in chosen:
        outcome = results.get(label)
        if outcome is None or outcome.timed_out:
            reasons.append(f"{label}: timed out after {timeout_s:g} s")
            continue
        if outcome.error is not None:
            reasons.append(f"{label}: probe failed: {outcome.error!r}")
            continue
        res: ProbeResult = outcome.value
        gpus.extend(res.gpus)
        reasons.extend(f"{label}: {r}" for r in res.reasons)
    integrated = [g for g in gpus if g.source in INTEGRATED_SOURCES]
    if integrated and len(integrated) < len(gpus):  # a laptop's dGPU runs the model, not its Intel graphics
        gpus = [g for g in gpus if g.source not in INTEGRATED_SOURCES]
        reasons.append(f"Intel: {integrated[0].name} left out: a discrete GPU is present")
    host_outcome = host_box.get("outcome")
    host = host_outcome.value if host_outcome is not None and isinstance(host_outcome.value, HostInfo) else None
    if host is None:
        reasons.append("host: CPU/RAM facts unavailable (probe timed out or failed)")
    return DetectionReport(
        gpus=tuple(gpus), host=host, reasons=tuple(reasons), elapsed_s=time.perf_counter() - start
    )
