"""Entry point: ``llmplan`` / ``python -m llmplan.gui`` / ``make run``.

    llmplan [PLAN.llmplan | config.json | model.gguf ...]   open plans or import models
    llmplan --screenshot out.png [--theme dark]             render the window offscreen, save, exit
    llmplan --self-test                                     start, estimate the default plan, exit 0/1
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

T0 = time.perf_counter()


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="llmplan", description="What hardware a large language model needs.")
    p.add_argument("files", nargs="*", type=Path, help=".llmplan plans to open, or model files to import")
    p.add_argument("--screenshot", type=Path, help="save a PNG of the window and exit")
    p.add_argument("--theme", choices=("light", "dark", "system"), help="override the theme preference")
    p.add_argument("--self-test", action="store_true", help="start, estimate the default plan, print, exit")
    p.add_argument("--no-detect", action="store_true", help="skip local hardware detection")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    if (args.screenshot or args.self_test) and not os.environ.get("QT_QPA_PLATFORM") \
            and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    try:
        from PySide6.QtCore import QTimer
        from PySide6.QtWidgets import QApplication
    except ImportError as exc:
        print(f"llmplan: the desktop app needs PySide6 (pip install 'llmplan[gui]'): {exc}", file=sys.stderr)
        return 2
    from llmplan.gui.main_window import MainWindow
    from llmplan.gui.theme import apply_theme

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("llmplan")
    app.setApplicationName("llmplan")
    from PySide6.QtCore import QSettings

    from llmplan.gui.preferences import Preferences

    apply_theme(app, args.theme or Preferences.load(QSettings("llmplan", "llmplan")).theme)  # before any chart
    settings = None
    if args.self_test or args.screenshot:  # throw-away runs never touch the person's window state
        import tempfile

        settings = QSettings(str(Path(tempfile.mkdtemp(prefix="llmplan-")) / "settings.ini"),
                             QSettings.Format.IniFormat)
    window = MainWindow(settings=settings, detect=not (args.no_detect or args.self_test))
    _set_icon(app, window)
    window.show()
    if args.files:
        window.open_dropped(args.files)
    elif not (args.screenshot or args.self_test):
        QTimer.singleShot(0, window.offer_recovery)
    if args.self_test:
        out = window.state.evaluate_now()
        print(f"llmplan self-test: window up in {time.perf_counter() - T0:.2f} s; "
              f"{window.results.banner.text()}")
        window.state.undo_stack.setClean()
        window.close()
        return 0 if out.kind == "ok" else 1
    if args.screenshot:
        def shoot() -> None:
            window.grab().save(str(args.screenshot))
            window.state.undo_stack.setClean()
            window.close()
            app.quit()

        QTimer.singleShot(300, shoot)
    return app.exec()


def _set_icon(app, window) -> None:
    from PySide6.QtGui import QIcon

    from llmplan.resources_path import resources_dir

    try:
        path = resources_dir() / "icons" / "llmplan.svg"
    except FileNotFoundError:  # an installation without resources still starts
        return
    if not path.is_file():
        return
    icon = QIcon(str(path))
    app.setWindowIcon(icon)
    window.setWindowIcon(icon)


if __name__ == "__main__":
    raise SystemExit(main())
