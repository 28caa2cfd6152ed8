"""Where llmplan keeps what it learnt about a Hub model, so a second look works without a network.

``huggingface_hub`` caches the files it downloads (config.json) in its own cache (``HF_HUB_CACHE``,
else ``HF_HOME/hub``, else ``~/.cache/huggingface/hub``); the safetensors headers and the repo
tree it reads are not files, so llmplan writes its summary of them (counts, sizes, the config)
beside its other data: ``LLMPLAN_CACHE_DIR``, else the platform's user cache folder + ``/hub``.
One small JSON file per repo, revision and chosen file; written atomically; a broken one is
ignored (read as "not cached"), never trusted.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path
from typing import Any

MAX_SUMMARY_BYTES = 8 * 1024 * 1024  # a config and a few hundred file names


def truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def endpoint() -> str:
    """The Hub's address: ``HF_ENDPOINT`` (a mirror, or a test server), read at each call."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def offline() -> bool:
    """``HF_HUB_OFFLINE`` (or transformers' ``TRANSFORMERS_OFFLINE``), read at each call."""
    return truthy(os.environ.get("HF_HUB_OFFLINE")) or truthy(os.environ.get("TRANSFORMERS_OFFLINE"))


def hf_cache_dir() -> str:
    """huggingface_hub's cache folder, by its own rules, but read now rather than at its import."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.path.expanduser(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return os.path.join(os.path.expanduser(home), "hub")


def summary_dir() -> Path:
    override = os.environ.get("LLMPLAN_CACHE_DIR")
    if override:
        return Path(override) / "hub"
    import platformdirs

    return Path(platformdirs.user_cache_dir("llmplan", appauthor=False)) / "hub"


def _key(repo: str, revision: str | None, file: str | None) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", f"{repo.replace('/', '--')}@{revision or 'main'}")
    if file:
        safe += "@" + re.sub(r"[^A-Za-z0-9._-]", "_", file)[-150:]
    return summary_dir() / f"{safe[:240]}.json"


def load(repo: str, revision: str | None, file: str | None) -> dict[str, Any] | None:
    path = _key(repo, revision, file)
    try:
        if path.stat().st_size > MAX_SUMMARY_BYTES:
            return None
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and data.get("repo") == repo else None


def save(repo: str, revision: str | None, file: str | None, data: dict[str, Any]) -> None:
    """Best effort: a read-only or full disk costs the offline copy, never the answer."""
    from llmplan.formats.atomic import atomic_write

    with contextlib.suppress(OSError, TypeError, ValueError):
        atomic_write(_key(repo, revision, file), json.dumps(data, sort_keys=True), make_folder=True)
