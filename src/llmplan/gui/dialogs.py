"""Every message box and file dialog goes through this module.

Modal ``exec()`` hangs an offscreen test run (TOOLCHAIN.md gotcha 2), so tests
monkeypatch these few functions (``ask``, ``inform``, ``error``, ``open_paths``,
``save_path``) instead of clicking real dialogs. Nothing else in the GUI calls
``QMessageBox``/``QFileDialog`` directly. Message texts pass through ``wording.for_app``:
no dialog tells a person to run a command.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QDialogButtonBox, QFileDialog, QFormLayout, QLabel, QMessageBox, QWidget

from llmplan.gui.wording import for_app

PLAN_FILTER = "llmplan plans (*.llmplan);;All files (*)"
MODEL_FILTER = ("Model descriptions (config.json *.json *.gguf *.safetensors.index.json);;"
                "GGUF files (*.gguf);;All files (*)")

# What the last calls showed (tests read these).
shown: list[tuple[str, str, str]] = []


def error(parent: QWidget | None, title: str, text: str) -> None:
    text = for_app(text)
    shown.append(("error", title, text))
    QMessageBox.critical(parent, title, text)


def inform(parent: QWidget | None, title: str, text: str) -> None:
    text = for_app(text)
    shown.append(("info", title, text))
    QMessageBox.information(parent, title, text)


def ask(parent: QWidget | None, title: str, text: str, buttons: tuple[str, ...] = ("Save", "Discard", "Cancel")) -> str:
    """The name of the button the person chose ('Cancel' when the box is closed)."""
    text = for_app(text)
    shown.append(("ask", title, text))
    box = QMessageBox(parent)
    box.setWindowTitle(title)
    box.setText(text)
    roles = {"Save": QMessageBox.StandardButton.Save, "Discard": QMessageBox.StandardButton.Discard,
             "Cancel": QMessageBox.StandardButton.Cancel, "Yes": QMessageBox.StandardButton.Yes,
             "No": QMessageBox.StandardButton.No}
    for b in buttons:
        box.addButton(roles[b])
    clicked = box.exec()
    for name, std in roles.items():
        if clicked == std:
            return name
    return "Cancel"


def open_paths(parent: QWidget | None, title: str, filters: str, folder: str = "") -> list[Path]:
    paths, _ = QFileDialog.getOpenFileNames(parent, title, folder, filters)
    return [Path(p) for p in paths]


def open_folder(parent: QWidget | None, title: str, folder: str = "") -> Path | None:
    path = QFileDialog.getExistingDirectory(parent, title, folder)
    return Path(path) if path else None


def save_path(parent: QWidget | None, title: str, suggested: str, filters: str) -> Path | None:
    path, _ = QFileDialog.getSaveFileName(parent, title, suggested, filters)
    return Path(path) if path else None


def error_and_buttons(form: QFormLayout, on_ok, on_cancel) -> QLabel:
    """The last rows of an editing dialog: a red line for what is wrong, then OK and Cancel. OK calls
    ``on_ok``, which closes the dialog itself once the input is valid. Returns the error line."""
    error = QLabel("")
    error.setWordWrap(True)
    error.setStyleSheet("color: #c62828;")
    form.addRow(error)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
    buttons.accepted.connect(on_ok)
    buttons.rejected.connect(on_cancel)
    form.addRow(buttons)
    return error
