"""Hand-made Scenarios, Estimates and SystemSettings for the system tests.

Estimates are built from Figures directly (the training/inference engines are written
elsewhere), so every input to the system report is a number chosen and stated here.
The settings use round, made-up numbers on purpose: the tests check formulas by hand,
not the catalog (tests/catalog/test_system_presets.py covers the shipped data).
"""

from __future__ import annotations

from llmplan.core.explain import Figure
from llmplan.core.hardware import ClusterSpec, GpuSpec, NetworkSpec, PeakFlops
from llmplan.core.model import ModelSpec
from llmplan.core.params import count_params
from llmplan.core.result import Bottleneck, ComputeReport, Estimate, InferenceReport, MemoryBreakdown
from llmplan.core.system.settings import (
    CheckpointOptions,
    FailureRate,
    GridProfile,
    HostProfile,
    PipelineProfile,
    PowerProfile,
    StoragePreset,
    SystemSettings,
)
from llmplan.core.workload import InferenceSettings, ParallelLayout, Scenario, TrainingSettings

GIB = 2**30

# Llama 3.1 405B shape (config.json of meta-llama/Llama-3.1-405B).
LLAMA_405B = ModelSpec(
    name="llama-3.1-405b", vocab_size=128256, hidden_size=16384, num_layers=126, num_heads=128,
    num_kv_heads=8, head_dim=128, intermediate_size=53248, max_position_embeddings=131072,
)

TINY = ModelSpec(
    name="tiny", vocab_size=32000, hidden_size=1024, num_layers=4, num_heads=8, num_kv_heads=8, head_dim=128,
    intermediate_size=4096,
)

H100 = GpuSpec(
    id="h100", name="H100 SXM", vendor="nvidia", memory_bytes=81559 * 2**20, memory_bandwidth=3.35e12,
    peak_flops=PeakFlops(bf16=989e12), nvlink_bandwidth=450e9, pcie_bandwidth=64e9, tdp_watts=700.0,
)


def cluster(nodes: int, gpus_per_node: int = 8) -> ClusterSpec:
    net = NetworkSpec(id="ib", name="400G", bandwidth_per_gpu=50e9) if nodes > 1 else NetworkSpec()
    return ClusterSpec(gpu=H100, gpus_per_node=gpus_per_node, nodes=nodes, network=net)


def fig(v: float, unit: str = "B") -> Figure:
    return Figure.of(v, unit, "given")


def memory(total: float = 60 * GIB, capacity: float = 80 * GIB, host_ram: float = 0.0,
           nvme: float = 0.0) -> MemoryBreakdown:
    z = fig(0.0)
    return MemoryBreakdown(weights=fig(total), gradients=z, optimizer=z, master_weights=z, activations=z,
                           kv_cache=z, buffers=z, overhead=z, total=fig(total), capacity=fig(capacity),
                           host_ram=fig(host_ram), nvme=fig(nvme))


def training_estimate(model: ModelSpec, *, tokens_per_s: float, step_time_s: float, mfu: float,
                      bottleneck: str = "compute", **mem: float) -> Estimate:
    compute = ComputeReport(
        flops_per_step=fig(0, "FLOP"), hardware_flops_per_step=fig(0, "FLOP"), step_time_s=fig(step_time_s, "s"),
        compute_time_s=fig(step_time_s, "s"), bubble_fraction=fig(0, "1"), tokens_per_s=fig(tokens_per_s, "tokens/s"),
        mfu=fig(mfu, "1"), hfu=fig(mfu, "1"), training_days=fig(0, "s"), gpu_hours=fig(0, "1"), cost_usd=None,
    )
    return Estimate(params=count_params(model), memory=memory(**mem), compute=compute, communication=None,
                    inference=None, bottleneck=Bottleneck(bottleneck, f"The step is {bottleneck}-bound."))


def inference_estimate(model: ModelSpec, weight_bytes: float) -> Estimate:
    inf = InferenceReport(
        ttft_s=fig(0.1, "s"), tpot_s=fig(0.02, "s"), tokens_per_s=fig(50, "tokens/s"),
        tokens_per_s_per_user=fig(50, "tokens/s"), max_concurrency=fig(1, "1"), kv_bytes_per_token=fig(0),
        weight_bytes=fig(weight_bytes), prefill_bound="compute", decode_bound="memory bandwidth",
        cost_per_million_input=None, cost_per_million_output=None,
    )
    return Estimate(params=count_params(model), memory=memory(), compute=None, communication=None, inference=inf,
                    bottleneck=Bottleneck("memory bandwidth", "Decoding is memory-bandwidth-bound."))


STORE = StoragePreset(id="store", name="test store", kind="parallel-fs", read_per_node=10e9, write_per_node=5e9,
                      read_aggregate=100e9, write_aggregate=40e9, source="test numbers")


def settings(**over: object) -> SystemSettings:
    base: dict[str, object] = dict(
        storage=STORE,
        failures=FailureRate(id="f", name="test", per_gpu_hour=1e-5, source="test numbers"),
        power=PowerProfile(idle_fraction=0.1, saturation_mfu=0.4, node_overhead_watts_per_gpu=300.0, pue=1.5,
                           source="test numbers"),
        grid=GridProfile(price_per_kwh=0.1, kg_co2_per_kwh=0.4, source="test numbers"),
        pipeline=PipelineProfile(text_bytes_per_token=4.0, tokenizer_bytes_per_s_per_core=2e6, cpu_cores_per_node=100,
                                 pretokenized=True, source="test numbers"),
        host=HostProfile(dataloader_workers_per_gpu=2, ram_per_dataloader_worker=2 * GIB,
                         ram_per_gpu_process=16 * GIB, source="test numbers"),
        checkpoint=CheckpointOptions(restart_overhead_s=600.0, source="test numbers"),
    )
    base.update(over)
    return SystemSettings(**base)  # type: ignore[arg-type]


def scenario_405b(**training: object) -> Scenario:
    """Llama 3.1 405B on 16,384 H100s, TP8 PP16 DP128, bf16 AdamW (Llama 3 paper, Table 4, row 3)."""
    t = TrainingSettings(precision="bf16", optimizer="adamw", seq_len=8192, tokens=15.6e12, zero_stage=1,
                         **training)  # type: ignore[arg-type]
    return Scenario(model=LLAMA_405B, cluster=cluster(2048), workload="pretrain", training=t,
                    parallelism=ParallelLayout(tp=8, pp=16, dp=128))


def scenario_tiny(workload: str = "pretrain", nodes: int = 1, **training: object) -> Scenario:
    t = TrainingSettings(**training)  # type: ignore[arg-type]
    return Scenario(model=TINY, cluster=cluster(nodes), workload=workload, training=t,  # type: ignore[arg-type]
                    parallelism=ParallelLayout(tp=2, pp=2, dp=2 * nodes),
                    inference=InferenceSettings(weight_format="bf16"))
