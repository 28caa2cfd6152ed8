"""``--set path=value``: override any plan field by its dotted path (DESIGN.md §3).

The value is read as JSON when it parses (``8``, ``true``, ``0.5``, ``"x"``, ``[1,2]``)
and as a plain string otherwise (``--set training.optimizer=adamw``), then the whole
document is validated again by pydantic, so a wrong type is refused with the field's
expected type. An unknown path is refused with the valid paths nearest to it.

Setting a catalog id (``model.id``, ``hardware.gpu``, ``hardware.network``) drops the
matching inline spec, because the inline spec would otherwise win over the new id.
"""

from __future__ import annotations

import difflib
import json
import types
import typing
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import BaseModel, ValidationError

from llmplan.errors import InputError
from llmplan.formats.bounded import MAX_DEPTH, json_depth, parse_json
from llmplan.plan.document import PlanDocument
from llmplan.plan.validation import describe_validation_error, non_finite_field

# A new id replaces the inline spec that would otherwise shadow it.
_ID_CLEARS = {
    "model.id": ("model.config", "model.spec", "model.hub"),
    "hardware.gpu": ("hardware.gpu_spec", "hardware.gpu_efficiency", "hardware.fabric_spec"),
    "hardware.node": ("hardware.fabric_spec",),
    "hardware.gpu_spec": ("hardware.gpu_efficiency",),
    "hardware.network": ("hardware.network_spec",),
}
_FROZEN_FIELDS = {"format", "schema_version"}


def _model_class(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside ``X``, ``X | None`` or ``Optional[X]``, else None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _model_class(arg)
            if found:
                return found
    return None


def field_paths(model: type[BaseModel] = PlanDocument, prefix: str = "") -> Iterator[str]:
    """Every settable path of the plan document: leaves ('parallelism.tp') and whole sections
    ('hardware.gpu_spec', given as a JSON object)."""
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        sub = _model_class(info.annotation)
        if sub is not None:
            yield path
            yield from field_paths(sub, path + ".")
        elif path not in _FROZEN_FIELDS:
            yield path


def _free_form(path: str) -> bool:
    """Paths inside a free-form dict (the inline config.json) are settable key by key."""
    return path.startswith("model.config.")


def parse_value(text: str) -> Any:
    """A ``--set`` value: JSON when it is JSON (numbers, true/false, objects), else the text itself.
    Depth, digits, non-finite numbers and lone surrogates are bounded as in a plan file."""
    if json_depth(text, MAX_DEPTH) > MAX_DEPTH:  # json.loads would recurse until RecursionError
        raise InputError(f"--set: the value is nested more than {MAX_DEPTH} levels deep")
    try:
        json.loads(text)
    except ValueError:
        return text
    return parse_json(text, "--set", what="value", error=InputError)


def _suggest(path: str, valid: list[str]) -> str:
    near = difflib.get_close_matches(path, valid, n=5, cutoff=0.5)
    section = path.split(".")[0]
    if not near:
        near = [v for v in valid if v.startswith(section + ".")][:8]
    return ", ".join(near) if near else ", ".join(sorted({v.split(".")[0] for v in valid}))


def apply_overrides(doc: PlanDocument, assignments: Iterable[str]) -> PlanDocument:
    """A new document with each ``path=value`` applied, validated as a whole."""
    # unset fields stay unset: a knob the plan does not state stays automatic (core.search.policy)
    data = doc.model_dump(mode="json", exclude_unset=True)
    valid = list(field_paths())
    for assignment in assignments:
        path, sep, raw = assignment.partition("=")
        path = path.strip()
        if not sep or not path:
            raise InputError(f"--set {assignment!r}: write it as PATH=VALUE, e.g. --set parallelism.tp=8")
        if path in _FROZEN_FIELDS:
            raise InputError(f"--set {path}: '{path}' is fixed by the file format and cannot be set")
        if path not in valid and not _free_form(path):
            raise InputError(f"--set {path}: no such plan field; nearest valid paths: {_suggest(path, valid)}")
        _assign(data, path, parse_value(raw))
        for cleared in _ID_CLEARS.get(path, ()):
            _assign(data, cleared, None)
    try:
        new = PlanDocument.model_validate(data)
    except ValidationError as exc:
        raise InputError(f"--set: {_with_expected(exc)}") from None
    bad = non_finite_field(new.model_dump())
    if bad:
        raise InputError(f"--set {bad}: NaN or infinity is not a usable value; give a finite number")
    return new


def _assign(data: dict[str, Any], path: str, value: Any) -> None:
    keys = path.split(".")
    node: Any = data
    for i, key in enumerate(keys[:-1]):
        if node.get(key) is None:
            if i == 0 or _free_form(".".join(keys[: i + 1]) + "."):
                node[key] = {}
            else:
                raise InputError(
                    f"--set {path}: '{'.'.join(keys[: i + 1])}' is not set in this plan; "
                    "set the catalog id instead, or give the whole object as JSON"
                )
        node = node[key]
        if not isinstance(node, dict):
            raise InputError(f"--set {path}: '{'.'.join(keys[: i + 1])}' is a value, not a section")
    node[keys[-1]] = value


def _with_expected(exc: ValidationError) -> str:
    """The validation message plus the expected type of the first offending field."""
    text = describe_validation_error(exc)
    err = exc.errors()[0]
    expected = _expected_type(tuple(str(p) for p in err.get("loc", ())))
    return f"{text}; expected {expected}" if expected else text


def _expected_type(loc: tuple[str, ...]) -> str:
    model: type[BaseModel] | None = PlanDocument
    annotation: Any = None
    for key in loc:
        if model is None or key not in model.model_fields:
            return ""
        annotation = model.model_fields[key].annotation
        model = _model_class(annotation)
    if annotation is None or model is not None:
        return ""
    return _type_name(annotation)


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:  # a bounded number (Annotated[int, Field(ge=0)]): its type, not "Annotated"
        return _type_name(typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return "null"
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string"}.get(
        annotation, getattr(annotation, "__name__", str(annotation))
    )
