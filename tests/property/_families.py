"""The hostile-input families of issue 17, each aimed at every parser it applies to (``_targets``).

A family makes one input from a ``random.Random`` (hypothesis's ``st.randoms()`` in CI, a seeded
generator in ``make fuzz``), writes it where its target reads it, runs the parser and checks the
family's rule on top of the common one (a result or the parser's own one-line error, never a
traceback). ``check`` raises ``AssertionError`` naming what was wrong; the callers time each input
and watch memory.

| family | the input | the rule on top of "no traceback" |
|---|---|---|
| special files | a FIFO, /dev/zero, /dev/urandom, /dev/null, /dev/full, a socket, a folder, a link loop, a dangling link or a link to any of them, as the file | refused (error, or the user file listed as a problem) |
| long integers | a number of 41 to 200,000 digits (also as a decimal or an exponent) at any place of a valid file | refused |
| deep nesting | arrays/objects (GGUF: arrays of arrays) 2 to 200,000 deep at any place | refused when deeper than the file kind allows |
| bool as number | ``true``/``false`` or a numeric string where a valid file has a number (GGUF: a bool- or string-typed value) | refused wherever the parser reads that field |
| control characters | ESC sequences, CR/LF, NUL, C1 controls, bidi overrides, U+2028, lone surrogates in any string or key | names shown (model, plan, GPU) escape to one printable line |
"""

from __future__ import annotations

import json
import os
import random
import socket
import stat
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmplan.core.present import one_line
from llmplan.errors import LlmplanError
from tests.property import _gguf_bytes as g
from tests.property import _toml
from tests.property._targets import TARGETS, TEXT_TARGETS, UNUSABLE, Target, prepare, run, safetensors_bytes

# ---- writing a damaged document -----------------------------------------------------------------


class Raw(str):
    """Text written into the file as is (a 5,000-digit number cannot go through json.dumps)."""


def _swap_raw(value: Any, raws: list[str]) -> Any:
    if isinstance(value, Raw):
        raws.append(str(value))
        return f"@@RAW{len(raws) - 1}@@"
    if isinstance(value, dict):
        return {k: _swap_raw(v, raws) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap_raw(v, raws) for v in value]
    return value


def render(target: Target, doc: Any) -> bytes:
    raws: list[str] = []
    plain = _swap_raw(doc, raws)
    text = _toml.document(plain) if target.fmt == "toml" else json.dumps(plain)
    for i in range(len(raws) - 1, -1, -1):  # highest first: @@RAW1@@ is a prefix of @@RAW10@@
        text = text.replace(f'"@@RAW{i}@@"', raws[i])
    if target.fmt == "safetensors":
        return safetensors_bytes(text)
    return text.encode("utf-8", "surrogatepass")


def _nodes(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside ``doc`` (iterative: base documents are small but keep it safe)."""
    out, stack = [], [(doc, prefix)]
    while stack:
        v, p = stack.pop()
        if p:
            out.append(p)
        if isinstance(v, dict):
            stack.extend((x, (*p, k)) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((x, (*p, i)) for i, x in enumerate(v))
    return sorted(out, key=repr)


def _get(doc: Any, path: tuple) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def _replaced(doc: Any, path: tuple, value: Any) -> Any:
    doc = json.loads(json.dumps(doc))
    parent = _get(doc, path[:-1])
    parent[path[-1]] = value
    return doc


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _numeric_paths(doc: Any) -> list[tuple]:
    return [p for p in _nodes(doc) if _is_number(_get(doc, p))]


# ---- outcomes ---------------------------------------------------------------------------------

@dataclass
class Outcome:
    target: Target
    result: Any  # the parser's result, or its LlmplanError

    @property
    def error(self) -> LlmplanError | None:
        return self.result if isinstance(self.result, LlmplanError) else None

    def refused(self, name: str) -> bool:
        """The input was not used: an error, or (user data) a problem line naming the file, or an
        autosave note that no longer names an original file."""
        if self.error is not None:
            return True
        if self.target.name == "autosave slot" and self.result[0] and self.result[0][0] == UNUSABLE:
            return True
        if self.target.name == "autosave note":
            found = self.result[0]
            return found is None or found[1] is None
        if self.target.user_data:
            return any(name in line for line in self.result[1])
        return False


def execute(target: Target, path: Path, folder: Path) -> Outcome:
    result = run(target, path, folder)
    if isinstance(result, LlmplanError):
        assert not target.user_data, f"user data raised instead of being skipped: {result}"
        text = str(result)
        assert text.strip() and "\n" not in text and "Traceback" not in text, f"bad error message {text!r}"
    return Outcome(target, result)


# ---- the families ------------------------------------------------------------------------------

def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


DEVICES = ["/dev/zero", "/dev/urandom", "/dev/null", "/dev/full", "/dev/random"]


def special_files(rng: random.Random, target: Target, folder: Path) -> None:
    path = prepare(target, folder)
    kind = rng.choice(["fifo", "fifo link", "device", "device", "socket", "folder", "loop", "dangling", "mknod"])
    if kind == "mknod" and os.geteuid() != 0:
        kind = "device"
    if kind == "socket" and len(str(path)) > 100:  # AF_UNIX names hold 108 bytes
        kind = "fifo"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "fifo link":
        os.mkfifo(folder / "pipe")
        path.symlink_to(folder / "pipe")
    elif kind == "device":
        path.symlink_to(rng.choice(DEVICES))
    elif kind == "mknod":  # a character device node of its own (as root): 1,5 is /dev/zero's
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, rng.choice([3, 5, 7, 8, 9])))
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        s.close()
    elif kind == "folder":
        path.mkdir()
    elif kind == "loop":
        path.symlink_to(path.name)
    else:
        path.symlink_to(folder / "does-not-exist")
    out = execute(target, path, folder)
    assert out.refused(path.name), f"{kind} was read as a {target.name}: {out.result!r:.200}"


def _digits(rng: random.Random) -> str:
    n = rng.choice([41, 100, 4299, 4300, 4301, 5000, 5000, 10_000, 200_000, int(10 ** rng.uniform(1.62, 5.3))])
    body = str(rng.randint(1, 9)) + "".join(rng.choice("0123456789") for _ in range(min(n, 64)))
    body = (body * (n // len(body) + 1))[:n]
    sign = rng.choice(["", "", "-"])
    form = rng.choice(["int", "int", "int", "decimal", "exponent"])
    if form == "decimal":
        return f"{sign}{body}.5"
    if form == "exponent":
        return f"{sign}1e{body[:max(3, n // 1000)]}"
    return sign + body


def long_integers(rng: random.Random, target: Target, folder: Path) -> None:
    doc = target.base()
    numeric = _numeric_paths(doc)
    path_in_doc = rng.choice(numeric) if numeric and rng.random() < 0.7 else rng.choice(_nodes(doc))
    text = _digits(rng)
    path = prepare(target, folder)
    _write(path, render(target, _replaced(doc, path_in_doc, Raw(text))))
    out = execute(target, path, folder)
    if _unreadable_number(text):
        assert out.refused(path.name), f"a number of {len(text)} characters at {path_in_doc} was accepted"


def _unreadable_number(text: str) -> bool:
    """An integer over 40 digits, or a number no float holds: the bounded reader refuses both (a 41-digit
    decimal such as 1234...5.5 is a finite float, judged by the parser's own bounds, not here)."""
    if "." not in text and "e" not in text:
        return len(text.lstrip("-")) > 40
    return len(text) > 400 or abs(float(text)) == float("inf")


def _deep_text(rng: random.Random, fmt: str, depth: int) -> str:
    if fmt == "toml":
        opener, closer = rng.choice([("[", "]"), ("{a = ", "}")])
    else:
        opener, closer = rng.choice([("[", "]"), ('{"a":', "}"), ('[{"a":', "}]")])
    return opener * depth + "1" + closer * depth


def deep_nesting(rng: random.Random, target: Target, folder: Path) -> None:
    depth = rng.choice([2, 31, 32, 33, 63, 64, 65, 100, 1000, 100_000, 200_000, int(10 ** rng.uniform(0.3, 5.3))])
    path = prepare(target, folder)
    if target.fmt == "gguf":
        kvs = g.llama_kvs()
        nested = struct.pack("<I", g.ARRAY) + struct.pack("<IQ", g.ARRAY, 1) * (depth - 1) + struct.pack(
            "<IQI", 4, 1, 7)
        head = g.header(kvs, g.llama_tensors())
        count = struct.unpack_from("<Q", head, 16)[0]
        insert_at = len(g.header(kvs, []))  # after the metadata, before the tensor infos
        data = head[:16] + struct.pack("<Q", count + 1) + head[24:insert_at] + g.string("x.nested") + nested + \
            head[insert_at:]
        _write(path, data)
        out = execute(target, path, folder)
        if depth > 3:
            assert out.refused(path.name), f"GGUF arrays nested {depth} deep were read"
        return
    doc = target.base()
    where = rng.choice(_nodes(doc))
    _write(path, render(target, _replaced(doc, where, Raw(_deep_text(rng, target.fmt, depth)))))
    out = execute(target, path, folder)
    if depth + len(where) > 64:
        assert out.refused(path.name), f"nesting {depth} deep at {where} was accepted"


BOOL_LIKE = [True, False, "4096", "1", "0", "1e3", "0.5", " 8", "0x10", "", "nan"]


def _perturbed(v: int | float) -> int | float:
    return v * 2 + 3 if isinstance(v, int) else v * 1.5 + 0.25


def bool_as_number(rng: random.Random, target: Target, folder: Path) -> None:
    path = prepare(target, folder)
    fake = rng.choice(BOOL_LIKE)
    if target.fmt == "gguf":
        kvs = g.llama_kvs()
        numeric = [i for i, (_, t, _) in enumerate(kvs) if t in (4, 6)]
        i = rng.choice(numeric)
        key, vtype, value = kvs[i]
        as_bool = isinstance(fake, bool)
        bad = [*kvs[:i], (key, 7, fake) if as_bool else (key, 8, str(fake)), *kvs[i + 1:]]
        other = [*kvs[:i], (key, vtype, _perturbed(value)), *kvs[i + 1:]]
        docs = {"fake": g.header(bad, g.llama_tensors()), "other": g.header(other, g.llama_tensors()),
                "base": g.header(kvs, g.llama_tensors())}
        where: Any = key
    else:
        doc = target.base()
        where = rng.choice(_numeric_paths(doc))
        docs = {"fake": render(target, _replaced(doc, where, fake)),
                "other": render(target, _replaced(doc, where, _perturbed(_get(doc, where)))),
                "base": render(target, doc)}
    _write(path, docs["fake"])
    out = execute(target, path, folder)
    if out.refused(path.name):
        return
    results = {}
    for k in ("other", "base"):  # is the field read at all? (a different number changes the result)
        _write(path, docs[k])
        results[k] = repr(execute(target, path, folder).result)
    assert results["other"] == results["base"], f"{fake!r} at {where} was read as a number ({target.name})"


CONTROLS = ["\x1b[31m", "\x1b]0;owned\x07", "\r", "\n", "\x00", "\x7f", "\x85", "\x9b31m", "\u2028", "\u202e",
            "\ufeff", "\t", "\x08", "\ud800", "\udfff", "\x1b[2J\x1b[H"]


def _evil(rng: random.Random) -> str:
    parts = [rng.choice(["evil", "name", "", "H100", "é", "模型"]) for _ in range(rng.randint(1, 4))]
    for _ in range(rng.randint(1, 4)):
        parts.insert(rng.randint(0, len(parts)), rng.choice(CONTROLS))
    return "".join(parts)


def _names_shown(result: Any) -> list[str]:
    """Names the app and the CLI show on one line: a plan's name, a model's name, a GPU's name."""
    names = []
    for attr in ("name", "model_name"):
        v = getattr(result, attr, None)
        if isinstance(v, str):
            names.append(v)
    model = getattr(result, "model", None)
    if model is not None and isinstance(getattr(model, "name", None), str):
        names.append(model.name)
    return names


def control_characters(rng: random.Random, target: Target, folder: Path) -> None:
    path = prepare(target, folder)
    evil = _evil(rng)
    if target.fmt == "gguf":
        evil = evil.replace("\ud800", "\ufffd").replace("\udfff", "\ufffd")  # GGUF strings are UTF-8 bytes
        kvs = g.llama_kvs()
        key = rng.choice(["general.name", "general.architecture", "key"])
        if key == "key":
            kvs.append((evil, g.STRING, "x"))
        else:
            kvs = [(k, t, evil if k == key else v) for k, t, v in kvs]
        _write(path, g.header(kvs, g.llama_tensors()))
    else:
        doc = target.base()
        strings = [p for p in _nodes(doc) if isinstance(_get(doc, p), str)]
        if strings and rng.random() < 0.7:
            where = rng.choice(strings)
            doc = _replaced(doc, where, _get(doc, where) + evil if rng.random() < 0.5 else evil)
        else:
            where = rng.choice([p for p in _nodes(doc) if isinstance(_get(doc, p[:-1]), dict)])
            parent = _get(doc, where[:-1])
            parent[evil] = parent.pop(where[-1])
        _write(path, render(target, doc))
    out = execute(target, path, folder)
    for name in _names_shown(out.result):
        shown = one_line(name)
        assert shown.isprintable(), f"name shown with control characters: {shown!r}"


@dataclass(frozen=True)
class Family:
    name: str
    make: Callable[[random.Random, Target, Path], None]
    targets: tuple[str, ...]


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("special files", special_files, tuple(TARGETS)),
    Family("long integers", long_integers, tuple(TEXT_TARGETS)),
    Family("deep nesting", deep_nesting, tuple(TARGETS)),
    Family("bool as number", bool_as_number, tuple(n for n in TARGETS if n != "autosave note")),  # no numbers
    Family("control characters", control_characters, tuple(TARGETS)),
)}
