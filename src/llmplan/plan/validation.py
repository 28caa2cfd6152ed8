"""Pydantic validation errors as one sentence a person can act on.

Used by the plan loader and by ``--set``: the message names the dotted field
(``parallelism.tp``), what was wrong, the value given and, where pydantic knows it,
what is expected — never pydantic's multi-line dump.
"""

from __future__ import annotations

import math

from pydantic import ValidationError

_MAX_SHOWN = 3


def dotted(loc: tuple[object, ...]) -> str:
    """('parallelism', 'tp') -> 'parallelism.tp'; list indices as [i]."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).isidentifier():
            out += ("." if out else "") + str(part)
        else:  # a key from the file that is no identifier: quoted, so the message stays one line
            out += f"[{_short(str(part))}]"
    return out or "(the document)"


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_validation_error(exc: ValidationError, prefix: str = "") -> str:
    """One line per problem (at most three), joined with '; '."""
    parts = []
    for err in exc.errors()[:_MAX_SHOWN]:
        loc = tuple(p for p in err.get("loc", ()) if not (isinstance(p, str) and p.startswith("function-")))
        field = dotted(((prefix,) if prefix else ()) + loc)
        msg = " ".join(str(err.get("msg", "invalid")).removeprefix("Value error, ").split())
        kind = err.get("type", "")
        if kind == "extra_forbidden":
            parts.append(f"{field}: unknown field; remove it or check its spelling")
            continue
        if kind == "missing":
            parts.append(f"{field}: required field is missing; add it")
            continue
        given = err.get("input")
        shown = "" if isinstance(given, dict | list) else f" (got {_short(given)})"
        if not loc and not prefix and kind == "value_error":  # a rule over several fields names them itself
            parts.append(msg)  # it read "plan: (the document): pre-training trains every weight: ..."
            continue
        parts.append(f"{field}: {msg[0].lower() + msg[1:] if msg else msg}{shown}")
    more = len(exc.errors()) - _MAX_SHOWN
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def non_finite_field(value: object, loc: tuple[object, ...] = ()) -> str | None:
    """The dotted path of the first NaN or infinity in a dumped document, else None.

    Pydantic's lax floats read the strings "nan" and "inf"; such a value would turn every derived
    number into NaN and would be saved as ``null``, so the loaders refuse it by name instead.
    """
    stack: list[tuple[object, tuple[object, ...]]] = [(value, loc)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return dotted(where)
        if isinstance(item, dict):
            stack.extend((v, (*where, k)) for k, v in reversed(list(item.items())))
        elif isinstance(item, list | tuple):
            stack.extend((v, (*where, i)) for i, v in reversed(list(enumerate(item))))
    return None
