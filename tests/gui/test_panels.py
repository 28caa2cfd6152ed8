"""Panels and helpers that need no engine: rank drawing, units, files, preferences, help."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QSpinBox

from llmplan.core.explain import SOURCES
from llmplan.core.present import MemoryUnit, duration, si
from llmplan.core.workload import ParallelLayout
from llmplan.gui.gpu_grid import GpuGrid, ranks_of


def test_ranks_follow_megatron_order():
    # Megatron-LM's default order: tensor fastest, then context, data, pipeline.
    lay = ParallelLayout(tp=2, pp=2, dp=2, cp=1)
    assert ranks_of(0, lay).tp == 0 and ranks_of(1, lay).tp == 1
    r = ranks_of(2, lay)
    assert (r.tp, r.dp, r.pp) == (0, 1, 0)
    r = ranks_of(7, lay)
    assert (r.tp, r.dp, r.pp) == (1, 1, 1)
    assert ranks_of(8, lay) is None  # idle GPU beyond the layout


def test_gpu_grid_aggregates_large_clusters(qtbot):
    g = GpuGrid()
    qtbot.addWidget(g)
    g.resize(400, 200)
    g.set_cluster(ParallelLayout(tp=8, pp=4, dp=128), 8, 512)
    assert g.aggregated
    g.show()
    g.grab()  # paints 512 node tiles, not 4,096 GPU tiles
    assert len(g._boxes) == 512
    assert "pipeline stage" in g.describe_at(0, -1)


def test_units():
    assert MemoryUnit("GiB").fmt(80 * 1024**3) == "80.0 GiB"
    assert MemoryUnit("GB").fmt(80e9) == "80.0 GB"
    assert si(989e12, "FLOP/s") == "989 TFLOP/s"
    assert duration(0.25) == "250 ms" and duration(3 * 86400 * 10).endswith("days")


def test_layout_needing_more_gpus_is_explained(window):
    window.findChild(QSpinBox, "parallelism.tp").setValue(4)
    assert "needs TP·PP·DP·CP = 4 GPUs but the cluster has 1" in window.layout_editor.status.text()
    window.findChild(QSpinBox, "hardware.gpus_per_node").setValue(8)
    assert "uses 4 of the cluster's 8 GPUs" in window.layout_editor.status.text()
    window.layout_editor.fill_button.click()
    assert window.state.doc.parallelism.dp == 2


def test_out_of_range_value_is_refused_not_applied(window):
    messages = []
    window.state.edit_refused.connect(messages.append)
    assert window.state.edit("training.seq_len", 0) is False
    assert messages and "seq_len" in messages[0]
    assert window.state.undo_stack.count() == 0


def test_autosave_and_recovery(window, qtbot, settings, fake_dialogs):
    from llmplan.gui.main_window import MainWindow

    window.state.edit("training.seq_len", 1536)
    window.autosave_now()
    slot = window.autosave_slot.path
    assert slot.is_file()
    window.autosave_slot._lock.unlock()  # as if the process had died: its lock is gone, the copy stays
    window.autosave_slot._lock = None
    fresh = MainWindow(settings=settings, detect=False, charts=False)  # the next start, after a crash
    qtbot.addWidget(fresh)
    fake_dialogs.answer = "Yes"
    fresh.offer_recovery()
    assert fresh.state.doc.training.seq_len == 1536
    assert fresh.state.dirty  # recovered work still needs saving
    assert not slot.exists()
    fresh.state.undo_stack.setClean()


def test_drop_plan_file_opens_it(window, isolated, fake_dialogs):
    from llmplan.gui import files
    from llmplan.gui.commands import set_path

    doc = set_path(window.state.doc, "training.micro_batch", 3)
    files.save(doc, isolated / "dropped.llmplan")
    window.open_dropped([isolated / "dropped.llmplan"])
    assert window.state.doc.training.micro_batch == 3
    assert window.state.path == isolated / "dropped.llmplan"
    assert str((isolated / "dropped.llmplan").resolve()) in window._recent()


def test_window_state_remembered_apart_from_preferences(window, settings, qtbot):
    from llmplan.gui.main_window import MainWindow

    window.resize(1200, 700)
    window.main.setSizes([200, 400, 400])
    window.close()
    assert settings.value("ui/geometry") is not None
    keys = settings.allKeys()
    assert all(k.startswith(("ui/", "prefs/")) for k in keys)
    again = MainWindow(settings=settings, detect=False, charts=False)
    qtbot.addWidget(again)
    again.show()
    # (the offscreen screen is small, so Qt clamps restored geometry: the saved splitter state is used,
    # not the first-start share, and a column is never narrower than its content once the state is applied)
    assert not again.main.share_on_show
    assert again.main.sizes()[0] >= again.column_needs()[0]


def test_preferences_switch_memory_unit(window, settings):
    from llmplan.gui.preferences import Preferences

    window.apply_preferences(Preferences(memory_unit="GB", theme="light"))
    assert Preferences.load(settings).memory_unit == "GB"
    assert window.results.unit.name == "GB"
    window.apply_preferences(Preferences())


def test_help_lists_every_source(qtbot):
    from llmplan.gui.help_dialog import HelpDialog

    dlg = HelpDialog()
    qtbot.addWidget(dlg)
    text = dlg.text.toPlainText()
    for key in SOURCES:
        assert key in text


def test_corrupt_autosave_is_set_aside_not_offered(isolated):
    from llmplan.gui import files

    folder = files.autosave_folder()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "123-dead.llmplan").write_text("garbage", "utf-8")
    assert files.recoverable() is None
    assert (folder / "123-dead.llmplan.unreadable").read_text("utf-8") == "garbage"  # kept for a person
    assert files.recoverable() is None


def test_open_recent_menu_lists_files(window, isolated):
    window._add_recent(Path(isolated / "a.llmplan"))
    assert window.recent_menu.isEnabled()
    assert window.recent_menu.actions()[0].text().endswith("a.llmplan")


def test_more_gpus_keep_a_filled_layout_filled(window):
    window.findChild(QSpinBox, "hardware.gpus_per_node").setValue(8)
    assert window.state.doc.parallelism.dp == 8
    window.undo_action.trigger()  # one undo step undoes both
    assert window.state.doc.parallelism.dp == 1 and window.state.doc.hardware.gpus_per_node == 1


def test_new_plan_uses_preferred_efficiencies(window, fake_dialogs):
    from llmplan.gui.preferences import Preferences

    window.apply_preferences(Preferences(matmul=0.45))
    window.new_plan()
    assert window.state.doc.efficiency.matmul == 0.45
    assert window.state.doc.efficiency.network is None  # not set: the catalog's own
    window.apply_preferences(Preferences())


def test_detection_runs_in_background_and_reports(qtbot, settings, fake_dialogs, monkeypatch):
    import types

    from llmplan.gui.main_window import MainWindow

    fake_module = types.ModuleType("llmplan.hw.detect")
    reasons = ("no NVIDIA driver", "NVIDIA: nvidia-smi not installed", "AMD: amd-smi not installed",
               "AMD: rocm-smi not installed")  # as on a Linux desktop without any GPU tools
    fake_module.detect_all = lambda: types.SimpleNamespace(gpus=(), reasons=reasons)
    monkeypatch.setitem(__import__("sys").modules, "llmplan.hw.detect", fake_module)
    w = MainWindow(settings=settings, detect=True, charts=False)
    qtbot.addWidget(w)
    qtbot.waitUntil(lambda: not w.hardware.detector.running, timeout=10_000)
    assert w.hardware.detect_status.text() == "No GPU found on this machine (hover for why)"
    assert "no NVIDIA driver" in w.hardware.detect_status.toolTip()
    assert w.hardware.detect_status.wordWrap()
    # the status once held every reason on one line and opened the window 1,765 px wide on such machines
    assert w.minimumSizeHint().width() <= 1280, w.minimumSizeHint()
    assert not w.hardware.spinner.isVisible()
    w.state.undo_stack.setClean()


def test_window_accepts_file_drags_only(window):
    from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
    from PySide6.QtGui import QDragEnterEvent

    files = QMimeData()
    files.setUrls([QUrl.fromLocalFile("/tmp/config.json")])
    ev = QDragEnterEvent(QPointF(5, 5), Qt.DropAction.CopyAction, files, Qt.MouseButton.LeftButton,
                         Qt.KeyboardModifier.NoModifier)
    ev.ignore()
    window.dragEnterEvent(ev)
    assert ev.isAccepted()
    text = QMimeData()
    text.setText("hello")
    ev = QDragEnterEvent(QPointF(5, 5), Qt.DropAction.CopyAction, text, Qt.MouseButton.LeftButton,
                         Qt.KeyboardModifier.NoModifier)
    ev.ignore()
    window.dragEnterEvent(ev)
    assert not ev.isAccepted()


def test_every_control_has_an_accessible_name(window):
    """Screen readers need a name on each control: its accessible name, or a button's text."""
    from PySide6.QtWidgets import QAbstractButton, QAbstractSpinBox, QComboBox, QLineEdit

    nameless = []
    for cls in (QAbstractButton, QAbstractSpinBox, QComboBox, QLineEdit):
        for w in window.findChildren(cls):
            if isinstance(w, QLineEdit) and isinstance(w.parent(), (QAbstractSpinBox, QComboBox)):
                continue  # the editor inside a spin box or combo box
            if cls is QAbstractButton and w.text():
                continue
            if not w.accessibleName() and type(w).__name__ not in ("QToolButton",):
                nameless.append(f"{type(w).__name__} {w.objectName()!r} {getattr(w, 'text', lambda: '')()!r}")
    assert not nameless, nameless


def test_broken_user_catalog_files_show_a_lasting_notice(qtbot, settings, fake_dialogs, isolated):
    """A user's broken GPU and model files are skipped (the app goes on) and said so in the window."""
    from llmplan.catalog.hardware import user_hardware_dir
    from llmplan.catalog.models import user_models_dir
    from llmplan.gui.main_window import MainWindow

    user_hardware_dir().mkdir(parents=True, exist_ok=True)
    (user_hardware_dir() / "my-gpus.toml").write_text("[[gpu]]\nid = 'x'\nmemory_gib = 'lots'\n", "utf-8")
    user_models_dir().mkdir(parents=True, exist_ok=True)
    (user_models_dir() / "mine.json").write_text("{not json", "utf-8")
    w = MainWindow(settings=settings, detect=False, charts=False)
    qtbot.addWidget(w)
    w.show()  # the notice comes right after the window's first paint (gui/after_paint.py)
    qtbot.waitUntil(lambda: w.catalog_notice.isVisibleTo(w), timeout=10_000)
    assert w.catalog_notice.text() == "⚠ 2 catalog files skipped"
    assert "my-gpus.toml" in w.catalog_notice.toolTip() and "mine.json" in w.catalog_notice.toolTip()
    assert w.state.evaluate_now().ok  # the shipped catalog still works
    w.state.undo_stack.setClean()


def test_no_catalog_notice_when_every_file_loads(window):
    assert not window.catalog_notice.isVisibleTo(window)


def test_hovering_a_gpu_shows_its_ranks_and_its_stages_memory(window, qtbot):
    """Issue: "hover a GPU: its ranks and its memory". With PP4 the first stage (embedding) and a middle
    stage hold different memory; each GPU's tooltip shows its own stage's, from the engine."""
    from PySide6.QtWidgets import QToolTip

    from llmplan.core.training.memory import stage_totals

    assert window.state.edit_many({"workload": "pretrain", "training.method": "full", "hardware.gpus_per_node": 4,
                                   "parallelism.pp": 4, "parallelism.dp": 1, "parallelism.tp": 1}, "PP4")
    out = window.state.evaluate_now()
    assert out.ok, out.message
    grid = window.layout_editor.grid
    pane = window.layout_editor.parentWidget().parentWidget()  # the editor's scroll area: the drawing may sit
    qtbot.wait(50)  # the editor's layout settles first (the drawing's height follows its rows of GPUs)
    pane.ensureWidgetVisible(grid)  # below its fold (colour key above it), so scroll to it as a person would
    qtbot.wait(50)
    per_stage = stage_totals(out.scenario)
    assert per_stage[0] != per_stage[1]
    texts = []
    for stage in (0, 1):
        rect = next(r for r, node, gpu in grid._boxes if (node, gpu) == (0, stage))
        qtbot.mouseMove(grid, rect.center().toPoint())
        want = f"pipeline stage {stage}/4"
        qtbot.waitUntil(lambda want=want: QToolTip.isVisible() and want in QToolTip.text(), timeout=2000)
        texts.append(QToolTip.text())
    assert window.unit.fmt(per_stage[0]) in texts[0] and window.unit.fmt(per_stage[1]) in texts[1]
    assert all("(this GPU's pipeline stage)" in t for t in texts)


def test_layout_editor_marks_tp_groups_that_span_nodes(window, tmp_path):
    # TP=16 on 8-GPU nodes: each TP group spans two nodes; the editor says so and outlines the GPUs.
    window.findChild(QSpinBox, "hardware.gpus_per_node").setValue(8)
    window.state.edit("hardware.network", "ib-ndr-400")
    window.findChild(QSpinBox, "hardware.nodes").setValue(2)
    window.findChild(QSpinBox, "parallelism.tp").setValue(16)
    window.layout_editor.fill_button.click()
    assert "TP groups span nodes" in window.layout_editor.status.text()
    grid = window.layout_editor.grid
    assert "TP group of 16 spans nodes" in grid.describe_at(1, 3)
    grid.grab().save(str(tmp_path / "tp16.png"))
    window.findChild(QSpinBox, "parallelism.tp").setValue(8)
    window.layout_editor.fill_button.click()
    assert "span nodes" not in window.layout_editor.status.text()
