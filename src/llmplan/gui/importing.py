"""Turn a dropped or chosen file into a model reference (Qt-free).

Accepted: a config.json, a model folder (its config.json), a safetensors index
(``*.safetensors.index.json``: the config.json beside it) and a ``.gguf`` (its header
only, through ``llmplan.formats.gguf_header``). The model joins the
user catalog when there is one, and the plan keeps the config inline as well, so a
shared plan still opens on a machine without that catalog entry.

What the file says wins over where it lies (issue 18): a GGUF is named by its
``general.name`` and brings its weight format (``general.file_type``: a Q4_K_M file plans as
q4_k_m, not bf16); a config.json is named by its ``_name_or_path``, else its model type and
size ("llama-8.0B"), never by its folder ("drop", "snapshots"). Two different models that
would share a name get distinct ids (``user/llama-8.0B``, ``user/llama-8.0B-2``), so one
import never overwrites another; importing the same config again reuses its entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmplan.errors import ConfigError, LlmplanError
from llmplan.plan.document import ModelRef

PLAN_SUFFIX = ".llmplan"
MAX_NAME = 120


def is_plan_file(path: Path) -> bool:
    return path.suffix.lower() == PLAN_SUFFIX


@dataclass(frozen=True)
class ModelFile:
    """What one model file says: its config, its own name, and (GGUF) the format its weights are stored in."""

    config: dict[str, Any]
    name: str
    weight_format: str | None = None


@dataclass(frozen=True)
class Imported:
    """An imported model: the plan fields to set as one undo step, and a status sentence."""

    ref: ModelRef
    note: str
    changes: dict[str, Any] = field(default_factory=dict)


def read_model_file(path: Path) -> ModelFile:
    """The config, name and weight format of any accepted model file or folder."""
    from llmplan.formats.hf_config import load_config_file

    if path.suffix.lower() == ".gguf":
        from llmplan.formats import gguf_header

        header = gguf_header.read_gguf_header(path)
        config = dict(gguf_header.config_from_gguf(header))
        return ModelFile(config, gguf_header.name_of(header) or path.stem, gguf_header.weight_format_of(header))
    if path.name.endswith(".safetensors.index.json"):  # a folder: load_config_file reads its config.json
        beside = path.parent / "config.json"
        if not beside.is_file():
            raise ConfigError(f"{path.name}: a safetensors index lists tensors but not the architecture; "
                              "put the model's config.json beside it and drop that folder")
        path = beside
    config = load_config_file(path)
    return ModelFile(config, config_name(config))


def config_name(config: dict[str, Any]) -> str:
    """A config.json's own name: the last part of ``_name_or_path`` (the Hub repo or folder it was saved
    from), else its model type and size, e.g. ``llama-8.0B``."""
    raw = config.get("_name_or_path")
    if isinstance(raw, str):
        tail = re.split(r"[/\\]", raw.strip().rstrip("/\\"))[-1]
        tail = " ".join(tail.split())[:MAX_NAME]
        if tail and tail not in (".", ".."):
            return tail
    from llmplan.core.params import count_params
    from llmplan.formats.hf_config import spec_from_config

    spec = spec_from_config(config, name="imported model")
    kind = str(config.get("model_type") or spec.model_type or "model")[:40]
    total = count_params(spec).total
    size = f"{total / 1e9:.1f}B" if total >= 1e9 else f"{total / 1e6:.0f}M" if total >= 1e6 else f"{total / 1e3:.0f}K"
    return f"{kind}-{size}"


def unique_id(name: str, config: dict[str, Any], taken: dict[str, Any]) -> str:
    """``user/<name>``, or ``user/<name>-2``, ``-3``… when that id holds another model. ``taken`` maps
    ids (lower case) to their stored configs; the same config keeps its id (a re-import, not a copy)."""
    base = f"user/{name}"
    candidate, n = base, 1
    while candidate.lower() in taken and taken[candidate.lower()] != config:
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def _taken_ids() -> dict[str, Any]:
    try:
        from llmplan.catalog.models import load_model_catalog

        return {e.id.lower(): e.config for e in load_model_catalog(refresh=True).entries}
    except Exception:  # no catalog: nothing to collide with
        return {}


def _engine_for(weight_format: str, engine: str | None) -> str | None:
    """llama.cpp when the plan's engine cannot load the file's format (a GGUF dropped on an MLX plan)."""
    if not engine:
        return None
    from llmplan.catalog.engines import engine_profile
    from llmplan.core.engine_profile import check_weight_format

    try:
        return "llama.cpp" if check_weight_format(engine_profile(engine), weight_format) else None
    except Exception:
        return None


def _kv_move(kv_dtype: str | None, engine: str) -> tuple[str, str] | None:
    """(the cache type ``engine`` takes nearest to ``kv_dtype``, why) when it has no ``kv_dtype`` cache (an
    fp8 cache, vLLM's 8-bit one, on llama.cpp: q8_0), else None."""
    if not kv_dtype:
        return None
    from llmplan.catalog.engines import engine_profile
    from llmplan.core.kvcache import kv_dtype_refusal, nearest_kv_dtype

    try:
        prof = engine_profile(engine)
        if kv_dtype_refusal(kv_dtype, prof.name, prof.kv_dtypes) is None:
            return None
        return nearest_kv_dtype(kv_dtype, prof.kv_dtypes), f"{prof.name} has no {kv_dtype} cache"
    except LlmplanError:  # an unknown cache type: the estimate names it
        return None


def import_model(path: str | Path, engine: str | None = None, workload: str = "inference",
                 kv_dtype: str | None = None) -> Imported:
    """The plan changes for a model file; ``engine`` is the plan's, replaced by llama.cpp when it cannot
    load the file's weights. A file with its own weight format (a GGUF: llama.cpp's, Ollama's) on a training
    plan makes it an inference plan served by llama.cpp, in the same undo step: its Q4_K_M applies to
    nothing a fine-tune or a pre-training run computes, and the person dropped a file to run it. When the
    engine changes and the plan's ``kv_dtype`` is a cache the new one lacks (vLLM's fp8 on llama.cpp), the
    cache moves to the nearest type it takes (q8_0) in that undo step too, and the note says so.
    Raises ConfigError (or another LlmplanError) when unusable."""
    p = Path(path)
    found = read_model_file(p)
    from llmplan.formats.hf_config import spec_from_config

    spec_from_config(found.config, name=found.name)  # refuse an unusable config before it goes anywhere
    model_id = unique_id(found.name, found.config, _taken_ids())
    name = model_id.removeprefix("user/")
    note = f"Imported {name} from {p.name}"
    try:
        from llmplan.catalog.models import save_user_model
    except ImportError:
        save_user_model = None
    if save_user_model is not None:
        entry = save_user_model(found.config, name, model_id=model_id, source=f"imported from {p.name}")
        model_id = entry.id
        note += " (added to your models)"
    ref = ModelRef(id=model_id, name=name, config=found.config)
    changes: dict[str, Any] = {"model": ref}
    if found.weight_format:
        changes["inference.weight_format"] = found.weight_format
        note += f"; weights {found.weight_format}"
        other = _engine_for(found.weight_format, engine)
        if workload != "inference":
            changes["workload"] = "inference"
            note += ", planned for inference"
            other = "llama.cpp"  # the training plan's engine was never on show: the one that runs GGUF files
        if other:
            changes["inference.engine"] = other
            note += f", served by {other}"
            moved = _kv_move(kv_dtype, other)
            if moved:
                changes["inference.kv_dtype"] = moved[0]
                note += f"; KV cache {kv_dtype} → {moved[0]}: {moved[1]}"
    return Imported(ref, note, changes)
