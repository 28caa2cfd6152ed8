"""Turning a MODEL argument (catalog id, path or Hub reference) into a ModelSpec, shared by the subcommands."""

from __future__ import annotations

import sys
from pathlib import Path

from llmplan.core.model import ModelSpec
from llmplan.errors import CatalogError
from llmplan.formats.hf_config import spec_from_path


def hub_ref_for(arg: str):
    """The Hub reference ``arg`` names, or None. A path that exists and a catalog id win over the Hub
    (so naming a catalog model never touches the network); a URL, ``hf:``, ``@REV`` or ``:QUANT`` force it."""
    from llmplan.formats.hub_ref import parse_hub_ref

    if Path(arg).exists():
        return None
    ref = parse_hub_ref(arg)
    if ref is None:
        return None
    if not _forced(arg, ref) and _in_catalog(arg.strip()):
        return None
    return ref


def _forced(arg: str, ref) -> bool:
    from llmplan.formats.hub_ref import is_hub_url

    return bool(is_hub_url(arg) or arg.strip().lower().startswith(("hf:", "hub:", "hf://")) or ref.revision
                or ref.file)


def fetch_model_arg(arg: str, ref):
    """The Hub model ``arg`` names. A plain ``ORG/NAME`` that is neither in the catalog nor readable on the
    Hub gets both answers in its one line, so a typo of a catalog id still shows "Did you mean"."""
    from llmplan.errors import HubError

    try:
        return fetch_hub(ref)
    except HubError as exc:
        if _forced(arg, ref):
            raise
        try:
            from llmplan.catalog.models import load_model_catalog

            load_model_catalog().get(arg.strip())
        except CatalogError as cat:
            hub_text = str(exc).removeprefix(f"{ref.repo}: ")
            raise CatalogError(f"{str(cat).rstrip('.')}; on the Hugging Face Hub: {hub_text}") from None
        raise


def _in_catalog(model_id: str) -> bool:
    try:
        from llmplan.catalog.models import load_model_catalog

        load_model_catalog().get(model_id)
        return True
    except (ImportError, CatalogError):
        return False


def fetch_hub(ref, timeout: float = 10.0):
    """``fetch_hub_model`` with a one-line progress note on stderr when it is a terminal."""
    from llmplan.formats.hub import fetch_hub_model

    def progress(fraction: float, text: str) -> None:
        if sys.stderr.isatty():
            print(f"\r\033[K{text}…", end="", file=sys.stderr, flush=True)

    try:
        return fetch_hub_model(ref, timeout=timeout, progress=progress)
    finally:
        if sys.stderr.isatty():
            print("\r\033[K", end="", file=sys.stderr, flush=True)


def resolve_model_arg(arg: str) -> ModelSpec:
    """A path (config.json, model folder, .gguf, safetensors index), a catalog id, else a Hub reference."""
    p = Path(arg)
    if p.exists() or p.is_symlink() or p.suffix.lower() in (".json", ".gguf"):
        return spec_from_path(p)  # a missing file or a broken link is named as such, not "not in the catalog"
    ref = hub_ref_for(arg)
    if ref is not None:
        from llmplan.plan.hub_plan import spec_from_hub

        return spec_from_hub(fetch_model_arg(arg, ref))
    try:
        from llmplan.catalog.models import load_model_catalog
    except ImportError:  # catalog not built yet
        raise CatalogError(f"'{arg}' is neither a file nor a known model id") from None
    return load_model_catalog().get(arg).spec
