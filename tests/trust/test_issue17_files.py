"""Issue 17 regressions about files: what is saved reopens (#2), FIFOs and devices never hang or
grow memory (#3), save targets are safe (#4), GGUF metadata is bounded in total (#5).

Each test reproduces the input the issue describes; on the code before the fix each one failed
(hang, traceback, MemoryError, a plan saved that could not be reopened, a FIFO replaced by a file).
"""

from __future__ import annotations

import json
import os
import stat
import struct
import time

import pytest

from llmplan.errors import ConfigError, InputError, PlanFileError
from llmplan.plan.planfile import load_plan, loads_plan, plan_from_config, save_plan
from tests.trust._issue17 import (
    EXAMPLE,
    MODEL,
    cli,
    example_plan,
    llama_config,
    one_clean_error,
    returns_within,
)

posix_only = pytest.mark.skipif(os.name != "posix", reason="FIFOs, devices and modes are POSIX")


# ---- #2 saved but cannot be reopened -------------------------------------------------------------

def _deep(levels: int) -> object:
    v: object = 1
    for _ in range(levels):
        v = {"x": v}
    return v


def test_a_3_mb_config_is_refused_at_import_not_after_saving(tmp_path):
    cfg = llama_config() | {"padding": "x" * 3_000_000}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(ConfigError, match=r"too large for a config\.json"):
        plan_from_config(path)


def test_a_100_level_config_is_refused_at_import(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(llama_config() | {"extra": _deep(100)}))
    with pytest.raises(ConfigError, match="nested more than"):
        plan_from_config(path)


def test_a_save_that_could_not_reopen_is_refused_and_keeps_the_old_file(tmp_path):
    """`--set model.config.x=<deep nesting>` then --save: the loader would refuse what the writer wrote."""
    target = tmp_path / "mine.llmplan"
    target.write_bytes(EXAMPLE.read_bytes())
    deep = json.dumps(_deep(62))  # within the --set limit, deeper than a plan may be once inside model.config
    proc = cli(["estimate", str(target), "--set", f"model.config.x={deep}", "--save", str(target)], tmp_path)
    assert "could not be opened again" in one_clean_error(proc)
    assert target.read_bytes() == EXAMPLE.read_bytes()
    load_plan(target)


def test_a_lone_surrogate_is_refused_at_import_and_never_reaches_save(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(llama_config()).replace('"llama"', '"llama\\ud800"', 1))
    with pytest.raises(ConfigError, match="lone surrogate"):
        plan_from_config(path)
    doc = plan_from_config(llama_config(), name="ok")
    bad = doc.model_copy(update={"notes": "x\ud800y"})  # built in memory, e.g. by a plugin or the GUI
    with pytest.raises(PlanFileError, match="UTF-8 cannot store"):
        save_plan(bad, tmp_path / "x.llmplan")
    assert not (tmp_path / "x.llmplan").exists() and not list(tmp_path.glob(".*.tmp"))


def test_a_lone_surrogate_through_set_is_one_error_line(tmp_path):
    proc = cli(["estimate", str(EXAMPLE), "--set", 'notes="\\udc80"', "--save", str(tmp_path / "o.llmplan")], tmp_path)
    assert "surrogate" in one_clean_error(proc)


# ---- #3 FIFOs, /dev/zero and pipes -----------------------------------------------------------------

@posix_only
@pytest.mark.parametrize("name", ["plan.llmplan", "config.json", "model.gguf"])  # safetensors: in-process below
def test_a_fifo_as_any_model_or_plan_file_is_refused_at_once(tmp_path, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    args = ["estimate", str(fifo)] if name.endswith(".llmplan") else ["params", str(fifo)]
    start = time.monotonic()
    err = one_clean_error(cli(args, tmp_path, timeout=30))
    assert "pipe" in err
    assert time.monotonic() - start < 30


@posix_only
@pytest.mark.parametrize("flag", ["--compare-run", "--calibration"])
def test_a_fifo_as_compare_run_or_calibration_is_refused(tmp_path, flag):
    fifo = tmp_path / "run.json"
    os.mkfifo(fifo)
    err = one_clean_error(cli(["estimate", "--model", MODEL, "--gpu", "nvidia-h100-sxm-80gb", flag, str(fifo)],
                              tmp_path, timeout=30))
    assert "pipe" in err


@posix_only
def test_dev_zero_and_an_endless_pipe_do_not_grow_memory(tmp_path):
    assert "character device" in one_clean_error(cli(["estimate", "/dev/zero"], tmp_path, timeout=30))
    proc = cli(["estimate", "/dev/stdin"], tmp_path, timeout=30, stdin=b"y\n" * 5_000_000)
    assert "pipe" in one_clean_error(proc)


@posix_only
def test_loaders_return_at_once_on_a_fifo(tmp_path):
    from llmplan.formats.gguf_header import read_gguf_header
    from llmplan.formats.hf_config import load_config_file
    from llmplan.formats.safetensors_index import read_index, read_safetensors_header
    from llmplan.hw.measured import import_measured_run, load_calibration

    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    for load in (load_plan, load_config_file, read_gguf_header, read_safetensors_header, read_index,
                 import_measured_run, load_calibration):
        with pytest.raises(InputError, match="pipe"):
            returns_within(5, lambda load=load: load(fifo))


# ---- #4 safe save targets ----------------------------------------------------------------------

@posix_only
def test_save_refuses_a_fifo_and_a_device_and_never_replaces_them(tmp_path):
    doc = load_plan(EXAMPLE)
    fifo = tmp_path / "p.llmplan"
    os.mkfifo(fifo)
    with pytest.raises(PlanFileError, match="not an ordinary file"):
        returns_within(10, lambda: save_plan(doc, fifo))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    with pytest.raises(PlanFileError, match="not an ordinary file"):
        save_plan(doc, "/dev/null")
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    err = one_clean_error(cli(["estimate", str(EXAMPLE), "--save", str(fifo)], tmp_path, timeout=30))
    assert "not an ordinary file" in err
    with pytest.raises(PlanFileError, match="folder"):
        save_plan(doc, tmp_path)


@posix_only
def test_save_writes_through_a_symlink_and_keeps_the_mode(tmp_path):
    real = tmp_path / "real.llmplan"
    real.write_bytes(EXAMPLE.read_bytes())
    real.chmod(0o640)
    link = tmp_path / "link.llmplan"
    link.symlink_to(real.name)
    doc = load_plan(EXAMPLE).model_copy(update={"notes": "written through"})
    save_plan(doc, link)
    assert link.is_symlink() and os.readlink(link) == real.name
    assert load_plan(real).notes == "written through"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640


# ---- #5 GGUF metadata bounded in total ----------------------------------------------------------

def _gguf_with_big_strings(path, count: int, size: int) -> None:
    """A sparse GGUF whose metadata holds ``count`` string values of ``size`` bytes each."""
    with open(path, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, count))
        for i in range(count):
            key = f"k{i}".encode()
            f.write(struct.pack("<Q", len(key)) + key + struct.pack("<IQ", 8, size))
            f.seek(size, 1)  # sparse: the string's bytes are zeros that take no disk space
        f.truncate()


@pytest.mark.parametrize(("count", "size"), [(700, 64 * 2**20), (100, 64 * 2**20), (40, 4 * 2**20)])
def test_gguf_strings_are_bounded_in_total(tmp_path, count, size):
    from llmplan.formats.gguf_header import read_gguf_header

    path = tmp_path / "m.gguf"
    _gguf_with_big_strings(path, count, size)
    start = time.monotonic()
    with pytest.raises(ConfigError, match="strings add up to more than"):
        read_gguf_header(path)
    assert time.monotonic() - start < 10


def test_a_plan_round_trips_through_the_save_check(tmp_path):
    doc = load_plan(EXAMPLE)
    save_plan(doc, tmp_path / "a.llmplan")
    assert loads_plan((tmp_path / "a.llmplan").read_bytes()) == load_plan(tmp_path / "a.llmplan")
    assert example_plan()["format"] == "llmplan"
