"""``catalog gpus|nodes|networks`` through a throwaway parser (the real ``catalog`` subparser is wired by
cli/cmd_catalog.py). Checks the printed figures, not only that the commands run."""

from __future__ import annotations

import argparse
import json

import pytest

from llmplan.cli.catalog_hardware import add_hardware_commands


@pytest.fixture(autouse=True)
def _isolated_user_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path / "data"))


def run(argv, capsys):
    parser = argparse.ArgumentParser(prog="llmplan-cli catalog")
    add_hardware_commands(parser.add_subparsers(dest="what"))
    args = parser.parse_args(argv)
    rc = args.handler(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_gpus_table_labels_units_and_shows_h100_figures(capsys):
    rc, out, _ = run(["gpus"], capsys)
    assert rc == 0
    header = out.splitlines()[0]
    for label in ("memory GiB", "memory GB", "BW GB/s", "bf16 TFLOP/s"):
        assert label in header
    h100 = next(line for line in out.splitlines() if line.startswith("nvidia-h100-sxm-80gb "))
    # 81559 MiB = 79.6 GiB = 85.5 GB; 3350 GB/s; 989.4 TFLOP/s dense bf16; 700 W
    assert "79.6" in h100 and "85.5" in h100 and "3,350" in h100 and "989.4" in h100 and "700" in h100


def test_gpus_vendor_filter(capsys):
    _, out, _ = run(["gpus", "--vendor", "amd"], capsys)
    rows = [line for line in out.splitlines()[1:] if line and line[0].isalpha() and "-" in line.split()[0]]
    assert rows and all(r.startswith("amd-") for r in rows)


def test_gpus_json_is_si(capsys):
    rc, out, _ = run(["gpus", "--json", "--vendor", "nvidia"], capsys)
    data = json.loads(out)
    assert rc == 0 and data["problems"] == []
    by_id = {g["id"]: g for g in data["gpus"]}
    h100 = by_id["nvidia-h100-sxm-80gb"]
    assert h100["memory_bytes"] == 81559 * 2**20
    assert h100["memory_bandwidth_bytes_per_s"] == 3.35e12
    assert h100["peak_flops_dense"]["bf16"] == pytest.approx(989.4e12)
    assert h100["sources"]["tflops"]["url"].startswith("https://")
    assert all(g["vendor"] == "nvidia" for g in data["gpus"])


def test_nodes_table_and_json(capsys):
    _, out, _ = run(["nodes"], capsys)
    dgx = next(line for line in out.splitlines() if line.startswith("dgx-h100 "))
    assert " 8 " in dgx and "450.0" in dgx and "ib-ndr-400" in dgx and "50.00" in dgx
    _, out, _ = run(["nodes", "--json"], capsys)
    nodes = {n["id"]: n for n in json.loads(out)["nodes"]}
    assert nodes["dgx-a100"]["network_bytes_per_s_per_gpu"] == 25e9  # HDR 200 Gb/s per GPU
    assert nodes["mac-studio-m2-ultra-192gb"]["gpus_per_node"] == 1


def test_networks_table_and_json(capsys):
    _, out, _ = run(["networks"], capsys)
    assert "Gb/s per port" in out.splitlines()[0]
    ndr = next(line for line in out.splitlines() if line.startswith("ib-ndr-400 "))
    assert "400" in ndr and "50.00" in ndr
    _, out, _ = run(["networks", "--json"], capsys)
    nets = {n["id"]: n for n in json.loads(out)["networks"]}
    assert nets["eth-25"]["bytes_per_s_per_port"] == 25e9 / 8 and nets["eth-25"]["ports_per"] == "node"


def test_broken_user_file_is_a_warning_not_a_crash(tmp_path, capsys):
    folder = tmp_path / "data" / "hardware"
    folder.mkdir(parents=True)
    (folder / "oops.toml").write_text("this is = = not toml")
    rc, out, err = run(["gpus"], capsys)
    assert rc == 0 and "nvidia-h100-sxm-80gb" in out
    assert "warning" in err and "oops.toml" in err
