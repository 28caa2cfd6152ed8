"""Golden numbers of the training engine for layouts whose layers divide evenly over pp·v.

Uneven pipeline stages (``layout.stage_split``) must not move a single number of an even
layout. ``data/even_layouts.json`` holds every Figure value of ``estimate`` for the cases
below, written by the engine *before* uneven stages were added (commit "golden numbers of
even layouts"). Regenerate only on purpose, when an engine change is meant to move them:

    .venv/bin/python tests/core/training/even_golden.py
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from llmplan.core.engine import estimate
from llmplan.core.explain import Figure
from llmplan.core.workload import Scenario
from llmplan.formats.hf_config import spec_from_config

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.training.helpers import gpt, scenario

GOLDEN = Path(__file__).with_name("data") / "even_layouts.json"

LLAMA3_8B = spec_from_config(dict(model_type="llama", vocab_size=128256, hidden_size=4096, num_hidden_layers=32,
                                  num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336))
LLAMA2_70B = spec_from_config(dict(model_type="llama", vocab_size=32000, hidden_size=8192, num_hidden_layers=80,
                                   num_attention_heads=64, num_key_value_heads=8, intermediate_size=28672))
MIXTRAL = spec_from_config(dict(model_type="mixtral", vocab_size=32000, hidden_size=4096, num_hidden_layers=32,
                                num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336,
                                num_local_experts=8, num_experts_per_tok=2))


def cases() -> dict[str, Scenario]:
    """Even layouts covering 1F1B, interleaving, MoE + EP, LoRA/QLoRA, ZeRO-3, CP and pp = 1."""
    gpt3 = gpt(12288, 96, 96, vocab=50257, name="GPT-3 175B")
    return {
        "llama3-8b tp2 pp2 dp4 (docs/training.md)": scenario(LLAMA3_8B, 16, tp=2, pp=2, seq_len=8192,
                                                               global_batch=128),
        "gpt3-175b tp8 pp16 v3 interleaved": scenario(gpt3, 1024, tp=8, pp=16, vp=3, seq_len=2048,
                                                       global_batch=1536),
        "gpt3-175b tp8 pp12 1F1B selective": scenario(gpt3, 96, tp=8, pp=12, seq_len=2048, global_batch=64,
                                                       flash_attention=False, recompute="selective"),
        "llama2-70b tp8 pp4 v2 full recompute": scenario(LLAMA2_70B, 64, tp=8, pp=4, vp=2, seq_len=4096,
                                                          global_batch=64, recompute="full"),
        "llama2-70b tp4 pp8 cp2 fp8": scenario(LLAMA2_70B, 128, tp=4, pp=8, cp=2, seq_len=8192,
                                                global_batch=32, precision="fp8"),
        "mixtral tp2 pp4 ep4": scenario(MIXTRAL, 64, tp=2, pp=4, ep=4, seq_len=4096, global_batch=256),
        "llama3-8b lora pp2": scenario(LLAMA3_8B, 4, pp=2, method="lora", seq_len=2048, global_batch=16),
        "llama3-8b qlora 1 GPU": scenario(LLAMA3_8B, 1, method="qlora", recompute="full", zero_stage=0,
                                          seq_len=4096),
        "llama3-8b zero3 8 GPUs": scenario(LLAMA3_8B, 8, zero_stage=3, seq_len=4096, global_batch=32),
        "gpt 1.3b pp1 dropout": scenario(gpt(2048, 16, 24), 8, seq_len=2048, dropout=0.1, global_batch=64),
    }


def figures(obj: object, prefix: str = "") -> dict[str, float]:
    """Every Figure value inside ``obj`` (dataclasses, tuples), keyed by its path."""
    out: dict[str, float] = {}
    if isinstance(obj, Figure):
        out[prefix] = obj.value
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            if f.name != "params":
                out.update(figures(getattr(obj, f.name), f"{prefix}.{f.name}" if prefix else f.name))
    elif isinstance(obj, tuple):
        for i, item in enumerate(obj):
            out.update(figures(item, f"{prefix}[{i}]"))
    return out


def snapshot() -> dict[str, dict[str, float]]:
    return {name: figures(estimate(sc)) for name, sc in cases().items()}


if __name__ == "__main__":
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(snapshot(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
