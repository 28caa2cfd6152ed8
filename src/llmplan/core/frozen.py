"""Base class for the engine's specs: frozen, strict about unknown fields, hashable.

Hashable specs let the engine cache derived quantities (parameter counts) per spec.

Numbers are numbers: pydantic's lax mode reads ``true`` as 1 and ``"8"`` as 8, so a plan
with ``"nodes": true`` or ``"seq_len": "4096"`` was silently accepted. A number field
(``int``, ``float``, their optionals and integer ``Literal`` choices) refuses booleans and
strings here, naming the field, before pydantic's own coercion runs.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, model_validator


def _is_int_type(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return all(_is_int_type(a) for a in get_args(annotation) if a is not type(None))
    if origin is Literal:
        return all(isinstance(v, int) for v in get_args(annotation))
    return annotation is int


def _is_number_type(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        return bool(args) and all(_is_number_type(a) for a in args)
    if origin is Literal:
        values = get_args(annotation)
        return bool(values) and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    if origin in (tuple, list):  # tuple[float, ...], list[int]: every item a number
        args = [a for a in get_args(annotation) if a is not Ellipsis]
        return bool(args) and all(_is_number_type(a) for a in args)
    return annotation in (int, float)


def _not_a_number(value: Any) -> bool:
    """True/false or text where a number (or a sequence of numbers) belongs."""
    if isinstance(value, list | tuple):
        return any(isinstance(v, bool | str) for v in value)
    return isinstance(value, bool | str)


@functools.cache
def _number_fields(cls: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    return tuple((name, "an integer" if _is_int_type(f.annotation) else "a number")
                 for name, f in cls.model_fields.items() if _is_number_type(f.annotation))


class NumbersAreNumbers(BaseModel):
    """Refuses true/false and text in number fields (also inside tuples/lists of numbers), naming the field;
    used by the engine's specs and plans. The models of hand-edited catalog files widen it to every field
    (``core.strict_fields.StrictFields``: a user GPU file's ``tflops.fp16 = "1e3"``, ``unified_memory = "yes"``)."""

    @model_validator(mode="before")
    @classmethod
    def _numbers_are_numbers(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, kind in _number_fields(cls):
                value = data.get(name)
                if _not_a_number(value):
                    raise ValueError(f"'{name}': expected {kind}, got {value!r:.60} (true/false and text are "
                                     "not numbers)")
        return data


class FrozenModel(NumbersAreNumbers):
    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    def __eq__(self, other: Any) -> bool:
        """pydantic's answer, reached faster. The engine's value-keyed caches (``lru_cache`` on parameter
        counts, layer times and collectives) compare specs on every hit, and pydantic's ``__eq__`` checks the
        generic origin, the private and the extra attributes in Python before it compares ``__dict__``, for
        each nested spec again. These specs forbid extras and have no private attributes, so for two of the
        same class equal ``__dict__``s mean equal specs; anything else goes to pydantic's own comparison
        (unequal dicts may still be equal specs when one holds a non-field entry)."""
        if self is other:
            return True
        if type(other) is type(self) and self.__dict__ == other.__dict__:
            return True
        return super().__eq__(other)
