"""``llmplan-cli watch``: JSON lines when piped, a live table on a terminal, clean stops (duration, Ctrl-C,
the process exiting), bad input as one line, and a run file that ``estimate --compare-run`` reads."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path

import fake_nvml
import pytest
from scripted import GIB, ScriptedHost, ScriptedSource

from llmplan.cli import cmd_watch, main
from llmplan.watch import sampler as sampler_mod
from llmplan.watch.sampler import Sampler

PLAN = Path(__file__).resolve().parents[2] / "resources" / "examples" / "qlora-llama-3-8b-rtx4090.llmplan"


@pytest.fixture
def fake_gpus(monkeypatch):
    """open_sampler over the recorded H100 + RTX 3090 fake NVML (the host from scripted values)."""
    nvml = fake_nvml.build()
    monkeypatch.setattr(sampler_mod, "_open_amd", lambda: ([], []))

    def opened(pid=None, capacity=1000, nvml_module=None):
        sources, reasons = sampler_mod.open_sources(nvml)
        return Sampler(sources, ScriptedHost(lambda now: {"cpu_busy_pct": 12.0, "iowait_pct": 0.5}), pid=pid,
                       capacity=capacity, reasons=reasons)

    monkeypatch.setattr(sampler_mod, "open_sampler", opened)
    return nvml


def test_piped_output_is_json_lines_then_a_summary(fake_gpus, tmp_path, capsys):
    run = tmp_path / "run.json"
    assert main(["watch", "--duration", "0.25", "--interval", "0.1", "--run-file", str(run),
                 "--csv", str(tmp_path / "s.csv")]) == 0
    out, err = capsys.readouterr()
    lines = [json.loads(x) for x in out.splitlines()]
    samples, summary = lines[:-1], lines[-1]["summary"]
    assert len(samples) >= 3
    gpu0 = samples[0]["gpus"][0]
    assert gpu0["name"] == "NVIDIA H100 80GB HBM3" and gpu0["util_pct"] == 0 and gpu0["power_w"] == pytest.approx(71.234)
    assert gpu0["nvlink_tx_bps"] is None  # n/a on the first sample is null, never 0
    assert samples[0]["gpus"][1]["throttle_mask"] is None
    assert summary["stopped"] == "0.25 s elapsed" and summary["format"] == "llmplan-run"
    assert json.loads(run.read_text())["samples"] == summary["samples"]
    assert f"run file: {run}" in err and "samples:" in err
    header = (tmp_path / "s.csv").read_text().splitlines()[0].split(",")
    assert header[:2] == ["time_s", "gpu0_util_pct"] and "host_iowait_pct" in header


def test_the_run_file_is_read_by_estimate_compare_run(fake_gpus, tmp_path, capsys):
    fake_gpus.step = 2
    run = tmp_path / "run.json"
    assert main(["watch", "--plan", str(PLAN), "--duration", "0.2", "--interval", "0.1", "--run-file", str(run),
                 "--steps", "4"]) == 0
    capsys.readouterr()
    record = json.loads(run.read_text())
    assert record["peak_device_memory_bytes"] == 75161927680  # the H100's used memory, no pid attached
    assert record["step_time_s"] == pytest.approx(record["duration_s"] / 4, rel=0.02)  # duration_s is rounded to ms
    assert record["plan"]["predicted_peak_bytes"] > 0 and "predicted" in record["plan"]["comparison"]
    assert "peak_memory_bytes" not in record  # that key means torch's allocated bytes, which NVML cannot see
    assert main(["estimate", str(PLAN), "--compare-run", str(run), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["measured_run"]
    device = next(r for r in rows if r["quantity"].startswith("peak device memory"))
    assert device["measured"] == 75161927680
    assert any(r["quantity"] == "step time (s)" for r in rows)


def test_a_terminal_gets_a_live_table_redrawn_in_place(fake_gpus):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    s = sampler_mod.open_sampler(pid=None)
    out = Tty()
    args = argparse.Namespace(json=False, duration=0.05, interval=0.1)
    assert cmd_watch.watch_loop(s, args, None, out=out) == "0.05 s elapsed"
    text = out.getvalue()
    assert text.count("GPU   util") == 2 and "\x1b[" in text  # drawn twice, the second time over the first
    assert "n/a" in text and "host  CPU 12%" in text
    end = Tty()
    args.steps, args.steps_per_s, args.no_run_file, args.csv, args.plan = None, None, True, None, None
    assert cmd_watch.finish(s, args, None, "0.05 s elapsed", out=end, err=io.StringIO()) == 0
    assert end.getvalue().startswith("\n0.05 s elapsed; 2 samples\n- ")


def test_ctrl_c_stops_cleanly_and_still_writes_the_run_file(fake_gpus, tmp_path, monkeypatch, capsys):
    def interrupted(seconds):
        raise KeyboardInterrupt

    monkeypatch.setattr(cmd_watch.time, "sleep", interrupted)  # Ctrl-C arrives while the loop waits
    run = tmp_path / "run.json"
    assert main(["watch", "--run-file", str(run)]) == 0
    assert json.loads(run.read_text())["stopped"] == "stopped (Ctrl-C)"
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["summary"]["samples"] == 1


def test_watching_a_process_stops_when_it_exits(fake_gpus, tmp_path, capsys):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.4)"])
    run = tmp_path / "run.json"
    try:
        assert main(["watch", "--pid", str(child.pid), "--interval", "0.1", "--run-file", str(run)]) == 0
    finally:
        child.wait()
    record = json.loads(run.read_text())
    assert record["stopped"] == f"process {child.pid} exited" and record["process_exited"] is True
    assert [e["kind"] for e in record["events"]] == ["attached", "process_exited"]
    assert "peak_device_memory_bytes" not in record  # the child never held GPU memory: no peak to compare


def test_no_gpu_says_why_and_watches_the_host(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(sampler_mod, "_open_amd", lambda: ([], ["amd-smi not installed; rocm-smi not installed"]))
    nvml = fake_nvml.build(init_error=fake_nvml.LIBRARY_NOT_FOUND)
    real = sampler_mod.open_sampler
    monkeypatch.setattr(sampler_mod, "open_sampler", lambda pid=None: real(pid=pid, capacity=100, nvml_module=nvml))
    assert main(["watch", "--duration", "0.1", "--interval", "0.1", "--no-run-file"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("llmplan-cli watch: no GPU found (NVIDIA driver library not found (libnvidia-ml.so.1); "
                          "amd-smi not installed; rocm-smi not installed); watching host metrics only")
    assert json.loads(out.splitlines()[0])["host"]["ram_total_bytes"] > 0


@pytest.mark.parametrize("argv,message", [
    (["--interval", "20"], "interval must be between 0.1 and 10 s, got 20.0"),
    (["--interval", "0.01"], "interval must be between 0.1 and 10 s"),
    (["--duration", "-1"], "--duration must be a positive number of seconds"),
    (["--steps", "0"], "--steps must be a positive whole number"),
    (["--steps-per-s", "nan"], "--steps-per-s must be a positive number"),
    (["--pid", "999999999"], "no running process with id 999999999"),
    (["--plan", "/nonexistent/x.llmplan"], "x.llmplan"),
])
def test_bad_input_is_one_line_on_stderr(fake_gpus, argv, message, capsys):
    assert main(["watch", "--no-run-file", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_sampler_fault_in_the_cli_keeps_the_other_gpu(fake_gpus, tmp_path, capsys):
    fake_gpus.fail["util"] = (0, fake_nvml.GPU_IS_LOST, 0)
    run = tmp_path / "run.json"
    assert main(["watch", "--duration", "0.1", "--interval", "0.1", "--run-file", str(run)]) == 0
    gpus = json.loads(run.read_text())["gpus"]
    assert "fell off the bus" in gpus[0]["stopped"] and gpus[1]["stopped"] is None
    assert gpus[1]["peak_memory_used_bytes"] == 1073741824
    capsys.readouterr()


def test_peak_device_memory_alone_is_a_valid_run_file(tmp_path, capsys):
    run = tmp_path / "r.json"
    run.write_text(json.dumps({"format": "llmplan-run", "peak_device_memory_bytes": 20 * GIB}))
    assert main(["estimate", str(PLAN), "--compare-run", str(run)]) == 0
    assert "peak device memory per GPU, context included" in capsys.readouterr().out
    run.write_text(json.dumps({"peak_device_memory_bytes": 1.5}))
    assert main(["estimate", str(PLAN), "--compare-run", str(run)]) == 2
    assert "peak_device_memory_bytes must be a whole number of bytes" in capsys.readouterr().err


def test_scripted_source_is_closed_after_the_watch(tmp_path):
    src = ScriptedSource(lambda slot, now: {"util_pct": 1})
    s = Sampler([(src, src.open())], ScriptedHost(), capacity=10)
    s.sample(now=1.0)
    args = argparse.Namespace(json=True, interval=1.0, steps=None, steps_per_s=None, no_run_file=True, csv=None,
                              plan=None)
    assert cmd_watch.finish(s, args, None, "done", out=io.StringIO(), err=io.StringIO()) == 0
    assert src.closed


def test_a_path_that_cannot_be_written_is_refused_before_the_watch(tmp_path, capsys):
    """trial33: the run file and the CSV are written when the watch stops; ``--csv notes.txt/x.csv`` (a file where a
    folder should be) ran the whole watch, then ended "error: File exists (notes.txt)" with nothing written."""
    (tmp_path / "notes.txt").write_text("a file")
    for flag, path, said in (("--csv", tmp_path / "notes.txt" / "x.csv", "is a file, not a folder"),
                             ("--run-file", tmp_path, "is a folder; give a file name")):
        assert main(["watch", "--duration", "0.1", flag, str(path), "--no-run-file" if flag == "--csv" else "--json"]) \
            == 2
        assert said in capsys.readouterr().err


def test_a_write_that_fails_when_the_watch_ends_falls_back_to_the_current_folder(tmp_path, monkeypatch):
    """The disk fills or the folder goes while the watch runs: the run file goes to the default name here instead,
    and the message says where; the samples are not lost."""
    monkeypatch.chdir(tmp_path)
    src = ScriptedSource(lambda slot, now: {"util_pct": 1})
    s = Sampler([(src, src.open())], ScriptedHost(), capacity=10)
    s.sample(now=1.0)
    gone = tmp_path / "gone"
    gone.mkdir()
    args = argparse.Namespace(json=True, interval=1.0, steps=None, steps_per_s=None, no_run_file=False,
                              run_file=str(gone / "run.json"), csv=None, plan=None)
    gone.rmdir()
    (tmp_path / "gone").write_text("now a file")  # the folder was replaced: the write fails
    err = io.StringIO()
    assert cmd_watch.finish(s, args, None, "done", out=io.StringIO(), err=err) == 0
    saved = list(tmp_path.glob("llmplan-run-*.json"))
    assert len(saved) == 1 and json.loads(saved[0].read_text())["format"] == "llmplan-run"
    assert f"cannot write {gone / 'run.json'}" in err.getvalue() and f"writing {saved[0].name} instead" in err.getvalue()
