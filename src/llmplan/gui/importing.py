"""Turn a dropped or chosen file into a model reference (Qt-free).

Accepted: a config.json, a model folder (its config.json), a safetensors index
(``*.safetensors.index.json``: the config.json beside it) and a ``.gguf`` (its header
only, through ``llmplan.formats.gguf_header``). The model joins the
user catalog when there is one, and the plan keeps the config inline as well, so a
shared plan still opens on a machine without that catalog entry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llmplan.errors import ConfigError
from llmplan.plan.document import ModelRef

PLAN_SUFFIX = ".llmplan"


def is_plan_file(path: Path) -> bool:
    return path.suffix.lower() == PLAN_SUFFIX


def config_from_path(path: Path) -> tuple[dict[str, Any], str]:
    """(config dict, display name) for any accepted model file or folder."""
    from llmplan.formats.hf_config import load_config_file

    name = path.name if path.is_dir() else path.parent.name or path.stem
    if path.suffix.lower() == ".gguf":
        return _gguf_config(path), path.stem
    if path.name.endswith(".safetensors.index.json"):
        beside = path.parent / "config.json"
        if not beside.is_file():
            raise ConfigError(f"{path.name}: a safetensors index lists tensors but not the architecture; "
                              "put the model's config.json beside it and drop that folder")
        return load_config_file(beside), name
    return load_config_file(path), name


def _gguf_config(path: Path) -> dict[str, Any]:
    from llmplan.formats import gguf_header

    return dict(gguf_header.config_from_gguf(gguf_header.read_gguf_header(path)))


def import_model(path: str | Path) -> tuple[ModelRef, str]:
    """(the plan's model reference, a status sentence). Raises ConfigError when unusable."""
    p = Path(path)
    config, name = config_from_path(p)
    from llmplan.formats.hf_config import spec_from_config

    spec_from_config(config, name=name)  # refuse an unusable config before it goes anywhere
    model_id = f"user/{name}"
    note = f"Imported {name} from {p.name}"
    try:
        from llmplan.catalog.models import save_user_model
    except ImportError:
        save_user_model = None
    if save_user_model is not None:
        entry = save_user_model(config, name, model_id=model_id, source=f"imported from {p.name}")
        model_id = entry.id
        note += " (added to your models)"
    return ModelRef(id=model_id, name=name, config=config), note
