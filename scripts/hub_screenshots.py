"""Screenshots of the Hub flow for the docs, taken against the local fake Hub the tests use.

    .venv/bin/python scripts/hub_screenshots.py [OUT_DIR]        (default docs/screenshots)
    .venv/bin/python scripts/hub_screenshots.py --session        (the CLI session docs/models.md shows)

The fake Hub (tests/fake_hub.py, on 127.0.0.1) serves ``example/Qwen3-8B-GGUF``: a GGUF header with
Qwen3-8B's dimensions and one file per quant whose size is llmplan's own computed size for that preset
(the real repo's files differ a little); and ``example/Qwen3-8B``: the catalog's Qwen3-8B config.json
with a safetensors header holding one bf16 tensor per tensor group. The app is driven the way a person
does it: type, Enter, wait.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("LLMPLAN_DATA_DIR", tempfile.mkdtemp(prefix="llmplan-shots-"))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QWEN3_8B = {"hidden": 4096, "layers": 36, "heads": 32, "kv": 8, "head_dim": 128, "ff": 12288, "vocab": 151936}
QUANTS = ("Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0")


def qwen3_header(folder: Path) -> bytes:
    """A header-only GGUF (llama.cpp's writer) with Qwen3-8B's architecture keys and tensor table."""
    import gguf
    import numpy as np

    d = QWEN3_8B
    path = folder / "qwen3-8b-header.gguf"
    w = gguf.GGUFWriter(str(path), "qwen3")
    w.add_name("Qwen3-8B")
    w.add_context_length(40960)
    w.add_embedding_length(d["hidden"])
    w.add_block_count(d["layers"])
    w.add_feed_forward_length(d["ff"])
    w.add_head_count(d["heads"])
    w.add_head_count_kv(d["kv"])
    w.add_key_length(d["head_dim"])
    w.add_value_length(d["head_dim"])
    w.add_rope_freq_base(1_000_000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"t{i}" for i in range(d["vocab"])])
    def info(name: str, *shape: int) -> None:  # the types do not matter here: the file sizes are served apart
        w.add_tensor_info(name, shape, np.dtype(np.float16), 2 * int(np.prod(shape)))

    h, kvw = d["hidden"], d["kv"] * d["head_dim"]
    info("token_embd.weight", d["vocab"], h)
    info("output.weight", d["vocab"], h)
    info("output_norm.weight", h)
    for i in range(d["layers"]):
        for name, shape in (("attn_q", (d["heads"] * d["head_dim"], h)), ("attn_k", (kvw, h)),
                            ("attn_v", (kvw, h)), ("attn_output", (h, d["heads"] * d["head_dim"])),
                            ("ffn_gate", (d["ff"], h)), ("ffn_up", (d["ff"], h)), ("ffn_down", (h, d["ff"]))):
            info(f"blk.{i}.{name}.weight", *shape)
        for name in ("attn_norm", "ffn_norm"):
            info(f"blk.{i}.{name}.weight", h)
        info(f"blk.{i}.attn_q_norm.weight", d["head_dim"])
        info(f"blk.{i}.attn_k_norm.weight", d["head_dim"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    return path.read_bytes()


def serve(tmp: Path):
    """The fake Hub with the two example repos, and HF_ENDPOINT pointing at it."""
    import json

    from tests.fake_hub import FakeFile, FakeHub, safetensors_file

    from llmplan.catalog.models import load_model_catalog
    from llmplan.core.params import count_params
    from llmplan.core.quant import gguf_metadata_bytes, quantized_weights
    from llmplan.formats.gguf_header import config_from_gguf, read_gguf_header
    from llmplan.formats.hf_config import spec_from_config

    head = qwen3_header(tmp)
    spec = spec_from_config(config_from_gguf(read_gguf_header(tmp / "qwen3-8b-header.gguf")), name="Qwen3-8B")
    files = {f"Qwen3-8B-{q}.gguf": FakeFile(head, quantized_weights(spec, q.lower()).total_bytes
                                            + gguf_metadata_bytes(spec)) for q in QUANTS}
    hub = FakeHub().start()
    hub.add("example/Qwen3-8B-GGUF", files)
    entry = load_model_catalog().get("Qwen/Qwen3-8B")
    tensors = {f"{g.name}.{i}": ("BF16", [g.count, *g.shape]) for i, g in enumerate(count_params(entry.spec).groups)}
    hub.add("example/Qwen3-8B", {"config.json": json.dumps(entry.config).encode(),
                                 "model.safetensors": safetensors_file(tensors)})
    os.environ.update(HF_ENDPOINT=hub.url, HF_HUB_CACHE=str(tmp / "hf"), LLMPLAN_CACHE_DIR=str(tmp / "lp"),
                      HF_HUB_DISABLE_PROGRESS_BARS="1")
    return hub


SESSION = ("llmplan-cli hub example/Qwen3-8B",
           "llmplan-cli hub example/Qwen3-8B-GGUF",
           "llmplan-cli estimate --model example/Qwen3-8B-GGUF:Q5_K_M --gpu nvidia-rtx-4090-24gb | head -12")


def session() -> None:
    import subprocess

    tmp = Path(tempfile.mkdtemp(prefix="llmplan-hub-session-"))
    hub = serve(tmp)
    env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", COLUMNS="120")
    for cmd in SESSION:
        print(f"$ {cmd}")
        run = subprocess.run(["bash", "-c", cmd], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        print((run.stdout + run.stderr).rstrip())
    hub.stop()


def main(out: Path) -> list[Path]:
    from PySide6.QtCore import QSettings, Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from llmplan.gui.main_window import MainWindow

    tmp = Path(tempfile.mkdtemp(prefix="llmplan-hub-shots-"))
    hub = serve(tmp)
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    settings = QSettings(str(tmp / "s.ini"), QSettings.Format.IniFormat)
    w = MainWindow(settings=settings, detect=False)
    w.resize(1280, 800)
    w.show()
    w.state.evaluate_now()

    def settle(seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end or w.models.hub.busy or w.state.pending:
            app.processEvents()
            time.sleep(0.01)
            if time.perf_counter() > end + 20:
                break

    written = []
    models = w.models
    QTest.keyClicks(models.search, "example/Qwen3-8B-GGUF")
    settle(0.3)
    written.append(out / "hub-search.png")
    models.grab().save(str(written[-1]))
    QTest.keyClick(models.search, Qt.Key.Key_Return)
    settle(1.0)
    w.state.evaluate_now()
    settle(0.5)
    written.append(out / "hub-gguf.png")
    w.grab().save(str(written[-1]))
    hub.stop()
    return written


if __name__ == "__main__":
    if sys.argv[1:] == ["--session"]:
        session()
        sys.exit(0)
    for p in main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "screenshots"):
        print(p)
