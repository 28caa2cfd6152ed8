"""The knobs of the "beyond the GPU" report: storage, failures, power, data pipeline, host.

Every number here comes from a catalog entry (``catalogs/system/*.toml``, loaded by
``llmplan.catalog.system_presets``) that carries its own citation, or from the user. The
core holds no default numbers of its own: a ``SystemSettings`` is always built from data,
so a figure in the report can always name the source of every input it used.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from llmplan.core.frozen import FrozenModel
from llmplan.core.strict_fields import StrictFields


class StoragePreset(StrictFields, FrozenModel):
    """Where checkpoints and training data live, as two bandwidth caps per direction.

    A transfer that involves ``n`` nodes runs at ``min(n · per_node, aggregate)``: each
    node is limited by its own drives or storage NIC, the whole job by the storage
    system. ``None`` means "no cap at that level" (local drives have no shared cap).
    """

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    kind: str = Field(min_length=1, description="local-nvme | raid0-nvme | parallel-fs | nfs | object-store")
    read_per_node: float | None = Field(None, gt=0, description="bytes/s one node can read")
    write_per_node: float | None = Field(None, gt=0, description="bytes/s one node can write")
    read_aggregate: float | None = Field(None, gt=0, description="bytes/s the whole system serves")
    write_aggregate: float | None = Field(None, gt=0, description="bytes/s the whole system absorbs")
    source: str = Field(min_length=1, description="citation for the numbers")
    notes: str = ""

    @model_validator(mode="after")
    def _check(self) -> StoragePreset:
        for d in ("read", "write"):
            if getattr(self, f"{d}_per_node") is None and getattr(self, f"{d}_aggregate") is None:
                raise ValueError(f"storage preset '{self.id}' needs {d}_per_node or {d}_aggregate (bytes/s)")
        return self

    def bandwidth(self, direction: str, nodes: int) -> float:
        """Bytes/s available to a job spread over ``nodes`` nodes (``direction``: read|write)."""
        per_node = self.read_per_node if direction == "read" else self.write_per_node
        aggregate = self.read_aggregate if direction == "read" else self.write_aggregate
        caps = [c for c in ((per_node * nodes) if per_node else None, aggregate) if c]
        return min(caps)  # the validator guarantees at least one cap


class FailureRate(StrictFields, FrozenModel):
    """Job interruptions per GPU-hour, measured on a published large-scale run."""

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    per_gpu_hour: float = Field(gt=0, le=1, description="interruptions per GPU-hour")
    source: str = Field(min_length=1)
    notes: str = ""


class PowerProfile(StrictFields, FrozenModel):
    """How much a GPU node draws and what the data centre adds on top.

    GPU power = TDP · (idle_fraction + (1 − idle_fraction) · min(1, MFU / saturation_mfu)):
    a GPU draws ``idle_fraction`` of its TDP doing nothing and reaches its TDP once the
    matrix units are busy enough (``saturation_mfu``). Node overhead (CPUs, NICs, fans,
    drives) is a fixed number of watts per GPU; PUE scales IT power to facility power.
    """

    idle_fraction: float = Field(ge=0, le=1)
    saturation_mfu: float = Field(gt=0, le=1)
    node_overhead_watts_per_gpu: float = Field(ge=0)
    pue: float = Field(ge=1, le=5)
    source: str = Field(min_length=1, description="citations for the four numbers")


class GridProfile(StrictFields, FrozenModel):
    """Electricity price and carbon intensity (user-set; defaults named in the catalog)."""

    price_per_kwh: float = Field(ge=0, description="USD per kWh")
    kg_co2_per_kwh: float = Field(ge=0, description="kg CO2 per kWh")
    source: str = Field(min_length=1)


class PipelineProfile(StrictFields, FrozenModel):
    """Data-loading facts: text bytes per token and how fast one CPU core tokenises."""

    text_bytes_per_token: float = Field(gt=0)
    tokenizer_bytes_per_s_per_core: float = Field(gt=0, description="bytes of raw text one core tokenises per s")
    cpu_cores_per_node: int = Field(ge=1, description="CPU cores of one node")
    pretokenized: bool = Field(True, description="data is stored as token ids (no tokenising while training)")
    source: str = Field(min_length=1)


class HostProfile(StrictFields, FrozenModel):
    """Host-side memory the training processes need besides offloaded states."""

    dataloader_workers_per_gpu: int = Field(ge=0)
    ram_per_dataloader_worker: float = Field(ge=0, description="bytes")
    ram_per_gpu_process: float = Field(ge=0, description="bytes each training process uses itself")
    source: str = Field(min_length=1)


class CheckpointOptions(StrictFields, FrozenModel):
    """How checkpoints are taken and how long a restart takes besides reading one."""

    async_save: bool = Field(
        False, description="copy to pinned host RAM, then write in the background (only the copy blocks)"
    )
    restart_overhead_s: float = Field(ge=0, description="relaunch, health checks, NCCL init (excl. loading)")
    interval_s: float | None = Field(None, gt=0, description="fixed interval; None: the Young/Daly optimum")
    source: str = Field(min_length=1)


class SystemSettings(FrozenModel):
    """Everything ``system_report`` needs beyond the Scenario and the Estimate."""

    storage: StoragePreset
    data_storage: StoragePreset | None = Field(None, description="where training data is read from; None: storage")
    offload_storage: StoragePreset | None = Field(None, description="each node's drives for NVMe offload")
    failures: FailureRate
    power: PowerProfile
    grid: GridProfile
    pipeline: PipelineProfile
    host: HostProfile
    checkpoint: CheckpointOptions

    @property
    def data_store(self) -> StoragePreset:
        return self.data_storage or self.storage
