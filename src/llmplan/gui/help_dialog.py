"""Help → "How the estimates are made": every source the engine cites
(``core.explain.SOURCES``) and how to read the tooltips; and About."""

from __future__ import annotations

import html

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from llmplan.core.explain import SOURCES


def sources_html() -> str:
    items = "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in SOURCES.items())
    return (
        "<h2>How the estimates are made</h2>"
        "<p>Every number llmplan shows comes from its estimation engine, a set of pure functions of the "
        "plan. Hover any figure to see its formula, the inputs it used, its assumptions and the source "
        "below it comes from.</p>"
        "<p>Memory is that of the worst-loaded GPU: weights, gradients, optimizer states and master weights "
        "(partitioned by ZeRO stage), activations (by recompute mode, tensor/sequence/context parallelism), "
        "KV cache, communication buffers and a fixed overhead. Time comes from FLOPs over achievable peak, "
        "the pipeline bubble and the exposed part of communication.</p>"
        f"<h3>Sources</h3><ul>{items}</ul>")


class HelpDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("How the estimates are made")
        self.resize(720, 560)
        self.text = QTextBrowser()
        self.text.setOpenExternalLinks(True)
        self.text.setHtml(sources_html())
        self.text.setAccessibleName("Sources")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(self.text)
        lay.addWidget(buttons)


def about_text(version: str) -> str:
    return (f"<h3>llmplan {version}</h3><p>What hardware a large language model needs, and whether it fits "
            "your machine: training, fine-tuning (full, LoRA, QLoRA) and inference.</p>"
            "<p>Licensed under Apache-2.0.</p>")
