"""Training and fine-tuning estimates: memory, compute and communication per GPU.

``estimate_training(scenario)`` validates the parallel layout (``layout``), sizes the
worst-loaded GPU (``memory``: model states from ``states``, activations from
``activations``), counts FLOPs from the tensor shapes (``flops``), places each collective
on a link (``comms``), composes the step time (``timing``) and names the bottleneck
(``bottleneck``). Pure functions of the ``Scenario``; no I/O.
"""

from __future__ import annotations

from llmplan.core.explain import Figure
from llmplan.core.params import count_params
from llmplan.core.result import CommunicationReport, Estimate
from llmplan.core.training import memory
from llmplan.core.training.bottleneck import GIB, judge
from llmplan.core.training.comms import Windows, collectives, interleaved_windows
from llmplan.core.training.flops import step_flops, token_flops
from llmplan.core.training.layout import Layout, resolve
from llmplan.core.training.lora import adapter_params
from llmplan.core.training.offload_time import offload_time
from llmplan.core.training.recompute_modules import named
from llmplan.core.training.switches import host_transfer_time, largest_tensor
from llmplan.core.training.timing import compute_times, report
from llmplan.core.workload import Scenario
from llmplan.errors import InputError

__all__ = ["Layout", "estimate_training", "resolve"]


def estimate_training(sc: Scenario) -> Estimate:
    """The full training/fine-tuning estimate for ``sc`` (see module docstring)."""
    m, tr, cl, eff = sc.model, sc.training, sc.cluster, sc.efficiency
    lay = resolve(sc)
    if tr.optimizer_in_backward and lay.accumulation > 1:
        raise InputError(f"training.optimizer_in_backward steps every parameter in the backward, so it cannot "
                         f"accumulate {lay.accumulation} micro-batches: set training.global_batch to "
                         f"micro_batch × dp or turn the switch off")
    pb = count_params(m)
    sm = memory.worst_stage(sc, pb, lay)
    mem = memory.breakdown(sc, lay, sm)

    full = tr.method == "full"
    adapters = 0.0 if full else adapter_params(pb, m, None, tr)
    tf = token_flops(m, pb, lay.seq_len, adapters, tr.recompute == "selective_op", named(tr))
    sf = step_flops(tf, lay.tokens_per_step, tr, sc.framework)
    st = sm.states
    opt_params = sm.trainable / st.shard_dense if (tr.zero_stage >= 1 or tr.distributed_optimizer) else sm.trainable
    state_bytes = (st.master_bytes or st.weight_bytes, st.grad_bytes, st.optimizer_bytes, st.weight_bytes,
                   bool(st.master_bytes))
    ct = compute_times(sc, lay, pb, opt_params, state_bytes)

    busy = ct.total - ct.step_end
    per_mb = busy / lay.accumulation
    bwd_share = (2.0 if full else 1.0) / (3.0 if full else 2.0)
    attn_share = tf.attention / tf.forward if tf.forward else 0.0
    dp_bwd, dp_fwd = interleaved_windows(per_mb * bwd_share, per_mb * (1 - bwd_share), lay.vp, lay.pp,
                                         lay.accumulation)
    win = Windows(compute=busy, attention=busy * attn_share, last_backward=dp_bwd, first_forward=dp_fwd,
                  chunks=lay.vp)
    st = sm.states
    expert_share = sm.params.expert / sm.params.total if sm.params.total else 0.0
    moe_on_gpu = m.moe_layer_count / m.num_layers * lay.max_stage_layers
    colls = collectives(sc, lay, sm.trainable, sm.params.total, st.grad_bytes, st.weight_bytes, expert_share,
                        moe_on_gpu, win)
    exposed_dp = sum(c.exposed_s.value for c in colls if c.group == "dp")
    exposed_inner = sum(c.exposed_s.value for c in colls if c.group != "dp")
    if tr.offload_gradients and tr.offload != "none":
        _check_offload_gradients(sc, lay.accumulation)
    off = offload_time(sc, lay, st, sm.trainable, expert_share if full else 0.0, ct.total, per_mb * bwd_share,
                       largest_tensor(pb) / lay.tp if full else 0.0)
    host_s, moved_s = 0.0, 0.0
    if sm.host_activations or sm.paged_host:
        pcie = 0.0 if cl.gpu.unified_memory else cl.gpu.pcie_bandwidth * eff.pcie
        host_s, moved_s = host_transfer_time(sm.host_activations * lay.accumulation, sm.paged_host, pcie, busy)
    comp = report(sc, lay, sf, ct, exposed_inner, exposed_dp, off.figure() if tr.offload != "none" else None,
                  host_s)
    comm = _comm_report(colls, comp.step_time_s.value, ct.total)

    warnings = list(lay.warnings) + list(st.notes) + list(off.notes)
    if moved_s:
        warnings.append(f"host transfers (activation offload, paged optimizer): {moved_s * 1e3:.0f} ms of PCIe copies "
                        f"per step, {host_s * 1e3:.0f} ms of it not hidden behind the compute")
    if not mem.fits:
        warnings.append(f"does not fit: {-mem.headroom / GIB:.1f} GiB over the {mem.capacity.value / GIB:.1f} GiB "
                        "of one GPU")
    if mem.host_ram.value:
        warnings.append(f"CPU offload needs {mem.host_ram.value / GIB:.1f} GiB of host RAM per node")
    if mem.nvme.value:
        warnings.append(f"NVMe offload needs {mem.nvme.value / GIB:.1f} GiB of NVMe per node")
    if tr.offload_params and tr.zero_stage != 3:
        warnings.append("offload_params needs zero_stage 3; parameters stay on the GPU")
    return Estimate(params=pb, memory=mem, compute=comp, communication=comm, inference=None,
                    bottleneck=judge(mem, comp, comm, tr.recompute), warnings=tuple(warnings))


def _check_offload_gradients(sc: Scenario, accumulation: int) -> None:
    """torchao's ``offload_gradients`` exists where its CPUOffloadOptimizer runs (torchtune's single-device recipes:
    one GPU, ZeRO-0) and cannot accumulate (``grad_offload`` module doc); the plan layer has refused it under a
    profile without that optimizer."""
    if sc.framework.offload_style != "torchao":
        raise InputError(f"training.offload_gradients: torchao's CPUOffloadOptimizer runs in the {sc.framework.id} "
                         "profile's single-device recipes only (one GPU, training.zero_stage 0); this plan offloads "
                         f"with {sc.framework.offload_setting or 'another offload'}, which has no such option: "
                         "turn it off, or plan one GPU at ZeRO-0")
    if accumulation > 1:
        raise InputError(f"training.offload_gradients frees each gradient once it is copied to the host, so it "
                         f"cannot accumulate {accumulation} micro-batches (torchao: \"Not compatible with gradient "
                         "accumulation\"): set training.global_batch to micro_batch × dp or turn it off")


def _comm_report(colls: tuple, step: float, compute: float) -> CommunicationReport:
    intra = sum(c.bytes_per_step.value for c in colls if c.link == "intra-node")
    inter = sum(c.bytes_per_step.value for c in colls if c.link == "inter-node")
    exp_intra = sum(c.exposed_s.value for c in colls if c.link == "intra-node")
    exp_inter = sum(c.exposed_s.value for c in colls if c.link == "inter-node")
    exposed = exp_intra + exp_inter
    if exposed <= 0:
        worst = "none"
    else:
        worst = "inter-node" if exp_inter >= exp_intra else "intra-node"
    window = compute if compute > 0 else step
    return CommunicationReport(
        collectives=colls,
        intra_node_bytes=Figure.own(intra, "B", "sum of intra-node collectives per GPU per step", {}, "nccl"),
        inter_node_bytes=Figure.own(inter, "B", "sum of inter-node collectives per GPU per step", {}, "nccl"),
        intra_node_bandwidth_needed=Figure.own(intra / window, "B/s", "intra-node bytes / compute time per step",
                                               {"bytes": intra, "compute_s": window}, "nccl"),
        inter_node_bandwidth_needed=Figure.own(inter / window, "B/s", "inter-node bytes / compute time per step",
                                               {"bytes": inter, "compute_s": window}, "nccl"),
        exposed_time_s=Figure.own(exposed, "s", "sum of the exposed parts of every collective",
                                  {"intra_s": exp_intra, "inter_s": exp_inter}, "assumption"),
        bottleneck_link=worst,
    )
