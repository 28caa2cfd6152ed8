"""Run a plan for real on this machine's GPU and record what it took: a run file for ``--compare-run``.

``llmplan-cli measure PLAN`` builds the plan's model from its config.json with random weights (no
download: the numbers depend on shapes, not values), trains a few steps the way the Hugging Face
profile describes — PyTorch AMP with fp32 parameters or pure 16-bit, PEFT LoRA, bitsandbytes QLoRA
with ``prepare_model_for_kbit_training``, gradient checkpointing for ``recompute = full``, the Trainer's
``clip_grad_norm_`` to 1.0 where the plan clips (``training.grad_clip``, on by the profile's default), fused AdamW —
or times ``generate()`` for an inference plan, and writes::

    {"format": "llmplan-run", "schema_version": 1, "peak_memory_bytes": ..., "peak_reserved_bytes": ...,
     "step_time_s": ..., "ttft_s": ..., "tpot_s": ..., "device_name": ..., "software": {...}, "plan": {...}}

``peak_memory_bytes`` is ``torch.cuda.max_memory_allocated()`` over the timed steps and ``step_time_s``
their median (the first two steps warm up); for inference ``step_time_s`` is the time per output token.
It needs the optional packages torch, transformers, peft and bitsandbytes (``pip install
'llmplan[measure]'``); nothing else in llmplan imports them. ``run_settings`` (pure) says what will be
run, so it is tested without a GPU. LoRA adapts the modules the estimate counts, by the names the model's
modeling code gives them (Phi-3's ``qkv_proj``, Pythia's ``query_key_value``, GPT-2's ``c_attn`` ...:
``core.lora_modules.MODULE_NAMES``); a multimodal checkpoint is built as its language model alone.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from typing import Any

from llmplan.core.lora_modules import PeftTargets, expert_adapters, peft_target_modules
from llmplan.errors import InputError

RUN_FORMAT = "llmplan-run"
RUN_SCHEMA_VERSION = 1
WARMUP_STEPS = 2
TRAINER_MAX_GRAD_NORM = 1.0  # transformers TrainingArguments.max_grad_norm default: what training.grad_clip on runs


@dataclass(frozen=True)
class RunSettings:
    """What ``measure`` runs, read from a plan."""

    workload: str  # "train" or "generate"
    method: str  # full | lora | qlora
    regime: str  # amp | pure
    micro_batch: int
    seq_len: int
    checkpointing: bool
    optimizer: str
    lora_rank: int
    lora_dropout: float
    lora_targets: tuple[str, ...]  # PEFT's target_modules: block-relative module names, () without LoRA
    batch: int  # generate: sequences
    prompt_tokens: int
    output_tokens: int
    flash_attention: bool
    lora_parameters: tuple[str, ...] = ()  # PEFT's target_parameters: a MoE block's stacked expert parameters
    lora_rank_factors: tuple[tuple[str, int], ...] = ()  # rank_pattern / alpha_pattern: (parameter, multiple)
    max_grad_norm: float = 0.0  # clip the gradient norm to this before each step (the Trainer's default 1.0); 0: no


def run_settings(doc: Any, config: dict | None = None) -> RunSettings:
    """The plan as one process on one GPU runs it. Multi-GPU layouts are refused: this harness measures
    one device, the Hugging Face profile's case. LoRA adapts the modules the estimate counts, named as the
    model's modeling code names them (``core.lora_modules.peft_target_modules``; ``config``: the config.json
    the model is built from, by default the plan's)."""
    par = doc.parallelism
    if par.tp * par.pp * par.cp * par.dp > 1 or doc.hardware.gpus_per_node * doc.hardware.nodes > 1:
        raise InputError("measure runs a plan on this one GPU: set hardware.gpus_per_node and nodes to 1 and the "
                         "parallelism to 1 (measure a multi-GPU job with its own launcher and pass the numbers "
                         "to --compare-run)")
    tr, inf = _hf_training(doc), doc.inference
    if doc.workload != "inference" and tr.precision not in ("bf16", "fp16", "fp32"):
        raise InputError(f"measure trains in bf16, fp16 or fp32, not {tr.precision}; set training.precision")
    if doc.workload != "inference" and tr.optimizer not in ("adamw", "adam8bit", "sgd"):
        raise InputError(f"measure runs adamw, adam8bit or sgd, not {tr.optimizer}; set training.optimizer")
    targets = PeftTargets(())
    if doc.workload != "inference" and tr.method != "full":
        spec = model_spec(doc, config)
        targets = peft_target_modules(spec, tr.lora_targets, expert_adapters(spec, tr.lora_experts))
        if targets.parameters and tr.lora_dropout:
            raise InputError("PEFT's target_parameters (the stacked experts' adapters) refuse lora_dropout > 0 "
                             "(ParamWrapper); set training.lora_dropout = 0")
    return RunSettings(
        workload="generate" if doc.workload == "inference" else "train", method=tr.method, regime=tr.regime,
        micro_batch=tr.micro_batch, seq_len=tr.seq_len, checkpointing=tr.recompute == "full",
        optimizer=tr.optimizer, lora_rank=tr.lora_rank, lora_dropout=tr.lora_dropout,
        lora_targets=targets.modules, lora_parameters=targets.parameters,
        lora_rank_factors=targets.rank_factors, batch=inf.batch,
        prompt_tokens=inf.prompt_tokens, output_tokens=inf.output_tokens, flash_attention=tr.flash_attention,
        max_grad_norm=TRAINER_MAX_GRAD_NORM if doc.workload != "inference" and tr.grad_clip == "on" else 0.0)


def model_spec(doc: Any, config: dict | None = None) -> Any:
    """The architecture of the plan's model: its inline spec (what the estimate reads), else the spec of
    ``config`` or of the plan's config.json, else its catalog entry's."""
    from llmplan.catalog.models import load_model_catalog
    from llmplan.formats.hf_config import spec_from_config

    ref = doc.model
    if ref.spec is not None:
        return ref.spec
    config = config if config is not None else ref.config
    if isinstance(config, dict):
        return spec_from_config(config, ref.name or ref.id or "custom model")
    if ref.id:
        return load_model_catalog().get(ref.id).spec
    raise InputError("measure builds the model from its config.json: give a catalog model that keeps one, a "
                     "config.json, or a plan with model.config inline")


def language_model_config(config: dict) -> dict:
    """The config.json of the language model alone. A multimodal wrapper (Gemma 3, Mistral 3: ``text_config``
    with its own model_type) is built without its vision encoder, which llmplan does not count either
    (``formats.hf_config``), and whose attention modules share names with the language model's."""
    inner = config.get("text_config")
    if not (isinstance(inner, dict) and inner.get("model_type") and inner.get("hidden_size")):
        return config
    outer = {k: config[k] for k in ("vocab_size", "tie_word_embeddings") if config.get(k) is not None}
    return {**outer, **inner}


def _hf_training(doc: Any) -> Any:
    """The plan's training settings with "auto" resolved under the Hugging Face profile, the stack this harness
    runs; another framework, or a framework switch turned on, is refused (the harness implements neither)."""
    from llmplan.catalog.frameworks import framework_profile
    from llmplan.core.framework_profile import SWITCH_NAMES
    from llmplan.core.workload import effective_training

    if doc.workload == "inference":
        return doc.training
    prof = framework_profile(doc.training.framework, doc.workload, 1)
    if prof.id != "hf-trainer":
        raise InputError(f"measure runs the Hugging Face Trainer + PEFT stack, not {prof.id}; set training.framework "
                         "to hf-trainer (or auto)")
    on = [n for n in SWITCH_NAMES if getattr(doc.training, n)]
    if on:
        raise InputError(f"measure runs plain transformers + PEFT: turn off training.{on[0]}")
    if doc.training.method == "qlora" and doc.training.quant_base != "nf4":
        raise InputError("measure quantises QLoRA bases with bitsandbytes NF4; set training.quant_base to nf4")
    return effective_training(doc.training, prof)


def _modules() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise InputError(f"measure needs PyTorch and transformers ({exc.name} is missing): "
                         "pip install 'llmplan[measure]'") from None
    return torch, transformers


def _device(torch: Any, wanted: str | None) -> Any:
    if wanted:
        return torch.device(wanted)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    raise InputError("measure found no CUDA or Apple GPU here; give --device cpu to try the harness on the CPU")


def _build(config: dict, rs: RunSettings, torch: Any, transformers: Any, device: Any) -> Any:
    config = language_model_config(config)
    if config.get("model_type") not in transformers.CONFIG_MAPPING:
        raise InputError(f"transformers {transformers.__version__} has no model_type '{config.get('model_type')}' "
                         "of its own (a model whose checkpoints ship their modeling code, as Qwen-1's do): measure "
                         "builds models from transformers' own code only")
    cfg = transformers.AutoConfig.for_model(**config)
    cfg.use_cache = rs.workload == "generate"
    attn = "sdpa" if rs.flash_attention else "eager"
    pure = rs.regime == "pure" or rs.method != "full" or rs.workload == "generate"
    dtype = torch.bfloat16 if pure else torch.float32
    if rs.method == "qlora":
        return _build_qlora(cfg, rs, torch, transformers, device, attn)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=dtype, attn_implementation=attn)
    if rs.method == "lora":
        model = _lora(model, rs)
    return model


def _build_qlora(cfg: Any, rs: RunSettings, torch: Any, transformers: Any, device: Any, attn: str) -> Any:
    try:
        import bitsandbytes  # noqa: F401
        import peft
    except ImportError as exc:
        raise InputError(f"measure needs bitsandbytes and peft for QLoRA ({exc.name} is missing)") from None
    import tempfile

    with tempfile.TemporaryDirectory() as folder:  # quantise on load, as QLoRA users do
        transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16).save_pretrained(folder)
        q = transformers.BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                            bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16)
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, quantization_config=q, device_map={"": device},
                                                                  attn_implementation=attn)
    model = peft.prepare_model_for_kbit_training(model, use_gradient_checkpointing=rs.checkpointing)
    return _lora(model, rs)


def _lora(model: Any, rs: RunSettings) -> Any:
    try:
        import peft
    except ImportError:
        raise InputError("measure needs peft for LoRA: pip install 'llmplan[measure]'") from None
    alpha = 2 * rs.lora_rank
    extra: dict[str, Any] = {}
    if rs.lora_parameters:  # peft >= 0.17: LoRA on the stacked expert parameters (core.lora_modules)
        extra["target_parameters"] = list(rs.lora_parameters)
    if rs.lora_rank_factors:
        extra["rank_pattern"] = {name: k * rs.lora_rank for name, k in rs.lora_rank_factors}
        extra["alpha_pattern"] = {name: k * alpha for name, k in rs.lora_rank_factors}
    config = peft.LoraConfig(r=rs.lora_rank, lora_alpha=alpha, lora_dropout=rs.lora_dropout,
                             target_modules=list(rs.lora_targets), task_type="CAUSAL_LM", **extra)
    return peft.get_peft_model(model, config)


def _sync(torch: Any, device: Any) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def _train(model: Any, rs: RunSettings, torch: Any, device: Any, steps: int) -> dict[str, float]:
    if rs.checkpointing and rs.method != "qlora":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    params = [p for p in model.parameters() if p.requires_grad]
    if rs.optimizer == "adam8bit":
        import bitsandbytes as bnb

        opt = bnb.optim.AdamW8bit(params)
    elif rs.optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=1e-5)
    else:
        opt = torch.optim.AdamW(params, lr=1e-5, fused=device.type == "cuda")
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (rs.micro_batch, rs.seq_len), device=device)
    amp = rs.regime == "amp" and device.type != "cpu"
    times = []
    for step in range(steps + WARMUP_STEPS):
        if step == WARMUP_STEPS and device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        _sync(torch, device)
        start = time.perf_counter()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        if rs.max_grad_norm:  # as the Trainer clips (accelerator.clip_grad_norm_ -> torch's, foreach)
            torch.nn.utils.clip_grad_norm_(params, rs.max_grad_norm)
        opt.step()
        opt.zero_grad(set_to_none=True)
        _sync(torch, device)
        if step >= WARMUP_STEPS:
            times.append(time.perf_counter() - start)
    return {"step_time_s": statistics.median(times)}


def _generate(model: Any, rs: RunSettings, torch: Any, device: Any, steps: int) -> dict[str, float]:
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (rs.batch, rs.prompt_tokens), device=device)

    def timed(new: int) -> float:
        _sync(torch, device)
        start = time.perf_counter()
        with torch.no_grad():
            model.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False)
        _sync(torch, device)
        return time.perf_counter() - start

    timed(2)  # warm-up
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    ttft = statistics.median(timed(1) for _ in range(max(steps // 2, 1)))
    total = statistics.median(timed(rs.output_tokens) for _ in range(max(steps // 4, 1)))
    tpot = (total - ttft) / max(rs.output_tokens - 1, 1)
    return {"ttft_s": ttft, "tpot_s": tpot, "step_time_s": tpot}


def measure(doc: Any, config: dict, steps: int = 6, device: str | None = None) -> dict[str, Any]:
    """Run the plan here and return the run file's content (module doc)."""
    rs = run_settings(doc, config)
    torch, transformers = _modules()
    dev = _device(torch, device)
    model = _build(config, rs, torch, transformers, dev)
    if rs.workload == "train":
        model.train()
        figures = _train(model, rs, torch, dev, steps)
    else:
        model.eval()
        figures = _generate(model, rs, torch, dev, steps)
    out: dict[str, Any] = {"format": RUN_FORMAT, "schema_version": RUN_SCHEMA_VERSION, **figures}
    if dev.type == "cuda":
        out["peak_memory_bytes"] = int(torch.cuda.max_memory_allocated(dev))
        out["peak_reserved_bytes"] = int(torch.cuda.max_memory_reserved(dev))
        out["device_name"] = torch.cuda.get_device_name(dev)
    else:
        out["device_name"] = dev.type
    versions = {"torch": torch.__version__, "transformers": transformers.__version__}
    for name in ("peft", "bitsandbytes"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    out["software"] = versions
    out["plan"] = {"name": doc.name, "settings": asdict(rs)}
    return out


def dumps_run(run: dict[str, Any]) -> str:
    return json.dumps(run, indent=1, sort_keys=True) + "\n"
