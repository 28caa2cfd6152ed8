"""User catalog files (models, GPUs, engines, system presets), corrupt or hostile.

A user file comes from the user's data dir, written by hand or copied from someone: a bad one must
never stop the app. Model and GPU catalogs skip it and list it in ``problems``; the engine and
system catalogs refuse it with a CatalogError naming the file."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from functools import cache
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from llmplan.catalog.engines import engine_problems, load_engine_profiles
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.catalog.system_presets import load_system_catalog
from llmplan.errors import CatalogError, LlmplanError
from llmplan.resources_path import catalogs_dir
from tests.property import _toml
from tests.property._support import JSON_VALUES, SCALARS, deep_json_text, dumps, fuzz_slow, outcome


@contextlib.contextmanager
def user_data_dir():
    """A fresh LLMPLAN_DATA_DIR for one example (hypothesis runs many examples in one test call)."""
    old = os.environ.get("LLMPLAN_DATA_DIR")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LLMPLAN_DATA_DIR"] = tmp
        try:
            yield Path(tmp)
        finally:
            if old is None:
                os.environ.pop("LLMPLAN_DATA_DIR", None)
            else:
                os.environ["LLMPLAN_DATA_DIR"] = old
            load_model_catalog(refresh=True)


@cache
def _model_entry() -> dict:
    return json.loads((catalogs_dir() / "models" / "meta-llama__Llama-2-13b-hf.json").read_text(encoding="utf-8"))


GPU_ENTRY = {
    "id": "my-gpu", "name": "My GPU", "vendor": "nvidia", "memory_bytes": 25769803776, "memory_marketing": "24 GB",
    "memory_bandwidth_gbs": 1008.0, "tflops": {"fp16": 165.0, "bf16": 165.0, "fp32": 82.6},
    "pcie_generation": 4, "pcie_lanes": 16, "tdp_watts": 450.0,
}


def _models_load(folder: Path, name: str, data: bytes) -> None:
    (folder / "models").mkdir(exist_ok=True)
    (folder / "models" / name).write_bytes(data)
    catalog = outcome("user model entry", lambda: load_model_catalog(refresh=True))
    assert not isinstance(catalog, LlmplanError), "a bad user file must not stop the catalog loading"
    assert len(catalog.problems) <= 1


@fuzz_slow
@given(st.dictionaries(st.sampled_from([*_model_entry(), "user"]), JSON_VALUES, max_size=3),
       st.dictionaries(st.sampled_from(sorted(_model_entry()["config"])), SCALARS, max_size=3))
def test_user_model_entry_with_hostile_fields(fields, config_fields):
    entry = {**_model_entry(), "id": "me/my-model", **fields}
    if isinstance(entry.get("config"), dict):
        entry["config"] = {**entry["config"], **config_fields}
    with user_data_dir() as folder:
        _models_load(folder, "mine.json", dumps(entry).encode())


@fuzz_slow
@given(st.binary(max_size=200) | st.sampled_from([b"\xef\xbb\xbf{}", b"NaN", b"[]", b"{}"]))
def test_user_model_file_of_any_bytes(data):
    with user_data_dir() as folder:
        _models_load(folder, "mine.json", data)


def test_deeply_nested_user_files():
    with user_data_dir() as folder:
        _models_load(folder, "deep.json", deep_json_text(50_000).encode())
        _hardware_load(folder, "deep.json", deep_json_text(50_000))
        (folder / "hardware" / "deep.json").unlink()
        _hardware_load(folder, "deep.toml", "a = " + deep_json_text(50_000))
        (folder / "engines.toml").write_text("a = " + deep_json_text(50_000))
        profiles = outcome("user engines.toml", load_engine_profiles, CatalogError)
        assert "vllm" in profiles  # issue 17: the file is skipped, the shipped engines stay
        assert any("engines.toml" in p for p in engine_problems())


def _hardware_load(folder: Path, name: str, text: str | bytes) -> None:
    (folder / "hardware").mkdir(exist_ok=True)
    path = folder / "hardware" / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    catalog = outcome("user GPU file", load_hardware_catalog)
    assert not isinstance(catalog, LlmplanError), "a bad user file must not stop the catalog loading"
    ids = {g.id for g in catalog.gpus}
    assert "my-gpu" in ids or any(name in p for p in catalog.problems), catalog.problems


@fuzz_slow
@given(st.dictionaries(st.sampled_from([*GPU_ENTRY, "nvlink_gbs", "gpu_memory_fraction", "unified_memory"]),
                       JSON_VALUES, max_size=3), st.sampled_from(["json", "toml"]))
def test_user_gpu_with_hostile_fields(fields, kind):
    entry = {**GPU_ENTRY, **fields, "id": "my-gpu"}
    with user_data_dir() as folder:
        if kind == "json":
            _hardware_load(folder, "mine.json", dumps({"gpu": [entry]}))
        else:
            _hardware_load(folder, "mine.toml", _toml.array_of_tables("gpu", [entry]))


@fuzz_slow
@given(st.binary(max_size=200), st.sampled_from(["mine.json", "mine.toml"]))
def test_user_gpu_file_of_any_bytes(data, name):
    with user_data_dir() as folder:
        (folder / "hardware").mkdir()
        (folder / "hardware" / name).write_bytes(data)
        assert not isinstance(outcome("user GPU file", load_hardware_catalog), LlmplanError)


def test_a_10_gb_user_gpu_file_is_not_read(tmp_path):
    with user_data_dir() as folder:
        (folder / "hardware").mkdir()
        with (folder / "hardware" / "huge.json").open("wb") as f:
            f.truncate(10 * 2**30)
        catalog = load_hardware_catalog()
        assert any("huge.json" in p and "too large" in p for p in catalog.problems), catalog.problems
        (folder / "models").mkdir()
        with (folder / "models" / "huge.json").open("wb") as f:
            f.truncate(10 * 2**30)
        assert any("huge.json" in p for p in load_model_catalog(refresh=True).problems)


@fuzz_slow
@given(st.dictionaries(st.sampled_from(["vllm", "llama-cpp", "mine"]),
                       st.dictionaries(st.sampled_from(["name", "gpu_memory_utilization", "cuda_context_bytes",
                                                        "framework_bytes", "kv_block_tokens", "preallocates_kv",
                                                        "prefill_chunk_tokens", "source"]), SCALARS, max_size=3)
                       | SCALARS, max_size=2))
def test_user_engines_file(tables):
    with user_data_dir() as folder:
        (folder / "engines.toml").write_text(_toml.document(tables), encoding="utf-8", errors="surrogatepass")
        result = outcome("user engines.toml", load_engine_profiles, CatalogError)
        assert isinstance(result, dict | CatalogError)


@fuzz_slow
@given(st.sampled_from(["storage", "failure_rate", "pue", "electricity_price", "grid_intensity", "defaults"]),
       st.lists(st.dictionaries(st.sampled_from(["id", "name", "source", "per_gpu_hour", "interruptions", "days",
                                                 "gpus", "job_mtbf_hours", "read_gbs", "write_gbs"]),
                                SCALARS, max_size=5), max_size=2) | SCALARS)
def test_user_system_presets_file(key, entries):
    with user_data_dir() as folder:
        (folder / "system").mkdir()
        text = (_toml.array_of_tables(key, entries) if isinstance(entries, list) and entries
                else _toml.document({key: entries}))
        (folder / "system" / "mine.toml").write_text(text, encoding="utf-8", errors="surrogatepass")
        result = outcome("user system presets", load_system_catalog, CatalogError)
        assert not isinstance(result, BaseException) or isinstance(result, CatalogError)
