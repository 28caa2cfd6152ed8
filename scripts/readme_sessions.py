"""Refresh the CLI sessions shown in README.md and docs/*.md by running them.

Every block between ``<!-- session: NAME -->`` and ``<!-- /session -->`` (README) is replaced by
the command of ``SESSIONS[NAME]`` and its real output. In README.md and docs/*.md, every block
between ``<!-- run -->`` and ``<!-- /run -->`` is a ```console block whose ``$ `` lines are run
again, in order, through bash from the repository root (so ``| head -5`` works), and each
command's output replaces what was there. No page shows output the CLI does not print.
Run ``make readme`` after changing the CLI or the engine; ``make readme BENCH=1`` also
pastes the table ``benchmarks/run.py`` prints between ``<!-- bench -->`` markers.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EX = "resources/examples"

#: name -> (command line, max lines of output shown)
SESSIONS: dict[str, tuple[str, int]] = {
    "params": ("llmplan-cli params deepseek-ai/DeepSeek-V3", 40),
    "estimate": (f"llmplan-cli estimate {EX}/qlora-llama-3-8b-rtx4090.llmplan", 60),
    "estimate-405b": (f"llmplan-cli estimate {EX}/pretrain-llama-3.1-405b-16k-h100.llmplan", 80),
    "estimate-json": (f"llmplan-cli estimate {EX}/serve-llama-3.1-70b-tp4-h100.llmplan --json", 40),
    "estimate-set": ("llmplan-cli estimate --model meta-llama/Meta-Llama-3-8B --gpu nvidia-rtx-4090-24gb "
                     "--workload inference --set inference.weight_format=q4_k_m --set inference.engine=llama.cpp --set inference.prompt_tokens=4000", 40),
    "search": (f"llmplan-cli search {EX}/finetune-llama-3.1-70b-zero3-8xh100.llmplan --top 3", 30),
    "serve": ("llmplan-cli serve --model meta-llama/Llama-3.1-8B --rate 20 --prompt 1000 --output 300 "
              "--ttft 1 --tpot 0.05", 30),
    "catalog": ("llmplan-cli catalog gpus --vendor apple", 14),
    "detect": ("llmplan-cli detect", 20),
    "fit": ("llmplan-cli estimate --model meta-llama/Llama-3.1-70B --workload inference --this-machine "
            "--detection-fixture tests/data/hw/detect_rtx4090_with_host.json", 400),
    "schema": ("llmplan-cli schema", 12),
}

BENCH = re.compile(r"(<!-- bench -->\n).*?(<!-- /bench -->)", re.S)
BLOCK = re.compile(r"(<!-- session: (?P<name>[\w-]+) -->\n).*?(<!-- /session -->)", re.S)
RUN = re.compile(r"(<!-- run -->\n)(?P<body>.*?)(<!-- /run -->)", re.S)


def _env() -> dict[str, str]:
    return dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
                COLUMNS="120", LLMPLAN_DATA_DIR=str(ROOT / ".readme-data"))


def rerun(body: str) -> str:
    """A console block with every ``$ `` command run again and its output in place of the old."""
    commands = [line[2:] for line in body.splitlines() if line.startswith("$ ")]
    if not commands:
        raise SystemExit(f"a <!-- run --> block has no '$ ' command:\n{body}")
    out = []
    for cmd in commands:
        proc = subprocess.run(["bash", "-c", cmd], cwd=ROOT, env=_env(), capture_output=True, text=True,
                              timeout=300)
        out += [f"$ {cmd}", *(proc.stdout + proc.stderr).rstrip("\n").splitlines()]
    return "```console\n" + "\n".join(out) + "\n```\n"


def run(cmd: str, max_lines: int) -> str:
    """The command's output, at most ``max_lines``; for --this-machine only the verdict (the estimate above it
    is the same report as `estimate` prints)."""
    proc = subprocess.run(shlex.split(cmd), cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120)
    lines = (proc.stdout + proc.stderr).rstrip("\n").splitlines()
    if "--this-machine" in cmd:
        start = next((i for i, line in enumerate(lines) if line.startswith("This machine")), 0)
        lines = ["...", *lines[start:]]
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"... ({len(lines) - max_lines} more lines)"]
    return "\n".join([f"$ {cmd}", *lines])


def main() -> int:
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    missing = set(SESSIONS) - {m.group("name") for m in BLOCK.finditer(text)}
    if missing:
        print(f"README.md lacks session blocks for: {', '.join(sorted(missing))}", file=sys.stderr)

    def replace(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in SESSIONS:
            return m.group(0)
        return f"{m.group(1)}```console\n{run(*SESSIONS[name])}\n```\n{m.group(3)}"

    text = BLOCK.sub(replace, text)
    text = RUN.sub(lambda m: m.group(1) + rerun(m.group("body")) + m.group(3), text)
    for page in sorted((ROOT / "docs").glob("*.md")):
        old = page.read_text(encoding="utf-8")
        new = RUN.sub(lambda m: m.group(1) + rerun(m.group("body")) + m.group(3), old)
        if new != old:
            page.write_text(new, encoding="utf-8")
    if "--bench" in sys.argv:  # the benchmark table takes a while: only on request (make readme BENCH=1)
        table = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "benchmarks/run.py"], cwd=ROOT,
                               capture_output=True, text=True, timeout=600).stdout.strip()
        text = BENCH.sub(lambda m: f"{m.group(1)}{table}\n{m.group(2)}", text)
    readme.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
