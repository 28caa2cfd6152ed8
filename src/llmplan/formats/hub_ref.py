"""What a person types to name a model on the Hugging Face Hub, parsed without touching the network.

Accepted forms (the ones the Hub itself shows and people paste):

- ``ORG/NAME`` and ``ORG/NAME@REVISION`` (a branch, tag or commit; ``refs/pr/3`` too);
- ``ORG/NAME:QUANT`` (Ollama's spelling for one quant of a GGUF repo, e.g. ``unsloth/Qwen3-8B-GGUF:Q4_K_M``);
- ``hf:ORG/NAME`` / ``hub:ORG/NAME`` to force the Hub when a catalog entry has the same id;
- ``https://huggingface.co/ORG/NAME``, with ``/tree/REV[/folder]``, ``/blob/REV/FILE`` or
  ``/resolve/REV/FILE`` (``hf.co`` too); the file names one GGUF quant of a GGUF repo.

Repository names follow the Hub's own rule (letters, digits, ``-``, ``_``, ``.``; no ``--`` or
``..``; at most 96 characters each side), so a stray path or sentence is never sent anywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from llmplan.errors import InputError

_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?"
_REPO = re.compile(rf"^(?P<org>{_PART})/(?P<name>{_PART})$")
_REV = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")
_HOSTS = ("huggingface.co", "www.huggingface.co", "hf.co")
_PREFIXES = ("hf:", "hub:", "hf://")


class HubRefError(InputError):
    """The text looks like a Hub reference but cannot be one (bad revision, unsafe file path)."""


@dataclass(frozen=True, slots=True)
class HubRef:
    """A model repository on the Hub; ``revision`` None means the default branch."""

    repo: str
    revision: str | None = None
    file: str | None = None

    def label(self) -> str:
        text = self.repo + (f"@{self.revision}" if self.revision else "")
        return text + (f" ({self.file})" if self.file else "")

    def as_dict(self) -> dict[str, str]:
        return {k: v for k, v in (("repo", self.repo), ("revision", self.revision), ("file", self.file)) if v}


def _valid_repo(repo: str) -> bool:
    return bool(_REPO.match(repo)) and "--" not in repo and ".." not in repo


def _check_revision(rev: str, text: str) -> str:
    if not _REV.match(rev) or ".." in rev or rev.endswith("/"):
        raise HubRefError(f"'{text[:120]}': '{rev[:60]}' is not a revision (a branch, tag or commit hash)")
    return rev


def _check_file(path: str, text: str) -> str:
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\\" in path or len(path) > 512:
        raise HubRefError(f"'{text[:120]}': '{path[:80]}' is not a file inside the repository")
    return path


def is_hub_url(text: str) -> bool:
    t = text.strip()
    return t.lower().startswith(("http://", "https://")) and (urlsplit(t).hostname or "").lower() in _HOSTS


def parse_hub_ref(text: str, *, require: bool = False) -> HubRef | None:
    """The ``HubRef`` ``text`` names, or None when it does not look like one (``require``: raise instead).

    Raises ``HubRefError`` when the text is clearly meant for the Hub (a huggingface.co URL, an
    ``hf:`` prefix) but is malformed, so the person learns why rather than getting "not found".
    """
    t = text.strip()
    if is_hub_url(t):
        return _parse_url(t)
    forced = False
    for prefix in _PREFIXES:
        if t.lower().startswith(prefix):
            t, forced = t[len(prefix):], True
            break
    t, _, quant = t.partition(":")
    repo, _, rev = t.partition("@")
    if _valid_repo(repo):
        if quant and not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", quant):
            raise HubRefError(f"'{text[:120]}': '{quant[:40]}' is not a quant name such as Q4_K_M")
        return HubRef(repo, _check_revision(rev, text) if rev else None, quant or None)
    if forced or require:
        raise HubRefError(f"'{text[:120]}' is not a Hub repository id; write it as ORG/NAME, e.g. Qwen/Qwen3-8B")
    return None


def _parse_url(text: str) -> HubRef:
    parts = [unquote(p) for p in urlsplit(text).path.split("/") if p]
    if parts and parts[0] in ("models", "api"):  # huggingface.co/api/models/ORG/NAME
        parts = parts[1:] if parts[0] == "models" else parts[2:]
    if len(parts) < 2 or not _valid_repo(f"{parts[0]}/{parts[1]}"):
        raise HubRefError(f"'{text[:120]}' is not a model page on the Hub; expected https://huggingface.co/ORG/NAME")
    repo, rest = f"{parts[0]}/{parts[1]}", parts[2:]
    if not rest:
        return HubRef(repo)
    kind, rest = rest[0], rest[1:]
    if kind not in ("tree", "blob", "resolve") or not rest:
        if kind in ("discussions", "commits", "settings"):
            return HubRef(repo)
        raise HubRefError(f"'{text[:120]}': expected /tree/REVISION or /blob/REVISION/FILE after the repository")
    revision = _check_revision(rest[0], text)
    path = "/".join(rest[1:])
    if kind == "tree" or not path:
        return HubRef(repo, revision)  # a folder view: the whole repository at that revision
    return HubRef(repo, revision, _check_file(path, text))


def looks_like_hub_ref(text: str) -> bool:
    """Cheap check for the app's search box: would ``parse_hub_ref`` accept it?"""
    try:
        return parse_hub_ref(text) is not None
    except HubRefError:
        return False
