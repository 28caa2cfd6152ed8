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
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from llmplan.core.search.policy import AUTOMATIC
from llmplan.errors import PlanFileError
from llmplan.formats.atomic import atomic_write
from llmplan.formats.bounded import parse_json, read_capped
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
    hardware = old.get("hardware") or {}
    if not isinstance(hardware, dict):
        raise PlanFileError(f"'hardware' must be an object {{...}}, got {type(hardware).__name__}")
    hardware = dict(hardware)
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


def _migrate_v2_to_v3(old: dict[str, Any]) -> dict[str, Any]:
    """Schema 3 added training-framework profiles (``training.framework``, default "auto") and the
    precision ``regime``. A schema-2 plan was estimated as Megatron-Core does it (fp32 gradient buffer,
    fused kernels), so it migrates to the "megatron" profile and keeps its numbers."""
    new = dict(old)
    training = new.get("training")
    if training is None or isinstance(training, dict):
        training = dict(training or {})
        training.setdefault("framework", "megatron")
        new["training"] = training
    new["schema_version"] = 3
    return new


def _migrate_v3_to_v4(old: dict[str, Any]) -> dict[str, Any]:
    """Schema 4 fixed the global batch while the layout changes: ``training.global_batch_tokens`` and
    ``training.batch_rule`` (default "published": the batch published runs of the model's size used). A
    schema-3 plan with no global batch trained one micro-batch per replica (micro_batch·dp), so it migrates
    to the "per_replica" rule and keeps its numbers."""
    new = dict(old)
    training = new.get("training")
    if (training is None or isinstance(training, dict)) and new.get("workload", "pretrain") != "inference" \
            and not (training or {}).get("global_batch"):
        new["training"] = {**(training or {}), "batch_rule": "per_replica"}
    new["schema_version"] = 4
    return new


def _migrate_v4_to_v5(old: dict[str, Any]) -> dict[str, Any]:
    """Schema 5 added a machine of different cards (``hardware.cards``, ``hardware.tensor_split``) and the
    local engines' GPU back-end (``inference.backend``, default "auto"). A schema-4 plan has identical GPUs
    and no back-end, which is what the defaults mean: its numbers do not change."""
    return {**old, "schema_version": 5}


MIGRATIONS: Mapping[int, Migration] = {0: _migrate_v0_to_v1, 1: _migrate_v1_to_v2, 2: _migrate_v2_to_v3,
                                       3: _migrate_v3_to_v4, 4: _migrate_v4_to_v5}


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


def loads_plan(text: str | bytes, origin: str = "plan") -> PlanDocument:
    """Parse, migrate and validate plan text. ``origin`` (a file name) prefixes every error."""
    if len(text) > MAX_PLAN_BYTES:
        raise PlanFileError(_too_big(origin, len(text)))
    data = parse_json(text, origin, what=".llmplan file (UTF-8 JSON)", error=PlanFileError, max_depth=MAX_NESTING)
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
    raw = read_capped(p, MAX_PLAN_BYTES, what="plan file", error=PlanFileError)
    return loads_plan(raw, origin=str(p))


# ---- writing ------------------------------------------------------------------------------


# Fields whose being stated changes the estimate, not only their value: the knobs the default policy chooses
# where the plan leaves them open (``core.search.policy.AUTOMATIC``), the engine and the weight format (left open,
# a model released quantised is planned as released and a plan that does not fit tries smaller formats). Stated at
# their default ("offload: none" pinned in the app to see how far a plan is from fitting), they are written, or the
# reopened plan would be estimated another way (ZeRO-3 with CPU offload chosen for it).
STATED_KEPT: dict[str, tuple[str, ...]] = {
    "training": AUTOMATIC,
    "inference": ("engine", "weight_format"),
}


def dumps_plan(doc: PlanDocument) -> str:
    """Canonical text: sorted keys, indent 2, UTF-8 characters kept, trailing newline.

    Fields at their default are left out (the header fields always stay), except those of ``STATED_KEPT`` the
    plan states, so a plan shows what was chosen, and a later llmplan that adds a field with a default writes the same
    bytes for the same plan. Changing a default is therefore a schema change: it needs a
    new ``schema_version`` and a migration that writes the old default into old plans.
    """
    data = doc.model_dump(mode="json", exclude_defaults=True)
    for section, names in STATED_KEPT.items():  # a knob pinned at its default value stays pinned
        part = getattr(doc, section)
        kept = {n: v for n, v in part.model_dump(mode="json", include=set(names) & part.model_fields_set).items()}
        if kept:
            data[section] = {**kept, **data.get(section, {})}
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
    _save_target(target)  # refuses a FIFO, a device or a folder before anything is written
    payload = _checked_payload(doc, target)
    try:
        atomic_write(target, payload)  # through a symlink, the link keeps its name for the caller
    except OSError as exc:
        raise PlanFileError(f"{target}: cannot save ({exc.strerror or exc})") from None
    return target


def _save_target(target: Path) -> Path:
    """Where the bytes really go: a symlink is written through to its target (the link stays a link),
    and anything but a regular file or a new name (a FIFO, a device, a folder) is refused, never replaced."""
    if "\x00" in str(target):
        raise PlanFileError(f"{str(target)!r}: not a valid file name")
    real = Path(os.path.realpath(target))
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return real
    except OSError as exc:
        raise PlanFileError(f"{target}: cannot save there ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise PlanFileError(f"{target}: is a folder; give a file name to save the plan as")
    if not stat.S_ISREG(st.st_mode):
        raise PlanFileError(f"{target}: is not an ordinary file (a pipe or a device); llmplan saves a plan only "
                            "to an ordinary file, pick another name")
    return real


def _checked_payload(doc: PlanDocument, target: Path) -> bytes:
    """The bytes to write, proven to reopen: the loader's limits apply to what the writer produced,
    so a plan that could not be opened again is refused before the old file is touched."""
    try:
        payload = dumps_plan(doc).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PlanFileError(f"{target}: not saved: a text field holds {exc.object[exc.start:exc.end]!a}, "
                            "which UTF-8 cannot store; edit that text") from None
    except (ValueError, RecursionError) as exc:
        raise PlanFileError(f"{target}: not saved: the plan cannot be written as JSON ({exc})") from None
    try:
        loads_plan(payload, origin="the plan as it would be saved")
    except PlanFileError as exc:
        raise PlanFileError(f"{target}: not saved, because it could not be opened again: {exc}") from None
    return payload


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
