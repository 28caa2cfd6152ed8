"""scripts/measure_block_host.py, the tool that measures ``block_host_s`` on a machine with a GPU: its arithmetic,
that its output is a profile row the catalog accepts, and that it says what it needs where torch or a GPU is
missing (the measuring itself needs a CUDA GPU and is not run here)."""

import importlib.util
import sys
import tomllib
from pathlib import Path

import pytest

from llmplan.core.framework_profile import FrameworkProfile

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("measure_block_host", ROOT / "scripts" / "measure_block_host.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_block_is_the_fastest_step_over_the_blocks(script):
    assert script.per_block([0.50, 0.421, 0.60], 32) == pytest.approx(0.421 / 32)
    with pytest.raises(ValueError):
        script.per_block([], 32)


def test_the_printed_row_is_one_the_profile_accepts(script):
    line = script.rows({"lora_recompute": [13.166e-3, 13.041e-3, 13.868e-3], "qlora_recompute": [18.081e-3]})
    rows = tomllib.loads(line)["block_host_s"]
    assert rows == [["lora_recompute", pytest.approx(13.166e-3, rel=1e-4)], ["qlora_recompute", pytest.approx(18.081e-3, rel=1e-4)]]
    assert FrameworkProfile(block_host_s=tuple(tuple(r) for r in rows)).block_host_s[0][0] == "lora_recompute"


def test_every_kind_it_measures_is_one_the_profile_knows(script):
    for kind in script.KINDS:
        FrameworkProfile(block_host_s=((kind, 1e-3),))


def test_without_torch_it_says_what_it_needs(script, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    assert script.main([]) == 2
    assert "needs torch" in capsys.readouterr().err


@pytest.mark.parametrize("args", [["--steps", "0"], ["--layers", "-4"], ["--steps", "many"]])
def test_a_count_below_one_or_not_a_number_is_refused_by_name(script, args, capsys):
    with pytest.raises(SystemExit):
        script.main(args)
    assert ("--steps" if "--steps" in args else "--layers") in capsys.readouterr().err
