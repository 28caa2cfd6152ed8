"""Turning a MODEL argument (catalog id or path) into a ModelSpec, shared by the subcommands."""

from __future__ import annotations

from pathlib import Path

from llmplan.core.model import ModelSpec
from llmplan.errors import CatalogError
from llmplan.io.hf_config import spec_from_path


def resolve_model_arg(arg: str) -> ModelSpec:
    """A path (config.json, model folder, .gguf, or a safetensors index beside its config.json),
    else a catalog id."""
    p = Path(arg)
    if p.exists():
        if p.suffix.lower() == ".gguf":
            from llmplan.io.gguf_header import spec_from_gguf

            return spec_from_gguf(p)
        if p.name.endswith(".safetensors.index.json") or p.suffix == ".safetensors":
            return spec_from_path(p.parent)  # the architecture is in the config.json next to it
        return spec_from_path(p)
    try:
        from llmplan.catalog.models import load_model_catalog
    except ImportError:  # catalog not built yet
        raise CatalogError(f"'{arg}' is neither a file nor a known model id") from None
    return load_model_catalog().get(arg).spec
