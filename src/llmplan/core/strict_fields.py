"""Catalog entries people edit by hand: every field must be given as its own type.

pydantic's lax mode reads ``fused_projections = "yes"`` and ``= 1`` as true, ``"3"`` as 3 and
``[["Q4_0", "0.5"]]`` as a row with the number 0.5, so a mistake in a user's ``frameworks.toml``,
``engines.toml``, hardware or system file changed an estimate without a word. ``NumbersAreNumbers``
already refuses text and true/false in top-level number fields; ``StrictFields`` widens that check for
the catalog models to every field and into the rows of list fields:

- a bool field takes true or false only;
- a number field takes a number, not text or true/false (an integer where a float belongs is kept:
  TOML writes ``1`` for 1.0);
- a text field takes text, a fixed choice (``Literal``) one of its values with their own type;
- a list field takes a list, each item (each row's items) checked the same way.

The check runs on the fields an entry gives, before pydantic's coercion, so a model built from its
defaults (``FrameworkProfile()``, on the engine's hot paths) pays nothing; every wrong field is reported
with its location (``fused_projections``) and what it must be, as pydantic's own errors are.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError

from llmplan.core.frozen import NumbersAreNumbers

Where = tuple[int | str, ...]  # item indices (and table keys) inside a field's value
_NUMBERS = ("a number", "an integer")


def _shown(value: Any) -> str:
    """The value as the user wrote it, more or less: TOML's true/false, text quoted, at most 60 characters."""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


Found = tuple[Where, str, Any]  # where inside the value, what must be there, what is there
Check = Callable[[Any, Where], Found | None]


def wrong_type(annotation: Any, value: Any, where: Where = ()) -> Found | None:
    """(where inside ``value``, what must be there, what is there) when ``value`` is not of ``annotation``'s
    type without coercion; None when it is, or when pydantic's own check is the right one (nested models,
    ``Any``, types this check does not know)."""
    check = checker(annotation)
    return None if check is None else check(value, where)


@functools.cache
def checker(annotation: Any) -> Check | None:
    """The check of one annotation, built once (a catalog load checks thousands of values); None where there
    is nothing to check."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = get_args(annotation)
        parts = [checker(a) for a in args if a is not type(None)]
        return None if not parts or None in parts else _union(parts, type(None) in args)
    if origin is Literal:
        return _choice(get_args(annotation))
    if origin in (tuple, list):
        args = get_args(annotation)
        if origin is list or (len(args) == 2 and args[1] is Ellipsis):
            return _rows(checker(args[0]) if args else None)
        return _row(tuple(checker(a) for a in args))
    if origin is dict:
        args = get_args(annotation)
        return _table(checker(args[1]) if args else None)
    if annotation is bool:
        return _simple(bool, (), "true or false")
    if annotation in (int, float):
        return _simple(object, (bool, str), "an integer" if annotation is int else "a number")
    if annotation is str:
        return _simple(str, (), "text (in quotes)")
    return None


def _simple(kind: type, refused: tuple[type, ...], what: str) -> Check:
    def check(value: Any, where: Where) -> Found | None:
        return None if isinstance(value, kind) and not isinstance(value, refused) else (where, what, value)
    return check


def _union(parts: list[Check], allows_none: bool) -> Check:
    def check(value: Any, where: Where) -> Found | None:
        if value is None and allows_none:
            return None
        found = []
        for part in parts:
            wrong = part(value, where)
            if wrong is None:
                return None
            found.append(wrong)
        return where, " or ".join(dict.fromkeys(f[1] for f in found)), value
    return check


def _choice(choices: tuple[Any, ...]) -> Check:
    what = "one of " + ", ".join(_shown(c) for c in choices)

    def check(value: Any, where: Where) -> Found | None:
        if any(value == c and type(value) is type(c) for c in choices):
            return None
        return where, what, value
    return check


def _rows(each: Check | None) -> Check:
    def check(value: Any, where: Where) -> Found | None:
        if not isinstance(value, list | tuple):
            return where, "a list", value
        if each is not None:
            for i, item in enumerate(value):
                wrong = each(item, (*where, i))
                if wrong is not None:
                    return wrong
        return None
    return check


def _row(items: tuple[Check | None, ...]) -> Check:
    def check(value: Any, where: Where) -> Found | None:
        if not isinstance(value, list | tuple):
            return where, "a list", value
        for i, (item_check, item) in enumerate(zip(items, value, strict=False)):  # a row too long: pydantic says so
            wrong = None if item_check is None else item_check(item, (*where, i))
            if wrong is not None:
                return wrong
        return None
    return check


def _table(each: Check | None) -> Check:
    def check(value: Any, where: Where) -> Found | None:
        if not isinstance(value, dict):
            return where, "a table", value
        if each is not None:
            for key, item in value.items():
                wrong = each(item, (*where, str(key)))
                if wrong is not None:
                    return wrong
        return None
    return check


def _in_value(where: Where) -> str:
    """'row 2, item 3 ' for a place inside a list of rows; '' for the field itself."""
    names = [f"'{w}'" if isinstance(w, str) else str(w + 1) for w in where]
    if len(names) == 1:
        return f"item {names[0]} "
    if len(names) == 2:
        return f"row {names[0]}, item {names[1]} "
    return "".join(f"[{n}]" for n in names) + " " if names else ""


def type_message(where: Where, what: str, got: Any) -> str:
    """"must be true or false, not 'yes' (write true or false without quotes)": what a wrong field must be,
    and for the common slips (a quoted number, true/false for a number) how to write it."""
    if isinstance(got, str) and what == "true or false":
        hint = " (write true or false without quotes)"
    elif isinstance(got, str) and what in _NUMBERS:
        hint = " (text is not a number: write it without quotes)"
    elif isinstance(got, bool) and what in _NUMBERS:
        hint = " (true/false is not a number)"
    else:
        hint = ""
    return f"{_in_value(where)}must be {what}, not {_shown(got)}{hint}"


@functools.cache
def _field_checks(cls: type[BaseModel]) -> dict[str, Check]:
    checks = {name: checker(f.annotation) for name, f in cls.model_fields.items()}
    return {name: check for name, check in checks.items() if check is not None}


class StrictFields(NumbersAreNumbers):
    """Refuses a value of another type in any field of a catalog entry (see the module docstring), each
    wrong field reported at its own location; replaces ``NumbersAreNumbers``' narrower check."""

    @model_validator(mode="before")
    @classmethod
    def _numbers_are_numbers(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        checks = _field_checks(cls)
        errors = []
        for name, value in data.items():
            check = checks.get(name)  # an unknown field: pydantic's extra="forbid" names it
            found = None if check is None else check(value, ())
            if found is not None:
                message = type_message(*found)
                errors.append(InitErrorDetails(type=PydanticCustomError("wrong_type", "{message}", {"message": message}),
                                               loc=(name,), input=value))
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return data
