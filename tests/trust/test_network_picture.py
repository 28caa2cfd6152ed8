"""docs/images/network-two-nodes.svg is what scripts/network_picture.py draws from the model today:
a change to the network model or the presets that moves a number in the picture must redraw it."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("network_picture", ROOT / "scripts" / "network_picture.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_committed_picture_matches_the_model():
    mod = _script()
    committed = (ROOT / "docs" / "images" / "network-two-nodes.svg").read_text(encoding="utf-8")
    assert committed == mod.svg(mod.figures()), "run: .venv/bin/python scripts/network_picture.py"


def test_picture_shows_the_model_choices():
    f = _script().figures()
    assert f["tp"].split(": ")[1].startswith("nvls/Simple")  # one Hopper node: NVLink SHARP
    assert "tree/LL" in f["small"]  # a 4 KiB call across nodes: NCCL's tree with the LL protocol
    assert "47.0 GB/s" in f["dp_share"]  # one NDR NIC's share: 50 GB/s x 0.94
