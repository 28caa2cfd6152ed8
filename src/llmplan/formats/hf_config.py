"""Hugging Face ``config.json`` -> ``ModelSpec``.

Reads the keys each transformers family really uses (they differ: ``n_embd`` vs
``hidden_size``, ``ffn_dim`` vs ``intermediate_size``, Falcon's
``new_decoder_architecture``, DeepSeek's ``first_k_dense_replace`` ...). A family we do
not know but whose config has the usual Llama-style keys goes through the documented
generic path and is flagged ``approximate``; a config missing what is needed raises a
``ConfigError`` that names the key.

Which projections a checkpoint stores as one Linear module (Qwen-1's ``c_attn``, Phi-3's ``qkv_proj``,
GPT-NeoX's ``query_key_value`` ...) follows from the spec's ``model_type`` (``core.model.FUSED_LINEARS``), so it
needs no key here; a catalog entry may override it (``ModelEntry.fused_linears``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from llmplan.core.model import MLASpec, ModelSpec, MoESpec
from llmplan.errors import ConfigError
from llmplan.formats.bounded import load_json

MAX_CONFIG_BYTES = 1024 * 1024  # real config.json files are a few KB; = the user model entry cap, so an import
# that is accepted is also read back at the next start (4 MiB was accepted, then silently dropped)
MAX_CONFIG_DEPTH = 32  # real configs nest 3 levels; a plan holds the config 2 levels down and allows 64
MAX_LAYERS = 10_000  # the deepest released models have a few hundred; per-layer tuples are built from this
MAX_SIZE = 1 << 62  # any count beyond this is corruption (and would overflow the engine's floats later)

Config = Mapping[str, Any]


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a config.json (or the config.json inside a model folder) as a dict, safely
    (``formats.bounded``: regular files only, at most ``MAX_CONFIG_BYTES``, nesting, digits and
    text bounded so that a plan holding this config inline can always be saved and reopened)."""
    p = Path(path)
    try:
        is_dir = p.is_dir()
    except (OSError, ValueError):
        is_dir = False
    if is_dir:
        p = p / "config.json"
        if not p.is_file():
            raise ConfigError(f"{path}: this folder has no config.json; pick the model's config.json itself")
    data = load_json(p, MAX_CONFIG_BYTES, what="config.json", error=ConfigError, max_depth=MAX_CONFIG_DEPTH)
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a JSON object with keys like 'hidden_size', got {type(data).__name__}")
    return data


def spec_from_path(path: str | Path, name: str | None = None) -> ModelSpec:
    """A ModelSpec from what a person has on disk: a config.json, a model folder holding one, a .gguf
    file (its header), or a safetensors index / shard (the config.json beside it)."""
    p = Path(path)
    if p.suffix.lower() == ".gguf":
        from llmplan.formats.gguf_header import spec_from_gguf

        return spec_from_gguf(p, name=name)
    if p.name.endswith(".safetensors.index.json") or p.suffix.lower() == ".safetensors":
        p = p.parent
    default = p.name if p.is_dir() else p.parent.name or p.stem
    return spec_from_config(load_config_file(p), name=name or default)


# ---- small, strict readers --------------------------------------------------------------

def _get(cfg: Config, *keys: str, default: Any = ...) -> Any:
    for k in keys:
        if k in cfg and cfg[k] is not None:
            return cfg[k]
    if default is ...:
        raise ConfigError(f"config.json lacks '{keys[0]}'" + (f" (or {', '.join(keys[1:])})" if keys[1:] else "")
                          + "; it is needed to size the model")
    return default


def _int(cfg: Config, *keys: str, default: Any = ...) -> int:
    v = _get(cfg, *keys, default=default)
    if isinstance(v, bool) or not isinstance(v, int | float) or (isinstance(v, float) and not math.isfinite(v)) or v != int(v) or v < 0:
        raise ConfigError(f"config.json: '{keys[0]}' must be a non-negative whole number, got {v!r}")
    if v > MAX_SIZE:
        raise ConfigError(f"config.json: '{keys[0]}' is larger than {MAX_SIZE:,}, implausible for a model; the file is corrupt")
    return int(v)


def _positive(cfg: Config, *keys: str, default: int) -> int:
    """A size where 0 is meaningless: absent (or null) gives the default, an explicit 0 is an error
    naming the key (it used to become the default silently)."""
    v = _int(cfg, *keys, default=default)
    if v == 0:
        key = next((k for k in keys if cfg.get(k) is not None), keys[0])
        raise ConfigError(f"config.json: '{key}' is 0; it must be a positive whole number (or left out)")
    return v


def _bool(cfg: Config, key: str, default: bool) -> bool:
    v = cfg.get(key, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise ConfigError(f"config.json: '{key}' must be true or false, got {v!r}")
    return v


def _limit(cfg: Config, key: str) -> float | None:
    """A positive, finite bound (gpt-oss's ``swiglu_limit``); absent or null: None."""
    v = cfg.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or not 0 < v <= 1e6:
        raise ConfigError(f"config.json: '{key}' must be a positive number, got {v!r}")
    return float(v)


def _text_config(cfg: Config) -> Config:
    """Multimodal wrappers (Gemma 3, Llama 4 ...) keep the language model under text_config."""
    inner = cfg.get("text_config")
    if isinstance(inner, dict) and inner.get("hidden_size"):
        merged = dict(inner)
        merged.setdefault("vocab_size", cfg.get("vocab_size"))
        merged.setdefault("tie_word_embeddings", cfg.get("tie_word_embeddings"))
        merged.setdefault("model_type", cfg.get("model_type"))
        return merged
    return cfg


def _common(cfg: Config) -> dict[str, Any]:
    """Llama-style keys shared by most modern families."""
    h = _int(cfg, "hidden_size", "n_embd", "d_model")
    heads = _int(cfg, "num_attention_heads", "n_head", "num_heads")
    if heads == 0 or h == 0:
        raise ConfigError("config.json: hidden_size and num_attention_heads must be positive")
    kv = _int(cfg, "num_key_value_heads", default=heads) or heads
    layers = _int(cfg, "num_hidden_layers", "n_layer", "num_layers")
    if layers > MAX_LAYERS:
        raise ConfigError(f"config.json: {layers:,} layers is more than llmplan handles ({MAX_LAYERS:,}); "
                          "check 'num_hidden_layers'")
    return dict(
        vocab_size=_int(cfg, "vocab_size"),
        hidden_size=h,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=kv,
        head_dim=_int(cfg, "head_dim", default=h // heads) or h // heads,
        intermediate_size=_positive(cfg, "intermediate_size", "n_inner", "ffn_dim", default=4 * h),
        tie_embeddings=_bool(cfg, "tie_word_embeddings", False),
        max_position_embeddings=_positive(cfg, "max_position_embeddings", "n_positions", "seq_length",
                                          default=2048),
        activation=str(_get(cfg, "hidden_act", "hidden_activation", "activation_function", default="silu")),
        attention_bias=_bool(cfg, "attention_bias", False),
        mlp_bias=_bool(cfg, "mlp_bias", False),
    )


def _sliding(cfg: Config, n_layers: int, pattern: Callable[[int], bool] | None) -> dict[str, Any]:
    """Sliding-window layers from ``layer_types`` when present, else from the family's pattern."""
    window = _int(cfg, "sliding_window", default=0) or None
    if window is not None and window >= _int(cfg, "max_position_embeddings", default=1 << 62):
        window = None  # a window as long as the context (Phi-3.5's 262144) never slides
    types = cfg.get("layer_types")
    if types is not None and (not isinstance(types, list) or len(types) != n_layers
                              or not all(isinstance(t, str) for t in types)):
        raise ConfigError(f"config.json: 'layer_types' must be a list of {n_layers} names (one per layer, e.g. "
                          "\"sliding_attention\" or \"full_attention\")")
    if types is not None:
        kinds = tuple("sliding" if "sliding" in t else "full" for t in types)
    elif pattern and window:
        kinds = tuple("sliding" if pattern(i) else "full" for i in range(n_layers))
    elif window and cfg.get("use_sliding_window", True) and not cfg.get("max_window_layers"):
        kinds = ("sliding",) * n_layers
    else:
        kinds = ()
    if "sliding" not in kinds:
        return {}
    if not window:
        raise ConfigError("config.json: 'layer_types' marks sliding-window layers but 'sliding_window' is "
                          "missing or 0; give the window length in tokens")
    return dict(layer_attention=kinds, sliding_window=window)


# ---- families ---------------------------------------------------------------------------

def _llama(cfg: Config) -> dict[str, Any]:
    d = _common(cfg)
    d["attention_out_bias"] = d["attention_bias"]  # Llama's attention_bias covers o_proj too
    return d


def _mistral(cfg: Config) -> dict[str, Any]:
    d = _common(cfg)
    d.update(_sliding(cfg, d["num_layers"], None))
    return d


def _mixtral(cfg: Config) -> dict[str, Any]:
    d = _mistral(cfg)
    d["moe"] = MoESpec(
        num_experts=_int(cfg, "num_local_experts"),
        experts_per_token=_int(cfg, "num_experts_per_tok"),
        expert_intermediate_size=d["intermediate_size"],
    )
    d["layer_mlp"] = ("moe",) * d["num_layers"]
    return d


def _qwen(cfg: Config) -> dict[str, Any]:
    """Qwen (1.0: Qwen-1.8B/7B/14B/72B, ``QWenLMHeadModel``, remote code): one fused ``c_attn`` with a bias over
    q, k and v, an unbiased ``c_proj``, and a SwiGLU MLP whose ``w1``/``w2`` are each ``intermediate_size // 2``
    wide (the config gives the two together; modeling_qwen.py ``QWenMLP``). Early configs spell the keys
    ``n_embd``, ``n_head``, ``n_layer`` and ``ffn_hidden_size``."""
    d = _common(cfg)
    d["intermediate_size"] = _positive(cfg, "intermediate_size", "ffn_hidden_size", default=8 * d["hidden_size"]) // 2
    d["head_dim"] = _positive(cfg, "kv_channels", default=d["hidden_size"] // d["num_heads"])
    d.update(attention_bias=True, attention_out_bias=not _bool(cfg, "no_bias", True))
    return d


def _qwen2(cfg: Config) -> dict[str, Any]:
    d = _common(cfg)
    d["attention_bias"] = True  # Qwen2: q/k/v carry biases, o_proj does not
    if cfg.get("use_sliding_window"):
        d.update(_sliding(cfg, d["num_layers"], lambda i: i >= _int(cfg, "max_window_layers", default=0)))
    return d


def _qwen3(cfg: Config) -> dict[str, Any]:
    d = _common(cfg)
    d["qk_norm"] = "per_head"
    d["attention_out_bias"] = d["attention_bias"]
    return d


def _qwen_moe_layers(cfg: Config, n: int) -> tuple[str, ...]:
    step = _int(cfg, "decoder_sparse_step", default=1) or 1
    dense_only = cfg.get("mlp_only_layers") or []
    if not isinstance(dense_only, list) or not all(isinstance(i, int) for i in dense_only):
        raise ConfigError(f"config.json: 'mlp_only_layers' must be a list of layer numbers, got {dense_only!r:.80}")
    dense_only = set(dense_only)
    return tuple("moe" if (i not in dense_only and (i + 1) % step == 0) else "dense" for i in range(n))


def _qwen2_moe(cfg: Config) -> dict[str, Any]:
    d = _qwen2(cfg)
    shared = _int(cfg, "shared_expert_intermediate_size", default=0)
    d["moe"] = MoESpec(
        num_experts=_int(cfg, "num_experts"),
        experts_per_token=_int(cfg, "num_experts_per_tok"),
        expert_intermediate_size=_int(cfg, "moe_intermediate_size"),
        num_shared_experts=1 if shared else 0,
        shared_intermediate_size=shared,
        shared_expert_gate=bool(shared),
    )
    d["layer_mlp"] = _qwen_moe_layers(cfg, d["num_layers"])
    return d


def _qwen3_moe(cfg: Config) -> dict[str, Any]:
    d = _qwen3(cfg)
    d["moe"] = MoESpec(
        num_experts=_int(cfg, "num_experts"),
        experts_per_token=_int(cfg, "num_experts_per_tok"),
        expert_intermediate_size=_int(cfg, "moe_intermediate_size"),
    )
    d["layer_mlp"] = _qwen_moe_layers(cfg, d["num_layers"])
    return d


def _gemma(cfg: Config) -> dict[str, Any]:
    d = _common(cfg)
    d["tie_embeddings"] = _bool(cfg, "tie_word_embeddings", True)
    d["activation"] = str(_get(cfg, "hidden_activation", "hidden_act", default="gelu_pytorch_tanh"))
    return d


def _gemma2(cfg: Config) -> dict[str, Any]:
    d = _gemma(cfg)
    d["norms_per_layer"] = 4  # input, post-attention, pre-feedforward, post-feedforward
    d.update(_sliding(cfg, d["num_layers"], lambda i: i % 2 == 0))
    return d


def _gemma3(cfg: Config) -> dict[str, Any]:
    cfg = _text_config(cfg)
    d = _gemma2(cfg)
    d["qk_norm"] = "per_head"
    every = _int(cfg, "sliding_window_pattern", default=6) or 6
    d.update(_sliding(cfg, d["num_layers"], lambda i: (i + 1) % every != 0))
    return d


def _phi3(cfg: Config) -> dict[str, Any]:
    """Phi-3/3.5/4: Llama-shaped; the checkpoint fuses qkv_proj and gate_up_proj (the same parameter counts; one LoRA
    adapter each: ``ModelSpec.fused`` from model_type phi3); Phi-3-mini slides a 2047 window."""
    d = _common(cfg)
    d.update(_sliding(cfg, d["num_layers"], None))
    return d


def _olmo2(cfg: Config) -> dict[str, Any]:
    d = _common(cfg)
    d["qk_norm"] = "full"
    d["attention_out_bias"] = d["attention_bias"]
    return d


def _starcoder2(cfg: Config) -> dict[str, Any]:
    d = _common(cfg)
    bias = _bool(cfg, "use_bias", True)
    d.update(gated_mlp=False, norm="layernorm", attention_bias=bias, attention_out_bias=bias, mlp_bias=bias)
    d["tie_embeddings"] = _bool(cfg, "tie_word_embeddings", True)
    d.update(_sliding(cfg, d["num_layers"], None))
    return d


def _gpt2(cfg: Config) -> dict[str, Any]:
    d = _common(cfg)
    d.update(gated_mlp=False, norm="layernorm", attention_bias=True, attention_out_bias=True, mlp_bias=True,
             tie_embeddings=_bool(cfg, "tie_word_embeddings", True), position="learned",
             activation=str(cfg.get("activation_function", "gelu_new")))
    d["learned_positions"] = _int(cfg, "n_positions", "max_position_embeddings")
    return d


def _gpt_bigcode(cfg: Config) -> dict[str, Any]:
    """StarCoder/SantaCoder: GPT-2 layout (learned positions, biases, tied) with multi-query attention."""
    d = _gpt2(cfg)
    if _bool(cfg, "multi_query", True):
        d["num_kv_heads"] = 1
    return d


def _phi(cfg: Config) -> dict[str, Any]:
    """Phi-1.5/Phi-2: one LayerNorm feeding attention and MLP in parallel, biases everywhere
    (including the untied output head), plain GELU MLP."""
    d = _common(cfg)
    d.update(gated_mlp=False, norm="layernorm", attention_bias=True, attention_out_bias=True, mlp_bias=True,
             norms_per_layer=1, parallel_block=True, lm_head_bias=True,
             activation=str(cfg.get("hidden_act", "gelu_new")))
    if _bool(cfg, "qk_layernorm", False):
        raise ConfigError("config.json: 'qk_layernorm': true is not supported for model_type 'phi' "
                          "(no released Phi model uses it); set it to false or report the model")
    return d


def _gpt_neox(cfg: Config) -> dict[str, Any]:
    d = _common(cfg)
    bias = _bool(cfg, "attention_bias", True)
    d.update(gated_mlp=False, norm="layernorm", attention_bias=bias, attention_out_bias=bias, mlp_bias=True,
             parallel_block=_bool(cfg, "use_parallel_residual", True))
    return d


def _gptj(cfg: Config) -> dict[str, Any]:
    d = _common(cfg)
    d.update(gated_mlp=False, norm="layernorm", mlp_bias=True, norms_per_layer=1, parallel_block=True,
             lm_head_bias=True)
    return d


def _opt(cfg: Config) -> dict[str, Any]:
    d = _common(cfg)
    bias = _bool(cfg, "enable_bias", True)
    d.update(gated_mlp=False, norm="layernorm", attention_bias=bias, attention_out_bias=bias, mlp_bias=bias,
             tie_embeddings=_bool(cfg, "tie_word_embeddings", True), position="learned",
             activation=str(cfg.get("activation_function", "relu")))
    d["learned_positions"] = d["max_position_embeddings"] + 2  # OPT offsets positions by 2
    proj = _int(cfg, "word_embed_proj_dim", default=d["hidden_size"])
    if proj != d["hidden_size"]:
        d["embedding_proj_dim"] = proj
    pre_norm = _bool(cfg, "do_layer_norm_before", True)
    d["final_norm"] = pre_norm and not _bool(cfg, "_remove_final_layer_norm", False)
    return d


def _bloom(cfg: Config) -> dict[str, Any]:
    d = _common(cfg)
    d.update(gated_mlp=False, norm="layernorm", attention_bias=True, attention_out_bias=True, mlp_bias=True,
             embedding_norm=True, position="alibi", tie_embeddings=_bool(cfg, "tie_word_embeddings", True),
             activation="gelu")
    return d


def _falcon(cfg: Config) -> dict[str, Any]:
    d = _common(cfg)
    new_arch = _bool(cfg, "new_decoder_architecture", False)
    if new_arch:
        d["num_kv_heads"] = _int(cfg, "num_kv_heads", default=d["num_heads"])
    elif _bool(cfg, "multi_query", True):
        d["num_kv_heads"] = 1
    else:
        d["num_kv_heads"] = d["num_heads"]
    bias = _bool(cfg, "bias", False)
    parallel = _bool(cfg, "parallel_attn", True)
    norms = 2 if (new_arch and _int(cfg, "num_ln_in_parallel_attn", default=2) == 2) or not parallel else 1
    d.update(gated_mlp=False, norm="layernorm", attention_bias=bias, attention_out_bias=bias, mlp_bias=bias,
             parallel_block=parallel, norms_per_layer=norms, activation="gelu",
             position="alibi" if _bool(cfg, "alibi", False) else "rope",
             tie_embeddings=_bool(cfg, "tie_word_embeddings", True))
    d["intermediate_size"] = _positive(cfg, "ffn_hidden_size", default=4 * d["hidden_size"])
    return d


def _deepseek(cfg: Config) -> dict[str, Any]:
    d = _common(cfg)
    d["mla"] = MLASpec(
        q_lora_rank=_int(cfg, "q_lora_rank", default=0) or None,
        kv_lora_rank=_int(cfg, "kv_lora_rank"),
        qk_nope_head_dim=_int(cfg, "qk_nope_head_dim"),
        qk_rope_head_dim=_int(cfg, "qk_rope_head_dim"),
        v_head_dim=_int(cfg, "v_head_dim"),
    )
    d["head_dim"] = d["mla"].qk_nope_head_dim + d["mla"].qk_rope_head_dim
    d["num_kv_heads"] = d["num_heads"]
    n_routed = _int(cfg, "n_routed_experts", default=0)
    if n_routed:
        n_shared = _int(cfg, "n_shared_experts", default=0)
        moe_inter = _int(cfg, "moe_intermediate_size")
        d["moe"] = MoESpec(
            num_experts=n_routed,
            experts_per_token=_int(cfg, "num_experts_per_tok"),
            expert_intermediate_size=moe_inter,
            num_shared_experts=n_shared,
            shared_intermediate_size=moe_inter if n_shared else 0,
            router_score_bias=cfg.get("topk_method") == "noaux_tc",
        )
        first_dense = _int(cfg, "first_k_dense_replace", default=0)
        freq = _int(cfg, "moe_layer_freq", default=1) or 1
        d["layer_mlp"] = tuple("moe" if i >= first_dense and i % freq == 0 else "dense"
                               for i in range(d["num_layers"]))
    d["mtp_layers"] = _int(cfg, "num_nextn_predict_layers", default=0)
    if d["mtp_layers"] > MAX_LAYERS:
        raise ConfigError(f"config.json: 'num_nextn_predict_layers' {d['mtp_layers']:,} is more than llmplan "
                          f"handles ({MAX_LAYERS:,} layers); the file is corrupt")
    return d


def _gpt_oss(cfg: Config) -> dict[str, Any]:
    """OpenAI gpt-oss: biased attention with a learned sink per head, MoE with router and expert biases,
    alternating sliding/full layers (``layer_types``)."""
    d = _common(cfg)
    d.update(attention_bias=True, attention_out_bias=True, attention_sinks=True)
    d["moe"] = MoESpec(
        num_experts=_int(cfg, "num_local_experts", "num_experts"),
        experts_per_token=_int(cfg, "num_experts_per_tok", "experts_per_token"),
        expert_intermediate_size=d["intermediate_size"],
        router_bias=True,
        expert_bias=True,
        expert_activation_clamp=_limit(cfg, "swiglu_limit"),
    )
    d["layer_mlp"] = ("moe",) * d["num_layers"]
    d.update(_sliding(cfg, d["num_layers"], lambda i: i % 2 == 0))
    return d


FAMILIES: dict[str, Callable[[Config], dict[str, Any]]] = {
    "llama": _llama,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen": _qwen,
    "qwen2": _qwen2,
    "qwen2_moe": _qwen2_moe,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gemma3": _gemma3,
    "gemma3_text": _gemma3,
    "phi3": _phi3,
    "olmo2": _olmo2,
    "starcoder2": _starcoder2,
    "gpt2": _gpt2,
    "gpt_bigcode": _gpt_bigcode,
    "phi": _phi,
    "gpt_neox": _gpt_neox,
    "gptj": _gptj,
    "opt": _opt,
    "bloom": _bloom,
    "falcon": _falcon,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "gpt_oss": _gpt_oss,
}


def spec_from_config(cfg: Config, name: str = "custom model") -> ModelSpec:
    """Build a ``ModelSpec`` from a config dict; unknown families go the generic (approximate) way."""
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"a model config must be a JSON object, got {type(cfg).__name__}")
    model_type = str(cfg.get("model_type") or "").lower()
    parse = FAMILIES.get(model_type)
    notes: tuple[str, ...] = ()
    approximate = False
    inner = cfg.get("text_config")
    inner_type = str(inner.get("model_type") or "").lower() if isinstance(inner, Mapping) else ""
    if parse is None and inner_type in FAMILIES:
        # A multimodal wrapper (Mistral 3, LLaVA, ...) around a language model we know: exact for that model.
        parse, cfg = FAMILIES[inner_type], {**_text_config(cfg), "model_type": inner_type}
        notes = (f"'{model_type}' wraps a '{inner_type}' language model; llmplan counts the language model "
                 "only (the vision or audio encoder is not included).",)
    elif parse is None:
        parse, approximate = _llama, True
        if isinstance(inner, Mapping) and inner.get("hidden_size"):
            cfg = _text_config(cfg)
        notes = (
            f"model_type '{model_type or '(missing)'}' is not one llmplan knows; sized as a Llama-style "
            "decoder (gated MLP, RMSNorm, untied unless tie_word_embeddings). Counts are approximate.",
        )
    try:  # the MoE/MLA sub-specs validate inside the family readers, so they are inside the try too
        fields = parse(cfg)
        fields.update(name=name, model_type=model_type or "unknown", approximate=approximate, notes=notes)
        return ModelSpec(**fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ()))
        why = str(err["msg"]).removeprefix("Value error, ")  # pydantic's prefix for a validator's own sentence
        raise ConfigError(f"config.json describes an impossible model{f' ({where})' if where else ''}: "
                          f"{why}") from None
