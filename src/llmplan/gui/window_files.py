"""File and export actions of the main window (a mixin, to keep main_window.py small):
New, Open, Open Recent, Save, Save As, autosave and recovery, and Export.

Every dialog goes through ``dialogs`` so tests can answer them; a failure to read or
write a file is a dialog with the reason, never an exception out of a slot.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QApplication

from llmplan.formats.atomic import atomic_write
from llmplan.gui import backend, dialogs, files, report
from llmplan.gui.wording import for_app
from llmplan.plan.document import PlanDocument


class FileActions:
    """Mixed into ``MainWindow``; uses its ``state``, ``settings``, ``prefs``, ``unit``,
    ``hardware``, ``charts``, ``recent_menu`` and ``statusBar()``."""

    # ---- files ---------------------------------------------------------------------------
    def maybe_save(self) -> bool:
        """True when it is fine to drop the current plan (saved, discarded, or unchanged)."""
        if not self.state.dirty:
            return True
        choice = dialogs.ask(self, "Unsaved changes", "Save the changes to this plan first?")
        if choice == "Save":
            return self.save()
        return choice == "Discard"

    def default_doc(self, gpu_id: str | None = None, spec=None) -> PlanDocument:
        """The starting plan, with the preferred default efficiencies written in."""
        doc = backend.default_plan(gpu_id)
        updates: dict = {"efficiency": doc.efficiency.model_copy(update=self.prefs.efficiency_overrides())}
        if spec is not None:
            updates["hardware"] = doc.hardware.model_copy(update={"gpu_spec": spec})
        return doc.model_copy(update=updates)

    def new_plan(self) -> None:
        """The default plan; on this machine's GPU when detection found one, made to fit it (``start_plan``)."""
        if self.maybe_save():
            gpu_id, spec = self.hardware.detected_gpu()
            doc = self.default_doc(gpu_id, spec)
            if gpu_id or spec:
                self.start_plan(doc)
                return
            self.state.load(doc, None)
            self.fresh_doc = doc

    def open_dialog(self) -> None:
        if not self.maybe_save():
            return
        paths = dialogs.open_paths(self, "Open plan", dialogs.PLAN_FILTER, str(self.start_folder()))
        if paths:
            self.open_path(paths[0], ask=False)

    def start_folder(self) -> Path:
        """Where file dialogs start: the folder last opened from or saved to, else Documents, else home
        (never "/", where Qt's dialog starts without one)."""
        return files.start_folder(self.settings.value("ui/last_folder"))

    def remember_folder(self, path: Path) -> None:
        folder = Path(path).parent if not Path(path).is_dir() else Path(path)
        self.settings.setValue("ui/last_folder", str(folder))

    # ---- messages ----------------------------------------------------------------------------
    def say(self, message: str, ms: int = 8000) -> None:
        """A passing status line, in the app's words (``wording.for_app``)."""
        self.statusBar().showMessage(for_app(message), ms)

    def notices(self):
        """The closable banner above the model list: problems stay until dismissed (``notice``)."""
        banner = getattr(self, "_notices", None)
        if banner is None:
            from llmplan.gui.notice import NoticeBanner

            banner = self._notices = NoticeBanner()
            self.models.layout().insertWidget(0, banner)
        return banner

    # ---- models ------------------------------------------------------------------------------
    def import_files(self, paths: list[Path]) -> None:
        """Import model files (the Import… dialog, a drop, a file given at start): each good one becomes the
        plan's model as one undo step with what its file says (a GGUF's weight format); each bad one is a
        line in the banner that stays until dismissed."""
        from llmplan.gui.importing import import_model

        for path in paths:
            try:
                imported = import_model(path, self.state.doc.inference.engine, self.state.doc.workload,
                                        self.state.doc.inference.kv_dtype)
            except Exception as exc:
                name = Path(path).name
                text = (str(exc) or type(exc).__name__).removeprefix(f"{path}: ").removeprefix(f"{name}: ")
                self.notices().add(f"Could not import {name}: {text}")
                continue
            self.remember_folder(Path(path))
            self.models.reload(refresh=True)
            if self.state.edit_many(imported.changes, f"Import {imported.ref.name}"):
                self.say(imported.note)

    def open_path(self, path: Path, ask: bool = True) -> bool:
        if ask and not self.maybe_save():
            return False
        try:
            doc = files.load(Path(path))
        except Exception as exc:
            text = str(exc)
            dialogs.error(self, "Cannot open plan", text if Path(path).name in text else f"{Path(path).name}: {text}")
            return False
        self.state.load(doc, Path(path))
        self._add_recent(Path(path))
        self.remember_folder(Path(path))
        self.statusBar().showMessage(f"Opened {path}", 5000)
        return True

    def save(self) -> bool:
        if self.state.path is None:
            return self.save_as()
        return self._write(self.state.path)

    def save_as(self) -> bool:
        suggested = str(self.state.path or self.start_folder() / f"{files.safe_stem(self.state.doc.name)}.llmplan")
        path = dialogs.save_path(self, "Save plan", suggested, dialogs.PLAN_FILTER)
        if path is None:
            return False
        if path.suffix != ".llmplan":
            path = path.with_suffix(".llmplan")
        return self._write(path)

    def _write(self, path: Path) -> bool:
        try:
            files.save(self.state.doc, path)
        except Exception as exc:
            text = str(exc) or type(exc).__name__  # save_plan's errors name the file already
            dialogs.error(self, "Cannot save plan", (text if str(path) in text else f"{path}: {text}") +
                          "\nThe plan is still open here, unsaved: save it somewhere else.")
            return False
        self.state.mark_saved(path)
        self._add_recent(path)
        self.remember_folder(path)
        self.autosave_slot.clear()
        self.statusBar().showMessage(f"Saved {path}", 5000)
        return True

    def _add_recent(self, path: Path) -> None:
        recent = files.push_recent(self._recent(), path)
        self.settings.setValue("ui/recent", recent)
        self._refresh_recent()

    def _recent(self) -> list[str]:
        value = self.settings.value("ui/recent") or []
        return [value] if isinstance(value, str) else list(value)

    def _refresh_recent(self) -> None:
        self.recent_menu.clear()
        for p in self._recent():
            act = self.recent_menu.addAction(p)
            act.triggered.connect(lambda _=False, p=p: self.open_path(Path(p)))
        self.recent_menu.setEnabled(bool(self._recent()))

    def autosave_now(self) -> None:
        if self.state.dirty:
            try:
                self.autosave_slot.write(self.state.doc, self.state.path)
            except Exception as exc:  # autosave failing must never interrupt work
                why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__  # not "[Errno 28] ..."
                self.say(f"Autosave failed ({why}): this plan's changes are only in this window; save them with "
                         "File ▸ Save As…", 30000)

    def offer_recovery(self) -> None:
        """Offered at every start, also when a plan was opened from the command line or by a
        double-click (the recovered plan then replaces it; that file is unchanged on disk)."""
        problems: list[str] = []
        found = files.recoverable(problems)
        if problems:
            dialogs.error(self, "Autosave copies set aside", "These recovery copies could not be read and were "
                          "set aside:\n" + "\n".join(problems))
        if found is None:
            return
        opened = self.state.path
        instead = f" instead of {opened.name}" if opened and opened != found.origin else ""
        answer = dialogs.ask(self, "Recover plan", "llmplan did not close cleanly last time. Recover "
                             f"{found.describe()}{instead}?", ("Yes", "No"))
        if answer == "Yes":
            self.state.load(found.doc, found.origin)
            self.state.undo_stack.resetClean()  # recovered work is unsaved
            self._update_title()
            if instead:
                self.statusBar().showMessage(f"Recovered the unsaved plan; {opened.name} is unchanged on disk "
                                             "(File → Open Recent)", 10000)
        found.discard()


    # ---- export ----------------------------------------------------------------------------
    def _estimate_or_complain(self):
        out = self.state.outcome
        if out is None or out.estimate is None:
            dialogs.error(self, "Nothing to export", out.message if out else "No estimate yet.")
            return None
        return out.estimate

    def export_header(self) -> list[tuple[str, str]]:
        """What was planned, at the top of every export (``report.header``)."""
        out = self.state.outcome
        return report.header(self.state.doc, out.scenario if out else None, backend.version())

    def export_tier(self, est):
        """The verdict tier of the estimate being exported, the one the banner shows (``report.tier_of``)."""
        out = self.state.outcome
        return report.tier_of(out.scenario if out else None, est, self.unit, out.cards if out else None)

    def _export_title(self) -> str:
        return report.title_of(self.export_header())

    def _export_target(self, title: str, name: str, filters: str) -> Path | None:
        stem = files.safe_stem(self.state.doc.name if self.state.doc.name != "Untitled plan" else "llmplan-report")
        path = dialogs.save_path(self, title, str(self.start_folder() / f"{stem}{name}"), filters)
        if path is not None:
            self.remember_folder(path)
        return path

    def _export(self, title: str, suffix: str, filters: str, make) -> None:
        """Ask where, then write ``make(estimate)`` there (``_export_file``); nothing to export is a dialog."""
        est = self._estimate_or_complain()
        if est is None:
            return
        path = self._export_target(title, suffix, filters)
        if path:
            self._export_file(path, lambda: make(est))

    def export_markdown(self) -> None:
        self._export("Export report", ".md", "Markdown (*.md)", lambda est: report.as_markdown(
            est, self.unit, self._export_title(), self.state.doc.notes, self.export_header(), self.export_tier(est)))

    def export_csv(self) -> None:
        self._export("Export figures", ".csv", "CSV (*.csv)",
                     lambda est: report.as_csv(est, self.unit, self.export_header(), self.export_tier(est)))

    def _chart_pngs(self) -> list[tuple[str, bytes]]:
        if self.charts is None:
            return []
        from llmplan.gui.export import chart_pngs

        return [(title, png) for _tab, title, png in chart_pngs(self.charts)]

    def _report_html(self, est, embed: bool) -> tuple[str, list[tuple[str, bytes]]]:
        from llmplan.gui.report_html import as_html

        charts = self._chart_pngs()
        return as_html(est, self.unit, self._export_title(), self.export_header(), charts, self.state.doc.notes,
                       embed=embed, tier=self.export_tier(est)), charts

    def export_html(self) -> None:
        """A one-file HTML report with the charts embedded; opens in any browser and prints."""
        self._export("Export report as HTML", ".html", "HTML (*.html *.htm)",
                     lambda est: self._report_html(est, embed=True)[0])

    def export_pdf(self) -> None:
        """The same report as a PDF, printed by Qt (``gui.export.pdf_bytes``)."""
        from llmplan.gui.export import pdf_bytes

        def make(est) -> bytes:
            page, charts = self._report_html(est, embed=False)
            return pdf_bytes(page, [png for _t, png in charts])

        self._export("Export report as PDF", ".pdf", "PDF (*.pdf)", make)

    def _export_file(self, path: Path, make) -> bool:
        """Write an export atomically, like every writer (``llmplan.formats.atomic``); an unwritable folder, a
        full disk or anything else that goes wrong is a dialog with the reason, never a traceback."""
        try:
            atomic_write(path, make())
        except Exception as exc:
            dialogs.error(self, "Cannot export", f"{path}: {getattr(exc, 'strerror', None) or exc}")
            return False
        self.statusBar().showMessage(f"Wrote {path}", 5000)
        return True

    def export_charts(self) -> None:
        if self.charts is None:
            return
        folder = dialogs.open_folder(self, "Export charts to folder", str(self.start_folder()))
        if folder:
            try:
                written = self.charts.export_png(folder)
            except Exception as exc:
                dialogs.error(self, "Cannot export", f"{folder}: {getattr(exc, 'strerror', None) or exc}")
                return
            self.remember_folder(folder)
            self.statusBar().showMessage(f"Wrote {len(written)} PNG files to {folder}", 5000)

    def copy_text(self) -> None:
        est = self._estimate_or_complain()
        if est is not None:
            QApplication.clipboard().setText(report.as_text(est, self.unit, self.state.doc.name, self.export_tier(est)))
            self.statusBar().showMessage("Report copied", 3000)
