"""The shipped engine catalog loads, every entry cites a source, and user entries override it."""

import pytest

from llmplan.catalog.engines import engine_problems, engine_profile, load_engine_profiles
from llmplan.errors import CatalogError


def test_shipped_profiles():
    profiles = load_engine_profiles()
    assert {"vllm", "sglang", "tensorrt-llm", "tgi", "llama-cpp", "mlx", "ollama", "transformers"} <= set(profiles)
    assert all(p.source for p in profiles.values())
    assert profiles["vllm"].gpu_memory_utilization == 0.9 and profiles["vllm"].kv_block_tokens == 16
    assert engine_profile("llama.cpp").partial_offload


def test_user_override(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    (tmp_path / "engines.toml").write_text("[vllm]\ngpu_memory_utilization = 0.95\n[mine]\nname = 'Mine'\n")
    profiles = load_engine_profiles()
    assert profiles["vllm"].gpu_memory_utilization == 0.95
    assert profiles["vllm"].kv_block_tokens == 16  # other fields kept
    assert profiles["mine"].name == "Mine"


def test_bad_user_entry_is_skipped_naming_the_field(tmp_path, monkeypatch):
    """Issue 17 #1: a bad user entry made every estimate fail; now it is skipped, the shipped one used."""
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    (tmp_path / "engines.toml").write_text("[vllm]\ngpu_memory_utilization = 3\n[mine]\nname = 'Mine'\n")
    assert load_engine_profiles()["vllm"].gpu_memory_utilization == 0.9  # the shipped value
    assert load_engine_profiles()["mine"].name == "Mine"  # the file's good entries still count
    (problem,) = engine_problems()
    assert "gpu_memory_utilization" in problem and "skipped" in problem


def test_unknown_engine():
    with pytest.raises(CatalogError, match="known engines"):
        engine_profile("nope")


def test_every_shipped_engine_states_its_numbers_in_the_catalog():
    """DESIGN: engine overheads are data, not code defaults. Every shipped profile sets each number."""
    import tomllib

    from llmplan.resources_path import catalogs_dir

    raw = tomllib.loads((catalogs_dir() / "engines.toml").read_text(encoding="utf-8"))
    for engine_id, entry in raw.items():
        for key in ("cuda_context_bytes", "framework_bytes", "kv_block_tokens", "allreduce_latency_s", "source"):
            assert key in entry, f"{engine_id}: {key} is left to a code default"
