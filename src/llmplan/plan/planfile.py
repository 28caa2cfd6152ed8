"""Reading and writing ``.llmplan`` files (DESIGN.md §3).

A plan file comes from anywhere (a colleague, a download), so loading trusts nothing:
it refuses non-UTF-8, broken JSON, huge or absurdly nested input before parsing,
migrates older schema versions through a chain of pure functions, refuses newer ones
with both version numbers in the message, and turns every validation problem into one
sentence naming the dotted field. Loading never executes anything and never follows a
path written in the file.

Saving is atomic (temp file in the same folder, fsync, ``os.replace``, fsync of the
folder) and canonical (sorted keys, two-space indent, trailing newline), so
load -> save -> load is byte-identical and diffs of plan files stay readable.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from llmplan.errors import PlanFileError
from llmplan.formats.atomic import atomic_write
from llmplan.plan.document import FORMAT, SCHEMA_VERSION, ModelRef, PlanDocument
from llmplan.plan.validation import describe_validation_error, non_finite_field

MAX_PLAN_BYTES = 2 * 1024 * 1024  # a plan with an inline config is a few tens of KB
MAX_NESTING = 64  # real plans nest 4 levels deep; json.loads recursion must never be reachable

Migration = Callable[[dict[str, Any]], dict[str, Any]]

# ---- migrations: schema N -> N+1, pure functions over plain dicts ----------------------


def _migrate_v0_to_v1(old: dict[str, Any]) -> dict[str, Any]:
    """The pre-release draft (schema 0) -> schema 1.

    Draft 0 called the parallel layout ``layout`` and kept the GPU count as
    ``hardware.gpu_count`` (one node), and spelled the workload ``"training"``.
    """
    new = {k: v for k, v in old.items() if k not in ("layout",)}
    if "layout" in old:
        new["parallelism"] = old["layout"]
    hardware = dict(old.get("hardware") or {})
    if "gpu_count" in hardware:
        hardware["gpus_per_node"] = hardware.pop("gpu_count")
        hardware.setdefault("nodes", 1)
    if hardware or "hardware" in old:
        new["hardware"] = hardware
    if new.get("workload") == "training":
        new["workload"] = "pretrain"
    new["schema_version"] = 1
    return new


def _migrate_v1_to_v2(old: dict[str, Any]) -> dict[str, Any]:
    """Schema 2 added ``hardware.gpu_efficiency`` (optional; absent means the catalog's, as schema 1 did)."""
    return {**old, "schema_version": 2}


MIGRATIONS: Mapping[int, Migration] = {0: _migrate_v0_to_v1, 1: _migrate_v1_to_v2}


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Bring a plan dict from its ``schema_version`` up to ``SCHEMA_VERSION``."""
    version = data.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise PlanFileError(
            f"plan: 'schema_version' must be an integer (got {version!r}); "
            f"a plan written by this llmplan has \"schema_version\": {SCHEMA_VERSION}"
        )
    if version > SCHEMA_VERSION:
        raise PlanFileError(
            f"this plan was saved by a newer llmplan (schema {version}); this version reads up to "
            f"schema {SCHEMA_VERSION} — update llmplan"
        )
    if version < min(MIGRATIONS, default=SCHEMA_VERSION):
        raise PlanFileError(
            f"plan: schema_version {version} is older than any llmplan release; it cannot be migrated"
        )
    while version < SCHEMA_VERSION:
        data = MIGRATIONS[version](data)
        version = data["schema_version"]
    return data


# ---- reading ------------------------------------------------------------------------------

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def _max_nesting(text: str) -> int:
    """Deepest bracket nesting outside strings, found without recursion (before json.loads)."""
    depth = deepest = 0
    for m in _BRACKET.finditer(_STRING.sub('""', text)):
        if m.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_NESTING:
                break
        else:
            depth -= 1
    return deepest


def loads_plan(text: str | bytes, origin: str = "plan") -> PlanDocument:
    """Parse, migrate and validate plan text. ``origin`` (a file name) prefixes every error."""
    if isinstance(text, bytes):
        if len(text) > MAX_PLAN_BYTES:
            raise PlanFileError(_too_big(origin, len(text)))
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PlanFileError(
                f"{origin}: not UTF-8 text (bad byte at offset {exc.start}); a .llmplan file is UTF-8 JSON"
            ) from None
    if len(text) > MAX_PLAN_BYTES:
        raise PlanFileError(_too_big(origin, len(text)))
    text = text.removeprefix("\ufeff")
    if _max_nesting(text) > MAX_NESTING:
        raise PlanFileError(f"{origin}: nested more than {MAX_NESTING} levels deep; this is not a plan file")
    def not_json(constant: str) -> None:  # Python reads NaN/Infinity; saving would turn them into null
        raise PlanFileError(f"{origin}: '{constant}' is not a JSON number; write a finite number instead")

    try:
        data = json.loads(text, parse_constant=not_json)
    except json.JSONDecodeError as exc:
        raise PlanFileError(f"{origin}: broken JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:  # pragma: no cover - the nesting check comes first
        raise PlanFileError(f"{origin}: nested too deeply; this is not a plan file") from None
    if not isinstance(data, dict):
        raise PlanFileError(f"{origin}: a plan is a JSON object {{...}}, got a JSON {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise PlanFileError(
            f"{origin}: not an llmplan plan ('format' is {data.get('format')!r}, expected \"{FORMAT}\"); "
            "to import a model's config.json use 'llmplan-cli estimate --model PATH'"
        )
    try:
        data = migrate(data)
    except PlanFileError as exc:
        raise PlanFileError(f"{origin}: {exc}") from None
    try:
        doc = PlanDocument.model_validate(data)
    except ValidationError as exc:
        raise PlanFileError(f"{origin}: {describe_validation_error(exc)}") from None
    bad = non_finite_field(doc.model_dump())
    if bad:
        raise PlanFileError(f"{origin}: {bad}: NaN or infinity is not a usable value; write a finite number")
    return doc


def _too_big(origin: str, size: int) -> str:
    return f"{origin}: {size:,} bytes is too large for a plan file (limit {MAX_PLAN_BYTES:,})"


def load_plan(path: str | os.PathLike[str]) -> PlanDocument:
    """Read a ``.llmplan`` file. Errors are ``PlanFileError`` naming the file."""
    p = Path(path)
    if "\x00" in str(p):  # os.stat would raise ValueError: no file name can hold a NUL
        raise PlanFileError(f"{str(p)!r}: not a valid file name")
    try:
        size = p.stat().st_size
        if size > MAX_PLAN_BYTES:
            raise PlanFileError(_too_big(str(p), size))
        raw = p.read_bytes()
    except IsADirectoryError:
        raise PlanFileError(f"{p}: is a folder; give the path of a .llmplan file") from None
    except FileNotFoundError:
        raise PlanFileError(f"{p}: no such file") from None
    except OSError as exc:
        raise PlanFileError(f"{p}: cannot read it ({exc.strerror or exc})") from None
    return loads_plan(raw, origin=str(p))


# ---- writing ------------------------------------------------------------------------------


def dumps_plan(doc: PlanDocument) -> str:
    """Canonical text: sorted keys, indent 2, UTF-8 characters kept, trailing newline.

    Fields at their default are left out (the header fields always stay), so a plan shows
    what was chosen, and a later llmplan that adds a field with a default writes the same
    bytes for the same plan. Changing a default is therefore a schema change: it needs a
    new ``schema_version`` and a migration that writes the old default into old plans.
    """
    data = doc.model_dump(mode="json", exclude_defaults=True)
    data.update(format=doc.format, schema_version=doc.schema_version, app_version=doc.app_version,
                workload=doc.workload)
    data.setdefault("hardware", {})["gpu"] = doc.hardware.gpu  # the catalog id, even at its default
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def save_plan(doc: PlanDocument, path: str | os.PathLike[str], inline: bool = True) -> Path:
    """Write ``doc`` atomically: the file is either the old one or the complete new one.

    ``inline``: first write the catalog's model and GPU specs into the plan (``resolve.inline_specs``)
    so it opens with the same numbers on a machine whose catalog differs or lacks them. A plan whose
    ids this catalog does not know is still saved, as written: saving must never lose work.
    """
    if inline:
        from llmplan.errors import CatalogError
        from llmplan.plan.resolve import inline_specs

        with contextlib.suppress(CatalogError, PlanFileError):
            doc = inline_specs(doc)
    target = Path(path)
    try:
        atomic_write(target, dumps_plan(doc))  # through a symlink, the link keeps its name for the caller
    except OSError as exc:
        raise PlanFileError(f"{target}: cannot save ({exc.strerror or exc})") from None
    return target


# ---- importing a bare config.json -----------------------------------------------------------


def plan_from_config(source: str | os.PathLike[str] | Mapping[str, Any], name: str | None = None) -> PlanDocument:
    """A plan around a model's config.json (inline), with default hardware and workload.

    The config is checked by building its ``ModelSpec`` now, so a config we cannot read
    fails here with a ``ConfigError`` rather than later when the plan is estimated.
    """
    from llmplan.formats.hf_config import load_config_file, spec_from_config

    if isinstance(source, Mapping):
        config = dict(source)
        label = name or str(config.get("_name_or_path") or config.get("model_type") or "custom model")
    else:
        p = Path(source)
        config = load_config_file(p)
        label = name or (p.name if p.is_dir() else p.parent.name or p.stem)
    spec_from_config(config, name=label)
    return PlanDocument(name=label, model=ModelRef(name=label, config=config))


def plan_schema_text() -> str:
    """The JSON Schema of the plan document, canonical text (checked in as resources/plan.schema.json)."""
    schema = PlanDocument.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "llmplan plan file (.llmplan)"
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
