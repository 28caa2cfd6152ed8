"""Shared builders for the training-engine tests: specs written out from the papers' tables."""

from __future__ import annotations

from llmplan.core.hardware import ClusterSpec, Efficiency, GpuSpec, NetworkSpec, PeakFlops
from llmplan.core.model import ModelSpec
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings

# A100-SXM4-80GB as the brief prescribes: 312 TFLOP/s dense bf16/fp16, 2.039 TB/s HBM2e,
# NVLink 3 at 300 GB/s per direction, HDR InfiniBand 8 × 200 Gb/s per node = 25 GB/s per GPU.
A100_80GB = GpuSpec(
    id="test-a100-80gb", name="A100 80GB (test)", vendor="nvidia", memory_bytes=81920 * 2**20,
    memory_bandwidth=2.039e12, peak_flops=PeakFlops(bf16=312e12, fp16=312e12, tf32=156e12, fp32=19.5e12),
    nvlink_bandwidth=300e9, price_per_hour=2.0,
)
HDR_IB = NetworkSpec(id="ib-hdr", name="8x HDR 200 Gb/s", bandwidth_per_gpu=25e9)


def gpt(h: int, heads: int, layers: int, vocab: int = 51200, name: str = "gpt") -> ModelSpec:
    """A GPT-3/Megatron block: 4h GeLU MLP, multi-head attention, biases, LayerNorm, learned positions. W_q, W_k
    and W_v are separate matrices, as the LoRA paper adapts them one by one (Hu et al. 2022 §4.2, Table 5), not
    GPT-2's fused c_attn (``fused_linears=()``)."""
    return ModelSpec(
        name=name, model_type="gpt2", vocab_size=vocab, hidden_size=h, num_layers=layers, num_heads=heads,
        num_kv_heads=heads, head_dim=h // heads, intermediate_size=4 * h, gated_mlp=False, activation="gelu",
        attention_bias=True, attention_out_bias=True, mlp_bias=True, norm="layernorm", tie_embeddings=True,
        position="learned", learned_positions=2048, max_position_embeddings=2048, fused_linears=(),
    )


def cluster(gpus: int, per_node: int = 8, gpu: GpuSpec = A100_80GB) -> ClusterSpec:
    nodes = max(1, gpus // per_node)
    return ClusterSpec(gpu=gpu, gpus_per_node=min(gpus, per_node), nodes=nodes,
                       network=HDR_IB if nodes > 1 else NetworkSpec())


def scenario(model: ModelSpec, gpus: int, tp: int = 1, pp: int = 1, cp: int = 1, ep: int = 1, sp: bool = True,
             vp: int = 1, **training: object) -> Scenario:
    dp = gpus // (tp * pp * cp)
    # these engine tests compare layouts at one micro-batch per replica unless they set a batch
    training.setdefault("batch_rule", "per_replica")
    workload = "finetune" if training.get("method", "full") != "full" else "pretrain"
    return Scenario(
        model=model, cluster=cluster(gpus), workload=workload,
        training=TrainingSettings(**training),
        parallelism=ParallelLayout(tp=tp, pp=pp, dp=dp, cp=cp, ep=ep, sequence_parallel=sp, virtual_stages=vp),
        efficiency=Efficiency(),
    )


def off_record(errors: dict[str, float], recorded: dict[str, float], points: float = 0.03) -> dict[str, float]:
    """The rows of a published table whose error (llmplan ÷ published − 1) moved more than ``points`` from the
    error recorded for it: a pinned row that a change to the terms moved, rounded for the assertion message."""
    return {name: round(e, 3) for name, e in errors.items() if abs(e - recorded[name]) > points}
