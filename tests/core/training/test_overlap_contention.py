"""Issue 15: can compute slowed by overlapped collectives explain why compute-bound H100 runs are 17–26% slower
than the engine's terms add up to (Megatron-Core's 1.7B and 7.1B rows, Llama 3's Table 4; 15–18% before the price
audit of kern28)? Checked, and no: these tests pin the numbers behind that answer
(docs/training.md, "Compute under an overlapped collective").

The mechanism is real. A collective that runs beside compute takes SMs from it: NCCL runs one thread block
(CTA) per channel, each on an SM the GEMMs then share or wait for. Transformer Engine's
tensor-parallel overlap reserves 16 SMs for its "pipeline" and "bulk" overlaps and runs their GEMMs on the rest
(NVIDIA/TransformerEngine at d0067d0, 2026-08-22: transformer_engine/pytorch/module/base.py default ub config
``num_sm`` 16 and ``set_sm_margin``; common/comm_gemm_overlap/comm_gemm_overlap.cpp ``_math_sms = sm_count -
num_comm_sm``). Measured: Lee et al., "Characterizing Compute-Communication Overlap in GPU-Accelerated
Distributed Deep Learning" (arXiv:2507.03114, July 2025), GPT and LLaMA layers on 4 × A100, H100, MI250 and
MI210: compute runs 18.9% slower on average under overlap, 40.0% at most.

Its size is bounded by how long anything overlaps: a slowdown f of the compute that runs beside a collective
adds at most f × (the collective's hidden time) to the step (exactly that when the collective fits inside its
window, less when it does not). On the rows the issue names, little of the step runs beside a collective, so
even the measured mean leaves them more than 12% fast. The last tests compute the SM-share column of the doc's
table from the engine's own NCCL channel counts. The tolerance of each assertion is stated
where it is made; the rows' errors are the ones their own test files pin.
"""

from __future__ import annotations

import math

import pytest

from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.training.nccl_runtime import enqueue_channels, runtime_channels
from llmplan.core.training.placement import channels, span, topology

from . import test_megatron_core_h100 as mc
from . import test_published_runs as pr
from .test_llama3_405b import table4_run

MEAN_SLOWDOWN = 0.189  # Lee et al. 2025 (arXiv:2507.03114), abstract: mean compute slowdown under overlap
H100_SMS = 132  # NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): H100 SXM5, 132 SMs


def hidden_share(e) -> float:
    """Seconds of communication hidden behind compute (each collective's time less its exposed part) over the
    step: the longest stretch of the step that can run beside a collective, summed over collectives."""
    hidden = sum(c.time_s.value - c.exposed_s.value for c in e.communication.collectives)
    return hidden / e.compute.step_time_s.value


def error_with_contention(err: float, share: float, f: float) -> float:
    """The row's error if compute ran (1 − f) as fast whenever a collective is hidden behind it: the step grows by
    at most f × hidden time, so this is the lowest the error could go."""
    return (1 + err) / (1 + f * share) - 1


ROWS = {  # row: (estimate, its error as its own test pins it)
    "megatron-core 1.7B": (lambda: mc._estimate("1.7B"), lambda: mc.error("1.7B")),
    "llama3 405B 8K GPUs": (lambda: pr._run("llama3-405b-8k-gpus-mfu"),
                            lambda: pr.ours("llama3-405b-8k-gpus-mfu") / 0.43 - 1),
    "llama3 405B 16K GPUs": (lambda: pr._run("llama3-405b-16k-gpus-mfu"),
                             lambda: pr.ours("llama3-405b-16k-gpus-mfu") / 0.41 - 1),
}


@pytest.mark.parametrize("row", sorted(ROWS))
def test_the_measured_mean_slowdown_leaves_the_compute_bound_rows_fast(row):
    """Recorded 2026-11-27 (the price audit and the head and loss on the last pipeline stage combined; moved when
    kern28 + head28 + eager28 combined, from 10.5%, 9.0%, 14.5% hidden and +12.3%, +16.2%, +13.4%): hidden
    communication is 11.5% (1.7B), 9.1% (Llama 3 8K GPUs) and 14.6% (16K GPUs) of the step; at Lee et al.'s mean
    slowdown the rows would read at least +23.4%, +17.2% and +14.4% (from +26.1%, +19.2%, +17.5%). Asserted: under
    16% of the step overlaps, and the error stays above +12% (issue 15's target is 10%)."""
    build, err = ROWS[row]
    share = hidden_share(build())
    assert share < 0.16, f"{row}: {share:.1%} of the step hidden"
    assert error_with_contention(err(), share, MEAN_SLOWDOWN) > 0.12


def test_even_a_stopped_gpu_under_every_collective_leaves_the_1_7b_row_off():
    """The 1.7B row (DP48 only): its gradient reduce-scatter and weight all-gather hide 0.041 s of a 0.358 s step.
    If compute stopped entirely while they ran (f = 1) the row would still read +13.1%; at Lee et al.'s largest
    measured slowdown (0.40) +20.6%. Asserted above +11% and above +19% (recorded 2026-11-27; moved when kern28 +
    head28 + eager28 combined, from +3.7% and +10.0% of a 0.394 s step, asserted then above +2% and +9%)."""
    e = mc._estimate("1.7B")
    share, err = hidden_share(e), mc.error("1.7B")
    assert error_with_contention(err, share, 1.0) > 0.11
    assert error_with_contention(err, share, 0.40) > 0.19


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


# recorded 2026-11-27 with kern28's prices + head28's last-stage head combined (before: +13.1, +12.7, −30.1, −11.6,
# +17.7, +15.9%); moved when kern28 + head28 + eager28 combined
SM_SHARE = {  # row: (estimate, scenario, error as its test pins it, the doc table's reading)
    "megatron-core 1.7B": (lambda: mc._estimate("1.7B"), lambda: mc.run(mc.BY_LABEL["1.7B"]),
                           lambda: mc.error("1.7B"), 0.244),
    "megatron-core 7.1B": (lambda: mc._estimate("7.1B"), lambda: mc.run(mc.BY_LABEL["7.1B"]),
                           lambda: mc.error("7.1B"), 0.204),
    "megatron-core 32B": (lambda: mc._estimate("32B"), lambda: mc.run(mc.BY_LABEL["32B"]),
                          lambda: mc.error("32B"), -0.272),
    "megatron-core 70B": (lambda: mc._estimate("70B"), lambda: mc.run(mc.BY_LABEL["70B"]),
                          lambda: mc.error("70B"), -0.071),
    "llama3 405B 8K GPUs": (ROWS["llama3 405B 8K GPUs"][0], lambda: table4_run("8k-gpus"),
                            ROWS["llama3 405B 8K GPUs"][1], 0.187),
    "llama3 405B 16K GPUs": (ROWS["llama3 405B 16K GPUs"][0], lambda: table4_run("16k-gpus"),
                             ROWS["llama3 405B 16K GPUs"][1], 0.169),
}


@pytest.mark.parametrize("row", sorted(SM_SHARE))
def test_the_sm_share_column_of_the_doc_table(row):
    """docs/training.md's table, "SM share from channels": each row's error if compute under a hidden collective
    ran at (1 − CTAs / SMs). Within 0.2 points of the recorded reading; the compute-bound rows stay above +12%."""
    build, scenario, err, recorded = SM_SHARE[row]
    got = sm_share_error(build(), scenario(), err())
    assert got == pytest.approx(recorded, abs=0.002)
    if recorded > 0:
        assert got > 0.12
