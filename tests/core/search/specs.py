"""Inline specs for search tests (published shapes and datasheet figures, cited)."""

from llmplan.core.hardware import ClusterSpec, GpuSpec, NetworkSpec, PeakFlops
from llmplan.core.model import ModelSpec

# NVIDIA A100 80GB SXM datasheet: 312 TFLOP/s dense BF16, 2,039 GB/s HBM2e, NVLink 600 GB/s
# (both directions: 300 GB/s each way); 81,920 MiB as the driver reports it.
A100_80GB = GpuSpec(
    id="test-a100-80gb", name="A100 80GB (test)", vendor="nvidia", memory_bytes=81920 * 2**20,
    memory_bandwidth=2.039e12, peak_flops=PeakFlops(bf16=312e12, fp16=312e12, fp32=19.5e12, tf32=156e12),
    nvlink_bandwidth=300e9, pcie_bandwidth=32e9, price_per_hour=2.0,
)
# NVIDIA H100 SXM datasheet: 989 TFLOP/s dense BF16, 3.35 TB/s, NVLink 900 GB/s (450 each way); 81,559 MiB.
H100_80GB = GpuSpec(
    id="test-h100-80gb", name="H100 80GB (test)", vendor="nvidia", memory_bytes=81559 * 2**20,
    memory_bandwidth=3.35e12, peak_flops=PeakFlops(bf16=989e12, fp16=989e12, fp8=1979e12),
    nvlink_bandwidth=450e9, pcie_bandwidth=64e9, price_per_hour=3.0,
)
# Selene / DGX A100: 8 HDR 200 Gb/s InfiniBand NICs per node, one per GPU: 25 GB/s per GPU.
HDR_IB = NetworkSpec(id="test-ib-hdr", name="HDR IB", bandwidth_per_gpu=25e9)
# 400 Gb/s per GPU (NDR / RoCE as in Llama 3's cluster): 50 GB/s per GPU.
NDR_IB = NetworkSpec(id="test-ib-ndr", name="NDR IB", bandwidth_per_gpu=50e9)


def gpt(name: str, hidden: int, heads: int, layers: int, vocab: int = 51200, seq: int = 2048) -> ModelSpec:
    """A GPT-style model as in Narayanan et al. 2021 (4h GeLU MLP, learned positions, tied embeddings)."""
    return ModelSpec(
        name=name, model_type="gpt2", vocab_size=vocab, hidden_size=hidden, num_layers=layers, num_heads=heads,
        num_kv_heads=heads, head_dim=hidden // heads, intermediate_size=4 * hidden, gated_mlp=False,
        activation="gelu", attention_bias=True, attention_out_bias=True, mlp_bias=True, norm="layernorm",
        tie_embeddings=True, position="learned", learned_positions=seq, max_position_embeddings=seq,
    )


# Llama 3.1 405B config.json (meta-llama/Llama-3.1-405B): hidden 16384, 126 layers, 128 heads, 8 KV
# heads, intermediate 53248, vocab 128256, untied embeddings.
LLAMA_405B = ModelSpec(
    name="Llama 3.1 405B", vocab_size=128256, hidden_size=16384, num_layers=126, num_heads=128,
    num_kv_heads=8, head_dim=128, intermediate_size=53248, max_position_embeddings=131072,
)


def cluster(gpu: GpuSpec, gpus_per_node: int, nodes: int, network: NetworkSpec = HDR_IB) -> ClusterSpec:
    return ClusterSpec(gpu=gpu, gpus_per_node=gpus_per_node, nodes=nodes,
                       network=network if nodes > 1 else NetworkSpec())
