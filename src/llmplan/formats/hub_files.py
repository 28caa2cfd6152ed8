"""What a Hub repository's file list says about its weights: GGUF quants and safetensors totals.

No I/O here: these functions read the repo tree (paths and byte sizes, as the Hub lists them)
and the safetensors headers ``huggingface_hub`` parsed, so they are tested with plain data.

GGUF repos hold one file per quantisation (``Qwen3-8B-Q4_K_M.gguf``), or several split parts
(``...-Q4_K_M-00001-of-00003.gguf``, llama.cpp's ``gguf-split`` naming), sometimes one folder per
quant (``Q8_0/...``), plus vision projectors (``mmproj-*.gguf``) that are not the language model.
A choice is one quant: its parts' sizes summed, which is what a person downloads and what the
engine loads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

_SPLIT = re.compile(r"-(\d{5})-of-(\d{5})$", re.IGNORECASE)
_QUANT = (r"(?<![A-Za-z0-9])((?:UD-)?(?:I?Q[1-8](?:_[A-Z0-9]{1,4}){0,3}|TQ[12]_0|MXFP4(?:_MOE)?|BF16|F16|F32))"
          r"(?![A-Za-z0-9])")  # compiled at the first GGUF name read, not at import: 5-13 ms of the app's start-up
MAX_GGUF_GROUPS = 500  # the largest quant repos list a few dozen


@dataclass(frozen=True, slots=True)
class GgufChoice:
    """One quantisation of a GGUF repo: its files (split parts in order) and their summed size."""

    label: str  # the quant as the file names spell it, e.g. "Q4_K_M", "UD-Q4_K_XL"; else the file stem
    quant: str | None
    files: tuple[str, ...]
    size: int  # bytes, all parts
    parts_expected: int = 1  # "-of-N" of a split file
    projector: bool = False  # mmproj-*: a vision encoder, not the language model

    @property
    def complete(self) -> bool:
        return len(self.files) == self.parts_expected

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "quant": self.quant, "files": list(self.files), "size": self.size,
                "parts_expected": self.parts_expected, "projector": self.projector}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GgufChoice:
        return cls(str(d["label"]), d.get("quant"), tuple(str(f) for f in d["files"]), int(d["size"]),
                   int(d.get("parts_expected", 1)), bool(d.get("projector", False)))


def quant_of(path: str) -> str | None:
    """The quant type a GGUF file name (or, failing that, its folder) spells, upper case."""
    parts = path.split("/")
    stem = _SPLIT.sub("", parts[-1][:-5] if parts[-1].lower().endswith(".gguf") else parts[-1])
    for text in (stem, *reversed(parts[:-1])):
        found = re.findall(_QUANT, text, re.IGNORECASE)
        if found:
            return found[-1].upper()
    return None


def gguf_choices(files: Mapping[str, int]) -> tuple[GgufChoice, ...]:
    """The repo's ``.gguf`` files grouped into quants, split parts summed, smallest first."""
    groups: dict[str, list[tuple[str, int, int]]] = {}
    expected: dict[str, int] = {}
    for path, size in files.items():
        if not path.lower().endswith(".gguf"):
            continue
        stem = path[:-5]
        m = _SPLIT.search(stem)
        key = _SPLIT.sub("", stem)
        part = int(m.group(1)) if m else 1
        expected[key] = int(m.group(2)) if m else 1
        groups.setdefault(key, []).append((path, part, int(size)))
        if len(groups) > MAX_GGUF_GROUPS:
            break
    out = []
    for key, members in groups.items():
        members.sort(key=lambda t: t[1])
        name = key.rsplit("/", 1)[-1]
        quant = quant_of(members[0][0])
        out.append(GgufChoice(label=quant or name, quant=quant, files=tuple(p for p, _, _ in members),
                              size=sum(s for _, _, s in members), parts_expected=expected[key],
                              projector=name.lower().startswith("mmproj")))
    labels = [c.label for c in out]
    out = [c if labels.count(c.label) == 1 else _relabel(c) for c in out]  # two files, same quant: show names
    return tuple(sorted(out, key=lambda c: (c.projector, c.size, c.label)))


def _relabel(c: GgufChoice) -> GgufChoice:
    name = _SPLIT.sub("", c.files[0].rsplit("/", 1)[-1][:-5])
    return GgufChoice(name, c.quant, c.files, c.size, c.parts_expected, c.projector)


def pick_gguf(choices: Iterable[GgufChoice], wanted: str | None) -> GgufChoice | None:
    """The choice a file path or quant label names (case-insensitive); None when ``wanted`` is None."""
    if not wanted:
        return None
    key = wanted.strip().lower()
    for c in choices:
        if key in (c.label.lower(), (c.quant or "").lower()) or key in (f.lower() for f in c.files):
            return c
    return None


def default_gguf(choices: Iterable[GgufChoice]) -> GgufChoice | None:
    """The quant to start with when a GGUF-only repo is named without one: Q4_K_M (the size llama.cpp's
    own docs and most model cards recommend), else the smallest complete one; never a projector."""
    usable = [c for c in choices if not c.projector and c.complete]
    return next((c for c in usable if (c.quant or "").upper() == "Q4_K_M"), usable[0] if usable else None)


@dataclass(frozen=True, slots=True)
class SafetensorsTotals:
    """Exact counts from the safetensors headers: parameters and stored bytes per dtype."""

    params_by_dtype: dict[str, int]
    bytes_by_dtype: dict[str, int]
    files: int

    @property
    def params(self) -> int:
        return sum(self.params_by_dtype.values())

    @property
    def stored_bytes(self) -> int:
        return sum(self.bytes_by_dtype.values())


def safetensors_totals(files_metadata: Mapping[str, Any]) -> SafetensorsTotals:
    """Sum ``huggingface_hub``'s parsed headers (``SafetensorsRepoMetadata.files_metadata``).

    A tensor's stored bytes are its ``data_offsets`` span, which is what the file holds for it
    (packed 4-bit weights of a GPTQ/AWQ repo are I32 tensors, so counts per dtype are what is stored).
    """
    params: dict[str, int] = {}
    stored: dict[str, int] = {}
    for meta in files_metadata.values():
        for info in meta.tensors.values():
            dtype = str(info.dtype)
            params[dtype] = params.get(dtype, 0) + int(info.parameter_count)
            start, end = info.data_offsets
            stored[dtype] = stored.get(dtype, 0) + int(end) - int(start)
    return SafetensorsTotals(dict(sorted(params.items())), dict(sorted(stored.items())), len(files_metadata))
