"""Entry point: ``llmplan`` / ``python -m llmplan.gui`` / ``make run``.

    llmplan [PLAN.llmplan | config.json | model.gguf ...]   open plans or import models
    llmplan --screenshot out.png [--theme dark]             render the window offscreen, save, exit
    llmplan --self-test [PLAN.llmplan]                      start, estimate the plan (or the default), exit 0/1
    llmplan --version
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from llmplan import __version__
from llmplan.gui import QT_IMPORT_S, STARTED

# The self-test times the start from the first line of the llmplan.gui package, which both ways in run first
# (before PySide6's import and the Qt-free modules it imports ahead of Qt); C0: the process's CPU seconds then.
T0, C0 = STARTED
APP_ID = "io.github.llmplan.LLMPlan"  # the desktop file's name (packaging/linux/)


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="llmplan", description="What hardware a large language model needs.")
    p.add_argument("files", nargs="*", type=Path, help=".llmplan plans to open, or model files to import")
    p.add_argument("--screenshot", type=Path, help="save a PNG of the window and exit")
    p.add_argument("--theme", choices=("light", "dark", "system"), help="override the theme preference")
    p.add_argument("--self-test", action="store_true", help="start, estimate the default plan, print, exit")
    p.add_argument("--no-detect", action="store_true", help="skip local hardware detection")
    p.add_argument("--version", action="version", version=f"llmplan {__version__}")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Ctrl-C while Qt and the catalogs load (before the event loop runs) ends quietly with 130."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        return 130


def _main(argv: list[str] | None) -> int:
    # Cyclic garbage collection runs on the GUI thread's timer once the window exists (main_thread_gc, which
    # switches the automatic collector off for good). Off from here: the imports and the window's making
    # otherwise ran about a hundred collections before the first paint, about a twentieth of the start-up's CPU
    # time; the timer's first pass, half a second after the window is made, collects what they left.
    gc.disable()
    args = _parse(sys.argv[1:] if argv is None else argv)
    if (args.screenshot or args.self_test) and not os.environ.get("QT_QPA_PLATFORM") \
            and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    try:
        from PySide6.QtWidgets import QApplication
    except ImportError as exc:
        print(_qt_import_advice(exc), file=sys.stderr)
        return 2
    from llmplan.gui.theme import apply_theme

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("llmplan")
    app.setApplicationName("llmplan")
    app.setApplicationVersion(__version__)
    # Wayland compositors match the window to io.github.llmplan.LLMPlan.desktop (name, icon) by this id.
    app.setDesktopFileName(APP_ID)
    from PySide6.QtCore import QSettings

    from llmplan.gui.preferences import Preferences

    apply_theme(app, args.theme or Preferences.load(QSettings("llmplan", "llmplan")).theme)  # before any chart
    settings = None
    if args.self_test or args.screenshot:  # throw-away runs never touch the person's window state
        import tempfile

        settings = QSettings(str(Path(tempfile.mkdtemp(prefix="llmplan-")) / "settings.ini"),
                             QSettings.Format.IniFormat)
    with _messages_on_stderr(bool(args.self_test or args.screenshot)) as errors:
        return _show(app, args, settings, errors)


def _first_paint(app, window, timeout_s: float = 5.0) -> float | None:
    """perf_counter() when the window first painted itself (the event loop runs until then)."""
    from PySide6.QtCore import QEvent, QObject

    seen: list[float] = []

    class _Watch(QObject):
        def eventFilter(self, obj, event) -> bool:
            if event.type() == QEvent.Type.Paint and not seen:
                seen.append(time.perf_counter())
            return False

    watch = _Watch()
    window.installEventFilter(watch)
    window.update()
    deadline = time.perf_counter() + timeout_s
    while not seen and time.perf_counter() < deadline:
        app.processEvents()
    window.removeEventFilter(watch)
    return seen[0] if seen else None


def _qt_import_advice(exc: ImportError) -> str:
    """What to do when Qt cannot be imported: a missing system library, or PySide6 not installed.

    The bundle carries PySide6 but, on purpose, not the OpenGL/EGL libraries that must match
    the machine's graphics driver (docs/install.md); on a bare Linux their absence surfaces here
    as "libGL.so.1: cannot open shared object file".
    """
    text = str(exc)
    if ".so" in text and "cannot open shared object file" in text:
        return (f"llmplan: a system library Qt needs is missing: {text}\n"
                "  On Debian/Ubuntu: sudo apt install libgl1 libegl1   "
                "(Fedora: sudo dnf install libglvnd-glx libglvnd-egl)")
    return f"llmplan: the desktop app needs PySide6 (pip install 'llmplan[gui]'): {text}"


def _show(app, args: argparse.Namespace, settings, errors: list[str]) -> int:
    from PySide6.QtCore import QTimer

    from llmplan.gui.main_window import MainWindow

    window = MainWindow(settings=settings, detect=not (args.no_detect or args.self_test))
    _set_icon(app, window)
    if sys.platform == "darwin":  # only macOS sends FileOpen; elsewhere the filter would see every event for nothing
        window.file_open_handler = _install_file_open_handler(app, window)
    window.show()
    if args.files:
        window.open_dropped(args.files)
    if not (args.screenshot or args.self_test):  # also after a double-clicked plan: never drop unsaved work
        QTimer.singleShot(0, window.offer_recovery)
    if args.self_test:  # the window estimated its plan when it was made; again only if a file changed it
        out = window.state.outcome if window.state.outcome is not None and not window.state.pending \
            else window.state.evaluate_now()
        up = time.perf_counter() - T0
        painted = _first_paint(app, window)
        cpu = time.process_time() - C0
        qt_wall, qt_cpu = QT_IMPORT_S  # in the time from T0 (until 2026-11-28 the clock started after it)
        print(f"llmplan self-test: window up in {up:.2f} s, first paint at "
              f"{'never' if painted is None else f'{painted - T0:.2f} s (CPU {cpu:.2f} s)'}, "
              f"PySide6's import {qt_wall:.2f} s (CPU {qt_cpu:.2f} s) of it; {window.results.banner.text()}")
        window.state.undo_stack.setClean()
        window.close()
        return 0 if out.kind == "ok" and not errors else 1
    if args.screenshot:
        from llmplan.gui.settle import TIMEOUT_MS, after_settled

        def shoot(settled: bool) -> None:
            from llmplan.formats.atomic import atomic_write
            from llmplan.gui.files import png_bytes

            if not settled:
                print(f"llmplan: the window was still busy after {TIMEOUT_MS / 1000:.0f} s; saved as it was",
                      file=sys.stderr)
            atomic_write(args.screenshot, png_bytes(window.grab()))
            window.state.undo_stack.setClean()
            window.close()
            app.quit()

        after_settled(app, window, shoot)  # not a fixed delay: the charts re-lay out their axes once drawn
        return _run(app) or (1 if errors else 0)
    return _run(app)


def _run(app) -> int:
    """The event loop, then the background work's end before Python's (``join_workers``)."""
    code = app.exec()
    join_workers(app.topLevelWidgets())
    return code


def join_workers(windows) -> None:
    """Cancel and wait for the windows' background work. A chart sweep or a fit search still running in a
    pool thread while the interpreter finalises crashed the process at exit (a segfault in the sweep worker,
    seen when the app was quit within a second or two of its start)."""
    from PySide6.QtCore import QThreadPool
    from PySide6.QtWidgets import QWidget

    for top in windows:
        for panel in top.findChildren(QWidget):
            cancel = getattr(panel, "cancel_background_work", None)
            if callable(cancel):
                cancel()
        for pool in top.findChildren(QThreadPool):
            pool.clear()
            pool.waitForDone(10_000)
    QThreadPool.globalInstance().waitForDone(10_000)


def _set_icon(app, window) -> None:
    """The app icon set (resources/appicon): the SVG for any size, plus the rendered PNGs."""
    from PySide6.QtGui import QIcon

    from llmplan.resources_path import resources_dir

    try:
        folder = resources_dir() / "appicon"
    except FileNotFoundError:  # an installation without resources still starts
        return
    icon = QIcon()
    for png in sorted(folder.glob("llmplan-*.png")):
        icon.addFile(str(png))
    if (folder / "llmplan.svg").is_file():
        icon.addFile(str(folder / "llmplan.svg"))
    if icon.isNull():
        return
    app.setWindowIcon(icon)
    window.setWindowIcon(icon)


@contextlib.contextmanager
def _messages_on_stderr(enabled: bool) -> Iterator[list[str]]:
    """In throw-away runs (--self-test, --screenshot) print messages instead of showing modal boxes.

    A modal box would wait forever for a click that never comes on a headless machine (e.g. a
    plan given on the command line that cannot be read). The error texts are collected so the
    run can fail with a non-zero exit code instead; the real dialogs come back on exit.
    """
    from llmplan.gui import dialogs

    errors: list[str] = []
    if not enabled:
        yield errors
        return

    def error(parent, title: str, text: str) -> None:
        dialogs.shown.append(("error", title, text))
        errors.append(f"{title}: {text}")
        print(f"llmplan: {title}: {text}", file=sys.stderr)

    def inform(parent, title: str, text: str) -> None:
        dialogs.shown.append(("info", title, text))
        print(f"llmplan: {title}: {text}", file=sys.stderr)

    def ask(parent, title: str, text: str, buttons: tuple[str, ...] = ("Save", "Discard", "Cancel")) -> str:
        dialogs.shown.append(("ask", title, text))
        return "Discard" if "Discard" in buttons else "Cancel"  # a throw-away run keeps nothing

    real = dialogs.error, dialogs.inform, dialogs.ask
    dialogs.error, dialogs.inform, dialogs.ask = error, inform, ask
    try:
        yield errors
    finally:
        dialogs.error, dialogs.inform, dialogs.ask = real


def _install_file_open_handler(app, window):
    """Open the files macOS hands over as QFileOpenEvent (double-click in Finder, drop on the Dock).

    On macOS, Finder does not put the document on the command line: it sends an "open documents"
    Apple Event, which Qt turns into QEvent.FileOpen on the application, at start-up and while
    the app runs. Other platforms never send it. Returns the filter (Qt does not own it).
    """
    from PySide6.QtCore import QEvent, QObject

    class FileOpenEvents(QObject):
        def eventFilter(self, watched, event) -> bool:  # Qt's override name
            if event.type() == QEvent.Type.FileOpen:
                name = event.file() or event.url().toLocalFile()
                if name:
                    window.open_dropped([Path(name)])
                    return True
            return super().eventFilter(watched, event)

    handler = FileOpenEvents(window)
    app.installEventFilter(handler)
    return handler


if __name__ == "__main__":
    raise SystemExit(main())
