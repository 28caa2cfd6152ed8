"""``system_report(scenario, estimate, settings) -> SystemReport``: beyond the GPU.

Reads what the GPU engine already computed (parameters, tokens/s, step time, MFU, host
RAM and NVMe for offload, its bottleneck) from the ``Estimate`` and adds checkpoints,
failures and goodput, the data pipeline, the host, power and energy, the inference cold
start and one bottleneck ranking over all of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.explain import Figure
from llmplan.core.result import Bottleneck, Estimate
from llmplan.core.system.bottleneck import Finding, Ranking, rank_bottlenecks
from llmplan.core.system.checkpoint import CheckpointIO, CheckpointSize, checkpoint_io, checkpoint_size
from llmplan.core.system.cold_start import ColdStart, cold_start
from llmplan.core.system.goodput import Goodput, goodput_report
from llmplan.core.system.host import HostReport, host_report
from llmplan.core.system.pipeline import DataPipeline, data_pipeline
from llmplan.core.system.power import PowerReport, power_report
from llmplan.core.system.settings import SystemSettings
from llmplan.core.workload import Scenario

_SIMPLE_FORMATS = ("fp32", "bf16", "fp16", "fp8", "int8")


@dataclass(frozen=True, slots=True)
class SystemReport:
    checkpoint: CheckpointSize
    checkpoint_io: CheckpointIO
    goodput: Goodput | None  # training only
    data: DataPipeline | None  # training only
    host: HostReport | None  # training only
    power: PowerReport
    cold_start: ColdStart | None  # inference only
    bottleneck: Bottleneck  # the dominant limit over GPU and system
    ranking: tuple[Finding, ...]
    warnings: tuple[str, ...] = ()

    @property
    def effective_days(self) -> float | None:
        return None if self.goodput is None else self.goodput.wall_time_s.value / 86400.0


@dataclass(frozen=True, slots=True)
class Evaluation:
    """What a plan evaluates to: the GPU engine's ``Estimate`` and, beside it, the ``SystemReport``.

    The engine's result is never patched afterwards: it keeps its own (GPU-only) bottleneck, and this
    pair answers ``bottleneck`` with the ranking over GPU and system together (issue: "the bottleneck
    statement ranges over all of these"). The GPU figures read through unchanged, so a front end shows
    ``evaluation.memory`` as it would ``estimate.memory``.
    """

    estimate: Estimate
    system: SystemReport

    @property
    def bottleneck(self) -> Bottleneck:
        return self.system.bottleneck

    # The GPU figures read through, one property each (duplicates tool: boilerplate on purpose, so a
    # reader and a type checker see exactly which names an Evaluation answers like an Estimate).
    @property
    def params(self):
        return self.estimate.params

    @property
    def memory(self):
        return self.estimate.memory

    @property
    def compute(self):
        return self.estimate.compute

    @property
    def communication(self):
        return self.estimate.communication

    @property
    def inference(self):
        return self.estimate.inference

    @property
    def warnings(self) -> tuple[str, ...]:
        """The engine's warnings (the system's are ``system.warnings``)."""
        return self.estimate.warnings

    @property
    def fits(self) -> bool:
        return self.estimate.fits


def evaluation(scenario: Scenario, estimate: Estimate, settings: SystemSettings) -> Evaluation:
    """The engine's estimate with its system report beside it."""
    return Evaluation(estimate, system_report(scenario, estimate, settings))


def system_report(scenario: Scenario, estimate: Estimate, settings: SystemSettings) -> SystemReport:
    if scenario.workload == "inference":
        return _inference(scenario, estimate, settings)
    return _training(scenario, estimate, settings)


def _training(scenario: Scenario, estimate: Estimate, s: SystemSettings) -> SystemReport:
    cluster = scenario.cluster
    gpus, nodes = cluster.total_gpus, cluster.nodes
    pcie = cluster.gpu.pcie_bandwidth
    size = checkpoint_size(scenario, estimate.params)
    io = checkpoint_io(size, s.storage, nodes, async_save=s.checkpoint.async_save, pcie_bandwidth=pcie)
    compute = estimate.compute
    tokens_per_s = compute.tokens_per_s.value if compute else 0.0
    step_s = compute.step_time_s.value if compute else 0.0
    mfu = compute.mfu.value if compute else 0.0
    ideal_s = scenario.training.tokens / tokens_per_s if tokens_per_s > 0 else float("inf")
    restart_s = s.checkpoint.restart_overhead_s + io.read_s.value
    interval = s.checkpoint.interval_s
    warnings: list[str] = []
    if interval is not None and interval < step_s:  # 1 ns read "goodput 0.0 %, 180,357,738 years, 41,966,487 GWh"
        warnings.append(f"The checkpoint interval (system.interval_s = {interval:g} s) is shorter than one training "
                        f"step ({step_s:.3g} s); checkpoints are saved between steps, so one step is used. Set at "
                        "least one step, or leave it empty for the Young/Daly interval.")
        interval = step_s
    good = goodput_report(ideal_time_s=ideal_s, checkpoint_s=io.write_s.value, restart_s=restart_s,
                          failures_per_gpu_hour=s.failures.per_gpu_hour, gpus=gpus,
                          interval_s=interval, failure_source=s.failures.source)
    data = data_pipeline(tokens_per_s, scenario.model.vocab_size, nodes, s.pipeline, s.data_store)
    pinned = size.per_gpu.value if s.checkpoint.async_save else 0.0
    host = host_report(scenario, host_ram=estimate.memory.host_ram.value, nvme=estimate.memory.nvme.value,
                       trainable_params=int(size.trainable_params.value), step_time_s=step_s, profile=s.host,
                       pinned_per_gpu=pinned, offload_storage=s.offload_storage)
    power = power_report(tdp=cluster.gpu.tdp_watts, mfu=mfu, gpus=gpus, wall_time_s=good.wall_time_s.value,
                         profile=s.power, grid=s.grid)
    if tokens_per_s <= 0:
        warnings.append("The estimate has no training throughput, so time, goodput and energy are unbounded; "
                        "check that the plan's workload is pretrain or finetune.")
    if good.goodput.value <= 0:
        warnings.append("Failures come faster than the job can checkpoint and restart: goodput is 0. Use fewer "
                        "GPUs, faster storage or asynchronous checkpoints.")
    if s.checkpoint.async_save:
        sync_write = size.total.value / io.write_bandwidth.value
        if sync_write > good.interval_s.value:
            warnings.append(f"The background checkpoint write takes {sync_write:.0f} s, longer than the "
                            f"{good.interval_s.value:.0f} s interval: saves will queue up; use faster storage.")
    findings = (
        Finding("storage", data.storage_load.value,
                f"The data loader needs {data.read_bandwidth_needed.value / 1e9:.3g} GB/s from storage, which "
                f"serves {data.read_bandwidth_available.value / 1e9:.3g} GB/s."),
        Finding("cpu", data.cpu_load.value,
                f"Tokenising on the fly needs {data.tokenizer_cores_per_node.value:.1f} CPU cores per node of "
                f"{s.pipeline.cpu_cores_per_node}."),
        Finding("storage", host.nvme_load.value,
                f"NVMe offload reads and writes {host.nvme_bytes_per_step.value / 1e9:.3g} GB per node per step, "
                f"{host.nvme_time_per_step.value:.3g} s against a {step_s:.3g} s step."),
        Finding("pcie", host.pcie_load.value,
                f"Offload moves {host.pcie_bytes_per_step.value / 1e9:.3g} GB per GPU per step over PCIe, "
                f"{host.pcie_time_per_step.value:.3g} s against a {step_s:.3g} s step."),
    )
    ranking = _rank(estimate, findings)
    return SystemReport(size, io, good, data, host, power, None, ranking.dominant, ranking.ranked, tuple(warnings))


def _inference(scenario: Scenario, estimate: Estimate, s: SystemSettings) -> SystemReport:
    cluster = scenario.cluster
    size = checkpoint_size(scenario, estimate.params)
    weight_bytes = size.total.value
    if scenario.inference.weight_format not in _SIMPLE_FORMATS and estimate.inference is not None:
        weight_bytes = estimate.inference.weight_bytes.value  # the engine's exact size of quantised weights
        par, gpus, params = scenario.parallelism, max(1, cluster.total_gpus), estimate.params.total
        size = CheckpointSize(
            total=Figure.of(weight_bytes, "B", "the engine's inference.weight_bytes", {}, "llama.cpp"),
            per_model_shard=Figure.of(weight_bytes / (par.tp * par.pp), "B", "total / (tp × pp)",
                                      {"total": weight_bytes}, "megatron-2021"),
            per_gpu=Figure.of(weight_bytes / gpus, "B", "total / GPUs", {"total": weight_bytes, "gpus": gpus},
                              "assumption"),
            bytes_per_param=Figure.of(weight_bytes / params if params else 0.0, "B",
                                      "quantised weight bytes / parameters", {"weight_bytes": weight_bytes,
                                                                             "params": params}, "checkpoint"),
            trainable_params=size.trainable_params)
    io = checkpoint_io(size, s.storage, cluster.nodes)
    start = cold_start(weight_bytes=weight_bytes, nodes=cluster.nodes, gpus=cluster.total_gpus,
                       pcie_bandwidth=cluster.gpu.pcie_bandwidth, storage=s.storage)
    # Serving power is reported at full load for one hour: energy scales with hours served.
    power = power_report(tdp=cluster.gpu.tdp_watts, mfu=s.power.saturation_mfu, gpus=cluster.total_gpus,
                         wall_time_s=3600.0, profile=s.power, grid=s.grid)
    ranking = _rank(estimate, ())
    return SystemReport(size, io, None, None, None, power, start, ranking.dominant, ranking.ranked)


def _rank(estimate: Estimate, findings: tuple[Finding, ...]) -> Ranking:
    mem = estimate.memory
    load = mem.total.value / mem.capacity.value if mem.capacity.value > 0 else 0.0
    return rank_bottlenecks(estimate.bottleneck, findings, memory_load=load)
