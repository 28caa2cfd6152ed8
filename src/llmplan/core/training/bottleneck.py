"""What limits a training plan, in one plain sentence, and the warnings a person should see."""

from __future__ import annotations

from llmplan.core.result import Bottleneck, CommunicationReport, ComputeReport, MemoryBreakdown

GIB = float(1 << 30)
SIGNIFICANT = 0.25  # share of the step time a loss must take to be named the bottleneck


def judge(mem: MemoryBreakdown, comp: ComputeReport, comm: CommunicationReport, recompute: str = "") -> Bottleneck:
    """``recompute``: the plan's setting, so a plan already recomputing in full is not told to recompute."""
    if not mem.fits:
        over = -mem.headroom / GIB
        fixes = "add GPUs or shard more (ZeRO, tp, pp)" if recompute == "full" else \
            "add GPUs, shard more (ZeRO, tp, pp) or recompute"
        return Bottleneck("memory capacity", f"Does not fit: the worst-loaded GPU needs {over:.1f} GiB more "
                                             f"than it has; {fixes}.")
    step = comp.step_time_s.value
    inp = comp.step_time_s.inputs
    offload = float(inp.get("exposed_offload_s", 0.0))
    bubble = float(inp["bubble"]) * (step - float(inp["exposed_dp_s"]) - offload) / (1 + float(inp["bubble"]))
    exposed = comm.exposed_time_s.value
    compute = comp.compute_time_s.value
    mem_bound = float(inp["memory_bound_s"])
    # A loss that costs at least SIGNIFICANT of the step is what limits the plan; otherwise compute does.
    host = float(inp.get("launch_s", 0.0))  # host time beyond the GPU's (timing: max(GPU, host) per micro-batch)
    worst = max(("comm", exposed), ("bubble", bubble), ("offload", offload), ("host", host), key=lambda kv: kv[1])
    if worst[1] < SIGNIFICANT * step:
        worst = ("compute", compute)
    if worst[0] == "offload":
        return _offload(comp, offload, step)
    if worst[0] == "host":
        return Bottleneck("host CPU", f"Host-bound: the CPU issuing the kernels (the modeling code's Python, autograd, "
                                      f"adapters, checkpoint hooks) adds {host / step:.0%} to each step while the GPU "
                                      "waits; a larger micro-batch, fused kernels (Liger) or torch.compile shorten it.")
    if worst[0] == "bubble":
        return Bottleneck("pipeline bubble", f"The pipeline bubble idles GPUs for {bubble / step:.0%} of each "
                                             "step; raise the micro-batch count or use interleaving.")
    if worst[0] == "comm":
        link = comm.bottleneck_link
        kind = "network" if link == "inter-node" else "interconnect"
        return Bottleneck(kind, f"Exposed communication on the {link} link takes {exposed / step:.0%} of each "
                                "step; keep chatty groups (tp, ep) inside a node or get faster links.")
    if mem_bound > 0.5 * compute:
        return Bottleneck("memory bandwidth", f"Elementwise work bound by HBM bandwidth is {mem_bound / step:.0%} "
                                              "of the step; fused kernels and FlashAttention help.")
    return Bottleneck("compute", f"Compute-bound: matrix multiplies take most of the step "
                                 f"(MFU {comp.mfu.value:.0%}); more or faster GPUs shorten it.")


def _offload(comp: ComputeReport, offload: float, step: float) -> Bottleneck:
    """Offloading costs a large share of the step: name its slowest part (offload_time.py)."""
    fig = comp.offload_time_s
    limit = str(fig.inputs.get("limit", "host CPU")) if fig is not None else "host CPU"
    share = f"{offload / step:.0%} of each step"
    if limit == "PCIe":
        return Bottleneck("PCIe", f"Offload copies over PCIe between host and GPU take {share}; offload less "
                                  "(keep parameters on the GPU), shard over more GPUs, or use bigger batches.")
    if limit == "NVMe":
        return Bottleneck("NVMe", f"Reading and writing offloaded states on NVMe takes {share}; offload to CPU "
                                  "memory instead, add drives, or use bigger batches.")
    return Bottleneck("host CPU", f"The optimizer step on the host CPU (offload) takes {share}; it is bound by "
                                  "host memory bandwidth: use more nodes, bigger batches, or keep the optimizer "
                                  "on the GPUs.")
