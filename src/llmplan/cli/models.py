"""Turning a MODEL argument (catalog id or path) into a ModelSpec, shared by the subcommands."""

from __future__ import annotations

from pathlib import Path

from llmplan.core.model import ModelSpec
from llmplan.errors import CatalogError
from llmplan.formats.hf_config import spec_from_path


def resolve_model_arg(arg: str) -> ModelSpec:
    """A path (config.json, model folder, .gguf, safetensors index), else a catalog id."""
    p = Path(arg)
    if p.exists():
        return spec_from_path(p)
    try:
        from llmplan.catalog.models import load_model_catalog
    except ImportError:  # catalog not built yet
        raise CatalogError(f"'{arg}' is neither a file nor a known model id") from None
    return load_model_catalog().get(arg).spec
