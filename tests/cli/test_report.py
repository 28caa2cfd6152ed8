"""The --json object's documented keys and the human tables, from a hand-built Estimate.

The numbers here are arbitrary inputs to the formatter (not engine results): the test
checks that every documented key is present, SI-valued, and that the total is the sum
of the parts it reports.
"""

import json

from llmplan.cli.report import MEMORY_KEYS, estimate_json, estimate_text
from llmplan.core.explain import Figure
from llmplan.core.params import count_params
from llmplan.core.result import (
    Bottleneck,
    Collective,
    CommunicationReport,
    ComputeReport,
    Estimate,
    InferenceReport,
    MemoryBreakdown,
)
from llmplan.core.workload import Scenario

from ..core.search.specs import A100_80GB, cluster, gpt

GiB = 2**30


def F(v, unit="B"):
    return Figure.of(v, unit)


def _scenario(workload="pretrain"):
    return Scenario(model=gpt("tiny", 256, 4, 2), cluster=cluster(A100_80GB, 8, 1), workload=workload)


def _estimate(sc, inference=False):
    mem = MemoryBreakdown(weights=F(10 * GiB), gradients=F(5 * GiB), optimizer=F(20 * GiB),
                          master_weights=F(4 * GiB), activations=F(8 * GiB), kv_cache=F(0), buffers=F(1 * GiB),
                          overhead=F(2 * GiB), total=F(50 * GiB), capacity=F(80 * GiB), host_ram=F(0), nvme=F(0))
    compute = None if inference else ComputeReport(
        flops_per_step=F(1e15, "FLOP"), hardware_flops_per_step=F(1.3e15, "FLOP"), step_time_s=F(2.0, "s"),
        compute_time_s=F(1.5, "s"), bubble_fraction=F(0.1, "1"), tokens_per_s=F(50_000, "tokens/s"),
        mfu=F(0.45, "1"), hfu=F(0.5, "1"), training_days=F(3.0, "s"), gpu_hours=F(576, "h"), cost_usd=F(1152, "USD"))
    comm = None if inference else CommunicationReport(
        collectives=(Collective("DP gradient all-reduce", "dp", 8, "intra-node", F(1e9), F(0.01, "s"),
                                F(0.002, "s")),),
        intra_node_bytes=F(1e9), inter_node_bytes=F(0), intra_node_bandwidth_needed=F(5e11, "B/s"),
        inter_node_bandwidth_needed=F(0, "B/s"), exposed_time_s=F(0.002, "s"), bottleneck_link="intra-node")
    inf = None if not inference else InferenceReport(
        ttft_s=F(0.2, "s"), tpot_s=F(0.02, "s"), tokens_per_s=F(1600, "tokens/s"),
        tokens_per_s_per_user=F(50, "tokens/s"), max_concurrency=F(40, "1"), kv_bytes_per_token=F(131072),
        weight_bytes=F(16e9), prefill_bound="compute", decode_bound="memory bandwidth",
        cost_per_million_input=None, cost_per_million_output=F(0.5, "USD"))
    return Estimate(params=count_params(sc.model), memory=mem, compute=compute, communication=comm,
                    inference=inf, bottleneck=Bottleneck("compute", "matmuls dominate"), warnings=("w1",))


def test_training_json_has_every_documented_key():
    sc = _scenario()
    data = estimate_json(_estimate(sc), sc, "auto")
    json.dumps(data)  # serialisable
    assert set(data["params"]) == {"total", "active", "embedding"}
    assert set(MEMORY_KEYS) | {"total"} == set(data["memory_per_gpu"])
    assert data["memory_per_gpu"]["total"] == sum(data["memory_per_gpu"][k] for k in MEMORY_KEYS) == 50 * GiB
    assert data["gpu_memory_bytes"] == 80 * GiB and data["fits"] is True
    assert data["verdict"]["tier"] == "fits" and data["verdict"]["offload_cost"] is None  # all on the GPU
    assert {"flops_per_step", "step_time_s", "tokens_per_s", "mfu"} <= set(data["compute"])
    assert data["communication"]["collectives"][0]["bytes_per_step"] == 1e9
    assert data["inference"] is None and data["layout"]["chosen_by"] == "auto"
    assert data["bottleneck"]["kind"] == "compute" and data["warnings"] == ["w1"]


def test_inference_json_and_text():
    sc = _scenario("inference")
    data = estimate_json(_estimate(sc, inference=True), sc)
    assert set(data["inference"]) >= {"ttft_s", "tpot_s", "tokens_per_s", "max_concurrency"}
    assert data["compute"] is None
    text = estimate_text(data)
    assert "time per output token" in text and "20 ms" in text


def test_text_labels_units_in_gib_or_gb():
    sc = _scenario()
    data = estimate_json(_estimate(sc), sc)
    text = estimate_text(data)
    assert "FITS: 50.00 GiB of 80.00 GiB per GPU" in text
    assert "optimizer" in text and "20.00 GiB" in text
    assert "53.69 GB of 85.90 GB" in estimate_text(data, decimal=True)


def test_text_prints_gpu_hours_in_the_app_style():
    """Issue 18 item 7: GPU-hours read as people budget them, the same text as the app's results table
    (``core.present.gpu_hours``), not a bare "576"."""
    sc = _scenario()
    text = estimate_text(estimate_json(_estimate(sc), sc))
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("GPU-hours"))
    assert line.split()[-2:] == ["576", "GPU-hours"], line


def test_one_node_prints_no_inter_node_bandwidth_as_the_app():
    """trial33: 8B on 2-8 GPUs of one node printed "inter-node bandwidth to hide it  0 B/s", a requirement that is
    none (the app leaves the row out when no byte crosses nodes: gui/report.py); a second node brings it back."""
    import dataclasses

    sc = _scenario()
    est = _estimate(sc)
    assert "inter-node bandwidth" not in estimate_text(estimate_json(est, sc))
    comm = dataclasses.replace(est.communication, inter_node_bytes=F(2e9), inter_node_bandwidth_needed=F(1e9, "B/s"))
    two = dataclasses.replace(est, communication=comm)
    line = next(x for x in estimate_text(estimate_json(two, sc)).splitlines() if "inter-node bandwidth" in x)
    assert line.split()[-2:] == ["1.0", "GB/s"]
