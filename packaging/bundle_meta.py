"""Everything the bundles say about themselves, derived from one version number.

The PyInstaller spec (``packaging/llmplan.spec``) and the packaging tests both import this
module, so the macOS ``Info.plist``, the Windows version resource and the Linux metainfo are
checked against the same values that go into the build. Standard library only: the spec runs
it inside PyInstaller, where llmplan itself is not necessarily importable.

The single source of the version is ``__version__`` in ``src/llmplan/__init__.py`` (hatch reads
it for the wheel too); this module reads it from the file instead of importing the package so
that building never executes app code.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

APP_NAME = "llmplan"
APP_ID = "io.github.llmplan.LLMPlan"  # reverse-DNS id: desktop file, metainfo, macOS bundle id
PLAN_UTI = "io.github.llmplan.plan"  # macOS type identifier of a .llmplan document
PLAN_MIME = "application/x-llmplan"
PLAN_EXTENSION = "llmplan"
PLAN_TYPE_NAME = "llmplan hardware plan"
DESCRIPTION = "What hardware a large language model needs, and whether it fits"
COPYRIGHT = "Copyright the llmplan developers; Apache-2.0"

# Modules the app never uses but PyInstaller would follow from an import somewhere in a
# dependency: they only add size (pyqtgraph.opengl also warns when PyOpenGL is missing).
EXCLUDES = (
    "tkinter",
    "pyqtgraph.opengl",
    "pyqtgraph.examples",
    "pyqtgraph.jupyter",
    "OpenGL",
    "torch",
    "pytest",
    "hypothesis",
    "IPython",
    "matplotlib",
    "PyInstaller",
)

_VERSION_LINE = re.compile(r'^__version__\s*=\s*["\']([^"\']+)["\']', re.MULTILINE)


def read_version(repo_root: Path = REPO_ROOT) -> str:
    """``__version__`` as written in ``src/llmplan/__init__.py``."""
    init = repo_root / "src" / "llmplan" / "__init__.py"
    match = _VERSION_LINE.search(init.read_text(encoding="utf-8"))
    if match is None:
        raise ValueError(f"{init} has no __version__ = '...' line; the bundle needs one version number")
    return match.group(1)


def version_tuple(version: str) -> tuple[int, int, int, int]:
    """Four integers for the Windows version resource ("1.2.3rc1" -> (1, 2, 3, 0)).

    Windows wants exactly four 16-bit numbers; pre-release tags have no place there, so
    only the leading release numbers are kept and missing ones are 0.
    """
    match = re.match(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:\.(\d+))?", version)
    if match is None:
        raise ValueError(f"version {version!r} does not start with a number (expected e.g. '1.2.3')")
    parts = tuple(int(p) if p is not None else 0 for p in match.groups())
    if any(p > 0xFFFF for p in parts):
        raise ValueError(f"version {version!r}: each part must be at most 65535 for Windows")
    return parts  # type: ignore[return-value]


def info_plist(version: str) -> dict:
    """macOS Info.plist entries: the version, and ``.llmplan`` as a document type the app owns.

    The UTI is *exported* (this app defines the type) and conforms to public.json, so Quick
    Look and text editors still treat a plan as JSON. LSHandlerRank=Owner makes Finder open
    .llmplan files with llmplan by default.
    """
    return {
        "CFBundleName": APP_NAME,
        "CFBundleDisplayName": APP_NAME,
        "CFBundleShortVersionString": version,
        "CFBundleVersion": version,
        "NSHumanReadableCopyright": COPYRIGHT,
        "NSHighResolutionCapable": True,
        "LSMinimumSystemVersion": "11.0",
        "CFBundleDocumentTypes": [
            {
                "CFBundleTypeName": PLAN_TYPE_NAME,
                "CFBundleTypeRole": "Editor",
                "LSHandlerRank": "Owner",
                "LSItemContentTypes": [PLAN_UTI],
                "CFBundleTypeIconFile": "llmplan.icns",
            }
        ],
        "UTExportedTypeDeclarations": [
            {
                "UTTypeIdentifier": PLAN_UTI,
                "UTTypeDescription": PLAN_TYPE_NAME,
                "UTTypeConformsTo": ["public.json", "public.data"],
                "UTTypeIconFile": "llmplan.icns",
                "UTTypeTagSpecification": {
                    "public.filename-extension": [PLAN_EXTENSION],
                    "public.mime-type": [PLAN_MIME],
                },
            }
        ],
    }


def windows_version_info(version: str) -> str:
    """The Windows version resource in PyInstaller's text form (what ``pyi-grab_version`` writes).

    PyInstaller's own ``VSVersionInfo`` classes import ``pefile``, which exists only where
    Windows builds run, so the spec writes this text to a file and passes its path to EXE.
    """
    nums = version_tuple(version)
    strings = {
        "CompanyName": "llmplan developers",
        "FileDescription": DESCRIPTION,
        "FileVersion": version,
        "InternalName": APP_NAME,
        "LegalCopyright": COPYRIGHT,
        "OriginalFilename": f"{APP_NAME}.exe",
        "ProductName": APP_NAME,
        "ProductVersion": version,
    }
    table = ",\n          ".join(f"StringStruct({k!r}, {v!r})" for k, v in strings.items())
    return (
        "VSVersionInfo(\n"
        f"  ffi=FixedFileInfo(filevers={nums!r}, prodvers={nums!r}, mask=0x3f, flags=0x0,\n"
        "                    OS=0x40004, fileType=0x1, subtype=0x0, date=(0, 0)),\n"
        "  kids=[\n"
        "    StringFileInfo([\n"
        "      StringTable('040904B0', [\n"
        f"          {table}])]),\n"
        "    VarFileInfo([VarStruct('Translation', [1033, 1200])])\n"
        "  ]\n"
        ")\n"
    )


if __name__ == "__main__":  # `python packaging/bundle_meta.py` prints the version (used by build.sh)
    print(read_version())
