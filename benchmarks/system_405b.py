"""Print the system report of Llama 3.1 405B on 16,384 H100s (the figures in docs/system.md).

Inputs: the Llama 3.1 405B shape; TP8 PP16 DP128, bf16 AdamW, 15.6T tokens; 400 TFLOP/s
per GPU and 41% MFU (Llama 3 paper, arXiv:2407.21783, Table 4), so tokens/s =
GPUs × 400e12 / (6 × N). The GPU engine is not called: its numbers are given here, so
the script shows what the system layer adds. Run: ``.venv/bin/python benchmarks/system_405b.py``.
"""

from __future__ import annotations

from llmplan.catalog.system_presets import default_system_settings, load_system_catalog
from llmplan.core.explain import Figure
from llmplan.core.hardware import ClusterSpec, GpuSpec, NetworkSpec, PeakFlops
from llmplan.core.model import ModelSpec
from llmplan.core.params import count_params
from llmplan.core.result import Bottleneck, ComputeReport, Estimate, MemoryBreakdown
from llmplan.core.system import system_report
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings

MODEL = ModelSpec(name="llama-3.1-405b", vocab_size=128256, hidden_size=16384, num_layers=126, num_heads=128,
                  num_kv_heads=8, head_dim=128, intermediate_size=53248, max_position_embeddings=131072)
GPU = GpuSpec(id="h100", name="H100 SXM", vendor="nvidia", memory_bytes=81559 * 2**20, memory_bandwidth=3.35e12,
              peak_flops=PeakFlops(bf16=989e12), nvlink_bandwidth=450e9, pcie_bandwidth=64e9, tdp_watts=700.0)


def _f(v: float, unit: str = "B") -> Figure:
    return Figure.of(v, unit, "given")


def main() -> None:
    n = count_params(MODEL).total
    gpus = 16384
    tps = gpus * 400e12 / (6 * n)
    scenario = Scenario(
        model=MODEL, workload="pretrain",
        cluster=ClusterSpec(gpu=GPU, gpus_per_node=8, nodes=2048,
                            network=NetworkSpec(id="roce", name="400G RoCE", bandwidth_per_gpu=50e9)),
        training=TrainingSettings(precision="bf16", optimizer="adamw", seq_len=8192, tokens=15.6e12),
        parallelism=ParallelLayout(tp=8, pp=16, dp=128),
    )
    z = _f(0)
    mem = MemoryBreakdown(z, z, z, z, z, z, z, z, _f(70e9), _f(80e9), z, z)
    comp = ComputeReport(z, z, _f(16 * 2**20 / tps, "s"), z, z, _f(tps, "tokens/s"), _f(0.41, "1"), z, z, z, None)
    est = Estimate(count_params(MODEL), mem, comp, None, None, Bottleneck("compute", "The step is compute-bound."))
    print(f"Llama 3.1 405B: {n:,} params, {gpus:,} H100, TP8 PP16 DP128, {tps / 1e6:.3f} M tokens/s")
    cat = load_system_catalog()
    r = system_report(scenario, est, default_system_settings(catalog=cat))
    c, g, p = r.checkpoint, r.goodput, r.power
    print(f"checkpoint: {c.total.value / 1e12:.3f} TB ({c.bytes_per_param.value:.0f} B/param), "
          f"{c.per_model_shard.value / 1e9:.1f} GB per TP×PP shard, {c.per_gpu.value / 1e6:.0f} MB per GPU")
    print(f"write {r.checkpoint_io.write_s.value:.2f} s, read {r.checkpoint_io.read_s.value:.2f} s "
          f"on {default_system_settings(catalog=cat).storage.name}")
    print(f"MTBF {g.mtbf_s.value / 3600:.2f} h, Young/Daly interval {g.interval_s.value:.0f} s, "
          f"goodput {g.goodput.value:.4f}, failures {g.failures.value:.0f}")
    print(f"ideal {g.ideal_time_s.value / 86400:.2f} days, effective {g.wall_time_s.value / 86400:.2f} days, "
          f"{gpus * g.wall_time_s.value / 3600 / 1e6:.2f} M GPU-hours (model card: 30.84 M)")
    print(f"power: GPU {p.gpu_watts.value:.0f} W, IT {p.it_watts.value / 1e6:.2f} MW, "
          f"facility {p.facility_watts.value / 1e6:.2f} MW")
    print(f"energy {p.energy_kwh.value / 1e6:.2f} GWh, cost ${p.cost_usd.value / 1e6:.2f} M, "
          f"CO2 {p.co2_kg.value / 1e3:,.0f} t")
    print(f"data: {r.data.read_bandwidth_needed.value / 1e6:.1f} MB/s of token ids "
          f"({r.data.bytes_per_token.value:.0f} B/token), storage load {r.data.storage_load.value:.2e}")
    print(f"bottleneck: {r.bottleneck.kind}: {r.bottleneck.statement}")
    print("\nby storage preset (checkpoint write s, interval s, goodput, effective days):")
    for sid in cat.storage:
        rr = system_report(scenario, est, default_system_settings(storage=sid, catalog=cat))
        gg = rr.goodput
        print(f"  {sid:22s} {rr.checkpoint_io.write_s.value:9.1f} {gg.interval_s.value:8.0f} "
              f"{gg.goodput.value:8.4f} {gg.wall_time_s.value / 86400:9.2f}")
    print("\nby failure preset (MTBF h, interval s, goodput, effective days):")
    for fid in cat.failures:
        gg = system_report(scenario, est, default_system_settings(failures=fid, catalog=cat)).goodput
        print(f"  {fid:22s} {gg.mtbf_s.value / 3600:6.2f} {gg.interval_s.value:8.0f} {gg.goodput.value:8.4f} "
              f"{gg.wall_time_s.value / 86400:9.2f}")
    print("\non-the-fly tokenisation, 8 GPUs at 400 TFLOP/s each (tokens/s per node, CPU cores needed):")
    for name, params in (("125M", 125e6), ("1B", 1e9), ("8B", 8e9)):
        node_tps = 8 * 400e12 / (6 * params)
        cores = node_tps * cat.tables["pipeline"]["text_bytes_per_token"] / cat.tables["pipeline"][
            "tokenizer_bytes_per_s_per_core"]
        print(f"  {name:5s} {node_tps:12,.0f} {cores:6.2f}")


if __name__ == "__main__":
    main()
