"""Target-driven planning for a plan document: which GPUs to ask the question for, each GPU's cluster
template, and the energy of each answer. The search itself is ``core.search.target``; the CLI
(``search --days/--budget``) and the app's Auto… dialog both call ``target_table`` here.

A GPU's cluster is its catalog node preset where the catalog has one (DGX H100: 8 GPUs, NDR
InfiniBand 400 Gb/s per GPU; GB200 NVL72: 72 GPUs in one NVLink domain), else 8 GPUs per node on
NDR InfiniBand, the usual training pod. The default list is the catalog's datacenter training
accelerators: datacenter segment, bf16 tensor cores, at least 40 GB, SXM/OAM/superchip boards
(PCIe inference cards such as the L4 are left out; name them with ``--gpu`` to include them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llmplan.core.search.target import TargetRow, rank_targets
from llmplan.core.workload import Scenario
from llmplan.errors import InputError, LlmplanError
from llmplan.plan.document import PlanDocument
from llmplan.plan.evaluate import evaluate_scenario
from llmplan.plan.resolve import resolve

TRAINING_BOARDS = ("SXM", "OAM", "Superchip")
DEFAULT_NETWORK = "ib-ndr-400"
MIN_TRAINING_MEMORY = 40e9


@dataclass(frozen=True, slots=True)
class TargetAnswer:
    """One row of the table: the search's answer and the energy of that run (kWh at the facility)."""

    row: TargetRow
    energy_kwh: float | None


def training_gpu_ids() -> list[str]:
    """The catalog's datacenter training accelerators (module doc)."""
    from llmplan.catalog.hardware import load_hardware_catalog

    out = []
    for e in load_hardware_catalog().gpus:
        s = e.spec
        if (s.segment == "datacenter" and s.peak_flops.bf16 and s.memory_bytes >= MIN_TRAINING_MEMORY
                and any(s.form_factor.startswith(b) for b in TRAINING_BOARDS)):
            out.append(s.id)
    return out


def template_for(doc: PlanDocument, gpu_id: str, nodes: int = 1) -> Scenario:
    """``doc`` on ``nodes`` nodes of ``gpu_id``'s cluster (module doc); the plan's own price only for its own GPU.
    Resolved for that node count: ``training.framework = auto`` chooses by it (``catalog.frameworks.auto_choice``:
    a full fine-tune runs the Hugging Face Trainer on one node, Megatron-Core on several)."""
    from llmplan.catalog.hardware import load_hardware_catalog

    cat = load_hardware_catalog()
    cat.gpu(gpu_id)  # an unknown id: its CatalogError names the known ones
    node = next((n for n in cat.nodes if n.gpu_id == gpu_id and n.gpus_per_node > 1), None)
    hw = doc.hardware
    same = (hw.gpu == gpu_id and hw.gpu_spec is None) or (hw.gpu_spec is not None and hw.gpu_spec.id == gpu_id)
    update = {"gpu": gpu_id, "gpu_spec": None, "gpu_efficiency": None, "nodes": nodes, "fabric_spec": None,
              "intra_node_bandwidth": None, "network_spec": None,
              "price_per_gpu_hour": hw.price_per_gpu_hour if same else None}
    if same and hw.nodes * hw.gpus_per_node > 1 and hw.network != "none":
        update |= {"gpus_per_node": hw.gpus_per_node, "node": hw.node, "network": hw.network}
    elif node is not None:
        update |= {"gpus_per_node": node.gpus_per_node, "node": node.id,
                   "network": node.network_id if node.network_id != "none" else DEFAULT_NETWORK}
    else:
        update |= {"gpus_per_node": 8, "node": None, "network": DEFAULT_NETWORK}
    one = doc.model_copy(update={"hardware": hw.model_copy(update=update)})
    return resolve(one)


def target_table(doc: PlanDocument, gpu_ids: Sequence[str] = (), days: float | None = None,
                 budget: float | None = None, tokens: float | None = None,
                 refine: Callable | None = None, max_gpus: int = 1_000_000,
                 keep: tuple[str, ...] = ()) -> tuple[TargetAnswer, ...]:
    """For each GPU (default: ``training_gpu_ids``) the smallest cluster that trains ``tokens`` within the
    targets, ranked by cost, with the energy of the run from the plan's system options. ``keep``: the
    training knobs the plan states (ZeRO stage, micro-batch, recompute, offload), held by every search."""
    if doc.workload == "inference":
        raise InputError("a training target needs a training workload: --workload pretrain or finetune")
    ids = list(gpu_ids) or training_gpu_ids()
    templates = [template_for(doc, g) for g in ids]
    rows = rank_targets(templates, days, budget, tokens, refine, max_gpus, keep,
                        lambda template, nodes: template_for(doc, template.cluster.gpu.id, nodes))
    out = []
    for r in rows:
        kwh = None
        if r.scenario is not None and r.meets:
            try:
                kwh = evaluate_scenario(r.scenario, doc.system).system.power.energy_kwh.value
            except LlmplanError:  # the energy column is an extra; the answer stands without it
                kwh = None
        out.append(TargetAnswer(r, kwh))
    return tuple(out)
