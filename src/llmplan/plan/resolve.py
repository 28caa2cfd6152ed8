"""PlanDocument -> Scenario: look up the catalog ids a plan names, prefer what it carries inline.

Order of preference, so a shared plan opens identically elsewhere: ``model.spec``, then
``model.config`` (an inline config.json), then the catalog's ``model.id``; the inline
``hardware.gpu_spec`` / ``hardware.network_spec``, then the catalog ids. Efficiency is
the catalog's default for the GPU with the plan's ``efficiency`` overrides on top.
``inline_specs`` writes the looked-up specs into the document (what "Save" does).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from llmplan.catalog.frameworks import framework_catalog, framework_profile, profiles_supporting
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.catalog.snapshot import one_catalog_read
from llmplan.core.framework_profile import SWITCH_NAMES, offload_option_refusal, offload_refusal, zero_refusal
from llmplan.core.hardware import ClusterSpec, Efficiency, FabricSpec, GpuSpec, NetworkSpec, personal_machine
from llmplan.core.model import ModelSpec
from llmplan.core.workload import (
    DEFAULT_RECOMPUTE_MODULES,
    STACKED_DROPOUT_REFUSAL,
    Scenario,
    wraps_stacked_experts,
)
from llmplan.errors import CatalogError, ConfigError, PlanFileError
from llmplan.plan.document import PlanDocument
from llmplan.plan.validation import describe_validation_error


# Imported with the module, not in the functions: in the app each import statement run goes through PySide6's
# import hook (~13 µs), and resolving a plan asked for the catalogs and the framework's refusals 9 times a knob change.
def _model_catalog() -> Any:
    return load_model_catalog()


def _hardware_catalog() -> Any:
    return load_hardware_catalog()


def resolve_model(doc: PlanDocument) -> ModelSpec:
    ref = doc.model
    if ref.spec is not None:
        return ref.spec
    if ref.config is not None:
        from llmplan.formats.hf_config import spec_from_config

        try:
            return spec_from_config(ref.config, name=ref.name or ref.id or doc.name or "inline model")
        except ConfigError as exc:
            raise PlanFileError(f"model.config: {exc}") from None
    if ref.hub is not None and not ref.id:  # nothing inline: the plan asks for the Hub
        from llmplan.formats.hub import fetch_hub_model
        from llmplan.formats.hub_ref import HubRef
        from llmplan.plan.hub_plan import spec_from_hub

        hub = ref.hub
        return spec_from_hub(fetch_hub_model(HubRef(hub.repo, hub.revision or hub.commit, hub.file)))
    return _model_catalog().get(ref.id).spec


def resolve_inference(doc: PlanDocument) -> Any:
    """The plan's inference settings, with the chosen Hub file's real size while its format is the plan's."""
    inf, hub = doc.inference, doc.model.hub
    if (hub is not None and hub.file_bytes and inf.weight_file_bytes is None
            and (hub.weight_format or "").lower() == inf.weight_format.lower()):
        return inf.model_copy(update={"weight_file_bytes": hub.file_bytes})
    return inf


def resolve_gpu(doc: PlanDocument) -> GpuSpec:
    if doc.hardware.gpu_spec is not None:
        return doc.hardware.gpu_spec
    return _hardware_catalog().gpu(doc.hardware.gpu).spec


def resolve_cards(doc: PlanDocument) -> list[GpuSpec]:
    """The specs of a machine of different cards (``hardware.cards``), one per card in device order: each
    entry's inline spec, else the catalog's ([] for a plan of identical GPUs)."""
    specs = []
    for card in doc.hardware.cards:
        spec = card.gpu_spec if card.gpu_spec is not None else _hardware_catalog().gpu(card.gpu).spec
        specs += [spec] * card.count
    return specs


def resolve_network(doc: PlanDocument) -> NetworkSpec:
    hw = doc.hardware
    if hw.network_spec is not None:
        return hw.network_spec
    if hw.network == "none":
        if hw.nodes > 1:
            raise PlanFileError(
                f"hardware.network: {hw.nodes} nodes need a network between them; "
                "set hardware.network to a catalog network id (llmplan-cli catalog networks lists them; "
                "on the command line: --network ib-ndr-400, for example)"
            )
        return NetworkSpec()
    net = _hardware_catalog().network(hw.network)
    if hasattr(net, "spec_for"):  # a node-wide port is shared by the node's GPUs
        return net.spec_for(hw.gpus_per_node)
    return getattr(net, "spec", net)


def resolve_fabric(doc: PlanDocument, gpu: GpuSpec) -> FabricSpec:
    """The plan's inline fabric, else the node preset's, else the one the GPU implies (an SXM NVLink GPU on an
    NVSwitch)."""
    if doc.hardware.fabric_spec is not None:
        return doc.hardware.fabric_spec
    try:
        return _hardware_catalog().fabric_for(gpu, doc.hardware.node)
    except CatalogError:
        return FabricSpec(kind="nvlink" if gpu.nvlink_bandwidth else "pcie")


def resolve_intra_node_bandwidth(doc: PlanDocument) -> float | None:
    hw = doc.hardware
    if hw.intra_node_bandwidth is not None or not hw.node:
        return hw.intra_node_bandwidth
    return _hardware_catalog().node(hw.node).intra_node_bandwidth


def resolve_host_memory_bandwidth(doc: PlanDocument) -> float | None:
    """The plan's own figure, else its node preset's, else the catalog's default host (offload timing)."""
    hw = doc.hardware
    if hw.host_memory_bandwidth is not None:
        return hw.host_memory_bandwidth
    return _hardware_catalog().host_memory_bandwidth_for(hw.node)


def resolve_host_cpu_vendor(doc: PlanDocument) -> str | None:
    """The node preset's host CPU vendor (NCCL's LL cap and network overhead depend on it); None without one."""
    node = doc.hardware.node
    return _hardware_catalog().node(node).host_cpu_vendor if node else None


def resolve_nvme_bandwidth(doc: PlanDocument, personal: bool = False) -> tuple[float | None, float | None]:
    """Read and write bytes/s of one node's NVMe offload drives (``system.offload_storage`` or the
    catalog's default, a data centre's or a personal machine's), for plans that offload to NVMe;
    (None, None) otherwise."""
    if doc.workload == "inference" or doc.training.offload != "nvme":
        return None, None
    from llmplan.catalog.system_presets import default_system_settings

    drives = default_system_settings(offload_storage=doc.system.offload_storage, personal=personal).offload_storage
    if drives is None:
        return None, None
    return drives.bandwidth("read", 1), drives.bandwidth("write", 1)


def default_efficiency(gpu: GpuSpec) -> Efficiency:
    """The catalog's achievable fractions for this GPU; the generic defaults for a GPU it lacks."""
    try:
        catalog = _hardware_catalog()
        return catalog.efficiency_for(gpu.id)
    except CatalogError:
        return Efficiency()


def resolve_engine_profile(doc: PlanDocument) -> Any:
    """Inference runs on a named engine (vLLM, llama.cpp ...) whose overheads are catalog data;
    training needs none. An unknown engine id raises ``CatalogError`` listing the known ones; an unknown
    weight format or KV cache type, ``InputError`` listing the accepted names."""
    if doc.workload != "inference":
        return None
    from llmplan.catalog.engines import engine_profile
    from llmplan.core.engine_profile import check_weight_format
    from llmplan.core.kvcache import kv_dtype_refusal, kv_element_bytes
    from llmplan.core.quant import parse_weight_format

    prof = engine_profile(doc.inference.engine)
    # An unknown name is named here: the layout search skips layouts the engine refuses, so a typo there
    # read "no layout fits" (each raises InputError naming the field and the accepted names).
    parse_weight_format(doc.inference.weight_format)
    kv_element_bytes(doc.inference.kv_dtype)
    inf = doc.inference
    why_not = kv_dtype_refusal(inf.kv_dtype, prof.name, prof.kv_dtypes)  # it was priced as asked
    if why_not:
        raise PlanFileError(f"inference.kv_dtype: {why_not} (change inference.engine or the KV cache type)")
    if inf.shared_prefix_tokens > inf.prompt_tokens:  # taken, it sized the longest context as if shared
        raise PlanFileError(f"inference.shared_prefix_tokens = {inf.shared_prefix_tokens:,} is longer than the "
                            f"prompt ({inf.prompt_tokens:,} tokens): the shared prefix is the start every prompt has "
                            "in common; set it to at most inference.prompt_tokens")
    why = check_weight_format(prof, doc.inference.weight_format)
    if why:
        raise PlanFileError(f"inference.weight_format: {why} (change inference.engine or the weight format)")
    return prof


def resolve_framework_profile(doc: PlanDocument) -> Any:
    """Training and fine-tuning run under a framework profile (catalogs/frameworks.toml); "auto" follows the
    policy of ``catalog.frameworks.auto_choice`` (by workload, method and nodes), and takes the other default
    where the plan's layout or switches cannot run under its first choice. Inference needs none. A switch the
    profile lacks is a field error (``check_switches``)."""
    if doc.workload == "inference":
        return None
    prof = plan_framework_profile(doc)
    check_switches(doc, prof)
    return prof


# (document, the frameworks catalog as loaded, its profile): the app asks for the profile of each new document
# before it evaluates it (the Fine-tune tab's switches), then resolve asks again: the second is answered here.
_LAST_PROFILE: tuple[PlanDocument, Any, Any] | None = None


@one_catalog_read
def plan_framework_profile(doc: PlanDocument) -> Any:
    """The framework profile ``doc`` would train under (``resolve_framework_profile`` without the check of its
    switches, whatever the workload: the app's training tabs ask for it). An unknown id raises ``CatalogError``.
    Kept for the last document while the frameworks catalog is the same object (documents are frozen; an edit of
    the user's frameworks.toml loads a new one)."""
    global _LAST_PROFILE
    catalog = framework_catalog()
    last = _LAST_PROFILE  # one read: another thread may replace it meanwhile
    if last is not None and last[0] is doc and last[1] is catalog:
        return last[2]
    hw = doc.hardware
    prof = framework_profile(doc.training.framework, doc.workload, hw.gpus_per_node * hw.nodes,
                             doc.training.method, hw.nodes, lambda p: framework_refusal(doc, p, layout=True))
    _LAST_PROFILE = (doc, catalog, prof)
    return prof


def resolve_within_node(doc: PlanDocument) -> Scenario | None:
    """``doc`` resolved on one node of its cluster, for the layouts a search tries within a node
    (``core.search.search(within_node=...)``), when the plan spans several nodes and leaves the training
    framework to auto, whose choice depends on the node count (``resolve_framework_profile``); None otherwise."""
    if doc.workload == "inference" or doc.hardware.nodes <= 1 or doc.training.framework.strip().lower() != "auto":
        return None
    return resolve(doc.model_copy(update={"hardware": doc.hardware.model_copy(update={"nodes": 1})}))


def framework_refusal(doc: PlanDocument, prof: Any, layout: bool = False) -> str:
    """Why ``doc`` cannot run under the framework profile ``prof``, as a field error ("" when it can): a switch
    turned on that the profile does not support, gradient clipping turned off under a framework that always
    clips, a loss its code cannot run, a ZeRO stage it runs on no GPU count (``framework_profile.zero_refusal``:
    FSDP has no ZeRO-1), an optimizer or parameter offload (or an offload device) its code lacks
    (``framework_profile.offload_refusal``), selective recompute stated where the framework has none (left on the
    default it runs as none: ``core.workload.effective_training``), a quantised base it cannot train LoRA on;
    with ``layout``, a parallel dimension it lacks."""
    tr = doc.training
    for name in SWITCH_NAMES:
        if getattr(tr, name) and name not in prof.switches:
            others = profiles_supporting(name)
            return (f"training.{name}: the {prof.id} profile does not support it; profiles that do: "
                    f"{', '.join(others) or 'none'} (training.framework)")
    if tr.grad_clip == "off" and prof.grad_clip_always:
        others = profiles_supporting("grad_clip:off")
        return (f"training.grad_clip: the {prof.id} profile clips at every step ({prof.grad_clip_setting}) "
                f"and cannot turn it off; profiles that can: {', '.join(others) or 'none'} "
                "(training.framework), or set grad_clip to auto or on")
    if tr.loss != "auto" and tr.loss not in prof.losses:
        return loss_refusal(tr.loss, prof)
    field, why = offload_refusal(prof, tr.offload, tr.offload_params, tr.zero_stage, tr.optimizer_offload_fraction)
    if field == "training.optimizer_offload_fraction":
        return (f"{field}: {why}; profiles that offload a share: "
                f"{', '.join(profiles_supporting('offload:fraction'))} (training.framework)")
    if not field:
        field, why = offload_option_refusal(prof, tr.offload_gradients, tr.overlap_cpu_optimizer_copies)
        if field:
            wanted = "offload:gradients" if field.endswith("gradients") else "offload:overlap"
            return (f"{field}: {why}; profiles that have it: {', '.join(profiles_supporting(wanted)) or 'none'} "
                    "(training.framework), or turn it off")
    if field == "training.zero_stage":  # the profile offloads; the plan's stage does not (its fix is in ``why``)
        return f"{field}: {why}"
    if field:
        wanted = "offload:parameters" if field.endswith("params") else f"offload:{tr.offload}"
        others = profiles_supporting(wanted)
        return (f"{field}: {why}; profiles that do: {', '.join(others) or 'none'} (training.framework)"
                + ("" if prof.offload_targets else "; without offload: QLoRA, full recompute or a smaller micro-batch"))
    why = zero_refusal(prof, tr.zero_stage) if "zero_stage" in tr.model_fields_set else ""
    if why:  # left out, the stage is the policy's (framework_profile.auto_zero)
        return (f"training.zero_stage: {why}; profiles that run ZeRO-{tr.zero_stage}: "
                f"{', '.join(profiles_supporting(f'zero:{tr.zero_stage}')) or 'none'} (training.framework)")
    if (tr.recompute == "selective" and "recompute" in tr.model_fields_set and not prof.selective_recompute
            and tr.recompute_modules == DEFAULT_RECOMPUTE_MODULES):
        others = profiles_supporting("recompute:selective")
        return (f"training.recompute: the {prof.id} profile has no selective recompute ({prof.name} checkpoints "
                f"whole blocks or nothing); set recompute to none or full ({prof.recompute_words or 'full recompute'}"
                f"), or pick a profile that has it: {', '.join(others) or 'none'} (training.framework)")
    if tr.method == "qlora" and tr.quant_base not in prof.quant_bases:
        others = profiles_supporting(f"quant_base:{tr.quant_base}")
        return (f"training.quant_base: the {prof.id} profile trains LoRA on {', '.join(prof.quant_bases)} "
                f"bases, not {tr.quant_base}; profiles that do: {', '.join(others) or 'none'}")
    par = doc.parallelism
    for name in ("tp", "pp", "cp", "ep") if layout else ():
        if getattr(par, name) > 1 and not getattr(prof, f"supports_{name}"):
            return f"parallelism.{name}: the {prof.id} profile has no {name.upper()} parallelism"
    return ""


def loss_refusal(loss: str, prof: Any) -> str:
    """The field error for a ``training.loss`` the profile's code cannot run: the profiles that run it, and the
    losses this one runs, its own default first (what to choose instead)."""
    others = profiles_supporting(f"loss:{loss}")
    runs = [prof.loss] + [k for k in prof.losses if k != prof.loss]
    return (f"training.loss: the {prof.id} profile does not run {loss}; profiles that do: "
            f"{', '.join(others) or 'none'} (training.framework); under {prof.id} choose auto ({prof.loss}, its "
            f"own) or one of {', '.join(runs)}")


def check_switches(doc: PlanDocument, prof: Any) -> None:
    """A switch turned on that the plan's framework profile does not support, gradient clipping turned off under
    a framework that always clips, a loss it cannot run, selective recompute stated where it has none, or a
    quantised base it cannot train LoRA on, is a field error naming the profiles that do (``framework_refusal``)."""
    why = framework_refusal(doc, prof)
    if why:
        raise PlanFileError(why)


@one_catalog_read
def resolve(doc: PlanDocument) -> Scenario:
    """Everything ``estimate`` needs. Unknown ids raise ``CatalogError``; impossible combinations
    ``PlanFileError`` naming the field. Each catalog is checked on disk and loaded once (``one_catalog_read``):
    the helpers below ask for the hardware catalog four times."""
    model = resolve_model(doc)
    if doc.workload != "inference" and (doc.training.lora_dropout or 0) > 0 and wraps_stacked_experts(model, doc.training):
        raise PlanFileError(STACKED_DROPOUT_REFUSAL.format(doc.training.lora_dropout))  # the field, not "(the document)"
    gpu = resolve_gpu(doc)
    hw = doc.hardware
    nvme_read, nvme_write = resolve_nvme_bandwidth(doc, personal_machine(gpu, hw.nodes))
    try:
        cluster = ClusterSpec(gpu=gpu, gpus_per_node=hw.gpus_per_node, nodes=hw.nodes,
                              network=resolve_network(doc), fabric=resolve_fabric(doc, gpu),
                              price_per_gpu_hour=hw.price_per_gpu_hour,
                              intra_node_bandwidth=resolve_intra_node_bandwidth(doc),
                              host_memory_bandwidth=resolve_host_memory_bandwidth(doc),
                              nvme_read_bandwidth=nvme_read, nvme_write_bandwidth=nvme_write,
                              host_cpu_vendor=resolve_host_cpu_vendor(doc))
        return Scenario(model=model, cluster=cluster, workload=doc.workload, training=doc.training,
                        inference=resolve_inference(doc), parallelism=doc.parallelism,
                        efficiency=doc.efficiency.apply(hw.gpu_efficiency or default_efficiency(gpu)),
                        engine_profile=resolve_engine_profile(doc),
                        framework_profile=resolve_framework_profile(doc))
    except ValidationError as exc:
        raise PlanFileError(f"plan: {describe_validation_error(exc)}") from None


@one_catalog_read
def inline_specs(doc: PlanDocument) -> PlanDocument:
    """The document with its model and hardware specs written in, so it opens the same anywhere."""
    model = doc.model
    if model.spec is None and model.config is None and model.id:  # a Hub-only model is not fetched on save
        entry = _model_catalog().get(model.id)
        config = getattr(entry, "config", None)  # the entry's own config.json, when the catalog keeps it
        if isinstance(config, dict):
            # with its name: an inline config is named by model.name, else by the id ("meta-llama/Llama-3.1-70B"
            # where the plan said "Llama 3.1 70B" before it was saved)
            model = model.model_copy(update={"config": config, "name": model.name or entry.spec.name})
        else:
            model = model.model_copy(update={"spec": entry.spec})
    hw = doc.hardware
    updates: dict[str, Any] = {}
    if hw.gpu_spec is None:
        updates["gpu_spec"] = resolve_gpu(doc)
    if hw.gpu_efficiency is None:  # the receiver's catalog may rate this GPU differently
        updates["gpu_efficiency"] = default_efficiency(updates.get("gpu_spec") or hw.gpu_spec)
    if hw.network_spec is None and hw.network != "none":
        updates["network_spec"] = resolve_network(doc)
    if hw.fabric_spec is None and doc.workload != "inference" and hw.gpus_per_node * hw.nodes > 1:
        updates["fabric_spec"] = resolve_fabric(doc, updates.get("gpu_spec") or hw.gpu_spec or resolve_gpu(doc))
    if hw.intra_node_bandwidth is None and hw.node:
        updates["intra_node_bandwidth"] = resolve_intra_node_bandwidth(doc)
    if hw.host_memory_bandwidth is None and doc.workload != "inference" and doc.training.offload != "none":
        updates["host_memory_bandwidth"] = resolve_host_memory_bandwidth(doc)
    if any(c.gpu_spec is None for c in hw.cards):
        updates["cards"] = tuple(c if c.gpu_spec is not None else c.model_copy(
            update={"gpu_spec": _hardware_catalog().gpu(c.gpu).spec}) for c in hw.cards)
    if updates:
        hw = hw.model_copy(update=updates)
    return doc.model_copy(update={"model": model, "hardware": hw})
