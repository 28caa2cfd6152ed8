"""The issue 17 families that are not damaged documents: GGUF metadata whose strings add up past the
cap, and detection tools that print endlessly or fork and leave children behind.

| family | the input | the rule on top of "no traceback" |
|---|---|---|
| GGUF totals | 1 to 5,000 keys whose string values and string arrays declare 0 B to 64 GiB each (sparse files) | refused whenever the strings add up past 64 MiB; only the header is read |
| endless tools | `yes`, `cat /dev/zero`, a shell loop ... on stdout, stderr or both, any output cap and timeout | returns within its timeout (+ 3 s), a reason given, nothing of the tool left running |
| forking tools | a tool starting 1-4 children or grandchildren (sleepers, endless printers) that exits, sleeps or execs | the same: the whole process group is gone when ``run_command`` returns |

A tool that calls ``setsid`` leaves the process group on purpose; ``run_command`` cannot see it (see
docs/trust.md), so those are not generated.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
import time
from pathlib import Path

from llmplan.formats import gguf_header
from llmplan.hw._run import run_command
from tests.property._families import FAMILIES, Family, execute
from tests.property._targets import TARGETS, Target, prepare

# ---- GGUF strings that add up ------------------------------------------------------------------


def _size(rng: random.Random) -> int:
    return 0 if rng.random() < 0.05 else int(2 ** rng.uniform(0, 36))


def gguf_totals(rng: random.Random, target: Target, folder: Path) -> None:
    path = prepare(target, folder)
    n_kv = int(10 ** rng.uniform(0, 3.7))
    declared = 0  # string bytes the reader meets, in order, up to the point where it must refuse
    cap = gguf_header.MAX_STRING_BYTES
    with path.open("wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, n_kv))
        for i in range(n_kv):
            key = f"k{i}".encode()
            f.write(struct.pack("<Q", len(key)) + key)
            declared += len(key)
            kind = rng.choice(["string", "string", "array", "nested"])
            if kind == "string":
                sizes = [_size(rng)]
                f.write(struct.pack("<I", 8))
            else:
                count = int(10 ** rng.uniform(0, 4))
                sizes = [_size(rng) if rng.random() < 0.1 else rng.randint(0, 64) for _ in range(min(count, 2000))]
                if kind == "nested":
                    f.write(struct.pack("<IIQ", 9, 9, 1))
                f.write(struct.pack("<IIQ", 9, 8, len(sizes)))
            for n in sizes:
                f.write(struct.pack("<Q", n))
                declared += n
                if declared > cap or n > gguf_header.MAX_STRING:
                    break  # the reader must stop here: nothing after this needs to exist
                f.seek(n, 1)  # a hole: zeros that take no disk space
            if declared > cap or n > gguf_header.MAX_STRING:
                break
        f.truncate()
    out = execute(target, path, folder)
    if declared > cap:
        assert out.refused(path.name), f"{declared:,} bytes of strings were read"


# ---- detection tools -------------------------------------------------------------------------------


def _live_in_group(pgid: int) -> list[int]:
    """Processes of process group ``pgid`` that still run (zombies waiting for a reaper do not count)."""
    live = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":
            live.append(int(entry.name))
    return live


def _tool(rng: random.Random, folder: Path, script: str, timeout: float, cap: int | None) -> None:
    pidfile = folder / "pgid"
    argv = ["/bin/sh", "-c", f"echo $$ > {pidfile}; {script}"]
    start = time.monotonic()
    out = run_command(argv, timeout, cap) if cap else run_command(argv, timeout)
    took = time.monotonic() - start
    assert took < timeout + 3, f"run_command took {took:.1f} s for a {timeout:.2f} s timeout: {script}"
    if out.reason is None:
        assert len(out.stdout) <= (cap or 4 << 20) * 4, "more output kept than the cap"
    pgid = int(pidfile.read_text() or 0) if pidfile.exists() else 0
    deadline = time.monotonic() + 2
    while pgid and _live_in_group(pgid):
        assert time.monotonic() < deadline, f"left running after run_command returned: {_live_in_group(pgid)} " \
                                            f"({script})"
        time.sleep(0.02)


def endless_tools(rng: random.Random, target: Target, folder: Path) -> None:
    word = rng.choice(["x", "GPU 0: NVIDIA H100", "\x1b[31m", "\xff\xfe"])
    script = rng.choice([f"yes '{word}'", f"yes '{word}' >&2", f"yes '{word}' & yes '{word}' >&2; wait",
                         "cat /dev/zero", "cat /dev/urandom", f"while :; do printf '%s' '{word}'; done",
                         f"head -c {rng.randint(0, 1 << 23)} /dev/zero; sleep 5"])
    cap = rng.choice([None, None, rng.randint(1, 4 << 20)])
    _tool(rng, folder, script, rng.uniform(0.05, 0.5), cap)


def forking_tools(rng: random.Random, target: Target, folder: Path) -> None:
    children = [rng.choice(["sleep 30 &", "yes > /dev/null &", "(sleep 30; echo late) &", "yes &",
                            "sh -c 'sleep 30 & sleep 30' &", "(trap '' TERM; sleep 30) &"])
                for _ in range(rng.randint(1, 4))]
    then = rng.choice(["exit 0", "echo done", "sleep 30", "exec sleep 30", "wait"])
    _tool(rng, folder, " ".join(children) + f" {then}", 10 ** rng.uniform(-1.7, -0.5), None)


TOOL_RUNNER = Target("detection tool runner", "tool", "tool", lambda: None, lambda p, d: None)

FAMILIES_IO: dict[str, Family] = {f.name: f for f in (
    Family("GGUF totals", gguf_totals, ("gguf header",)),
    Family("endless tools", endless_tools, ("detection tool runner",)),
    Family("forking tools", forking_tools, ("detection tool runner",)),
)}

ALL_FAMILIES: dict[str, Family] = {**FAMILIES, **FAMILIES_IO}
ALL_TARGETS: dict[str, Target] = {**TARGETS, TOOL_RUNNER.name: TOOL_RUNNER}
TOOLS_AVAILABLE = os.name == "posix" and os.path.isdir("/proc") and all(
    shutil.which(t) for t in ("sh", "yes", "cat", "head", "sleep"))
