"""Issue 17 #1: one bad user-data file never stops the app or every estimate. Each user catalog kind is
skipped file by file with the reason in `llmplan-cli catalog problems` (the app's notice reads the same
report, tests/gui/test_issue17_gui.py); the built-in catalog keeps working."""

from __future__ import annotations

import json
import os

import pytest

from tests.trust._issue17 import EXAMPLE, MODEL, cli, llama_config

BIG = "9" * 5000

BAD_FILES = {
    "engines typo": ("engines.toml", "[vllm\ngpu_memory_utilization = 0.5\n"),
    "engines bad value": ("engines.toml", "[vllm]\ngpu_memory_utilization = 3\n"),
    "engines huge integer": ("engines.toml", f"[vllm]\nkv_block_tokens = {BIG}\n"),
    "model entry huge integer": ("models/mine.json", None),
    "system preset typo": ("system/mine.toml", "[[storage]\n"),
    "system preset bad default": ("system/mine.toml", '[defaults]\nstorage = "no-such-storage"\n'),
    "system preset wrong type": ("system/mine.toml", "[pipeline]\ntokenizer_tokens_per_s_per_core = 'fast'\n"),
    "hardware huge integer": ("hardware/mine.json", f'{{"id": "x", "memory_bytes": {BIG}}}'),
    "calibration damaged": ("calibration.json", '{"format": "llmplan-calibration", "schema_version": 1, '
                                                '"matmul": "x", "memory_bandwidth_bytes_per_s": "fast"}'),
}


def _write(data_dir, rel: str, text: str | None) -> None:
    path = data_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if text is None:  # a user model entry whose config holds a 5,000-digit integer
        entry = {"id": "me/mine", "display_name": "Mine", "family": "llama", "source": "me",
                 "config": llama_config() | {"vocab_size": 123454321}}
        text = json.dumps(entry).replace("123454321", BIG)
    path.write_text(text)


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bad_user_file_is_skipped_and_said(tmp_path, case):
    rel, text = BAD_FILES[case]
    _write(tmp_path, rel, text)
    # an inference estimate reads every kind: the model catalog, GPUs, engines, system presets
    proc = cli(["estimate", "--model", MODEL, "--gpu", "nvidia-h100-sxm-80gb", "--workload", "inference"], tmp_path)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr.decode()[-2000:]
    proc = cli(["catalog", "problems", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    problems = json.loads(proc.stdout)["problems"]
    assert problems and any(os.path.basename(rel) in p or "calibration" in p for p in problems), problems


def test_good_user_entries_in_other_files_still_count(tmp_path):
    _write(tmp_path, "system/a-bad.toml", "[[storage]\n")
    _write(tmp_path, "system/b-good.toml", '[[storage]]\nid = "my-nvme"\nname = "mine"\nkind = "local-nvme"\n'
                                            'read_per_node = 1e9\nwrite_per_node = 5e8\nsource = "my fio run"\n')
    from llmplan.catalog.system_presets import load_system_catalog, system_problems

    os.environ["LLMPLAN_DATA_DIR"], old = str(tmp_path), os.environ["LLMPLAN_DATA_DIR"]
    try:
        assert "my-nvme" in load_system_catalog().storage
        (problem,) = system_problems()
        assert "a-bad.toml" in problem
    finally:
        os.environ["LLMPLAN_DATA_DIR"] = old


def test_a_user_entry_that_shadows_a_built_in_is_said(tmp_path):
    entry = {"id": MODEL, "display_name": "My Llama", "family": "llama", "source": "me", "config": llama_config()}
    _write(tmp_path, "models/mine.json", json.dumps(entry))
    proc = cli(["catalog", "problems"], tmp_path)
    assert proc.returncode == 0 and b"replaces the built-in" in proc.stdout and b"no problems" in proc.stdout


@pytest.mark.skipif(os.name != "posix", reason="FIFOs")
@pytest.mark.parametrize("rel", ["engines.toml", "models/m.json", "system/s.toml", "hardware/h.toml",
                                 "calibration.json"])
def test_a_fifo_in_the_user_data_never_hangs_start_up(tmp_path, rel):
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(tmp_path / rel)
    proc = cli(["estimate", str(EXAMPLE)], tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert b"pipe" in cli(["catalog", "problems"], tmp_path, timeout=60).stdout
