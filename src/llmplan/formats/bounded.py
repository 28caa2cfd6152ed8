"""The one bounded reader for every untrusted file llmplan opens (plans, config.json, GGUF,
safetensors and their index, user catalogs, calibration, measured runs, autosave slots).

Why one reader: checking ``stat().st_size`` and then calling ``read_bytes()`` is defeated by
anything that is not a regular file. A FIFO blocks forever (on the GUI thread: a frozen app),
``/dev/zero`` or a pipe grows memory until ``MemoryError``. So this module

- opens without blocking (``O_NONBLOCK``: opening a FIFO with no writer returns at once),
- ``fstat``s the *open descriptor* (no race with a file swapped after a ``stat``) and refuses
  anything that is not a regular file with one clear sentence,
- reads at most ``cap + 1`` bytes, so a file that grows while it is read is still refused,
- parses JSON/TOML with every limit the writer respects: nesting depth (checked without
  recursion before the parser runs), integer digits (Python's own limit is 4,300 digits and
  raises a bare ``ValueError``; no size in a model or plan needs more than 40), finite floats
  only, no duplicate keys (the last one silently winning hid a second ``format``), and only
  strings that can be written back as UTF-8 (a lone surrogate ``\\ud800`` imports, then can
  never be saved).

Every failure is raised as the caller's own ``InputError`` subclass (``error=``), one line,
naming the file: a plan gives a ``PlanFileError``, a config a ``ConfigError``, a catalog file a
``CatalogError``; the reader never lets an ``OSError``, ``ValueError`` or ``RecursionError`` out.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any, BinaryIO

from llmplan.errors import InputError, LlmplanError

MAX_INT_DIGITS = 40  # 2**128 has 39 digits; every count llmplan reads is below 2**63
MAX_DEPTH = 64  # real plans nest 4 levels, config.json files 3; the parser's recursion is never reached

_O_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0) \
    | getattr(os, "O_BINARY", 0)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _os_message(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "cannot read it (no such file)"
    if exc.errno == errno.ELOOP:
        return "a symbolic link that loops; give the file itself"
    if exc.errno == errno.EISDIR:
        return "is a folder; give the path of a file"
    return f"cannot read it ({exc.strerror or exc})"


def open_regular(path: str | os.PathLike[str], *, what: str = "file",
                 error: type[LlmplanError] = InputError) -> BinaryIO:
    """Open ``path`` for reading if, and only if, it is a regular file; the caller closes it.

    ``what`` names the expected kind in the refusal ("plan file", "config.json" ...).
    """
    name = os.fspath(path)
    if "\x00" in name:  # os.open would raise ValueError: no file name can hold a NUL
        raise error(f"{name!r}: not a valid file name")
    try:
        fd = os.open(name, _O_FLAGS)
    except OSError as exc:
        raise error(f"{name}: {_os_message(exc)}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            hint = "; give the path of a file" if stat.S_ISDIR(st.st_mode) else \
                f"; llmplan reads a {what} only from an ordinary file"
            raise error(f"{name}: is {_kind(st.st_mode)}{hint}")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(path: str | os.PathLike[str], cap: int, *, what: str = "file",
                error: type[LlmplanError] = InputError) -> bytes:
    """The whole of a regular file of at most ``cap`` bytes; anything else is refused with ``error``."""
    name = os.fspath(path)
    fh = open_regular(path, what=what, error=error)
    try:
        with fh:
            data = fh.read(cap + 1)
    except OSError as exc:
        raise error(f"{name}: {_os_message(exc)}") from None
    if len(data) > cap:
        raise error(f"{name}: larger than {cap:,} bytes, too large for a {what}")
    return data


# ---- parsing ------------------------------------------------------------------------------

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def json_depth(text: str, limit: int = MAX_DEPTH) -> int:
    """Deepest bracket nesting outside strings, found without recursion (stops past ``limit``)."""
    depth = deepest = 0
    for m in _BRACKET.finditer(_STRING.sub('""', text)):
        if m.group() in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        else:
            depth -= 1
    return deepest


class _Refused(Exception):
    """Raised inside the JSON hooks; turned into the caller's error type with its origin."""


def _parse_int(s: str) -> int:
    digits = len(s.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _Refused(f"an integer of {digits:,} digits (at most {MAX_INT_DIGITS} are read)")
    return int(s)


def _parse_float(s: str) -> float:
    if len(s) > 400:
        raise _Refused(f"a number written with {len(s):,} characters")
    v = float(s)
    if v in (float("inf"), float("-inf")):
        raise _Refused(f"the number {s[:40]} is too large to be finite")
    return v


def _parse_constant(s: str) -> Any:
    raise _Refused(f"'{s}' is not a JSON number; write a finite number instead")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Refused(f"the key {k[:60]!r} appears twice in one object")
        out[k] = v
    return out


def unencodable(value: Any) -> str | None:
    """The first string (key or value) in a JSON-like value that UTF-8 cannot encode, or None.

    Iterative (no recursion), so it is safe on any depth the parsers let through."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return v
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            stack.extend(v)
    return None


# Files people pick by mistake, by their first bytes (each format's published signature): named in the refusal,
# since "bad byte at offset 10" does not tell a user that they chose the paper's PDF instead of its config.json.
_SIGNATURES = (
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive (or a file packed as one: .docx, .xlsx, a PyTorch .bin/.pt checkpoint)"),
    (b"GGUF", "a GGUF model file"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"\x1f\x8b", "a gzip-compressed file"),
    (b"\x7fELF", "a program (ELF executable)"),
)
_FIX = {"config.json": "give the model's config.json, its folder, a .gguf file, or a Hugging Face repo id (ORG/NAME)",
        ".llmplan file (UTF-8 JSON)": "open a plan llmplan saved (estimate --save, the app's Save); a model's "
                                      "config.json, folder or .gguf file goes to --model"}


def file_kind(raw: bytes) -> str | None:
    """What ``raw`` is when its first bytes are one of ``_SIGNATURES`` (a safetensors file: an 8-byte header
    length, then its JSON header), else None."""
    for magic, kind in _SIGNATURES:
        if raw.startswith(magic):
            return kind
    if len(raw) > 9 and raw[8:10] == b'{"' and int.from_bytes(raw[:8], "little") < len(raw):
        return "a safetensors weights file (its model's config.json is beside it)"
    return None


def decode_text(raw: bytes | str, origin: str, *, what: str, error: type[LlmplanError]) -> str:
    """UTF-8 text without a BOM; a bad byte is refused with its offset, a known binary format by its name."""
    if isinstance(raw, bytes):
        kind = file_kind(raw)
        if kind is not None:
            fix = _FIX.get(what, f"pick a {what}")  # the name alone first: a hint in brackets is said once
            raise error(f"{origin}: this is {kind}, not a {what.split(' (', 1)[0]}; {fix}")
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise error(f"{origin}: not UTF-8 text (bad byte at offset {exc.start}); a {what} is UTF-8") from None
    return raw.removeprefix("\ufeff")


def parse_json(raw: bytes | str, origin: str, *, what: str = "JSON file", error: type[LlmplanError] = InputError,
               max_depth: int = MAX_DEPTH) -> Any:
    """Strict JSON with the limits of the module docstring; refusals are ``error`` naming ``origin``."""
    text = decode_text(raw, origin, what=what, error=error)
    if json_depth(text, max_depth) > max_depth:
        raise error(f"{origin}: nested more than {max_depth} levels deep; this is not a {what}")
    try:
        data = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant,
                          object_pairs_hook=_pairs)
    except _Refused as exc:
        raise error(f"{origin}: {exc}; this is not a usable {what}") from None
    except json.JSONDecodeError as exc:
        raise error(f"{origin}: broken JSON at line {exc.lineno}, column {exc.colno}: {exc.msg} "
                    "(not valid JSON)") from None
    except (RecursionError, ValueError, OverflowError) as exc:
        raise error(f"{origin}: not a usable {what} ({type(exc).__name__})") from None
    bad = unencodable(data)
    if bad is not None:
        raise error(f"{origin}: a string holds a lone surrogate escape ({bad[:40]!a}); it cannot be saved as "
                    "UTF-8, fix the text")
    return data


def parse_toml(raw: bytes | str, origin: str, *, what: str = "TOML file",
               error: type[LlmplanError] = InputError) -> dict[str, Any]:
    """Strict TOML: broken syntax, numbers beyond Python's digit limit and deep nesting are ``error``."""
    text = decode_text(raw, origin, what=what, error=error)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{origin}: not valid TOML ({exc})") from None
    except (RecursionError, ValueError, OverflowError, MemoryError) as exc:
        raise error(f"{origin}: not a usable {what} ({type(exc).__name__}: a number too long or nesting "
                    "too deep)") from None
    bad = _too_long_int(data)
    if bad < 0:
        raise error(f"{origin}: a number that is not finite (inf, nan, or too large for a float); this is not "
                    f"a usable {what}")
    if bad:
        raise error(f"{origin}: an integer of {bad:,} digits (at most {MAX_INT_DIGITS} are read); this is not "
                    f"a usable {what}")
    return data


def _too_long_int(value: Any) -> int:
    """Digits of the first integer longer than the reader allows; -1 for a float TOML read as inf or nan
    (``inf``, ``nan`` and ``1e999`` are valid TOML; the JSON reader refuses the same values)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            return -1
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10 ** MAX_INT_DIGITS:
            return len(str(abs(v))) if abs(v).bit_length() < 14_000 else 4_300
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return 0


def load_json(path: str | os.PathLike[str], cap: int, *, what: str = "JSON file",
              error: type[LlmplanError] = InputError, max_depth: int = MAX_DEPTH) -> Any:
    """``parse_json(read_capped(path))``: the usual way to read an untrusted JSON file."""
    return parse_json(read_capped(path, cap, what=what, error=error), str(Path(path)), what=what, error=error,
                      max_depth=max_depth)


def load_toml(path: str | os.PathLike[str], cap: int, *, what: str = "TOML file",
              error: type[LlmplanError] = InputError) -> dict[str, Any]:
    """``parse_toml(read_capped(path))``."""
    return parse_toml(read_capped(path, cap, what=what, error=error), str(Path(path)), what=what, error=error)
