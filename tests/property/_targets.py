"""Every parser of an untrusted file, as one ``Target`` the hostile-input families can aim at.

Why one table: issue 17 asks each new family (FIFOs and devices, 5,000-digit integers, deep
nesting, booleans as numbers, control characters) to reach *every* parser it applies to. A target
says where its file lives (a plain path, or inside a fresh user data dir for the catalogs and the
autosave folder), what a valid file holds (``base``: a real document the family then damages) and
how llmplan reads it (``run``), which must return a result or raise the parser's own error type.
The same table drives the CI property tests and ``make fuzz`` (scripts/fuzz.py).
"""

from __future__ import annotations

import copy
import json
import os
import struct
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from llmplan.errors import LlmplanError
from llmplan.resources_path import catalogs_dir, resources_dir
from tests.property import _gguf_bytes as g


@dataclass(frozen=True)
class Target:
    name: str
    fmt: str  # "json", "toml", "gguf" or "safetensors" (8-byte length, then a JSON header)
    place: str  # the file's path inside a fresh folder that is also the user data dir
    valid: Callable[[], Any]  # a valid document: a dict (json/toml/safetensors) or gguf key/values
    run: Callable[[Path, Path], Any]  # (file, data dir) -> a comparable result; raises the parser's error
    user_data: bool = False  # a user data file: never raises, refusals are listed as problems

    def base(self) -> Any:
        """A fresh copy of the valid document (the documents are cached: a family may change its copy)."""
        return copy.deepcopy(self.valid())


# ---- valid documents --------------------------------------------------------------------------

@cache
def _plans() -> tuple[dict, ...]:
    return tuple(json.loads(p.read_text("utf-8")) for p in sorted((resources_dir() / "examples").glob("*.llmplan")))


def plan_doc() -> dict:
    return copy.deepcopy(_plans()[0])


@cache
def _model_entry() -> dict:
    return json.loads((catalogs_dir() / "models" / "meta-llama__Llama-2-13b-hf.json").read_text("utf-8"))


def config_doc() -> dict:
    return dict(_model_entry()["config"])


def user_model_doc() -> dict:
    return {**_model_entry(), "id": "me/my-model"}


GPU_ENTRY = {
    "id": "my-gpu", "name": "My GPU", "vendor": "nvidia", "memory_bytes": 25769803776, "memory_marketing": "24 GB",
    "memory_bandwidth_gbs": 1008.0, "tflops": {"fp16": 165.0, "bf16": 165.0, "fp32": 82.6},
    "pcie_generation": 4, "pcie_lanes": 16, "tdp_watts": 450.0,
}


def gpu_doc() -> dict:
    return {"gpu": [dict(GPU_ENTRY)]}


@cache
def _toml(name: str) -> dict:
    return tomllib.loads((catalogs_dir() / name).read_text("utf-8"))


def engines_doc() -> dict:
    return {"mine": dict(_toml("engines.toml")["vllm"])}


def frameworks_doc() -> dict:
    return {"mine": dict(_toml("frameworks.toml")["deepspeed"])}


def system_doc() -> dict:
    return {"storage": [dict(_toml("system/storage.toml")["storage"][0], id="my-storage")]}


def safetensors_doc() -> dict:
    return {"__metadata__": {"format": "pt"},
            "model.embed_tokens.weight": {"dtype": "BF16", "shape": [128, 64], "data_offsets": [0, 16384]},
            "lm_head.weight": {"dtype": "F32", "shape": [128, 64], "data_offsets": [16384, 49152]}}


def index_doc() -> dict:
    return {"metadata": {"total_size": 16060522496},
            "weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                           "lm_head.weight": "model-00002-of-00002.safetensors"}}


def calibration_doc() -> dict:
    return {"format": "llmplan-calibration", "schema_version": 1, "device": "cuda:0",
            "device_name": "NVIDIA H100 80GB HBM3", "torch_version": "2.11.0", "created_utc": "2026-11-22T03:00:00Z",
            "matmul": [{"dtype": "bf16", "n": 8192, "flops_per_s": 7.0e14, "iterations": 60, "seconds": 0.1}],
            "memory_bandwidth_bytes_per_s": 2.8e12, "copy_bytes": 1 << 30, "notes": ["measured"]}


def run_doc() -> dict:
    return {"peak_memory_bytes": 61_234_567_890, "step_time_s": 0.5, "peak_device_memory_bytes": 65_000_000_000}


def gguf_kvs() -> list:
    return g.llama_kvs()


def autosave_meta_doc() -> dict:
    return {"origin": "/nonexistent-llmplan-folder/mine.llmplan"}


# ---- how each is read --------------------------------------------------------------------------

def plan_view(doc: Any) -> Any:
    """What a plan means, for comparisons: its fields with the inline config replaced by the model the
    config describes (the document keeps a config verbatim, read or not; the spec is what is used)."""
    from llmplan.formats.hf_config import spec_from_config

    config = doc.model.config
    return repr(doc.model_dump(exclude={"model": {"config"}})), spec_from_config(config) if config else None


def _plan(path: Path, _data: Path) -> Any:
    from llmplan.plan.planfile import load_plan

    return plan_view(load_plan(path))


def _config(path: Path, _data: Path) -> Any:
    from llmplan.formats.hf_config import spec_from_path

    return spec_from_path(path)


def _gguf(path: Path, _data: Path) -> Any:
    from llmplan.formats.gguf_header import read_gguf_header, spec_from_gguf

    read_gguf_header(path)
    return spec_from_gguf(path)


def _safetensors(path: Path, _data: Path) -> Any:
    from llmplan.formats.safetensors_index import params_by_dtype

    return params_by_dtype(path)


def _index(path: Path, _data: Path) -> Any:
    from llmplan.formats.safetensors_index import read_index

    return read_index(path)


def _calibration(path: Path, _data: Path) -> Any:
    from llmplan.hw.measured import load_calibration

    return load_calibration(path)


def _measured_run(path: Path, _data: Path) -> Any:
    from llmplan.hw.measured import import_measured_run

    return import_measured_run(path).peak_memory_bytes, import_measured_run(path).step_time_s


def _in_data_dir(data: Path, load: Callable[[], tuple[Any, tuple[str, ...]]]) -> Any:
    """Run one user catalog's loader with ``data`` as the user data dir: (what it loaded, its problems).
    A user file never makes a loader raise, and every problem is one line (the app's notice lists them)."""
    old = os.environ.get("LLMPLAN_DATA_DIR")
    os.environ["LLMPLAN_DATA_DIR"] = str(data)
    try:
        loaded, problems = load()
        for line in problems:
            assert line.strip() and "\n" not in line, f"problem line not one line: {line!r}"
        return repr(loaded), tuple(problems)
    finally:
        if old is None:
            os.environ.pop("LLMPLAN_DATA_DIR", None)
        else:
            os.environ["LLMPLAN_DATA_DIR"] = old


def _user_models(_path: Path, data: Path) -> Any:
    from llmplan.catalog.models import load_model_catalog

    def load():
        catalog = load_model_catalog(refresh=True)
        return [(m.id, m.display_name, m.spec) for m in catalog.entries if m.id.startswith("me/")], catalog.problems
    return _in_data_dir(data, load)


def _user_gpus(_path: Path, data: Path) -> Any:
    from llmplan.catalog.hardware import load_hardware_catalog

    def load():
        catalog = load_hardware_catalog()
        return [gpu for gpu in catalog.gpus if gpu.id.startswith("my-")], catalog.problems
    return _in_data_dir(data, load)


def _user_engines(_path: Path, data: Path) -> Any:
    from llmplan.catalog.engines import engine_problems, load_engine_profiles

    return _in_data_dir(data, lambda: (load_engine_profiles().get("mine"), engine_problems()))


def _user_frameworks(_path: Path, data: Path) -> Any:
    from llmplan.catalog.frameworks import framework_problems, load_framework_profiles

    return _in_data_dir(data, lambda: (load_framework_profiles().get("mine"), framework_problems()))


def _user_system(_path: Path, data: Path) -> Any:
    from llmplan.catalog.system_presets import load_system_catalog, system_problems

    return _in_data_dir(data, lambda: (load_system_catalog().storage.get("my-storage"), system_problems()))


def _autosave(path: Path, data: Path) -> Any:
    """Crash recovery at the next start: the newest slot of a dead session, or None; never raises."""
    from llmplan.gui import files

    old = os.environ.get("LLMPLAN_DATA_DIR")
    os.environ["LLMPLAN_DATA_DIR"] = str(data)
    problems: list[str] = []
    try:
        found = files.recoverable(problems)
        for line in problems:
            assert line.strip() and "\n" not in line, f"problem line not one line: {line!r}"
        if found is None:
            return None, tuple(problems)
        found.discard()
        try:
            return (plan_view(found.doc), found.origin), tuple(problems)
        except LlmplanError as exc:  # recovered, but its inline config cannot be sized: a clean error later
            return (UNUSABLE, str(exc)), tuple(problems)
    finally:
        if old is None:
            os.environ.pop("LLMPLAN_DATA_DIR", None)
        else:
            os.environ["LLMPLAN_DATA_DIR"] = old


SLOT = "autosave/4194301-0f0f0f0f"
UNUSABLE = "recovered, but the plan cannot be estimated"

TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("plan file", "json", "mine.llmplan", plan_doc, _plan),
    Target("config.json", "json", "model/config.json", config_doc, _config),
    Target("gguf header", "gguf", "model.gguf", gguf_kvs, _gguf),
    Target("safetensors header", "safetensors", "model.safetensors", safetensors_doc, _safetensors),
    Target("safetensors index", "json", "model.safetensors.index.json", index_doc, _index),
    Target("user model entry", "json", "models/mine.json", user_model_doc, _user_models, user_data=True),
    Target("user GPU file (TOML)", "toml", "hardware/mine.toml", gpu_doc, _user_gpus, user_data=True),
    Target("user GPU file (JSON)", "json", "hardware/mine.json", gpu_doc, _user_gpus, user_data=True),
    Target("user engines.toml", "toml", "engines.toml", engines_doc, _user_engines, user_data=True),
    Target("user frameworks.toml", "toml", "frameworks.toml", frameworks_doc, _user_frameworks, user_data=True),
    Target("user system preset", "toml", "system/mine.toml", system_doc, _user_system, user_data=True),
    Target("calibration", "json", "calibration.json", calibration_doc, _calibration),
    Target("compare-run", "json", "run.json", run_doc, _measured_run),
    Target("autosave slot", "json", SLOT + ".llmplan", plan_doc, _autosave, user_data=True),
    Target("autosave note", "json", SLOT + ".json", autosave_meta_doc, _autosave, user_data=True),
)}

TEXT_TARGETS = [n for n, t in TARGETS.items() if t.fmt != "gguf"]


def prepare(target: Target, folder: Path) -> Path:
    """The target's file path in ``folder``, its parent made; the autosave targets get a valid partner
    (a note beside a slot, a slot beside a note) so that recovery reaches the damaged file."""
    path = folder / target.place
    path.parent.mkdir(parents=True, exist_ok=True)
    if target.name == "autosave slot":
        (folder / (SLOT + ".json")).write_text(json.dumps(autosave_meta_doc()))
    elif target.name == "autosave note":
        (folder / (SLOT + ".llmplan")).write_text(json.dumps(plan_doc()))
    return path


def run(target: Target, path: Path, folder: Path) -> Any:
    """``target.run``: a result, or the parser's error (an LlmplanError) returned, not raised."""
    try:
        return target.run(path, folder)
    except LlmplanError as exc:
        return exc


def safetensors_bytes(header_text: str) -> bytes:
    raw = header_text.encode("utf-8", "surrogatepass")
    return struct.pack("<Q", len(raw)) + raw
