"""No module imports another package's private names (issue 16, item 5).

A leading underscore marks what a package keeps to itself (``llmplan.hw._run``, ``_effective``);
only modules of the same package may import it. Tests may (they test the internals).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import llmplan

SRC = Path(llmplan.__file__).resolve().parent.parent


def _private(dotted: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


def _violations(path: Path) -> list[str]:
    module = ".".join(path.relative_to(SRC).with_suffix("").parts)
    package = module.removesuffix(".__init__") if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("llmplan"):
            names = [f"{node.module}.{a.name}" for a in node.names]
            home = node.module if not _private(node.module.rsplit(".", 1)[-1]) else node.module.rsplit(".", 1)[0]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("llmplan")]
            home = None
        else:
            continue
        for name in names:
            owner = home or name.rsplit(".", 1)[0]
            same = owner == package or owner.rsplit(".", 1)[0] == package
            if _private(name) and not same:
                found.append(f"{path.relative_to(SRC)}:{node.lineno}: {name}")
    return found


def test_no_module_imports_another_packages_private_names():
    files = sorted((SRC / "llmplan").rglob("*.py"))
    assert len(files) > 100
    assert [v for f in files for v in _violations(f)] == []


def test_the_scan_catches_a_private_import(tmp_path, monkeypatch):
    pkg = tmp_path / "llmplan" / "cli"
    pkg.mkdir(parents=True)
    bad = pkg / "bad.py"
    bad.write_text("from llmplan.hw._run import run_command\nfrom llmplan.fit.changes import _effective\n"
                   "from llmplan.cli.report import _v\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    assert len(_violations(bad)) == 2  # the same package's private name is fine
