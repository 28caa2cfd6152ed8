"""A Hub model (``llmplan.formats.hub.HubModel``) -> the plan's model reference and weight settings.

The plan keeps the config inline beside ``model.hub`` so that a shared plan opens offline on another
machine. A chosen GGUF file sets the inference weights: its format (the quant its name spells, in the
lower-case spelling ``inference.weight_format`` uses) and its real size (``model.hub.file_bytes``, which
``resolve`` turns into ``inference.weight_file_bytes`` while the format is unchanged). A safetensors repo
that was quantised (``quantization_config``) or saved in a given dtype sets the matching format.
"""

from __future__ import annotations

import re
from typing import Any

from llmplan.core import present
from llmplan.core.model import ModelSpec
from llmplan.errors import ConfigError, HubError
from llmplan.formats.hub import HubModel
from llmplan.formats.hub_files import GgufChoice, default_gguf
from llmplan.plan.document import HubSource, ModelRef, PlanDocument

SIZE = present.MemoryUnit().fmt_any  # bytes as the app's tables show them: '4.68 GiB', '160 MiB'

_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "bf16": "bf16", "fp16": "fp16"}


# What every decoder config must give (the first key, or one of its aliases, as hf_config reads them).
REQUIRED = (("hidden_size", "n_embd", "d_model"), ("num_hidden_layers", "n_layer", "num_layers"),
            ("num_attention_heads", "n_head", "num_heads"), ("vocab_size",))


def missing_fields(config: dict[str, Any]) -> list[str]:
    """The required dimensions a config lacks, by their usual name (also inside ``text_config``)."""
    inner = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    return [keys[0] for keys in REQUIRED
            if not any(config.get(k) is not None or inner.get(k) is not None for k in keys)]


def spec_from_hub(model: HubModel) -> ModelSpec:
    """The architecture; a config llmplan cannot size raises ``ConfigError`` naming every missing field."""
    from llmplan.formats.hf_config import spec_from_config

    if model.config is None:
        raise HubError(f"{model.repo}: the Hub gave no architecture for this model")
    try:
        return spec_from_config(model.config, name=model.repo)
    except ConfigError as exc:
        missing = missing_fields(model.config)
        if missing:
            kind = model.config.get("model_type") or "unknown"
            raise ConfigError(f"{model.repo}: its config.json (model_type '{str(kind)[:40]}') lacks "
                              f"{', '.join(missing)}, needed to size the model; fill them in with Edit "
                              "architecture, or pass a config.json that has them") from None
        raise ConfigError(f"{model.repo}: {exc}") from None


def gguf_weight_format(choice: GgufChoice, spec: ModelSpec) -> str:
    """The ``weight_format`` of a GGUF file: its quant when llmplan knows it, else the known preset whose
    computed size for this model is nearest the file's (imatrix "UD-Q4_K_XL" mixes and the like)."""
    from llmplan.core.quant import RELEASED_AS_GGUF, known_formats, quantized_weights
    from llmplan.core.quant_ggml import GGUF_PRESETS

    quant = (choice.quant or "").upper().removeprefix("UD-")
    name = RELEASED_AS_GGUF.get(quant.lower(), quant.lower())  # a GGUF "MXFP4" is ggml's MXFP4 MoE mix
    if name in known_formats():
        return name
    base = re.match(r"I?Q\d(?:_K)?", quant)  # "Q3_K_XL" -> the Q3_K presets; "IQ2_XXS_R4" -> IQ2...
    presets = [p.lower() for p in GGUF_PRESETS if base and p.startswith(base.group())] or \
        [p.lower() for p in GGUF_PRESETS]
    return min(presets, key=lambda p: abs(quantized_weights(spec, p).total_bytes - choice.size))


def safetensors_weight_format(config: dict[str, Any] | None) -> str | None:
    """The format a safetensors repo's config declares (GPTQ/AWQ bits, FP8, bitsandbytes, its dtype)."""
    from llmplan.core.quant import known_formats

    if not isinstance(config, dict):
        return None
    q = config.get("quantization_config")
    name = None
    if isinstance(q, dict):
        method, bits = str(q.get("quant_method") or "").lower(), q.get("bits")
        if method in ("gptq", "awq") and isinstance(bits, int):
            name = f"{method}-{bits}bit"
        elif method in ("fp8", "fbgemm_fp8") or (method == "compressed-tensors" and "fp8" in str(q).lower()):
            name = "fp8"
        elif method == "mxfp4":  # gpt-oss: the routed experts in MXFP4, the rest bf16
            name = "mxfp4"
        elif method == "bitsandbytes":
            name = ("nf4" if q.get("bnb_4bit_quant_type", "nf4") == "nf4" else "fp4") if q.get("load_in_4bit") \
                else "int8" if q.get("load_in_8bit") else None
    else:
        name = _DTYPES.get(str(config.get("torch_dtype") or config.get("dtype") or "").lower())
    return name if name in known_formats() else None


def effective_choice(model: HubModel) -> GgufChoice | None:
    """The GGUF file the plan uses: the one asked for; for a GGUF-only repo named without one, the default."""
    if model.chosen is not None or model.safetensors is not None or model.config_source == "config.json":
        return model.chosen
    return default_gguf(model.gguf)


def model_ref_from_hub(model: HubModel, spec: ModelSpec | None = None) -> tuple[ModelRef, str | None]:
    """(``model`` of the plan, the weight format the files imply or None)."""
    spec = spec or spec_from_hub(model)
    chosen = effective_choice(model)
    fmt = gguf_weight_format(chosen, spec) if chosen else safetensors_weight_format(model.config)
    hub = HubSource(repo=model.repo, revision=model.revision, commit=model.commit,
                    file=chosen.files[0] if chosen else None, file_bytes=chosen.size if chosen else None,
                    weight_format=fmt if chosen else None)
    name = model.repo + (f" {chosen.label}" if chosen else "")
    return ModelRef(name=name, config=model.config, hub=hub), fmt


def hub_edits(model: HubModel) -> tuple[dict[str, Any], str]:
    """The plan fields to set (dotted paths, as ``--set`` and the app's edits use) and a status sentence."""
    ref, fmt = model_ref_from_hub(model)
    changes: dict[str, Any] = {"model": ref}
    if fmt:
        changes["inference.weight_format"] = fmt
    chosen = effective_choice(model)
    if chosen is not None:
        changes["workload"] = "inference"
        changes["inference.engine"] = "llama-cpp"
    where = " (from the cache)" if model.from_cache else ""
    what = f"{chosen.label}, {SIZE(chosen.size)}" if chosen else model.config_source
    return changes, f"Hub: {model.repo} ({what}){where}"


def plan_from_hub(model: HubModel) -> PlanDocument:
    """A new plan around a Hub model, default hardware; a GGUF choice makes it an inference plan."""
    changes, _ = hub_edits(model)
    doc = PlanDocument(name=changes["model"].name, model=changes["model"])
    updates: dict[str, Any] = {}
    inference = {k.split(".", 1)[1]: v for k, v in changes.items() if k.startswith("inference.")}
    if inference:
        updates["inference"] = doc.inference.model_copy(update=inference)
    if "workload" in changes:
        updates["workload"] = changes["workload"]
    return doc.model_copy(update=updates) if updates else doc
