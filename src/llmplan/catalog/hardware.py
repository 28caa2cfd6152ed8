"""The hardware catalog: accelerators, whole machines, networks and achievable efficiencies.

Shipped data lives in ``catalogs/gpus/*.toml`` and ``catalogs/systems/*.toml``; a person's own
entries live in ``user_data_dir()/"hardware"/*.json|*.toml`` and override shipped ones with the
same id. A broken shipped file is a bug in llmplan and raises; a broken user file is reported in
``.problems`` and skipped, so one bad file never locks anybody out of the app.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path

from pydantic import ValidationError

from llmplan.catalog.hardware_files import (
    GB_PER_S,
    GIB,
    EfficiencyValue,
    FabricFileEntry,
    GpuFileEntry,
    HardwareFile,
    NetworkFileEntry,
    NodeFileEntry,
    SourceRef,
    expand_apple_chip,
)
from llmplan.catalog.snapshot import within_read
from llmplan.core.hardware import ClusterSpec, Efficiency, FabricSpec, GpuSpec, NetworkSpec
from llmplan.core.present import one_line
from llmplan.errors import CatalogError
from llmplan.formats.atomic import atomic_write
from llmplan.formats.bounded import load_json, load_toml
from llmplan.resources_path import catalogs_dir, user_data_dir

EFFICIENCY_FIELDS = ("matmul", "memory_bandwidth", "intra_node", "network", "host_memory_bandwidth", "pcie",
                     "sustained_clock", "full_clock_share", "elementwise", "adamw_fp32",
                     "adamw_16bit")


@dataclass(frozen=True)
class GpuEntry:
    """A catalog accelerator: the engine's spec plus what only the catalog needs."""

    spec: GpuSpec
    match_names: tuple[str, ...]
    sources: dict[str, SourceRef]  # figure name -> its source
    price_date: str | None = None
    notes: str = ""
    memory_reported: bool = True  # False: memory is the marketing size, not a device report
    origin: str = "shipped"  # "shipped", or the user file it came from

    @property
    def id(self) -> str:
        return self.spec.id


@dataclass(frozen=True)
class NetworkEntry:
    id: str
    name: str
    gbit_per_port: float
    ports_per: str  # "gpu" or "node"
    source: SourceRef | None
    latency_s: float | None = None
    notes: str = ""
    origin: str = "shipped"
    ports: int = 1  # ports per node where ports_per == "node"
    rail_optimized: bool = True
    nodes_per_leaf: int = 0
    oversubscription: float = 1.0

    def spec_for(self, gpus_per_node: int = 1) -> NetworkSpec:
        """The node's NICs: one per GPU ("gpu") or ``ports`` for the node ("node"); per-GPU share beside."""
        per_port = self.gbit_per_port * 1e9 / 8
        nics = max(gpus_per_node, 1) if self.ports_per == "gpu" else self.ports
        extra = {"latency_s": self.latency_s} if self.latency_s is not None else {}
        if per_port <= 0:
            return NetworkSpec(id=self.id, name=self.name, **extra)
        return NetworkSpec(id=self.id, name=self.name, bandwidth_per_gpu=per_port * nics / max(gpus_per_node, 1),
                           nics_per_node=nics, nic_bandwidth=per_port, rail_optimized=self.rail_optimized,
                           nodes_per_leaf=self.nodes_per_leaf, oversubscription=self.oversubscription, **extra)

    @property
    def spec(self) -> NetworkSpec:
        return self.spec_for(1)


@dataclass(frozen=True)
class NodeEntry:
    id: str
    name: str
    gpu_id: str
    gpus_per_node: int
    network_id: str
    intra_node_bandwidth: float | None  # bytes/s per GPU, one direction; None: the GPU's own link
    host_memory_bytes: int | None
    source: SourceRef | None
    notes: str = ""
    origin: str = "shipped"
    host_memory_bandwidth: float | None = None  # theoretical bytes/s of the node's DRAM; None: the default host
    host_memory_bandwidth_source: SourceRef | None = None
    fabric_id: str | None = None  # None: the GPU's default fabric
    host_cpu_vendor: str | None = None  # "intel", "amd", "arm"; None: unknown


@dataclass(frozen=True)
class DefaultHost:
    """The host assumed where a plan names no node preset (``[host]`` in catalogs/systems)."""

    name: str
    host_memory_bandwidth: float  # theoretical bytes/s per node
    source: SourceRef | None
    notes: str = ""


@dataclass(frozen=True)
class HardwareCatalog:
    gpus: tuple[GpuEntry, ...]
    nodes: tuple[NodeEntry, ...]
    networks: tuple[NetworkEntry, ...]
    efficiency_default: dict[str, EfficiencyValue]
    efficiency_classes: tuple[tuple[tuple[str, ...], dict[str, EfficiencyValue]], ...]
    efficiency_sources: dict[str, SourceRef]
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # user entries that replace a built-in one
    default_host: DefaultHost | None = None
    fabrics: tuple[FabricSpec, ...] = ()
    _by_id: dict[str, GpuEntry] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_id.update({g.id: g for g in self.gpus})

    def gpu(self, gpu_id: str) -> GpuEntry:
        try:
            return self._by_id[gpu_id]
        except KeyError:
            raise self._unknown("GPU", gpu_id, self._by_id, "llmplan-cli catalog gpus") from None

    def node(self, node_id: str) -> NodeEntry:
        by_id = {n.id: n for n in self.nodes}
        if node_id not in by_id:
            raise self._unknown("node", node_id, by_id, "llmplan-cli catalog nodes")
        return by_id[node_id]

    def network(self, network_id: str) -> NetworkEntry:
        by_id = {n.id: n for n in self.networks}
        if network_id not in by_id:
            raise self._unknown("network", network_id, by_id, "llmplan-cli catalog networks")
        return by_id[network_id]

    def _unknown(self, kind: str, wanted: str, known: Iterable[str], command: str) -> CatalogError:
        """``_unknown``, and when some of the user's files were skipped, that the id may be in one of them: a GPU
        defined in a file with one bad field read only "unknown GPU id" (trial33)."""
        err = _unknown(kind, wanted, known, command)
        if not self.problems:
            return err
        files = "one of your hardware files was" if len(self.problems) == 1 else \
            f"{len(self.problems)} of your hardware files or entries were"
        return CatalogError(f"{err}; {files} skipped (`llmplan-cli catalog problems` says why)")

    def fabric_for(self, gpu: GpuSpec, node_id: str | None = None) -> FabricSpec:
        """The node preset's fabric, else the GPU's: an SXM NVLink GPU sits on an NVSwitch of its NVLink
        generation, another NVLink GPU on bridges ("nvlink"), the rest on PCIe."""
        by_id = {f.id: f for f in self.fabrics}
        if node_id and self.node(node_id).fabric_id in by_id:
            return by_id[self.node(node_id).fabric_id or ""]
        if gpu.nvlink_bandwidth and gpu.form_factor.upper().startswith("SXM") and gpu.nvlink_generation:
            want = f"nvswitch-nvlink{gpu.nvlink_generation}"
        elif gpu.nvlink_bandwidth:
            want = "nvlink-bridge"
        elif gpu.vendor == "amd" and gpu.form_factor.upper() == "OAM":
            want = "xgmi"
        else:
            want = "pcie"
        return by_id.get(want) or by_id.get("nvlink-bridge" if gpu.nvlink_bandwidth else "pcie") or FabricSpec(
            kind="nvlink" if gpu.nvlink_bandwidth else "pcie")

    def efficiency_basis_for(self, gpu_id: str) -> dict[str, EfficiencyValue]:
        """Each efficiency with its basis and source: first matching class, field by field."""
        chosen = dict(self.efficiency_default)
        for patterns, values in self.efficiency_classes:
            if any(fnmatch.fnmatchcase(gpu_id, p) for p in patterns):
                chosen.update(values)
                break
        return chosen

    def efficiency_for(self, gpu_id: str) -> Efficiency:
        self.gpu(gpu_id)  # unknown ids are an error, not silently the default
        basis = self.efficiency_basis_for(gpu_id)
        return Efficiency(**{name: basis[name].value for name in EFFICIENCY_FIELDS if name in basis})

    def host_memory_bandwidth_for(self, node_id: str | None) -> float | None:
        """Theoretical host DRAM bytes/s of one node: the node preset's, else the default host's."""
        if node_id:
            own = self.node(node_id).host_memory_bandwidth
            if own:
                return own
        return self.default_host.host_memory_bandwidth if self.default_host else None

    def match(self, reported_name: str, memory_bytes: int | None = None, gpu_cores: int | None = None):
        """The entry whose match name equals what NVML / rocm-smi / macOS reported, or None.

        Names are compared exactly (case and spacing aside), so "NVIDIA L4" never matches
        "NVIDIA L40S". Apple chips share a name across memory sizes; memory and cores pick one.
        """
        wanted = _norm(reported_name)
        hits = [g for g in self.gpus if wanted in {_norm(n) for n in g.match_names}]
        if gpu_cores is not None and any(g.spec.gpu_cores == gpu_cores for g in hits):
            hits = [g for g in hits if g.spec.gpu_cores == gpu_cores]
        if len(hits) > 1 and memory_bytes is not None:
            hits.sort(key=lambda g: abs(g.spec.memory_bytes - memory_bytes))
        return hits[0] if hits else None

    def cluster_from(
        self,
        gpu_id: str | None,
        gpus_per_node: int | None = None,
        nodes: int = 1,
        network_id: str | None = None,
        node_id: str | None = None,
    ) -> ClusterSpec:
        """A ClusterSpec from catalog ids; a node preset fills in what is not given."""
        node = self.node(node_id) if node_id else None
        gpu_id = gpu_id or (node.gpu_id if node else None)
        if not gpu_id:
            raise CatalogError("no GPU given: pass a GPU id (see `llmplan-cli catalog gpus`) or a node id")
        if node and gpu_id != node.gpu_id:
            raise CatalogError(f"node {node.id!r} holds {node.gpu_id!r}, not {gpu_id!r}; drop one of the two")
        per_node = gpus_per_node or (node.gpus_per_node if node else 1)
        net_id = network_id or (node.network_id if node else "none")
        network = self.network(net_id)
        if nodes > 1 and network.gbit_per_port <= 0:
            raise CatalogError(
                f"{nodes} nodes need a network between them; choose one of "
                f"{[n.id for n in self.networks if n.gbit_per_port > 0]}"
            )
        try:
            return ClusterSpec(
                gpu=self.gpu(gpu_id).spec,
                gpus_per_node=per_node,
                nodes=nodes,
                intra_node_bandwidth=node.intra_node_bandwidth if node else None,
                network=network.spec_for(per_node),
                fabric=self.fabric_for(self.gpu(gpu_id).spec, node.id if node else None),
                host_memory_bandwidth=self.host_memory_bandwidth_for(node.id if node else None),
                host_cpu_vendor=node.host_cpu_vendor if node else None,
            )
        except ValidationError as exc:
            raise CatalogError(f"invalid cluster: {_first_error(exc)}") from None


def _norm(name: str) -> str:
    return " ".join(name.split()).casefold()


def _unknown(kind: str, wanted: str, known: Iterable[str], command: str) -> CatalogError:
    close = _close_ids(wanted, list(known))
    more = f" (and {len(close) - 5} more)" if len(close) > 5 else ""
    hint = f"; did you mean {', '.join(close[:5])}{more}?" if close else ""
    return CatalogError(f"unknown {kind} id {wanted!r}{hint} (list them with `{command}`)")


def _close_ids(wanted: str, known: list[str]) -> list[str]:
    """Ids that contain every word of ``wanted``, ignoring case and punctuation ("h100", "rtx4090", "m3 max":
    what people type for "nvidia-h100-sxm-80gb"), in catalog order; else the spelling-close ones."""
    words = [w for w in re.split(r"[^a-z0-9]+", wanted.lower()) if w]
    hits = [k for k in known if words and all(w in re.sub(r"[^a-z0-9]", "", k.lower()) for w in words)]
    return hits or get_close_matches(wanted, known, n=3, cutoff=0.5)


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ()))
    return f"{where}: {err.get('msg', '')}" if where else str(err.get("msg", ""))


# ---------------------------------------------------------------------------------------------
# Loading


@dataclass
class _Builder:
    gpus: dict[str, GpuEntry] = field(default_factory=dict)
    nodes: dict[str, NodeEntry] = field(default_factory=dict)
    networks: dict[str, NetworkEntry] = field(default_factory=dict)
    eff_default: dict[str, EfficiencyValue] = field(default_factory=dict)
    eff_classes: list[tuple[tuple[str, ...], dict[str, EfficiencyValue]]] = field(default_factory=list)
    eff_sources: dict[str, SourceRef] = field(default_factory=dict)
    fabrics: dict[str, FabricSpec] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    host: DefaultHost | None = None


MAX_USER_FILE_BYTES = 4 * 1024 * 1024  # a user file holds a few GPUs: a few KB


def _read(path: Path) -> dict:
    if path.suffix == ".json":  # never read a huge file, a FIFO or a device dropped in the folder
        data = load_json(path, MAX_USER_FILE_BYTES, what="hardware file", error=CatalogError)
        if isinstance(data, dict) and "id" in data:  # a single GPU object
            data = {"gpu": [data]}
        if not isinstance(data, dict):
            raise ValueError("expected a JSON object")
        return data
    return load_toml(path, MAX_USER_FILE_BYTES, what="hardware file", error=CatalogError)


def _resolve(key: str | None, table: dict[str, SourceRef], where: str, strict: bool) -> SourceRef | None:
    if key is None:
        if strict:
            raise ValueError(f"{where} names no source")
        return None
    if key not in table:
        raise ValueError(f"{where} cites source {key!r}, which the file's [sources] does not define")
    return table[key]


def _gpu_entry(raw: GpuFileEntry, file: HardwareFile, origin: str, strict: bool) -> GpuEntry:
    sources: dict[str, SourceRef] = {}
    for figure in raw.stated_figures():
        ref = _resolve(raw.sources.get(figure, raw.source), file.sources, f"GPU {raw.id!r} {figure}", strict)
        if ref is not None:
            sources[figure] = ref
    if strict and raw.pcie_generation is not None and "pcie-spec" in file.sources:
        sources["pcie_bandwidth"] = file.sources["pcie-spec"]
    if raw.vendor == "apple" and file.apple_wired_memory is not None:
        sources["gpu_memory_fraction"] = file.sources[file.apple_wired_memory.source]
    return GpuEntry(
        spec=raw.to_spec(),
        match_names=tuple(raw.match_names),
        sources=sources,
        price_date=raw.price_date,
        notes=raw.notes,
        memory_reported=raw.memory_reported,
        origin=origin,
    )


def _add_file(b: _Builder, path: Path, origin: str, strict: bool) -> None:
    file = HardwareFile.model_validate(_read(path))
    raws = list(file.gpu)
    if file.apple_wired_memory is not None:
        _resolve(file.apple_wired_memory.source, file.sources, "apple_wired_memory", strict)
        for chip in file.apple_chip:
            raws.extend(expand_apple_chip(chip, file.apple_wired_memory))
    gpus = [_gpu_entry(raw, file, origin, strict) for raw in raws]
    networks = [_network_entry(n, file, origin, strict) for n in file.network]
    nodes = [_node_entry(n, file, origin, strict) for n in file.node]
    b.fabrics.update({f.id: _fabric(f, file, strict) for f in file.fabric})
    if strict:  # shipped ids are unique across all files; user files override on purpose
        for kind, items, seen in (("GPU", gpus, b.gpus), ("network", networks, b.networks), ("node", nodes, b.nodes)):
            ids = [item.id for item in items] + list(seen)
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            if dupes:
                raise ValueError(f"duplicate {kind} ids {dupes}")
    if not strict:
        for kind, items, seen in (("GPU", gpus, b.gpus), ("network", networks, b.networks), ("node", nodes, b.nodes)):
            b.notes.extend(f"{path}: {kind} {item.id!r} replaces the built-in entry of that id"
                           for item in items if item.id in seen and seen[item.id].origin == "shipped")
    b.gpus.update({g.id: g for g in gpus})
    b.networks.update({n.id: n for n in networks})
    b.nodes.update({n.id: n for n in nodes})
    if file.host is not None:
        h = file.host
        b.host = DefaultHost(h.name, h.host_memory_bandwidth_gbs * GB_PER_S,
                             _resolve(h.source, file.sources, "host", strict), h.notes)
    if file.default is not None:
        for name in EFFICIENCY_FIELDS:
            value = getattr(file.default, name)
            if value is None:
                continue
            b.eff_default[name] = value
            b.eff_sources[value.source] = _resolve(value.source, file.sources, f"default {name}", True)
    for cls in file.class_:
        values = {n: getattr(cls, n) for n in EFFICIENCY_FIELDS if getattr(cls, n) is not None}
        for name, value in values.items():
            b.eff_sources[value.source] = _resolve(value.source, file.sources, f"class {cls.id} {name}", True)
        b.eff_classes.append((tuple(cls.gpus), values))


def _network_entry(n: NetworkFileEntry, file: HardwareFile, origin: str, strict: bool) -> NetworkEntry:
    return NetworkEntry(
        id=n.id,
        name=n.name,
        gbit_per_port=n.gbit_per_port,
        ports_per=n.ports_per,
        source=_resolve(n.source, file.sources, f"network {n.id!r}", strict),
        latency_s=n.latency_us * 1e-6 if n.latency_us is not None else None,
        notes=n.notes,
        origin=origin,
        ports=n.ports,
        rail_optimized=n.rail_optimized,
        nodes_per_leaf=n.nodes_per_leaf,
        oversubscription=n.oversubscription,
    )


def _fabric(f: FabricFileEntry, file: HardwareFile, strict: bool) -> FabricSpec:
    """A fabric with its measured curve normalised by its largest-message bus bandwidth."""
    src = [_resolve(s, file.sources, f"fabric {f.id!r}", strict) for s in (f.curve_source, f.nvls_source) if s]
    if len(f.curve_bytes) != len(f.curve_busbw_gbs):
        raise ValueError(f"fabric {f.id!r}: curve_bytes and curve_busbw_gbs differ in length")
    top = f.curve_busbw_gbs[-1] if f.curve_busbw_gbs else 1.0
    return FabricSpec(id=f.id, kind=f.kind, nvls_share=f.nvls_share, ramp_bytes=tuple(f.curve_bytes),
                      ramp_share=tuple(v / top for v in f.curve_busbw_gbs),
                      source="; ".join(s.title for s in src if s is not None))


def _node_entry(n: NodeFileEntry, file: HardwareFile, origin: str, strict: bool) -> NodeEntry:
    return NodeEntry(
        id=n.id,
        name=n.name,
        gpu_id=n.gpu,
        gpus_per_node=n.gpus_per_node,
        network_id=n.network,
        intra_node_bandwidth=n.intra_node_gbs * GB_PER_S if n.intra_node_gbs else None,
        host_memory_bytes=int(n.host_memory_gib * GIB) if n.host_memory_gib else None,
        source=_resolve(n.source, file.sources, f"node {n.id!r}", strict),
        notes=n.notes,
        origin=origin,
        host_memory_bandwidth=n.host_memory_bandwidth_gbs * GB_PER_S if n.host_memory_bandwidth_gbs else None,
        host_memory_bandwidth_source=_resolve(n.host_memory_bandwidth_source or n.source, file.sources,
                                              f"node {n.id!r} host_memory_bandwidth", strict)
        if n.host_memory_bandwidth_gbs else None,
        fabric_id=n.fabric,
        host_cpu_vendor=n.host_cpu_vendor,
    )


def _describe(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return _first_error(exc)
    return str(exc) or type(exc).__name__


def user_hardware_dir() -> Path:
    return user_data_dir() / "hardware"


def _shipped_files() -> list[Path]:
    root = catalogs_dir()
    return sorted((root / "gpus").glob("*.toml")) + sorted((root / "systems").glob("*.toml"))


def _build(shipped: list[Path], user_dir: Path) -> HardwareCatalog:
    b = _Builder()
    for path in shipped:
        try:
            _add_file(b, path, "shipped", strict=True)
        except (ValidationError, ValueError, OSError) as exc:
            raise CatalogError(f"shipped hardware catalog {path.name} is invalid: {_describe(exc)}") from exc
    user_files = sorted(p for p in user_dir.glob("*") if p.suffix in (".json", ".toml")) if user_dir.is_dir() else []
    for path in user_files:
        try:
            _add_file(b, path, f"user:{path.name}", strict=False)
        except (ValidationError, ValueError, OSError, tomllib.TOMLDecodeError, RecursionError) as exc:
            b.problems.append(one_line(f"{path}: skipped, {_describe(exc).removeprefix(f'{path}: ')}"))
        except Exception as exc:  # a user file never stops the app
            b.problems.append(one_line(f"{path}: skipped, unusable ({type(exc).__name__}: {str(exc)[:200]})"))
    for node in list(b.nodes.values()):
        missing = [x for x, known in ((node.gpu_id, b.gpus), (node.network_id, b.networks)) if x not in known]
        if missing:
            if node.origin == "shipped":
                raise CatalogError(f"shipped node {node.id!r} refers to unknown ids {missing}")
            b.problems.append(f"node {node.id!r} ({node.origin}): skipped, unknown ids {missing}")
            del b.nodes[node.id]
    return HardwareCatalog(
        gpus=tuple(b.gpus.values()),
        nodes=tuple(b.nodes.values()),
        networks=tuple(b.networks.values()),
        efficiency_default=b.eff_default,
        efficiency_classes=tuple(b.eff_classes),
        efficiency_sources=b.eff_sources,
        problems=tuple(b.problems),
        notes=tuple(b.notes),
        default_host=b.host,
        fabrics=tuple(b.fabrics.values()),
    )


@functools.lru_cache(maxsize=4)
def _cached(user_dir: str, stamp: tuple) -> HardwareCatalog:
    return _build(_shipped_files(), Path(user_dir))


def load_hardware_catalog() -> HardwareCatalog:
    """The catalog, cached; re-read when a user file is added, changed or removed (checked once per
    ``catalog.snapshot.catalog_read``)."""
    return within_read("hardware", _load_checked)


def _load_checked() -> HardwareCatalog:
    user_dir = user_hardware_dir()
    stamp: list[tuple[str, int, int]] = []
    if user_dir.is_dir():
        for path in user_dir.iterdir():
            try:
                st = path.stat()
            except OSError:  # removed while we looked; the build below reports what is left
                continue
            stamp.append((path.name, st.st_mtime_ns, st.st_size))
    return _cached(str(user_dir), tuple(sorted(stamp)))


def save_user_gpu(spec: GpuSpec, match_names: Iterable[str] = (), notes: str = "") -> Path:
    """Write ``spec`` as a user GPU (JSON, atomically: temp file, fsync, rename); returns the path."""
    entry = {
        "id": spec.id,
        "name": spec.name,
        "vendor": spec.vendor,
        "match_names": list(match_names),
        "form_factor": spec.form_factor,
        "compute_capability": spec.compute_capability,
        "memory_bytes": spec.memory_bytes,
        "memory_marketing": spec.memory_marketing,
        "memory_bandwidth_gbs": spec.memory_bandwidth / GB_PER_S,
        "tflops": {k: v / 1e12 for k, v in spec.peak_flops.model_dump().items() if v is not None},
        "nvlink_generation": spec.nvlink_generation,
        "nvlink_gbs": spec.nvlink_bandwidth / GB_PER_S,
        "pcie_generation": spec.pcie_generation,
        "pcie_lanes": spec.pcie_lanes,
        "pcie_gbs": spec.pcie_bandwidth / GB_PER_S if spec.pcie_bandwidth else None,
        "tdp_watts": spec.tdp_watts,
        "unified_memory": spec.unified_memory,
        "gpu_memory_fraction": spec.gpu_memory_fraction,
        "gpu_cores": spec.gpu_cores,
        "notes": notes,
    }
    entry = {k: v for k, v in entry.items() if v is not None}
    GpuFileEntry.model_validate(entry)  # never write a file the loader would reject
    folder = user_hardware_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{spec.id}.json"
    atomic_write(target, json.dumps({"gpu": [entry]}, indent=2))
    return target
