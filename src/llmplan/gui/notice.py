"""A closable notice banner: problems a person must read stay until they dismiss them.

A status-bar message vanishes after a few seconds, so a failed drop ("garbage.bin: not a
model file") used to be gone before it was read (issue 18). ``NoticeBanner`` keeps every
problem since it was last dismissed, one line each, word-wrapped, with a close button
(also Escape while it has focus). Its text goes through ``wording.for_app`` like every
message the app shows.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QScrollArea, QToolButton, QWidget

from llmplan.gui.wording import for_app

MAX_LINES = 8  # older problems beyond this are summarised as a count
SHOWN_LINES = 6  # text lines the banner shows before it scrolls: eight wrapped problems hid the model list (trial33)


class NoticeBanner(QFrame):
    dismissed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("noticeBanner")
        self.setAccessibleName("Problems")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet("#noticeBanner { background: #fdecea; border: 1px solid #c62828; border-radius: 3px; }"
                           "#noticeBanner QLabel { color: #7f1d1d; }")
        self.lines: list[str] = []
        self.hidden_count = 0
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.close_button = QToolButton()
        self.close_button.setText("✕")
        self.close_button.setAccessibleName("Dismiss")
        self.close_button.setToolTip("Dismiss these messages (Esc)")
        self.close_button.clicked.connect(self.dismiss)
        self.scroll = QScrollArea()
        self.scroll.setWidget(self.text)
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setStyleSheet("QScrollArea, QScrollArea > QWidget > QWidget { background: transparent; }")
        self.text.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.scroll.setAccessibleName("Problems")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 4, 4, 4)
        lay.addWidget(self.scroll, 1)
        lay.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()

    def add(self, message: str) -> None:
        """Show one more problem (the banner appears if it was hidden)."""
        self.lines.append(for_app(message))
        if len(self.lines) > MAX_LINES:
            self.hidden_count += len(self.lines) - MAX_LINES
            self.lines = self.lines[-MAX_LINES:]
        more = [f"… and {self.hidden_count} earlier"] if self.hidden_count else []
        self.text.setText("\n".join(["⚠ " + line for line in self.lines] + more))
        self.show()
        self._fit()
        bar = self.scroll.verticalScrollBar()  # the newest problem, at the bottom, in view
        QTimer.singleShot(0, lambda: bar.setValue(bar.maximum()))

    def _fit(self) -> None:
        """As tall as the wrapped text, up to ``SHOWN_LINES`` lines; the rest scrolls."""
        width = max(self.scroll.viewport().width(), 100)
        most = SHOWN_LINES * self.text.fontMetrics().lineSpacing() + 4
        self.scroll.setFixedHeight(min(self.text.heightForWidth(width), most))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self.lines:
            self._fit()

    def dismiss(self) -> None:
        self.lines, self.hidden_count = [], 0
        self.text.clear()
        self.hide()
        self.dismissed.emit()

    def keyPressEvent(self, event) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.dismiss()
            return
        super().keyPressEvent(event)
