"""llama.cpp's routed experts in host RAM (``--cpu-moe``, ``--n-cpu-moe N``): what stays on the card, what the CPU
reads per token, and what crosses PCIe per prompt micro-batch.

Read from the code (ggml-org/llama.cpp PR #14992 and PR #15077, slaren, 2025-07-31 / 2025-08-04; ggml-org/ggml
d99724f2, 2026-08-21, synced from llama.cpp):

- ``--cpu-moe`` / ``--n-cpu-moe N`` only add tensor buffer-type overrides (common/arg.cpp): the pattern
  ``blk\\.i\\.ffn_(up|down|gate|gate_up)_(ch|)exps`` (``llm_ffn_exps_block_regex(i)``, common/common.h) for the
  layers i < N (or every layer), bound to the CPU buffer type. The override is matched with ``regex_search`` on the
  tensor name, so a routed expert's bias goes with its weight. Attention, norms, the router, shared experts, the
  KV cache and (with every layer offloaded, ``-ngl 99``) the output head stay on the GPU.
- Decode (one token): ``ggml_backend_sched`` runs an op where its weights live. The expert ``MUL_MAT_ID`` of those
  layers runs on the CPU, which reads only the routed experts (top-k of E per token) from host RAM; the layer's
  activations go to the CPU and back (a split per layer, its copies a few KB).
- Prompt: the scheduler's "op offload" (``ggml_backend_sched_backend_id_from_cur``, ggml-backend.cpp) hands an op
  whose weights are in host memory to a GPU back-end that wants it: CUDA's ``offload_op`` does so when the op's
  batch (``MUL_MAT_ID``: ``ne[2]``, the micro-batch's tokens) is at least ``op_offload_min_batch_size``, 32 unless
  ``GGML_OP_OFFLOAD_MIN_BATCH`` says otherwise (ggml-cuda.cu); ``--no-op-offload`` turns it off. The split's
  inputs are then copied to the GPU, and for a ``MUL_MAT_ID`` weight only the experts the micro-batch routes to
  (``ggml_backend_sched_compute_splits``: "copying only the experts that are used"). So each micro-batch uploads,
  per layer with experts in host RAM, the touched share of its experts over PCIe, and the GPU multiplies them.

``N`` counts layers by index, as llama.cpp does: in a model whose first layers are dense (DeepSeek-V3's first 3,
GLM-4.5-Air's first) those hold no routed experts, and ``--n-cpu-moe 3`` moves none.
"""

from __future__ import annotations

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.model import ModelSpec
from llmplan.core.quant import QuantizedWeights
from llmplan.core.workload import cpu_moe_refusal
from llmplan.errors import LayoutError

OP_OFFLOAD_MIN_BATCH = 32  # ggml-cuda.cu ggml_backend_cuda_device_offload_op (GGML_OP_OFFLOAD_MIN_BATCH unset)
CpuMoeSetting = int | str | None  # inference.cpu_moe_layers: first N layers, "all", or None (the estimate picks)


def host_moe_layers(spec: ModelSpec, setting: CpuMoeSetting) -> int:
    """MoE layers whose routed experts ``setting`` keeps in host RAM: those among the first N layers, or all."""
    if setting is None or not spec.is_moe:
        return 0
    if setting == "all":
        return spec.moe_layer_count
    return sum(1 for kind in spec.layer_mlp[: int(setting)] if kind == "moe")


def flag_for(spec: ModelSpec, n_moe: int) -> str:
    """The llama.cpp flag that keeps ``n_moe`` MoE layers' experts in host RAM: ``--cpu-moe`` for all of them, else
    ``--n-cpu-moe N`` with N the layer index after the n-th MoE layer (dense first layers counted, as llama.cpp)."""
    if n_moe >= spec.moe_layer_count:
        return "--cpu-moe"
    return f"--n-cpu-moe {first_layers_for(spec, n_moe)}"


def host_moe_flags(spec: ModelSpec, n_moe: int) -> list[bool]:
    """Per layer index, whether ``n_moe`` (the first MoE layers by index) keeps its routed experts in host RAM."""
    seen, out = 0, []
    for kind in spec.layer_mlp or ("dense",) * spec.num_layers:
        seen += kind == "moe"
        out.append(kind == "moe" and seen <= n_moe)
    return out


def host_moe_on_gpus(spec: ModelSpec, n_moe: int, gpu_layers: int) -> int:
    """MoE layers offloaded to the GPUs (llama.cpp offloads the last ``gpu_layers``) whose routed experts the tensor
    override still keeps in host RAM: the override applies on top of the layer placement, so ``-ngl`` and
    ``--n-cpu-moe`` compose (the layers left in host RAM hold their experts there anyway)."""
    return sum(host_moe_flags(spec, n_moe)[spec.num_layers - gpu_layers:])


def first_layers_for(spec: ModelSpec, n_moe: int) -> int:
    """The smallest N whose first N layers hold ``n_moe`` MoE layers (``--n-cpu-moe N``)."""
    seen = 0
    for i, kind in enumerate(spec.layer_mlp):
        if seen >= n_moe:
            return i
        seen += kind == "moe"
    return spec.num_layers


def expert_bytes(q: QuantizedWeights) -> float:
    """Bytes of every routed expert (weights and biases) in the format: what ``--cpu-moe`` keeps in host RAM."""
    return q.bytes_where(lambda g: g.category == "expert" and g.place == "layer")


def host_expert_bytes(spec: ModelSpec, q: QuantizedWeights, n_moe: int) -> float:
    """Bytes of the routed experts of ``n_moe`` MoE layers (every MoE layer holds the same experts)."""
    if not n_moe:
        return 0.0
    return expert_bytes(q) * n_moe / spec.moe_layer_count


def check(spec: ModelSpec, engine: EngineProfile, setting: CpuMoeSetting, tp: int, unified: bool) -> None:
    """Refuse a ``cpu_moe_layers`` the engine, the model or the GPU cannot run (``workload.cpu_moe_refusal``, the
    plan's own check, here too for a scenario built without it), or the layout: llama.cpp splits by layers."""
    if setting is None or setting == 0:
        return
    refusal = cpu_moe_refusal(spec, engine, setting, unified)
    if refusal:
        raise LayoutError(refusal)
    if tp > 1:
        raise LayoutError(f"inference.cpu_moe_layers={setting}: llama.cpp splits a model by layers, not tensor "
                          "parallelism; set parallelism.tp = 1")
