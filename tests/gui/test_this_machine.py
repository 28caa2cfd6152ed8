"""The "This machine" line: a recorded detection (tests/data/hw/, read by the real parsers)
stands in for live detection; the verdict and the nearest changes come from the real
``llmplan.fit.local`` and engine, and applying one is one undoable edit.

Reference: the fixture's RTX 4090 reports 24,564 MiB (nvidia-smi CSV in tests/data/hw/). The app's
default plan (LoRA on Llama-3-8B, 4,096-token sequences) does not fit it even with the default policy's
full recompute: 24.2 GiB (the Hugging Face loss's fp32 logits of 4,096 tokens alone are 5.9 GiB, and
DeepSpeed's two 5e8-element gradient buckets are 1.86 GiB). So a new window re-pointed at the detected
card starts on the first variant that fits it (``gui.first_plan``): LoRA on 2,048-token sequences,
LLaMA-Factory's default length, 20.5 GiB of 24.0 (engine figures; the tests allow ±0.05 GiB, the display
rounding). A first start on a 24 GB card that reads "does not fit" fails here. With recompute stated as
"none" (the ``detected`` fixture: the plan stays the user's, on its H100) LoRA at 4,096 tokens needs
more than 24 GiB on this machine, and the nearest changes are offered.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from llmplan.hw.host import parse_meminfo
from llmplan.hw.nvidia import parse_nvidia_smi_csv
from llmplan.hw.types import DetectionReport, HostInfo

HW = Path(__file__).resolve().parents[1] / "data" / "hw"


def rtx4090_report() -> DetectionReport:
    total, available = parse_meminfo((HW / "proc_meminfo.txt").read_text(encoding="utf-8"))
    gpus = parse_nvidia_smi_csv((HW / "nvidia_smi_rtx4090.csv").read_text(encoding="utf-8"))
    return DetectionReport(gpus=gpus, host=HostInfo("AMD EPYC", 2, 2, total, available, "Linux"))


@pytest.fixture
def detected(window):
    """The window after background detection reported the recorded RTX 4090 machine, with a plan
    that states recompute "none" (so the policy leaves it and the plan does not fit there)."""
    assert window.state.edit("training.recompute", "none")
    window.hardware.detector.finished.emit(rtx4090_report(), "")
    window.this_machine.wait_idle()
    return window


def test_first_start_on_a_24gb_card_fits_and_says_what_was_chosen(window):
    window.hardware.detector.finished.emit(rtx4090_report(), "")
    window.state.evaluate_now()
    window.this_machine.wait_idle()
    doc = window.state.doc
    assert doc.hardware.gpu == "nvidia-rtx-4090-24gb" and window.state.undo_stack.count() == 0
    assert (doc.training.method, doc.training.seq_len) == ("lora", 2048)
    banner = window.results.banner.text()
    used, capacity = map(float, re.match(r"Fits: ([0-9.]+) of ([0-9.]+) GiB per GPU", banner).groups())
    assert used == pytest.approx(20.5, abs=0.1) and capacity == pytest.approx(24.0, abs=0.05), banner
    text = window.this_machine.verdict.text()
    assert text.startswith("This machine (NVIDIA GeForce RTX 4090") and ": fits" in text, text
    note = window.results.start_note
    assert note.isVisibleTo(window), "the results must say what the first start chose"
    # 4,096 tokens fit with ZeRO-3 and CPU offload (23.7 of 24.0 GiB), but only within the allocator's margin
    assert note.text() == ("Chosen for this NVIDIA GeForce RTX 4090 24GB: LoRA on 2,048-token sequences, "
                           "LLaMA-Factory's default length (4,096 fits only within the allocator's margin even with "
                           "CPU offload)."), note.text()
    assert "TRL" in note.toolTip() and "axolotl" in note.toolTip()  # every try and the sources
    window.state.edit("training.seq_len", 1024)  # the person's own edit: the note is about a plan no longer shown
    window.state.evaluate_now()
    assert not note.isVisibleTo(window) and window.state.doc.training.seq_len == 1024


def test_detection_leaves_a_plan_the_person_opened_alone(window):
    """Only the untouched default plan of a new window moves: a recovered (or loaded) plan keeps its GPU,
    method and sequence length, and no note is shown."""
    from llmplan.plan.overrides import apply_overrides

    mine = apply_overrides(window.state.doc, ("training.seq_len=4096", "training.method=lora",
                                              "hardware.gpu=nvidia-a100-sxm4-80gb"))
    window.state.load(mine, None)  # as crash recovery of an untitled plan does
    window.hardware.detector.finished.emit(rtx4090_report(), "")
    window.state.evaluate_now()
    assert window.state.doc == mine and not window.results.start_note.isVisibleTo(window)


def _value(doc, path: str):
    for part in path.split("."):
        doc = getattr(doc, part)
    return doc


def test_detected_machine_is_listed_and_judged(detected):
    w = detected
    tree = w.hardware.tree
    top = tree.model().index(0, 0)
    assert top.data() == "This machine" and tree.isExpanded(top)
    detected = top.model().index(0, 0, top)
    assert "RTX 4090" in detected.data() and detected.data(Qt.ItemDataRole.ToolTipRole) == "Detected on this machine"
    assert "RTX 4090" in w.hardware.detect_status.text()
    tm = w.this_machine
    assert tm.isVisibleTo(w) and tm.fit is not None
    text = tm.verdict.text()
    assert text.startswith("This machine (NVIDIA GeForce RTX 4090") and "does not fit" in text, text
    assert "short" in text and tm.fit.current.headroom_bytes < 0
    assert tm.changes.isVisibleTo(w) and 'href="change:0"' in tm.changes.text()


def test_applying_a_change_is_one_undoable_edit_and_makes_it_fit(detected):
    w, tm = detected, detected.this_machine
    before = w.state.doc
    change = tm.fit.changes[0]
    tm.changes.linkActivated.emit("change:0")  # as a click on the first link
    after = w.state.doc
    assert after != before
    for override in change.overrides:
        path, value = override.split("=", 1)
        assert str(_value(after, path)).lower() == value.lower(), override
    assert after.hardware.gpu == tm.machine.catalog_id  # re-pointed at this machine's GPU
    out = w.state.evaluate_now()
    assert out.ok and out.estimate.fits
    tm.wait_idle()
    assert tm.fit.fits and "does not fit" not in tm.verdict.text() and not tm.changes.isVisibleTo(w)
    w.undo_action.trigger()
    assert w.state.doc == before
    tm.wait_idle()
    assert "does not fit" in tm.verdict.text()


def test_keyboard_applies_a_change_and_stale_answers_are_refused(detected):
    w, tm = detected, detected.this_machine
    assert tm.apply_actions[0].shortcut().toString() == "Alt+1"
    w.state.edit("training.seq_len", 8192)  # the plan moves on before the answer for it arrives
    assert not tm.apply(0)
    tm.wait_idle()
    before = w.state.doc
    tm.apply_actions[0].trigger()
    assert w.state.doc != before


def test_a_plan_that_fits_shows_its_limits(detected):
    w, tm = detected, detected.this_machine
    w.workload.setCurrentIndex(0)  # serving Llama-3-8B in bf16 fits a 24 GB card
    w.state.evaluate_now()
    tm.wait_idle()
    assert tm.fit.fits, tm.verdict.text()
    assert "fits" in tm.verdict.text() and not tm.changes.isVisibleTo(w)
    assert "Largest" in tm.verdict.toolTip()


def test_no_detection_hides_the_line(window):
    window.hardware.detector.finished.emit(None, "hardware detection failed")
    assert not window.this_machine.isVisibleTo(window)


def test_a_machine_without_gpu_says_so_and_offers_the_cpu(window):
    total, available = parse_meminfo((HW / "proc_meminfo.txt").read_text(encoding="utf-8"))
    report = DetectionReport(gpus=(), host=HostInfo("AMD EPYC", 2, 2, total, available, "Linux"),
                             reasons=("no NVIDIA driver",))
    window.workload.setCurrentIndex(0)  # serving: llama.cpp can run on the CPU alone
    window.hardware.detector.finished.emit(report, "")
    tm = window.this_machine
    tm.wait_idle()
    assert tm.isVisibleTo(window) and "no GPU" in tm.verdict.text()
    assert window.state.doc.hardware.gpu == "nvidia-h100-sxm-80gb"  # the plan keeps its GPU
    assert tm.fit.changes and "llama.cpp" in tm.changes.text()  # "Run it with llama.cpp …"
    before = window.state.doc
    assert tm.apply(0) and window.state.doc != before  # one undoable edit
    assert window.state.doc.inference.engine in ("llama.cpp", "llama-cpp")
    window.undo_action.trigger()
    assert window.state.doc == before


def test_a_saved_calibration_of_this_gpu_is_used_and_said(window):
    """`llmplan-cli calibrate` saved a calibration of this RTX 4090 (hand-written here in its format): the
    window's verdict for this machine runs on the measured fractions, and its tooltip says so."""
    from llmplan.hw.measured import Calibration, MatmulMeasurement, save_calibration

    save_calibration(Calibration(device="cuda", device_name="NVIDIA GeForce RTX 4090", torch_version="2.13.0",
                                 created_utc="2026-11-24T08:00:00Z",
                                 matmul=(MatmulMeasurement("bf16", 4096, 120e12, 100, 1.0),),
                                 memory_bandwidth_bytes_per_s=900e9, copy_bytes=1 << 30))
    window.hardware.detector.finished.emit(rtx4090_report(), "")
    tm = window.this_machine
    tm.wait_idle()
    assert tm.machine.calibration is not None and tm.machine.calibration.measured_on == "NVIDIA GeForce RTX 4090"
    assert tm.fit.local_plan.efficiency.memory_bandwidth == pytest.approx(900e9 / tm.machine.gpu.memory_bandwidth,
                                                                          abs=1e-4)
    assert "calibrated on NVIDIA GeForce RTX 4090 (2026-11-24)" in tm.verdict.toolTip()


def test_the_detection_status_shows_once_a_report_arrives(detected):
    assert detected.hardware.detect_status.isVisibleTo(detected)
    assert detected.hardware.detect_status.text().startswith("This machine: ")


def _settled(window) -> None:
    window.state.evaluate_now()
    window.this_machine.wait_idle()
    window.results.fixes.wait_idle()


def test_one_fix_list_when_the_plan_is_this_machine(window):
    """The plan on this machine's RTX 4090 does not fit (8,192-token sequences): the fixes are listed once,
    under "This machine" (they know the machine: one GPU, its host RAM), and Alt+1 / a click apply them."""
    window.hardware.detector.finished.emit(rtx4090_report(), "")
    window.state.edit("training.seq_len", 8192)
    _settled(window)
    assert window.results.banner.text().startswith("Does not fit"), window.results.banner.text()
    tm, fixes = window.this_machine, window.results.fixes
    assert tm.changes.isVisibleTo(window) and 'href="change:0"' in tm.changes.text()
    assert not fixes.isVisibleTo(window) and not fixes.busy and fixes.fixes == ()
    before = window.state.doc
    tm.apply_actions[0].trigger()  # Alt+1
    assert window.state.doc != before
    _settled(window)
    assert window.state.outcome.estimate.fits and not tm.changes.isVisibleTo(window)  # fits here: no changes
    window.undo_action.trigger()
    _settled(window)
    assert window.state.doc == before and tm.changes.isVisibleTo(window) and not fixes.isVisibleTo(window)


def test_two_fix_lists_when_the_plan_names_another_gpu(window):
    """A plan on an RTX 3090 (not this machine's card) keeps its own fixes beside this machine's."""
    window.hardware.detector.finished.emit(rtx4090_report(), "")
    window.state.edit_many({"hardware.gpu": "nvidia-rtx-3090-24gb", "training.seq_len": 8192}, "3090, 8k")
    _settled(window)
    fixes = window.results.fixes
    assert fixes.isVisibleTo(window) and fixes.title.text().startswith("To fit on NVIDIA GeForce RTX 3090")
    assert fixes.fixes and window.this_machine.changes.isVisibleTo(window)


def test_the_plans_own_fixes_return_when_this_machine_lists_none(qtbot):
    """Left to "This machine", the results' list searches nothing; if that line then has no changes for the
    plan (it fits there, or it has no verdict), ``uncover`` looks for the plan's own fixes after all."""
    from llmplan.gui.backend import default_plan
    from llmplan.gui.plan_fixes import PlanFixes
    from llmplan.plan.overrides import apply_overrides

    fixes = PlanFixes()
    qtbot.addWidget(fixes)
    fixes.show()
    doc = apply_overrides(default_plan("nvidia-rtx-4090-24gb"), ("training.seq_len=8192",))
    fixes.covered_by = lambda d: d == doc
    fixes.request(doc, "does_not_fit", "NVIDIA GeForce RTX 4090 24GB")
    assert not fixes.isVisible() and not fixes.busy
    fixes.uncover(apply_overrides(doc, ("training.seq_len=4096",)))  # an answer about another plan: ignored
    assert not fixes.isVisible() and not fixes.busy
    fixes.uncover(doc)
    assert fixes.isVisible() and fixes.busy
    fixes.wait_idle()
    assert fixes.fixes and fixes.buttons[0].isVisible()
