"""The engine, the catalogs, the plan files and the CLI work on a machine without Qt.

Issue 2's contract: ``python -c "import llmplan.core"`` works with PySide6 not installed. A
child interpreter gets an import hook that makes PySide6 and pyqtgraph unimportable (as on a
server without them), then imports the packages and runs a whole estimate through the CLI.
"""

import subprocess
import sys
import textwrap

from llmplan.resources_path import resources_dir

BLOCK_QT = textwrap.dedent("""
    import sys, importlib.abc

    class NoQt(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("PySide6", "pyqtgraph", "shiboken6"):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
            return None

    sys.meta_path.insert(0, NoQt())
""")


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCK_QT + textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=60)


def test_the_block_really_blocks_qt():
    proc = _run("import PySide6")
    assert proc.returncode != 0 and "blocked by the test" in proc.stderr


def test_core_catalog_io_hw_cli_import_and_estimate_without_qt():
    plan = resources_dir() / "examples" / "qlora-llama-3-8b-rtx4090.llmplan"
    proc = _run(f"""
        import llmplan.core, llmplan.core.engine, llmplan.catalog.models, llmplan.catalog.hardware
        import llmplan.plan.evaluate, llmplan.hw.detect
        from llmplan.cli import main
        rc = main(["estimate", {str(plan)!r}, "--json"])
        assert rc == 0, rc
        assert not any(m.split(".")[0] in ("PySide6", "pyqtgraph") for m in sys.modules)
    """)
    assert proc.returncode == 0, proc.stderr
    assert '"fits": true' in proc.stdout
