"""How long the "fits this machine" verdict takes (the GUI recomputes it as knobs move: target well under 200 ms).

For a few plans on recorded detections (tests/data/hw), prints the median and worst wall time of
``fit_this_machine`` over N runs (after one warm-up that loads the catalogs), and how many times it
ran the evaluation pipeline (``llmplan.plan.evaluate.evaluate_plan``) and how long one such run takes.

    .venv/bin/python benchmarks/bench_fit.py [RUNS]
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from llmplan.core.workload import InferenceSettings
from llmplan.fit import trial as fit_eval
from llmplan.fit.local import fit_this_machine, local_hardware
from llmplan.hw.apple import build_apple_gpu
from llmplan.hw.host import parse_meminfo
from llmplan.hw.nvidia import parse_nvidia_smi_csv
from llmplan.hw.types import DetectionReport, HostInfo
from llmplan.plan.document import ModelRef, PlanDocument

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "hw"
GIB = 2**30


def _machines():
    total, avail = parse_meminfo((DATA / "proc_meminfo.txt").read_text())
    host = HostInfo("AMD EPYC", 2, 2, total, avail, "Linux")
    rtx = local_hardware(DetectionReport(parse_nvidia_smi_csv((DATA / "nvidia_smi_rtx4090.csv").read_text()), host))
    h100 = local_hardware(DetectionReport(parse_nvidia_smi_csv((DATA / "nvidia_smi_8xh100_sxm.csv").read_text()),
                                          host))
    mac = local_hardware(DetectionReport((build_apple_gpu("Apple M2", 16 * GIB, "Apple M2", 10, None),), host))
    cpu = local_hardware(DetectionReport((), host, ("NVIDIA: nvidia-smi not installed",)))
    two = local_hardware(DetectionReport((rtx_gpu := parse_nvidia_smi_csv(
        (DATA / "nvidia_smi_rtx4090.csv").read_text())[0], replace(rtx_gpu, index=1)), host))
    return rtx, h100, mac, cpu, two


def _cases():
    rtx, h100, mac, cpu, two = _machines()

    def inf(model, **kw):
        return PlanDocument(model=ModelRef(id=model), workload="inference", inference=InferenceSettings(**kw))

    ft8 = PlanDocument(model=ModelRef(id="meta-llama/Meta-Llama-3-8B"), workload="finetune")
    return [
        ("70B bf16 vLLM, RTX 4090 (does not fit)", inf("meta-llama/Llama-3.1-70B"), rtx),
        ("70B bf16 llama.cpp, RTX 4090 (does not fit)", inf("meta-llama/Llama-3.1-70B", engine="llama.cpp"), rtx),
        ("8B Q4_K_M llama.cpp, RTX 4090 (fits: limits)",
         inf("meta-llama/Meta-Llama-3-8B", engine="llama.cpp", weight_format="q4_k_m"), rtx),
        ("8B full fine-tune, RTX 4090 (does not fit)", ft8, rtx),
        ("70B bf16 vLLM, 8x H100 (fits split: limits)", inf("meta-llama/Llama-3.1-70B"), h100),
        ("8B Q4_K_M llama.cpp, 16 GB M2 (fits: limits)",
         inf("meta-llama/Meta-Llama-3-8B", engine="llama.cpp", weight_format="q4_k_m"), mac),
        ("8B Q4_K_M llama.cpp, no GPU (CPU only)",
         inf("meta-llama/Meta-Llama-3-8B", engine="llama.cpp", weight_format="q4_k_m"), cpu),
        ("70B bf16 llama.cpp, 2x RTX 4090 (two layouts)", inf("meta-llama/Llama-3.1-70B", engine="llama.cpp"), two),
        ("8B full fine-tune, 2x RTX 4090 (two layouts)", ft8, two),
    ]


def main(runs: int = 5) -> int:
    calls = {"n": 0, "s": 0.0}
    real = fit_eval.evaluate_plan

    def counted(doc):
        t = time.perf_counter()
        try:
            return real(doc)
        finally:
            calls["n"] += 1
            calls["s"] += time.perf_counter() - t

    fit_eval.evaluate_plan = counted
    print(f"fit_this_machine over {runs} runs (after a warm-up):")
    for label, doc, machine in _cases():
        fit = fit_this_machine(doc, machine)
        times = []
        calls.update(n=0, s=0.0)
        for _ in range(runs):
            t = time.perf_counter()
            fit_this_machine(doc, machine)
            times.append(time.perf_counter() - t)
        per_run = calls["n"] / runs
        per_eval = calls["s"] / calls["n"] * 1000 if calls["n"] else 0.0
        print(f"  {label:<48} median {statistics.median(times) * 1000:6.1f} ms, worst {max(times) * 1000:6.1f} ms, "
              f"{per_run:4.1f} evaluations ({per_eval:.2f} ms each), status {fit.status}, {len(fit.changes)} changes")
    fit_eval.evaluate_plan = real
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
