"""The unit of each input a ``Figure`` names, so its explanation prints "capacity = 23.99 GiB", not "2.57572e+10".

The engine builds a few dozen figures per estimate, each with a mapping of named inputs; the values are in the
core's SI base units (bytes, seconds, FLOP, bytes/s; DESIGN.md §2) or plain counts and shares. The names are the
engine's own and mean the same wherever they appear, with a few exceptions that the figure's own unit settles
("optimizer" is bytes in a memory figure and seconds in a time figure). So the unit of an input is found here, by
name, once, instead of at each of the hundred call sites: ``input_unit(name, figure_unit)``.

Units beyond the core's SI ones: "tokens", "count" (layers, GPUs, sequences: a whole number), "share" (a fraction
printed as a percentage), "factor" (a multiplier, "1.04×"), "bits", "params", "USD/h". An input whose name is not
known here prints as a plain number, never in e-notation (``present.quantity``); tests/core/test_input_units.py
checks that every numeric input of a set of representative estimates has a unit here.
"""

from __future__ import annotations

# (unit of the figure, input name) -> unit: the names whose meaning depends on the figure they explain.
BY_FIGURE: dict[tuple[str, str], str] = {
    ("B", "optimizer"): "B", ("s", "optimizer"): "s",  # optimizer states (memory) / the optimizer step (time)
    ("B", "context"): "B", ("s", "context"): "tokens",  # the CUDA context / the mean context of a decode step
    ("s", "offload"): "s", ("B", "offload"): "B",  # time or bytes offloaded (elsewhere a setting: "cpu")
}

_B = ("activations", "all_gradients", "buffers", "capacity", "driver_reserved", "embedding_logits_recompute",
      "fixed", "framework", "gradients", "head_and_loss", "kv", "kv_budget", "kv_cache", "kv_per_sequence",
      "master_weights", "overhead", "per_block", "per_gpu", "pinned", "processes", "runtime_context",
      "score_matrix", "weights", "zero3_gather", "bytes", "bytes_per_grad", "bytes_per_param", "bytes_per_weight",
      "element_bytes", "kv_bytes_per_token", "text_bytes_per_token", "total", "per_node", "workers", "data",
      "bytes_per_token", "largest_gradient", "backlog", "held_at_most")
_S = ("attention", "bubble", "dequantisation", "gemm", "gradient_clipping", "kernel_gaps", "launch_overhead",
      "loss", "memory_bound", "checkpoint", "cold_start")
_COUNT = ("batch", "blocks", "block_tokens", "cp", "d", "dp", "ep", "gpus", "gpus_on_node", "gpus_per_node",
          "gpu_layers", "global_batch", "layers", "m", "micro_batch", "micro_batches", "moe_blocks", "n", "p", "pp",
          "r", "replicas", "t", "tp", "v", "zero_stage", "deepspeed_zero_stage", "kernels", "calls", "k", "b", "h",
          "vocab", "vocab_size", "mean_stage_layers", "slowest_stage_layers", "cores", "nodes", "drives",
          "cpu_cores_per_node", "tokenizer_cores_per_node", "failures", "replicas_a", "replicas_b", "needed",
          "per_replica", "chunk", "cards")
_TOKENS = ("s", "chunk_tokens", "context_tokens", "prompt_tokens", "output_tokens", "shared_prefix_tokens",
           "tokens", "tokens_per_step")
_PARAMS = ("trainable", "trainable_params", "params", "params_on_gpu", "params_per_gpu", "block_params",
           "bucket_params")
_SHARE = ("fragmentation", "gpu_share", "utilization", "fill_slot_share", "clock_share_held", "full_clock_share",
          "matmul_efficiency", "sustained_clock", "real_token_share", "mfu", "mfu_sat", "goodput", "cpu_load",
          "pcie_load", "nvme_load", "storage_load", "offload_fraction", "largest_tensor_share")

NAMES: dict[str, str] = {
    **dict.fromkeys(_B, "B"), **dict.fromkeys(_S, "s"), **dict.fromkeys(_COUNT, "count"),
    **dict.fromkeys(_TOKENS, "tokens"), **dict.fromkeys(_PARAMS, "params"), **dict.fromkeys(_SHARE, "share"),
    "bandwidth": "B/s", "host_bandwidth": "B/s", "pointwise_bandwidth": "B/s", "pcie_bandwidth": "B/s",
    "bus_bandwidth_Bps": "B/s", "bytes_per_s_per_core": "B/s", "aggregate": "B/s", "available": "B/s",
    "flops": "FLOP", "model_flops": "FLOP", "hardware_flops": "FLOP", "recompute_flops": "FLOP",
    "flops_per_s": "FLOP/s", "peak_flops": "FLOP/s", "gemm_rate_full_clock": "FLOP/s",
    "tokens_per_s": "tokens/s", "prefill_tokens_per_s": "tokens/s",
    "price_per_gpu_hour": "USD/h", "usd_per_gpu_hour": "USD/h", "price_per_kwh": "USD/kWh", "cost_usd": "USD",
    "gpu_hours": "GPU-hours", "seconds": "s", "bits_per_weight": "bits", "stage_imbalance": "factor",
    "in_flight": "factor", "pue": "factor", "tdp": "W", "watts": "W", "power": "W", "idle": "W",
    "kg_per_kwh": "kg/kWh", "kwh": "kWh", "energy_kwh": "kWh", "energy_j": "J", "effective_days": "days",
    "failures_per_gpu_hour": "per GPU-hour",
}

# Name endings the engine uses consistently (checked after the names above, in this order).
SUFFIXES: tuple[tuple[str, str], ...] = (
    ("_bytes_per_step", "B"), ("_per_s", ""), ("_s", "s"), ("_bytes", "B"), ("_bandwidth", "B/s"),
    ("_bandwidth_needed", "B/s"), ("_bandwidth_available", "B/s"), ("_watts", "W"), ("_load", "share"),
    ("_layers", "count"), ("_tokens", "tokens"),
)


def input_unit(name: str, figure_unit: str = "") -> str:
    """The unit of the input ``name`` of a figure in ``figure_unit``; "" when it is not known."""
    unit = BY_FIGURE.get((figure_unit, name)) or NAMES.get(name)
    if unit:
        return unit
    for end, suffix_unit in SUFFIXES:
        if name.endswith(end):
            return suffix_unit  # "" for a rate of something unnamed ("…_per_s"): a plain number
    return ""
