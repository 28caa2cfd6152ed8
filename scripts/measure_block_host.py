"""Measure the host (CPU) time of eager Hugging Face blocks on this machine: the ``block_host_s`` rows.

    python scripts/measure_block_host.py [--layers 16 28 32] [--steps 20]

Needs a CUDA GPU with torch, transformers and peft (and bitsandbytes for the QLoRA row). It builds Llama
models of real depth at width 64 with random weights, where the GPU is busy for a few percent of a step,
so a step's wall time is the host's: the modeling code's Python, autograd, autocast, PEFT and the hooks
of gradient checkpointing. For each kind of block it trains ``--steps`` steps at each depth and takes the
fastest step over the number of blocks (interference on a shared host only adds time), then the median
over depths, and prints the rows to put under your profile in ``frameworks.toml`` (docs/training.md,
"Host-bound steps"). The shipped rows were measured this way on an H200 machine's Xeon VM (torch 2.11,
transformers 5.17, peft 0.21, bitsandbytes 0.50.2, 2026-11-27).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time

KINDS = {  # kind -> (weights dtype, autocast, LoRA, NF4 base, gradient checkpointing)
    "full_16bit": ("bf16", False, False, False, False),
    "full_autocast": ("fp32", True, False, False, False),
    "full_autocast_recompute": ("fp32", True, False, False, True),
    "lora": ("bf16", True, True, False, False),
    "lora_recompute": ("bf16", True, True, False, True),
    "qlora_recompute": ("bf16", True, True, True, True),
}
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def per_block(step_seconds: list[float], layers: int) -> float:
    """The host seconds of one block: the fastest step over the number of blocks."""
    if not step_seconds or layers < 1:
        raise ValueError("need at least one timed step and one block")
    return min(step_seconds) / layers


def rows(per_kind: dict[str, list[float]]) -> str:
    """The TOML line for ``block_host_s``: each kind's median over depths, in seconds."""
    cells = ", ".join(f'["{k}", {statistics.median(v):.5g}]' for k, v in per_kind.items() if v)
    return f"block_host_s = [{cells}]"


def _model(kind: str, layers: int):
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    dtype, _, lora, nf4, ckpt = KINDS[kind]
    cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                      num_hidden_layers=layers, vocab_size=256, max_position_embeddings=1024)
    torch_dtype = torch.float32 if dtype == "fp32" else torch.bfloat16
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch_dtype, attn_implementation="sdpa")
    if nf4:
        from peft import prepare_model_for_kbit_training
        from transformers import BitsAndBytesConfig

        folder = tempfile.mkdtemp(prefix="llmplan-host-")
        model.save_pretrained(folder)
        del model
        quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                   bnb_4bit_compute_dtype=torch.bfloat16)
        model = AutoModelForCausalLM.from_pretrained(folder, quantization_config=quant, device_map={"": 0},
                                                     dtype=torch.bfloat16, attn_implementation="sdpa")
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=ckpt,
                                                gradient_checkpointing_kwargs={"use_reentrant": False})
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, target_modules=TARGETS,
                                                 task_type="CAUSAL_LM"))
    if ckpt and not nf4:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    return model


def time_steps(kind: str, layers: int, steps: int) -> list[float]:
    """Wall seconds of each step after four warm-up steps (forward with labels, backward, fused AdamW)."""
    import torch

    model = _model(kind, layers)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5, fused=True)
    x = torch.randint(0, 256, (1, 32), device="cuda")
    autocast = KINDS[kind][1]
    out = []
    for i in range(steps + 4):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = model(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if i >= 4:
            out.append(time.perf_counter() - t0)
    return out


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=_positive, nargs="+", default=[16, 28, 32])
    ap.add_argument("--steps", type=_positive, default=20)
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS))
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("needs torch, transformers and peft (and bitsandbytes for qlora_recompute)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2
    per_kind: dict[str, list[float]] = {}
    for kind in args.kinds:
        for layers in args.layers:
            try:
                seconds = per_block(time_steps(kind, layers, args.steps), layers)
            except Exception as exc:
                print(f"{kind}, {layers} blocks: skipped ({exc})", file=sys.stderr)
                continue
            per_kind.setdefault(kind, []).append(seconds)
            print(f"{kind}, {layers} blocks: {seconds * 1e3:.2f} ms per block", flush=True)
            torch.cuda.empty_cache()
    print(rows(per_kind))
    return 0


if __name__ == "__main__":
    sys.exit(main())
