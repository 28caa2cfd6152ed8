"""Issue 15: compute slowed by overlapped collectives. Since clock30 (2026-11-28) the engine charges it: a hidden
collective costs ``comms.OVERLAP_SLOWDOWN`` = 0.189 of its hidden time (Lee et al. 2025's mean, below). These
tests were first written when the term was not in the model, to ask whether it could explain why compute-bound
H100 runs are slower than the engine's terms add up to (Megatron-Core's 1.7B and 7.1B rows, Llama 3's Table 4):
it could not, and now that it is charged they are still 21-32% fast. They pin what the term adds to each row, and
what the rows would read at the bounds of the measurement (docs/training.md, "Compute under an overlapped
collective").

The mechanism. A collective that runs beside compute takes SMs from it: NCCL runs one thread block (CTA) per
channel, each on an SM the GEMMs then share or wait for. Transformer Engine's tensor-parallel overlap reserves 16
SMs for its "pipeline" and "bulk" overlaps and runs their GEMMs on the rest (NVIDIA/TransformerEngine at d0067d0,
2026-08-22: transformer_engine/pytorch/module/base.py default ub config ``num_sm`` 16 and ``set_sm_margin``;
common/comm_gemm_overlap/comm_gemm_overlap.cpp ``_math_sms = sm_count - num_comm_sm``); both also compete for
memory bandwidth. Measured: Lee et al., "Characterizing Compute-Communication Overlap in GPU-Accelerated
Distributed Deep Learning" (arXiv:2507.03114, July 2025), GPT and LLaMA layers on 4 × A100, H100, MI250 and
MI210: compute runs 18.9% slower on average under overlap, 40.0% at most.

Its size is bounded by how long anything overlaps: a slowdown f of the compute that runs beside a collective adds
f × (the collective's hidden time) to the step (``comms.exposed``: the late part, + f × the rest). The last tests
compare the engine's 0.189 with the SM share the engine's own NCCL channel counts imply (f = CTAs / SMs), which is
smaller on every row checked: the charged term is the generous one. The tolerance of each assertion is stated
where it is made; the rows' errors are the ones their own test files pin.
"""

from __future__ import annotations

import math

import pytest

from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.engine import estimate
from llmplan.core.training import comms
from llmplan.core.training.comms import OVERLAP_SLOWDOWN
from llmplan.core.training.nccl_runtime import enqueue_channels, runtime_channels
from llmplan.core.training.placement import channels, span, topology

from . import test_megatron_core_h100 as mc
from . import test_published_runs as pr
from .test_llama3_405b import TABLE4, table4_run

MEAN_SLOWDOWN = 0.189  # Lee et al. 2025 (arXiv:2507.03114), abstract: mean compute slowdown under overlap
H100_SMS = 132  # NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): H100 SXM5, 132 SMs


def hidden_s(e) -> float:
    """Seconds of communication hidden behind compute: each collective's time less its late part. The engine's
    exposed time is late + OVERLAP_SLOWDOWN × hidden (``comms.exposed``), so hidden = (time − exposed) / (1 − 0.189)."""
    return sum((c.time_s.value - c.exposed_s.value) / (1 - OVERLAP_SLOWDOWN) for c in e.communication.collectives)


def error_at_slowdown(err: float, e, f: float) -> float:
    """The row's error if compute beside a hidden collective ran (1 − f) as fast instead of the engine's
    (1 − 0.189): the step changes by (f − 0.189) × hidden time."""
    step = e.compute.step_time_s.value
    return (1 + err) * step / (step + (f - OVERLAP_SLOWDOWN) * hidden_s(e)) - 1


def without_the_term(build):
    """The row's estimate with ``OVERLAP_SLOWDOWN`` set to 0 (the engine before clock30's term), the collective
    caches emptied before and after so neither reading leaks into the other."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(comms, "OVERLAP_SLOWDOWN", 0.0)
        comms._COLLECTIVES.clear()
        comms._collectives.cache_clear()
        try:
            return estimate(build())
        finally:
            comms._COLLECTIVES.clear()
            comms._collectives.cache_clear()


def _mc_error(label: str):
    row = mc.BY_LABEL[label]
    return lambda e: e.compute.flops_per_step.value / e.compute.step_time_s.value / row.gpus / 1e12 / row.tflops - 1


def _llama_error(row: str):
    return lambda e: e.compute.mfu.value / TABLE4[row][5] - 1


SCENARIOS = {  # row: (scenario, error of an estimate of it, as its own test file counts it)
    **{f"megatron-core {label}": ((lambda label=label: mc.run(mc.BY_LABEL[label])), _mc_error(label))
       for label in ("1.7B", "7.1B", "32B", "70B")},
    "llama3 405B 8K GPUs": (lambda: table4_run("8k-gpus"), _llama_error("8k-gpus")),
    "llama3 405B 16K GPUs": (lambda: table4_run("16k-gpus"), _llama_error("16k-gpus")),
}
ROWS = ("megatron-core 1.7B", "llama3 405B 8K GPUs", "llama3 405B 16K GPUs")  # the compute-bound rows
# row: (points the term takes off the error, hidden share of the step), recorded 2026-11-28 after clock30
TERM = {"megatron-core 1.7B": (0.031, 0.121), "llama3 405B 8K GPUs": (0.023, 0.095),
        "llama3 405B 16K GPUs": (0.036, 0.150)}


def test_the_term_is_charged_on_every_hidden_collective():
    """Each collective's exposed time is its late part (unhidden calls + what outlasts its window) + 0.189 × the
    rest, from the figure's own inputs (``comms.exposed``), and the 0.189 is Lee et al.'s mean. Tolerance 1e-9: the
    same formula, apart from the engine."""
    assert OVERLAP_SLOWDOWN == MEAN_SLOWDOWN
    for row in ROWS:
        for col in estimate(SCENARIOS[row][0]()).communication.collectives:
            i = col.exposed_s.inputs
            if not col.hides_behind:
                assert col.exposed_s.value == pytest.approx(col.time_s.value, rel=1e-9)
                continue
            t, head = i["time_s"], i["unhidden_s"]
            late = head + max(0.0, t - head - i["overlappable_s"])
            assert col.exposed_s.value == pytest.approx(late + OVERLAP_SLOWDOWN * (t - late), rel=1e-9), col.name


@pytest.mark.parametrize("row", ROWS)
def test_the_measured_mean_slowdown_leaves_the_compute_bound_rows_fast(row):
    """What the term adds (recorded 2026-11-28 after clock30): hidden communication is 12.1% (1.7B), 9.5% (Llama 3
    8K GPUs) and 15.0% (16K GPUs) of the step, and the term takes 3.1, 2.3 and 3.6 points off their errors (+35.5% →
    +32.4%, +26.1% → +23.8%, +24.3% → +20.7%). Before clock30 this test computed the same bound by hand, the term not
    charged: at Lee et al.'s mean the rows would have read at least +23.4%, +17.2% and +14.4%. Asserted: under 16% of
    the step overlaps, the term's points within 0.5 of those recorded, and the error stays above +12% (issue 15's
    target is 10%)."""
    build, err = SCENARIOS[row]
    e, e0 = estimate(build()), without_the_term(build)
    share = hidden_s(e) / e.compute.step_time_s.value
    points, recorded_share = TERM[row]
    assert share < 0.16 and share == pytest.approx(recorded_share, abs=0.005), f"{row}: {share:.1%} of the step hidden"
    assert err(e0) - err(e) == pytest.approx(points, abs=0.005)
    assert err(e) > 0.12


def test_even_a_stopped_gpu_under_every_collective_leaves_the_1_7b_row_off():
    """The 1.7B row (DP48 only): its gradient reduce-scatter and weight all-gather hide 0.041 s of a 0.341 s step.
    If compute stopped entirely while they ran (f = 1, not the engine's 0.189) the row would still read +20.6%; at
    Lee et al.'s largest measured slowdown (0.40) +29.1%. Asserted above +19% and above +27% (recorded 2026-11-28
    after clock30; before it, +13.1% and +20.6% of a 0.358 s step, asserted above +11% and +19%)."""
    e = mc._estimate("1.7B")
    err = mc.error("1.7B")
    assert error_at_slowdown(err, e, 1.0) > 0.19
    assert error_at_slowdown(err, e, 0.40) > 0.27


def test_nccls_sm_share_on_these_fabrics_is_below_the_measured_mean():
    """The SM share the engine's own NCCL model implies: one CTA per runtime channel, twice the ring graph's
    (``nccl_runtime.runtime_channels``). The 1.7B row's DP ring (8 ranks on each of 6 DGX H100 nodes, 8 NICs)
    runs 16 CTAs, 12.1% of 132 SMs; Llama 3's DP rings (one rank per node) 4 CTAs, 3.0%. Both are below the 18.9%
    measured mean on 4-GPU NVLink nodes, where NCCL runs more channels (24 on an HGX A100 node: NVIDIA/nccl-tests
    issue #100's log), so the bound above is the generous one. Exact counts."""
    cat = load_hardware_catalog()
    eff = cat.efficiency_for("nvidia-h100-sxm-80gb")
    dgx = topology(cat.cluster_from(None, nodes=6, node_id="dgx-h100"), eff)
    dp_1_7b = span(48, 1, dgx)
    assert (dp_1_7b.per_node, dp_1_7b.nodes) == (8, 6)
    assert runtime_channels(dp_1_7b.channels) == 16
    assert runtime_channels(dp_1_7b.channels) / H100_SMS == pytest.approx(0.121, abs=5e-4)
    llama3 = pr._run("llama3-405b-16k-gpus-mfu")
    dp = next(c for c in llama3.communication.collectives if c.name == "DP gradient reduce-scatter")
    assert dp.span == "128 nodes × 1 GPU"
    sc = table4_run("16k-gpus")
    one_per_node = span(128, 8, topology(sc.cluster, sc.efficiency))  # DP stride: TP 8
    assert one_per_node.per_node == 1 and runtime_channels(one_per_node.channels) == 4
    assert runtime_channels(dp_1_7b.channels) / H100_SMS < MEAN_SLOWDOWN


# --- The doc table's "SM share from channels" column: f = CTAs of each hidden collective / the GPU's SMs ----------
SMS = {"a100": 108, "h100": 132}  # NVIDIA A100 (2020) and H100 (2022) architecture whitepapers: SXM parts
TE_COMM_SMS = 16  # Transformer Engine's default num_sm for its pipeline and bulk overlaps (module doc)
P2P_NET_GBPS_PER_CHANNEL = 14  # NVIDIA/nccl src/graph/paths.cc at 5067397: NCCL_P2P_PER_CHANNEL_NET_BW default


def collective_ctas(col, cluster, topo) -> int:
    """Thread blocks a hidden collective keeps on the GPU while it runs.

    - Transformer Engine's TP overlap: 16 SMs (its pipeline and bulk overlaps; the ring exchanges use the copy
      engines, so this is the larger of the two).
    - A p2p send and receive across nodes (pipeline): one channel per NIC, more at 14 GB/s each, rounded up to a
      power of two (``ncclTopoGetNchannels``, ``ncclTopoComputeP2pChannels``), for each of the two peers.
    - A ring across nodes: the runtime channels (twice the ring graph's, ``placement.channels``) the enqueue path
      keeps for the message (``nccl_runtime.enqueue_channels``).
    Other collectives (rings inside a node, all-to-all) do not hide in the rows checked here."""
    if col.group == "tp" and "Transformer Engine" in col.hides_behind:
        return TE_COMM_SMS
    if col.nodes <= 1 or col.algorithm.startswith("nvls") or col.group == "ep":
        raise ValueError(f"{col.name}: no channel count for this kind of call here")
    if col.algorithm.startswith("p2p"):
        per_peer = max(1, math.ceil(cluster.network.bandwidth_per_gpu / 1e9 / P2P_NET_GBPS_PER_CHANNEL))
        return 2 * (1 << (per_peer - 1).bit_length())
    per_node = int(col.span.split("×")[1].split()[0])
    ch = runtime_channels(channels(per_node, topo.node_net * per_node / topo.gpus_per_node, topo))
    protocol = ("LL", "LL128", "Simple").index(col.algorithm.split("/")[1])
    return enqueue_channels(col.message_bytes, ch, True, protocol, col.group_size)


def contention_s(e, sc) -> float:
    """Seconds a step would grow if compute ran (1 − f) as fast beside each hidden collective, f = its CTAs / SMs:
    max(0, min(f·T, W − (1 − f)·T)) for T seconds of the collective that can hide behind W seconds of compute."""
    topo = topology(sc.cluster, sc.efficiency)
    sms = SMS["h100" if "h100" in sc.cluster.gpu.id else "a100"]
    extra = 0.0
    for col in e.communication.collectives:
        if not col.hides_behind:
            continue
        inputs = col.exposed_s.inputs
        t = max(0.0, inputs["time_s"] - inputs["unhidden_s"])
        f = collective_ctas(col, sc.cluster, topo) / sms
        extra += max(0.0, min(f * t, inputs["overlappable_s"] - (1 - f) * t))
    return extra


def sm_share_error(e, sc, err: float) -> float:
    step = e.compute.step_time_s.value
    return (1 + err) * step / (step + contention_s(e, sc)) - 1


# the doc table's reading: f = CTAs / SMs in place of the engine's 0.189, recorded 2026-11-28 after ops34's kernels
# outside the modules (after ew31: +34.0, +29.1, −25.0, −2.7, +25.7, +23.7%; after clock30: +33.5, +28.8, −25.1,
# −2.7, +25.6, +23.6%; before it, with no term charged, +24.4, +20.4, −27.2, −7.1, +18.7, +16.9%)
SM_SHARE = {"megatron-core 1.7B": 0.324, "megatron-core 7.1B": 0.281, "megatron-core 32B": -0.252,
            "megatron-core 70B": -0.029, "llama3 405B 8K GPUs": 0.235, "llama3 405B 16K GPUs": 0.216}


@pytest.mark.parametrize("row", sorted(SM_SHARE))
def test_the_sm_share_column_of_the_doc_table(row):
    """docs/training.md's table, "SM share from channels": each row's error if compute under a hidden collective ran
    at (1 − CTAs / SMs) instead of the engine's (1 − 0.189): the estimate without the term plus ``contention_s``.
    Within 0.2 points of the recorded reading. On every row it is faster than the engine's reading (the channels'
    SM share is under 0.189 on these fabrics), and the compute-bound rows stay above +12%."""
    build, err = SCENARIOS[row]
    e0 = without_the_term(build)
    got = sm_share_error(e0, build(), err(e0))
    assert got == pytest.approx(SM_SHARE[row], abs=0.002)
    assert got > err(estimate(build()))
    if SM_SHARE[row] > 0:
        assert got > 0.12
