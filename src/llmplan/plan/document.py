"""The ``.llmplan`` document: the plan file's contract (DESIGN.md §3), as pydantic models.

A plan is self-contained: besides the catalog ids it may carry the model's full
config.json (``model.config``), the GPU's full spec (``hardware.gpu_spec``) and its catalog
efficiencies (``hardware.gpu_efficiency``), so that another person opens it on another
machine, with another catalog, and gets the same numbers. The dotted field paths (``training.zero_stage``, ``parallelism.tp`` ...) are
what ``llmplan-cli --set`` and other tools use: add fields, never rename them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from llmplan import __version__
from llmplan.core.frozen import FrozenModel
from llmplan.core.hardware import Efficiency, FabricSpec, GpuSpec, NetworkSpec
from llmplan.core.model import ModelSpec
from llmplan.core.workload import (
    EfficiencyOverrides,
    InferenceSettings,
    ParallelLayout,
    TrainingSettings,
    Workload,
)

SCHEMA_VERSION = 5
FORMAT = "llmplan"


class HubSource(FrozenModel):
    """Where a model came from on the Hugging Face Hub (``model.hub``); the config is inline beside it."""

    repo: str = Field(min_length=3, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$",
                      description="ORG/NAME")
    revision: str | None = Field(None, min_length=1, max_length=200, description="branch, tag or commit; None: main")
    file: str | None = Field(None, min_length=1, max_length=512, description="the GGUF file (or quant) chosen")
    commit: str | None = Field(None, min_length=1, max_length=64, description="the commit the Hub resolved")
    file_bytes: int | None = Field(
        None, gt=0, le=1 << 50, description="the chosen file's size (split parts summed), as the Hub lists it; "
        "becomes inference.weight_file_bytes while inference.weight_format is this file's format"
    )
    weight_format: str | None = Field(None, min_length=1, max_length=40, description="the chosen file's format")


class ModelRef(FrozenModel):
    """Which model: a catalog id, or an inline config.json (or both: the config wins), or a Hub repo."""

    id: str | None = Field(None, min_length=1, description="catalog id, e.g. 'meta-llama/Meta-Llama-3-8B'")
    name: str | None = Field(None, description="display name beside an inline config")
    config: dict[str, Any] | None = Field(None, description="the full config.json object, inline")
    spec: ModelSpec | None = Field(
        None, description="the resolved architecture, inline (wins over config and id; written on save)"
    )
    hub: HubSource | None = Field(
        None, description="where the model came from on the Hugging Face Hub; fetched only when no config is inline"
    )

    @model_validator(mode="after")
    def _one_of(self) -> ModelRef:
        if not self.id and not self.config and not self.spec and not self.hub:
            raise ValueError(
                "a plan's model needs 'id' (a catalog id), 'config' (an inline config.json), 'spec' or 'hub'"
            )
        return self


MAX_CARDS = 16  # llama.cpp's GGML_CUDA_MAX_DEVICES


class CardRef(FrozenModel):
    """One kind of card in a machine of different cards (``hardware.cards``), in device order."""

    gpu: str = Field(min_length=1, description="catalog GPU id")
    count: int = Field(1, ge=1, le=MAX_CARDS, description="how many of this card, next to each other in device order")
    gpu_spec: GpuSpec | None = Field(None, description="the card's full spec, inline (wins over the id)")


def cards_of(ids: list[str], specs: dict[str, GpuSpec] | None = None) -> list[CardRef]:
    """``hardware.cards`` for the cards ``ids`` in device order (the inverse of ``HardwareRef.card_ids``):
    neighbouring identical ids counted together; ``specs``: inline specs by GPU id to keep."""
    specs = specs or {}
    cards: list[CardRef] = []
    for i in ids:
        if cards and cards[-1].gpu == i:
            cards[-1] = cards[-1].model_copy(update={"count": cards[-1].count + 1})
        else:
            cards.append(CardRef(gpu=i, gpu_spec=specs.get(i)))
    return cards


def cards_data(cards: list[CardRef]) -> list[dict]:
    """``cards`` as plain data for a document edit; an entry names ``gpu_spec`` only when it has one."""
    return [{"gpu": c.gpu, "count": c.count, **({"gpu_spec": c.gpu_spec.model_dump()} if c.gpu_spec else {})}
            for c in cards]


class HardwareRef(FrozenModel):
    gpu: str = Field("nvidia-h100-sxm-80gb", min_length=1, description="catalog GPU id")
    gpu_spec: GpuSpec | None = Field(None, description="the GPU's full spec, inline (wins over the id)")
    gpu_efficiency: Efficiency | None = Field(
        None, description="the GPU's achievable fractions of peak as the catalog gave them when the plan was "
        "saved, inline with gpu_spec (dropped with it when the GPU changes); None: the catalog's; the plan's "
        "'efficiency' overrides apply on top"
    )
    gpus_per_node: int = Field(1, ge=1, le=1024)
    nodes: int = Field(1, ge=1, le=1_000_000)
    node: str | None = Field(None, description="catalog node preset id (gives the GPU-to-GPU bandwidth)")
    intra_node_bandwidth: float | None = Field(
        None, gt=0, description="bytes/s per GPU inside a node, one direction; None: the node preset's, "
        "else the GPU's NVLink or PCIe"
    )
    host_memory_bandwidth: float | None = Field(
        None, gt=0, description="theoretical host DRAM bandwidth of one node, bytes/s (sockets × channels × MT/s × "
        "8 B); sizes the CPU optimizer step of offloaded training; None: the node preset's, else the catalog's "
        "default host"
    )
    network: str = Field("none", description="catalog network preset id")
    network_spec: NetworkSpec | None = Field(None, description="the network's full spec, inline (wins over the id)")
    fabric_spec: FabricSpec | None = Field(
        None, description="the intra-node fabric (NVSwitch/NVLink/PCIe, NVLS, measured message-size curve), inline; "
        "None: the node preset's, else the one the GPU implies"
    )
    price_per_gpu_hour: float | None = Field(None, ge=0, description="USD; None: the catalog's price")
    cards: tuple[CardRef, ...] = Field(
        (), description="several different cards in one machine, in device order (inference with llama.cpp's "
        "layer split, schema 5); (): gpus_per_node × nodes identical 'gpu'"
    )
    tensor_split: tuple[float, ...] | None = Field(
        None, description="llama.cpp's --tensor-split: a relative share per card of 'cards' (counts expanded); "
        "None: by each card's usable memory"
    )

    @model_validator(mode="after")
    def _cards(self) -> HardwareRef:
        n = sum(c.count for c in self.cards)
        if n > MAX_CARDS:
            raise ValueError(f"cards: {n} cards in one machine; llama.cpp splits across at most {MAX_CARDS}")
        if self.cards and self.nodes != 1:
            raise ValueError("cards describe one machine: set nodes to 1 (or clear cards for a cluster)")
        if self.tensor_split is not None:
            if not self.cards:
                raise ValueError("tensor_split needs cards (one share per card)")
            if len(self.tensor_split) != n or any(not 0 <= x < 1e12 for x in self.tensor_split) \
                    or sum(self.tensor_split) <= 0:
                raise ValueError(f"tensor_split: give {n} non-negative shares (one per card) with a positive sum")
        return self

    def card_ids(self) -> list[str]:
        """The machine's cards one by one, in device order ([] when the plan has identical GPUs)."""
        return [c.gpu for c in self.cards for _ in range(c.count)]


class SystemOptions(FrozenModel):
    """Beyond the GPU (checkpoints, failures, data, host, power): preset ids from ``catalogs/system``
    and the user's own numbers. ``None`` means the catalog's named default (``[defaults]``)."""

    storage: str | None = Field(None, min_length=1, description="checkpoint storage preset id, e.g. 'nfs-100gbe'")
    data_storage: str | None = Field(None, min_length=1, description="training-data storage preset id; None: storage")
    offload_storage: str | None = Field(None, min_length=1, description="NVMe offload drives preset id")
    failures: str | None = Field(None, min_length=1, description="failure-rate preset id (per GPU-hour)")
    pue: str | None = Field(None, min_length=1, description="datacenter PUE preset id")
    electricity_price: str | None = Field(None, min_length=1, description="electricity price preset id")
    grid_intensity: str | None = Field(None, min_length=1, description="grid CO2 intensity preset id")
    price_per_kwh: float | None = Field(None, ge=0, le=100, description="USD per kWh; wins over the preset")
    kg_co2_per_kwh: float | None = Field(None, ge=0, le=10, description="kg CO2 per kWh; wins over the preset")
    async_save: bool | None = Field(None, description="checkpoints saved asynchronously (only the copy blocks)")
    interval_s: float | None = Field(None, gt=0, description="fixed checkpoint interval; None: Young/Daly optimum")
    restart_overhead_s: float | None = Field(None, ge=0, description="seconds to restart after a failure")
    pretokenized: bool | None = Field(None, description="training data already tokenised (no tokeniser CPUs)")


class PlanDocument(FrozenModel):
    format: Literal["llmplan"] = FORMAT
    schema_version: int = SCHEMA_VERSION
    app_version: str = __version__
    name: str = ""
    notes: str = Field("", max_length=100_000)
    model: ModelRef
    hardware: HardwareRef = HardwareRef()
    workload: Workload = "pretrain"
    training: TrainingSettings = TrainingSettings()
    inference: InferenceSettings = InferenceSettings()
    parallelism: ParallelLayout = ParallelLayout()
    efficiency: EfficiencyOverrides = EfficiencyOverrides()
    system: SystemOptions = SystemOptions()
