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


def test_a_usual_format_that_is_no_weight_format_is_refused(tmp_path, monkeypatch):
    """default_format (llama.cpp's and Ollama's Q4_K_M, the open-format offload answer) must name a weight format:
    a typo was ignored without a word (2026-11-28 review); now the entry is skipped, naming the field and the
    formats to use, and the shipped profile stays."""
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    (tmp_path / "engines.toml").write_text("[ollama]\ndefault_format = 'q9_z'\n")
    assert load_engine_profiles()["ollama"].default_format == "q4_k_m"
    (problem,) = engine_problems()
    assert "default_format" in problem and "q4_k_m" in problem and "skipped" in problem


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


# The two llama.cpp build eras (docs/inference.md, "llama.cpp / Ollama, two build eras"): the default follows the 2024 builds behind the
# widely published llama-bench tables, llama-cpp-2026 current builds. Only the CUDA speed figures and flash attention
# (off by default in 2024, -fa auto now: score traffic and the compute buffer's score matrix) differ.
ERA_FIELDS = {"id", "name", "describes", "source", "decode_layer_s", "decode_kernels_per_layer", "decode_kernel_s",
              "decode_kernels_per_moe_layer",  # counted from the 2026 code; the 2024 floor is flat per layer
              "prefill_quant_ops_per_sm_clock", "prefill_score_bytes",  # score bytes: no flash attention in 2024
              "flash_attention", "decode_bandwidth_efficiency_by_gpu",  # the 2024 mat-vec share on HBM cards (issue #6763)
              "decode_layer_s_pipelined",  # no CUDA graphs with a pipelined layer split before PR #13814 (2025)
              "prefill_quant_mmq_max_tokens",  # dequantise + cuBLAS above 32 tokens before PR #8075 (2024-06)
              "mla_cache",  # the MLA latent cached from PR #12801 (2025-04); per-head K and V before
              "moe_prompt_tiles"}  # MoE tiles read from the 2026 code (Metal's id map since PR #13388, 2025-05)


def test_llama_cpp_eras_differ_only_in_cuda_speed():
    default, current = engine_profile("llama-cpp"), engine_profile("llama-cpp-2026")
    assert default.model_dump(exclude=ERA_FIELDS) == current.model_dump(exclude=ERA_FIELDS)
    assert current.partial_offload and current.weight_formats == ("gguf", "float")
    assert (default.decode_layer_s, default.prefill_quant_ops_per_sm_clock) == (86.7e-6, 372)  # PR #6766; #7676/#8062
    assert (current.decode_kernels_per_layer, current.decode_kernel_s, current.prefill_quant_ops_per_sm_clock) \
        == (21, 0.875e-6, 524)  # ggml-cuda kernel count, CUDA.jl graph microbenchmark; PR #24127
    assert current.decode_kernels_per_moe_layer == 25 and default.decode_kernels_per_moe_layer is None
    assert current.moe_prompt_tiles and not default.moe_prompt_tiles  # core/inference/moe_tiles.py
    assert engine_profile("llama.cpp-2026") == current and engine_profile("llama.cpp") == default
    assert current.name == "llama.cpp (2025+ build)" and "2024" in default.describes
    assert current.flash_attention and not default.flash_attention


def test_ollama_follows_the_default_llama_cpp():
    default, ollama = engine_profile("llama-cpp"), engine_profile("ollama")
    for field in ("decode_layer_s", "decode_layer_s_pipelined", "prefill_quant_mmq_max_tokens",
                  "prefill_float_share_by_gpu", "decode_kernels_per_layer", "decode_kernel_s", "prefill_quant_ops_per_sm_clock",
                  "decode_bandwidth_efficiency", "decode_bandwidth_efficiency_by_gpu", "prefill_quant_share",
                  "prefill_float_share", "prefill_score_bytes", "flash_attention", "prefill_metal_share",
                  "prefill_metal_coissued", "mla_cache"):
        assert getattr(ollama, field) == getattr(default, field), field
