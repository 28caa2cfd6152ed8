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


def wrong_type(annotation: Any, value: Any, where: Where = ()) -> tuple[Where, str, Any] | None:
    """(where inside ``value``, what must be there, what is there) when ``value`` is not of ``annotation``'s
    type without coercion; None when it is, or when pydantic's own check is the right one (nested models,
    ``Any``, types this check does not know)."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = get_args(annotation)
        if value is None and type(None) in args:
            return None
        found = [wrong_type(a, value, where) for a in args if a is not type(None)]
        if not found or any(f is None for f in found):
            return None
        return where, " or ".join(dict.fromkeys(f[1] for f in found)), value
    if origin is Literal:
        choices = get_args(annotation)
        if any(value == c and type(value) is type(c) for c in choices):
            return None
        return where, "one of " + ", ".join(_shown(c) for c in choices), value
    if origin in (tuple, list):
        if not isinstance(value, list | tuple):
            return where, "a list", value
        args = get_args(annotation)
        each = args[0] if (origin is list or (len(args) == 2 and args[1] is Ellipsis)) else None
        for i, item in enumerate(value):
            if each is None and i >= len(args):
                break  # a row too long: pydantic says so
            found = wrong_type(each if each is not None else args[i], item, (*where, i))
            if found is not None:
                return found
        return None
    if origin is dict:
        if not isinstance(value, dict):
            return where, "a table", value
        _key, item_type = get_args(annotation) or (Any, Any)
        for key, item in value.items():
            found = wrong_type(item_type, item, (*where, str(key)))
            if found is not None:
                return found
        return None
    if annotation is bool:
        return None if isinstance(value, bool) else (where, "true or false", value)
    if annotation in (int, float):
        if isinstance(value, bool | str):
            return where, "an integer" if annotation is int else "a number", value
        return None
    if annotation is str:
        return None if isinstance(value, str) else (where, "text (in quotes)", value)
    return None


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
def _annotations(cls: type[BaseModel]) -> dict[str, Any]:
    return {name: f.annotation for name, f in cls.model_fields.items()}


class StrictFields(NumbersAreNumbers):
    """Refuses a value of another type in any field of a catalog entry (see the module docstring), each
    wrong field reported at its own location; replaces ``NumbersAreNumbers``' narrower check."""

    @model_validator(mode="before")
    @classmethod
    def _numbers_are_numbers(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        fields = _annotations(cls)
        errors = []
        for name, value in data.items():
            if name not in fields:
                continue  # an unknown field: pydantic's extra="forbid" names it
            found = wrong_type(fields[name], value)
            if found is not None:
                message = type_message(*found)
                errors.append(InitErrorDetails(type=PydanticCustomError("wrong_type", "{message}", {"message": message}),
                                               loc=(name,), input=value))
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return data
