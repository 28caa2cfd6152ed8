"""Issue 18 item 3 with real mouse and key events: a node preset keeps the layout valid (DP follows the GPU
count while the layout is automatic), and another GPU leaves the preset that named the old one."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSpinBox


def _click_tab(qtbot, tabs, title: str) -> None:
    bar = tabs.tabBar()
    index = next(i for i in range(tabs.count()) if tabs.tabText(i).replace("&", "") == title)
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(index).center())


def _pick_combo(qtbot, combo, text: str) -> None:
    combo.setFocus()
    index = combo.findText(text, Qt.MatchFlag.MatchStartsWith)
    assert index > 0, text
    for _ in range(abs(index - combo.currentIndex())):
        qtbot.keyClick(combo, Qt.Key.Key_Down if index > combo.currentIndex() else Qt.Key.Key_Up)


def _click_gpu(qtbot, picker, gpu_id: str) -> None:
    item = picker._find(gpu_id)
    picker.tree.scrollToItem(item)
    rect = picker.tree.visualItemRect(item)
    qtbot.mouseClick(picker.tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def test_node_preset_keeps_the_layout_valid_and_another_gpu_leaves_it(window, qtbot):
    _click_tab(qtbot, window.workload, "Pre-train")
    assert window.state.doc.workload == "pretrain"
    _pick_combo(qtbot, window.hardware.node, "NVIDIA DGX H100")
    doc = window.state.doc
    assert doc.hardware.node == "dgx-h100" and doc.hardware.gpus_per_node == 8
    assert doc.parallelism.gpus == 8  # DP followed the GPU count: no "Invalid layout … change parallelism.dp"
    out = window.state.evaluate_now()
    assert out.kind != "layout" and "Invalid layout" not in window.layout_editor.status.text()
    nodes = window.hardware.findChild(QSpinBox, "hardware.nodes")
    nodes.setFocus()
    qtbot.keyClick(nodes, Qt.Key.Key_Up)  # 2 nodes: the automatic layout follows again
    assert window.state.doc.hardware.nodes == 2 and window.state.doc.parallelism.gpus == 16
    assert window.state.evaluate_now().kind != "layout"
    _click_gpu(qtbot, window.hardware, "nvidia-h200-sxm-141gb")
    doc = window.state.doc
    assert doc.hardware.gpu == "nvidia-h200-sxm-141gb"
    assert doc.hardware.node is None and window.hardware.node.currentData() is None  # not "DGX H100" any more
    assert doc.hardware.gpus_per_node == 8 and doc.parallelism.gpus == 16  # the count stays
