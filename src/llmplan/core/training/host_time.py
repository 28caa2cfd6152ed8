"""The host (CPU) time of one decoder block of eager Hugging Face training, measured.

A step is never faster than the host can issue it. The per-operation model first counted kernels and
charged each the dispatch time of a bare one-element kernel (``FrameworkProfile.launch_s``). An eager
Hugging Face block does far more host work per kernel: the module's Python code, autograd's graph
bookkeeping, autocast's dtype checks, PEFT's adapter code, the checkpoint hooks of gradient
checkpointing, and bitsandbytes' Python around each 4-bit matmul. Measured with torch.profiler, a
checkpointed LoRA step of a Llama block issues about 350 kernels and spends 38-50 µs of host time on
each: three times the bare dispatch. Small-batch LoRA and QLoRA runs are bound by it.

So the profiles of the Hugging Face stack carry ``block_host_s``: host seconds per decoder block and
micro-batch (forward, backward and, with gradient checkpointing, the recompute), by what the block
runs. It was measured on models of the real depth and module structure at width 64, where the GPU
work is under 4% of the step, so the step's wall time is the host's time:

- NVIDIA H200 machine (16-core Intel Xeon virtual machine), torch 2.11.0+cu130, transformers 5.17.0,
  peft 0.21.0, bitsandbytes 0.50.2, 2026-11-27; Llama (16, 28 and 32 blocks, tied and untied
  embeddings) and Qwen2 (28 blocks, biased q/k/v) structures; fused AdamW; SDPA attention;
- per block: the step's wall time over its blocks, so the step's own host work (embedding, head,
  loss, optimizer step) is spread over 16-32 blocks;
- the fastest of 10-25 steps, per configuration, then the median over configurations. The host is
  a shared virtual machine: the median step ran 5-30% slower than the fastest, from interference
  that comes and goes; the fastest step is the host's own cost.

Keys: ``full_16bit`` (weights in bf16, no autocast), ``full_autocast`` (fp32 weights under autocast),
``lora`` (a bf16 base under autocast, all seven linears adapted), ``qlora`` (an NF4 base through
bitsandbytes, prepare_model_for_kbit_training, all seven adapted); each with ``_recompute`` for
gradient checkpointing. A key the profile does not list is derived: with recompute, the ratio of the
measured pairs (mean of with/without for the kinds measured both ways) times the key without it, or
the reverse. Fewer adapted linears scale the adapters' part (``lora`` − ``full_16bit``) by
adapted/7. Where the kernel count gives more (an MoE block's loop over experts), that stays. Not applied
under ZeRO-3/FSDP full sharding, whose hooks gather each module's weights (not measured).
"""

from __future__ import annotations

from llmplan.core.framework_profile import FrameworkProfile
from llmplan.core.lora_modules import adapted_modules, expert_adapters, stacked_expert_params
from llmplan.core.model import ModelSpec
from llmplan.core.training.ops import casts_weights

MEASURED_LORA_LINEARS = 7  # q, k, v, o, gate, up, down: the adapters of every measured LoRA/QLoRA block
_KINDS = ("full_16bit", "full_autocast", "lora", "qlora")


def _recompute_ratio(table: dict[str, float]) -> float | None:
    pairs = [table[k + "_recompute"] / table[k] for k in _KINDS if k in table and k + "_recompute" in table]
    return sum(pairs) / len(pairs) if pairs else None


def _lookup(table: dict[str, float], kind: str, recompute: bool) -> float | None:
    key = kind + ("_recompute" if recompute else "")
    if key in table:
        return table[key]
    other = kind if recompute else kind + "_recompute"
    ratio = _recompute_ratio(table)
    if other not in table or ratio is None:
        return None
    return table[other] * ratio if recompute else table[other] / ratio


def block_kind(tr, prof: FrameworkProfile) -> str | None:
    """Which measured kind of block a plan runs, or None where none was measured: fp8 or fp32 training,
    ZeRO-3/FSDP full sharding (its per-module gather hooks were not measured), fused or compiled kernels, a
    quantised base other than NF4. ZeRO-1/2 keep the blocks' code as it is and hook only the trainable
    parameters' gradients, so the measurement stands for them."""
    if tr.precision in ("fp8", "fp32") or tr.zero_stage >= 3 or tr.liger or tr.torch_compile:
        return None
    if tr.method == "full":
        return "full_autocast" if casts_weights(tr, prof) else "full_16bit"  # fp32 weights cast per forward
    if tr.method == "qlora":
        return "qlora" if tr.quant_base == "nf4" else None
    return "lora"


def block_host_seconds(tr, prof: FrameworkProfile, m: ModelSpec) -> tuple[float, str] | None:
    """Host seconds of one block of ``m`` per micro-batch under this profile, and how they were found (module doc);
    None where the profile has no measurement for this kind of block. The adapted linears are counted as PEFT
    wraps them: a fused module once (``core.lora_modules.adapted_modules``), and a stacked expert parameter PEFT
    wraps (``stacked_expert_params``) as one more: its ``ParamWrapper`` registers and removes a parametrization on
    every forward, host work not measured apart, so counted like an adapted linear's."""
    if not prof.block_host_s:
        return None
    kind = block_kind(tr, prof)
    if kind is None:
        return None
    table = dict(prof.block_host_s)
    recompute = tr.recompute == "full"
    seconds = _lookup(table, kind, recompute)
    if seconds is None:
        return None
    how = f"{kind}{' with gradient checkpointing' if recompute else ''}"
    if kind in ("lora", "qlora"):
        experts = expert_adapters(m, tr.lora_experts)
        adapted = (len(adapted_modules(m, tr.lora_targets, experts))
                   + stacked_expert_params(m, tr.lora_targets, experts))
        base, lora = _lookup(table, "full_16bit", recompute), _lookup(table, "lora", recompute)
        if adapted != MEASURED_LORA_LINEARS and base is not None and lora is not None:
            seconds -= (lora - base) * (MEASURED_LORA_LINEARS - adapted) / MEASURED_LORA_LINEARS
            how += f", {adapted} of {MEASURED_LORA_LINEARS} linears adapted"
    return seconds, how
