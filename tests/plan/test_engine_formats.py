"""Issue 18 item 11: an engine accepts only the weight formats it loads (catalog data, checked in plan.resolve)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from llmplan.catalog.engines import engine_profile
from llmplan.core.engine_profile import EngineProfile, check_weight_format
from llmplan.errors import InputError, PlanFileError
from llmplan.gui.backend import default_plan
from llmplan.gui.commands import set_path
from llmplan.plan.resolve import resolve


def _plan(engine: str, fmt: str):
    doc = set_path(default_plan(), "workload", "inference")
    return set_path(set_path(doc, "inference.engine", engine), "inference.weight_format", fmt)


def test_mlx_refuses_a_gguf_preset_naming_what_it_loads():
    with pytest.raises(PlanFileError) as err:
        resolve(_plan("mlx", "q4_k_m"))
    text = str(err.value)
    assert text.startswith("inference.weight_format: MLX (mlx-lm) does not load q4_k_m")
    assert "mlx-4bit" in text and "fp16/bf16/fp32" in text


@pytest.mark.parametrize("engine,fmt", [("mlx", "mlx-4bit"), ("mlx", "bf16"), ("llama.cpp", "q4_k_m"),
                                        ("llama.cpp", "f16"), ("ollama", "q8_0"), ("vllm", "awq-4bit"),
                                        ("vllm", "q4_k_m"), ("tgi", "gptq-4bit"),
                                        ("sglang", "fp8"), ("tensorrt-llm", "awq-4bit"), ("tensorrt-llm", "mxfp4"),
                                        ("vllm", "mxfp4"), ("sglang", "nf4")])
def test_formats_the_engine_loads_resolve(engine, fmt):
    assert resolve(_plan(engine, fmt)).engine_profile is not None


@pytest.mark.parametrize("engine,fmt", [("llama.cpp", "mlx-4bit"), ("llama.cpp", "awq-4bit"), ("ollama", "nf4"),
                                        ("tgi", "q4_k_m"), ("mlx", "gptq-4bit"),
                                        # trial33: vLLM, SGLang and TensorRT-LLM priced MLX's quantised files, which
                                        # none of them loads; TensorRT-LLM has no bitsandbytes or GGUF path either
                                        ("vllm", "mlx-4bit"), ("sglang", "mlx-8bit"), ("tensorrt-llm", "mlx-4bit"),
                                        ("tensorrt-llm", "nf4"), ("tensorrt-llm", "q4_k_m")])
def test_formats_the_engine_does_not_load_are_refused(engine, fmt):
    assert check_weight_format(engine_profile(engine), fmt) is not None


def test_no_list_means_any_format_and_unknown_kinds_are_refused():
    assert check_weight_format(EngineProfile(), "mlx-4bit") is None
    with pytest.raises(ValidationError):
        EngineProfile(weight_formats=("safetensors",))


@pytest.mark.parametrize("field,value,said", [("inference.weight_format", "q4_k_x", "unknown inference.weight_format"),
                                              ("inference.kv_dtype", "int3", "unknown inference.kv_dtype")])
def test_a_misspelt_format_is_named_not_no_layout_fits(field, value, said):
    """trial33: with the layout left to the search, a typo in the weight format or the KV cache type read "no layout
    fits ... add GPUs" (the search skips the layouts the engine refuses). The plan's field is named instead."""
    from llmplan.cli import main

    doc = set_path(_plan("vllm", "bf16"), field, value)
    with pytest.raises(InputError) as err:
        resolve(doc)
    assert str(err.value).startswith(said) and value in str(err.value)
    assert main(["estimate", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "nvidia-h100-sxm-80gb", "--workload",
                 "inference", "--set", f"{field}={value}"]) == 2


def test_a_shared_prefix_longer_than_the_prompt_is_refused_naming_both():
    """trial33: ``shared_prefix_tokens = 999,999`` with 1,024-token prompts was taken; the longest context that fits
    then read 443,536 tokens for 8 sequences (the KV cache counted once for the "shared" part), 8x the true 55,440.
    The plan still opens (the check is the estimate's), so the field can be fixed in the app."""
    doc = set_path(set_path(_plan("vllm", "bf16"), "inference.shared_prefix_tokens", 999_999), "inference.batch", 8)
    with pytest.raises(PlanFileError) as err:
        resolve(doc)
    assert str(err.value).startswith("inference.shared_prefix_tokens = 999,999 is longer than the prompt (1,024 "
                                     "tokens)")
    assert resolve(set_path(doc, "inference.shared_prefix_tokens", 1024)).inference.shared_prefix_tokens == 1024


@pytest.mark.parametrize("engine,kv,said", [
    ("llama.cpp", "fp8", "inference.kv_dtype: llama.cpp has no fp8 KV cache; its 8-bit cache is q8_0"),
    ("ollama", "fp8_e4m3", "inference.kv_dtype: Ollama has no fp8_e4m3 KV cache; its 8-bit cache is q8_0"),
    ("vllm", "q8_0", "inference.kv_dtype: q8_0 is a llama.cpp KV cache type, which vLLM does not offer"),
])
def test_a_kv_cache_type_the_engine_does_not_offer_is_refused(engine, kv, said):
    """trial33: an fp8 cache on llama.cpp and a q8_0 cache on vLLM were priced as asked, though neither engine has
    one: llama.cpp's --cache-type-k takes f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1 (ggml-org/llama.cpp
    tools/server/README.md); vLLM's --kv-cache-dtype takes auto, bfloat16 and the fp8 types (vLLM engine arguments).
    fit/changes.py already offered q8_0 to GGUF engines and fp8 to the others; the no-fit message now does too."""
    from llmplan.core.search.inference import _no_fit

    with pytest.raises(PlanFileError) as err:
        resolve(set_path(_plan(engine, "bf16"), "inference.kv_dtype", kv))
    assert str(err.value).startswith(said)
    for ok in ("bf16", "fp16", "fp32" if engine != "ollama" else "q4_0", "q8_0" if engine != "vllm" else "fp8"):
        resolve(set_path(_plan(engine, "bf16"), "inference.kv_dtype", ok))
    scenario = resolve(_plan(engine, "bf16"))
    eight = "fp8" if engine == "vllm" else "q8_0"
    assert f"an 8-bit KV cache (inference.kv_dtype={eight})" in _no_fit(scenario, ())


@pytest.mark.parametrize("engine,kv,said", [
    ("ollama", "q5_0", "Ollama has no q5_0 KV cache; its 8-bit cache is q8_0 (Ollama takes fp16, q8_0, q4_0)"),
    ("ollama", "q4_1", "Ollama has no q4_1 KV cache"),
    ("ollama", "iq4_nl", "Ollama has no iq4_nl KV cache"),
    ("ollama", "fp32", "Ollama has no fp32 KV cache"),
    ("mlx", "fp8", "MLX (mlx-lm) has no fp8 KV cache (MLX (mlx-lm) takes bf16, fp16, fp32, mlx-8bit, mlx-4bit, "
     "mlx-3bit, mlx-2bit)"),
    ("transformers", "q8_0", "q8_0 is a llama.cpp KV cache type, which Hugging Face Transformers (generate) does not"),
    ("tgi", "fp32", "Text Generation Inference has no fp32 KV cache; its 8-bit cache is fp8"),
    ("tensorrt-llm", "fp8_e5m2", "TensorRT-LLM has no fp8_e5m2 KV cache"),
])
def test_each_engine_takes_only_the_kv_cache_types_its_docs_list(engine, kv, said):
    """kvlist33 (trial33's 'left'): Ollama's OLLAMA_KV_CACHE_TYPE documents f16, q8_0 and q4_0 only (Ollama
    docs/faq.md), yet q5_0, q4_1, iq4_nl and f32 were priced there; MLX and Transformers cache in the model's
    dtype (mlx-lm models/cache.py, transformers "Caching"); TGI's --dtype is float16 or bfloat16 and its
    --kv-cache-dtype fp8_e4m3fn or fp8_e5m2 (TGI launcher arguments); TensorRT-LLM's FP8 cache is E4M3. Exact
    messages; the types each engine does take resolve."""
    with pytest.raises(PlanFileError) as err:
        resolve(set_path(_plan(engine, "bf16"), "inference.kv_dtype", kv))
    assert str(err.value).startswith(f"inference.kv_dtype: {said}")
    from llmplan.catalog.engines import engine_profile

    for ok in engine_profile(engine).kv_dtypes:
        resolve(set_path(_plan(engine, "bf16"), "inference.kv_dtype", ok))


def test_a_bf16_cache_on_ollama_is_its_f16_cache():
    """Ollama keeps no bf16 cache, but a plan's default bf16 is priced as its f16 (both 2 bytes an element), so
    every default Ollama plan still opens: the same KV bytes as fp16, exactly."""
    bf = resolve(set_path(_plan("ollama", "bf16"), "inference.kv_dtype", "bf16"))
    f16 = resolve(set_path(_plan("ollama", "bf16"), "inference.kv_dtype", "fp16"))
    from llmplan.core.kvcache import kv_element_bytes

    assert kv_element_bytes(bf.inference.kv_dtype) == kv_element_bytes(f16.inference.kv_dtype) == 2.0


@pytest.mark.parametrize("engine,kv,nearest", [
    ("llama.cpp", "fp8", "q8_0"), ("ollama", "q5_1", "q8_0"), ("ollama", "fp32", "fp16"), ("ollama", "bf16", "bf16"),
    ("vllm", "q4_0", "fp8"), ("vllm", "q8_0", "fp8"), ("vllm", "q5_1", "fp8"), ("mlx", "fp8_e5m2", "mlx-8bit"),
    ("transformers", "fp8", "hqq-8bit"), ("sglang", "q4_0", "fp4_e2m1"), ("llama.cpp", "q4_0", "q4_0"),
])
def test_the_nearest_kv_cache_type_an_engine_takes_keeps_at_least_the_bytes(engine, kv, nearest):
    """The app moves a cache the new engine refuses to the narrowest type it takes whose values have at least as
    many bits (no precision lost; a ggml block's scale not counted, so q8_0 and fp8 are both 8-bit), else to its
    widest."""
    from llmplan.catalog.engines import engine_profile
    from llmplan.core.kvcache import nearest_kv_dtype

    assert nearest_kv_dtype(kv, engine_profile(engine).kv_dtypes) == nearest
