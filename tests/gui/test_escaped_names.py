"""Issue 17: a plan, model or GPU name holding control characters (a terminal colour code, a line break)
is shown escaped, on one line, in every single-line label that shows it: the window title, the model
picker (list and architecture line), the hardware picker (catalog and "This machine" rows, the
detection line), the this-machine verdict and the verdict banner. The escaping is one function,
``llmplan.core.present.one_line`` (the CLI and detection use it too).

The names come the way a user's files bring them: a user model entry, a user GPU file, a plan file,
and a detected GPU (built from the recorded RTX 4090 nvidia-smi output, renamed).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from llmplan.core.present import one_line
from llmplan.gui.picker_models import walk
from llmplan.hw.host import parse_meminfo
from llmplan.hw.nvidia import parse_nvidia_smi_csv
from llmplan.hw.types import DetectionReport, HostInfo
from llmplan.resources_path import catalogs_dir

HW = Path(__file__).resolve().parents[1] / "data" / "hw"

EVIL = "evil\x1b[31m\nname"
SHOWN = "evil\\x1b[31m\\nname"  # what a person sees: the escape visible, one line


def _single_line(text: str, where: str) -> None:
    assert text.isprintable(), f"{where}: control characters shown: {text!r}"
    assert SHOWN in text, f"{where}: the escaped name is missing: {text!r}"


def _user_files(data: Path) -> None:
    entry = json.loads((catalogs_dir() / "models" / "meta-llama__Llama-2-13b-hf.json").read_text("utf-8"))
    entry.update(id="me/evil", display_name=EVIL, user=True)
    (data / "models").mkdir(parents=True)
    (data / "models" / "evil.json").write_text(json.dumps(entry), "utf-8")
    gpu = {"id": "my-evil-gpu", "name": EVIL, "vendor": "nvidia", "memory_bytes": 85899345920,
           "memory_marketing": "80 GB", "memory_bandwidth_gbs": 3350.0, "tflops": {"bf16": 989.4, "fp32": 67.0},
           "pcie_generation": 5, "pcie_lanes": 16, "tdp_watts": 700.0}
    (data / "hardware").mkdir()
    (data / "hardware" / "evil.json").write_text(json.dumps({"gpu": [gpu]}), "utf-8")


def test_names_with_control_characters_show_escaped_on_one_line(window, isolated, qtbot):
    from llmplan.catalog.models import load_model_catalog
    from llmplan.plan.planfile import load_plan, save_plan
    from llmplan.resources_path import resources_dir

    _user_files(isolated / "data")
    load_model_catalog(refresh=True)
    base = load_plan(resources_dir() / "examples" / "serve-llama-3.1-70b-tp4-h100.llmplan")
    doc = base.model_copy(update={
        "name": EVIL,
        "model": base.model.model_copy(update={"id": "me/evil", "config": None, "spec": None, "name": None}),
        "hardware": base.hardware.model_copy(update={"gpu": "my-evil-gpu", "gpu_spec": None}),
    })
    path = isolated / "evil.llmplan"
    save_plan(doc, path, inline=False)
    window.models.reload(refresh=True)
    assert window.open_path(path, ask=False)
    window.state.path = None  # the title then shows the plan's own name, not the file's
    window._update_title()
    _single_line(window.windowTitle(), "window title")

    window.models.search.setText("evil")
    rows = [i.data() for i in walk(window.models.list.model())]
    assert rows, "the user model is not listed"
    _single_line(rows[0], "model picker row")
    qtbot.waitUntil(lambda: SHOWN in window.models.arch.text(), timeout=20_000)
    arch_first_line = window.models.arch.text().split("<br>")[0]
    _single_line(arch_first_line, "architecture line")

    window.hardware.search.setText("evil")
    gpu_rows = [i.data() for i in walk(window.hardware.tree.model())]
    _single_line(next(r for r in gpu_rows if "evil" in r), "hardware picker row")

    total, available = parse_meminfo((HW / "proc_meminfo.txt").read_text(encoding="utf-8"))
    recorded = parse_nvidia_smi_csv((HW / "nvidia_smi_rtx4090.csv").read_text(encoding="utf-8"))[0]
    evil_gpu = dataclasses.replace(recorded, name=EVIL)  # built like a probe builds it: escaped at detection
    host = HostInfo("AMD EPYC", 2, 2, total, available, "Linux")
    window.hardware.detector.finished.emit(DetectionReport(gpus=(evil_gpu,), host=host), "")
    window.this_machine.wait_idle()
    _single_line(window.hardware.detect_status.text(), "detection line")
    _single_line(next(r for r in (i.data() for i in walk(window.hardware.tree.model())) if SHOWN in r),
                 "This machine row")
    _single_line(window.this_machine.verdict.text(), "this-machine verdict")

    assert window.state.edit("model.id", EVIL)  # an id no catalog has: the verdict banner names it
    qtbot.waitUntil(lambda: SHOWN in window.results.banner.text(), timeout=20_000)
    _single_line(window.results.banner.text(), "verdict banner")
    assert window.grab().save(str(isolated / "escaped-names.png"))  # looked at by eye when this test was written


def test_one_line_escapes_every_control_character():
    for c in ["\x1b", "\n", "\r", "\x00", "\x7f", "\x85", "\x9b", "\u2028", "\u202e", "\ufeff", "\ud800"]:
        shown = one_line(f"a{c}b")
        assert shown.isprintable() and shown.startswith("a\\") and shown.endswith("b"), (c, shown)
    assert one_line("NVIDIA H100 80GB HBM3 é 模型") == "NVIDIA H100 80GB HBM3 é 模型"
    assert one_line("x" * 300, 200) == "x" * 199 + "…"
