"""Editors for knobs this window has no hand-made editor for (Qt side of "every knob").

The engine's settings grow as its authors add fields (a new optional field with a
default). Rather than silently hiding them, every field of ``TrainingSettings`` /
``InferenceSettings`` not in ``known`` gets a plain editor built from its type, its
range constraints and its description, so a new knob is usable the day it lands.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable

from pydantic import BaseModel
from PySide6.QtWidgets import QFormLayout, QWidget

from llmplan.gui.bind import bound_check, bound_combo, bound_float, bound_spin
from llmplan.gui.state import PlanState


def _limits(info) -> tuple[float | None, float | None]:
    """The field's bounds from its ge/gt and le/lt constraints (None: unbounded)."""
    lo = hi = None
    for m in info.metadata:
        for attr in ("ge", "gt"):
            if getattr(m, attr, None) is not None:
                lo = getattr(m, attr)
        for attr in ("le", "lt"):
            if getattr(m, attr, None) is not None:
                hi = getattr(m, attr)
    return lo, hi


def editor_for(state: PlanState, section: str, name: str, info) -> QWidget | None:
    path = f"{section}.{name}"
    label = name.replace("_", " ").capitalize()
    tip = info.description or ""
    ann = info.annotation
    origin = typing.get_origin(ann)
    args = [a for a in typing.get_args(ann) if a is not type(None)]
    if ann is bool:
        return bound_check(state, path, label, tip)
    if origin is typing.Literal:
        return bound_combo(state, path, label, tip, [(v, str(v)) for v in typing.get_args(ann)])
    lo, hi = _limits(info)
    if ann is int or (args == [int]):
        top = min(int(hi if hi is not None else 1_000_000_000), 2**31 - 1)  # a QSpinBox holds a C int
        return bound_spin(state, path, label, tip, int(lo or 0), top,
                          none_below=ann is not int, special_zero="default" if ann is not int else "")
    if ann is float or (args == [float]):
        return bound_float(state, path, label, tip, float(lo or 0.0), float(hi if hi is not None else 1e18), 3, 0.01,
                           none_text="default" if ann is not float else "")
    return None  # tuples, strings: no generic editor


def add_extra_knobs(form: QFormLayout, state: PlanState, section: str, model: type[BaseModel],
                    known: Iterable[str]) -> int:
    """Add an editor for each unknown field of ``model``; returns how many were added."""
    added = 0
    known = set(known)
    for name, info in model.model_fields.items():
        if name in known:
            continue
        editor = editor_for(state, section, name, info)
        if editor is not None:
            form.addRow("" if info.annotation is bool else name.replace("_", " ").capitalize(), editor)
            added += 1
    return added
