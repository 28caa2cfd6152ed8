"""Where the shipped data lives: ``catalogs/`` and ``resources/``.

In a wheel or a PyInstaller bundle they sit inside the package (``llmplan/catalogs``);
in a source checkout they are the top-level folders of the repository. Both are found
through ``importlib.resources`` first, so an installed app never reads the source tree.
"""

from __future__ import annotations

import functools
import os
from importlib import resources
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parents[2]


@functools.cache  # where the shipped data lives does not change while the process runs; every estimate asks
def _locate(name: str) -> Path:
    packaged = resources.files("llmplan") / name
    if packaged.is_dir():
        return Path(str(packaged))
    fallback = _REPO_ROOT / name
    if fallback.is_dir():
        return fallback
    raise FileNotFoundError(f"llmplan's {name}/ folder is missing from this installation; reinstall llmplan")


def catalogs_dir() -> Path:
    return _locate("catalogs")


def resources_dir() -> Path:
    return _locate("resources")


def user_data_dir() -> Path:
    """The user's own catalog entries, settings-independent data (LLMPLAN_DATA_DIR overrides, for tests)."""
    override = os.environ.get("LLMPLAN_DATA_DIR")
    if override:
        return Path(override)
    return _platform_data_dir(*(os.environ.get(k) for k in _PLATFORM_DIR_VARIABLES))


# What platformdirs reads to place the folder (XDG on Linux, the home folder, Windows' app-data folders).
_PLATFORM_DIR_VARIABLES = ("XDG_DATA_HOME", "HOME", "APPDATA", "LOCALAPPDATA", "USERPROFILE")


@functools.lru_cache(maxsize=8)  # every estimate asks (the catalogs check the user's folders for new files)
def _platform_data_dir(*_environment: str | None) -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("llmplan", appauthor=False))
