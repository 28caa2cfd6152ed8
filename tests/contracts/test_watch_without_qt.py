"""The watch sampler and ``llmplan-cli watch`` run on a server without Qt (issue 25: a Qt-free package)."""

from tests.contracts.test_no_qt_needed import _run


def test_watch_runs_without_qt():
    proc = _run("""
        import json, io, contextlib
        import llmplan.watch, llmplan.watch.diagnose, llmplan.watch.runfile
        from llmplan.cli import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = main(["watch", "--duration", "0.1", "--interval", "0.1", "--json", "--no-run-file"])
        assert rc == 0, rc
        assert json.loads(out.getvalue().splitlines()[-1])["summary"]["samples"] >= 1
        assert not any(m.split(".")[0] in ("PySide6", "pyqtgraph") for m in sys.modules)
    """)
    assert proc.returncode == 0, proc.stderr
