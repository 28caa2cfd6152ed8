"""A minimal TOML writer for generated values (TOML has no null: None becomes an empty string).

Strings are written as JSON strings, which TOML reads as basic strings (an escape TOML does not
accept makes the file invalid, which is a case worth testing too)."""

from __future__ import annotations

import json
import math
from typing import Any


def value(v: Any) -> str:
    if v is None:
        return '""'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def document(tables: dict[str, Any]) -> str:
    """Top-level keys as ``key = value`` lines (dicts become inline tables)."""
    return "".join(f"{json.dumps(str(k))} = {value(v)}\n" for k, v in tables.items())


def array_of_tables(name: str, entries: list[dict[str, Any]]) -> str:
    out = []
    for entry in entries:
        out.append(f"[[{name}]]\n")
        out.extend(f"{json.dumps(str(k))} = {value(v)}\n" for k, v in entry.items())
    return "".join(out)
