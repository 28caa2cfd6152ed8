"""A few-second microbenchmark of this machine: matmul FLOP/s per dtype and copy bandwidth.

Datasheet peaks are upper bounds; a plan's efficiency fractions should come from what the
device really reaches. This needs PyTorch (``pip install 'llmplan[bench]'``) and runs on
CUDA, MPS or CPU. Each measurement is time-boxed so the whole run stays within ``seconds``.

Method: square ``n×n`` matmuls (``2·n³`` FLOP each) at a few sizes per dtype, warm-up first,
then as many iterations as fit in the slice, synchronising the device before reading the
clock; bandwidth is a large ``dst.copy_(src)``, counted as read + write (``2·bytes``), the
convention of STREAM's Copy kernel.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from llmplan.errors import InputError
from llmplan.hw.measured import Calibration, MatmulMeasurement

SIZES = {"cuda": (2048, 4096, 8192), "mps": (1024, 2048, 4096), "cpu": (256, 512, 1024)}
COPY_BYTES = {"cuda": 1 << 30, "mps": 512 << 20, "cpu": 64 << 20}
DTYPES = ("fp32", "bf16", "fp16")


def _torch():
    try:
        import torch
    except ImportError as exc:
        raise InputError("calibration needs PyTorch: pip install 'llmplan[bench]' (or pip install torch)") from exc
    return torch


def pick_device(requested: str | None = None) -> str:
    """The requested device if it works here, else the best available (cuda, mps, cpu)."""
    torch = _torch()
    available = ["cpu"]
    if torch.cuda.is_available():
        available.insert(0, "cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        available.insert(0, "mps")
    if requested is None:
        return available[0]
    if requested not in ("cuda", "mps", "cpu"):
        raise InputError(f"--device must be cuda, mps or cpu, not {requested!r}")
    if requested not in available:
        raise InputError(f"device {requested!r} is not available here (available: {', '.join(available)})")
    return requested


def _sync(torch, device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()
    elif device == "mps":
        torch.mps.synchronize()


def _time_loop(torch, device: str, fn, budget_s: float, max_iters: int = 10_000) -> tuple[int, float]:
    fn()  # warm-up: kernel selection, allocation
    _sync(torch, device)
    start = time.perf_counter()
    iters = 0
    while iters < max_iters:
        fn()
        iters += 1
        if iters & (iters - 1) == 0 or iters % 8 == 0:  # check the clock rarely on fast devices
            _sync(torch, device)
            if time.perf_counter() - start >= budget_s:
                break
    _sync(torch, device)
    return iters, time.perf_counter() - start


def _device_name(torch, device: str) -> str:
    if device == "cuda":
        return torch.cuda.get_device_name(0)
    if device == "mps":
        return "Apple GPU (MPS)"
    from llmplan.hw.host import probe_host

    return probe_host().cpu_model or "CPU"


def calibrate(device: str | None = None, seconds: float = 5.0) -> Calibration:
    """Measure matmul FLOP/s per dtype and size, and copy bandwidth, within about ``seconds``."""
    if not 0.2 <= seconds <= 600:
        raise InputError(f"--seconds must be between 0.2 and 600, not {seconds}")
    torch = _torch()
    dev = pick_device(device)
    target = "cuda:0" if dev == "cuda" else dev
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    notes: list[str] = []
    supported = []
    for name in DTYPES:
        try:
            a = torch.ones(8, 8, dtype=dtypes[name], device=target)
            (a @ a).sum().item()
            supported.append(name)
        except (RuntimeError, TypeError) as exc:
            notes.append(f"{name} matmul not supported on {dev}: {str(exc).splitlines()[0]}")
    sizes = SIZES[dev]
    slice_s = 0.7 * seconds / max(len(supported) * len(sizes), 1)
    deadline = time.perf_counter() + 0.7 * seconds
    results = []
    for name in supported:
        per_iter = 0.0
        for i, n in enumerate(sizes):
            # Skip a size whose warm-up plus one multiply would overrun its slice (CPU fp16 is
            # emulated and ~100x slower than fp32), predicted from the last size by n³ scaling.
            predicted = per_iter * (n / sizes[i - 1]) ** 3 if i else 0.0
            if 2 * predicted > slice_s or time.perf_counter() > deadline:
                notes.append(f"{name} n={n} skipped: would not finish within the time budget")
                continue
            a = torch.randn(n, n, device=target).to(dtypes[name])
            b = torch.randn(n, n, device=target).to(dtypes[name])
            iters, elapsed = _time_loop(torch, dev, lambda a=a, b=b: torch.matmul(a, b), slice_s)
            per_iter = elapsed / iters
            results.append(MatmulMeasurement(name, n, 2.0 * n**3 * iters / elapsed, iters, elapsed))
            del a, b
    nbytes = COPY_BYTES[dev]
    bandwidth = None
    try:
        src = torch.empty(nbytes // 4, dtype=torch.float32, device=target).fill_(1.0)
        dst = torch.empty_like(src)
        iters, elapsed = _time_loop(torch, dev, lambda src=src, dst=dst: dst.copy_(src), 0.3 * seconds)
        bandwidth = 2.0 * nbytes * iters / elapsed
        del src, dst
    except RuntimeError as exc:  # out of memory on a small device
        notes.append(f"copy bandwidth not measured: {str(exc).splitlines()[0]}")
    if dev == "cpu":
        notes.append(f"CPU run with {torch.get_num_threads()} threads")
    return Calibration(
        device=target, device_name=_device_name(torch, dev), torch_version=str(torch.__version__),
        created_utc=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), matmul=tuple(results),
        memory_bandwidth_bytes_per_s=bandwidth, copy_bytes=nbytes, notes=tuple(notes),
    )
