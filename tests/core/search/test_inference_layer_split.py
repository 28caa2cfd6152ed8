"""The auto-planner on llama.cpp: several identical cards are split by layers, as llama.cpp does by default.

llama.cpp and Ollama split a model over GPUs by layers (``--split-mode layer``, the default; llama.cpp README,
"Multi-GPU"): a token visits the cards in turn, so two cards decode no faster than one card with room for it. Their
``row`` mode is not tensor parallelism as vLLM runs it and is not modelled. The search used to price a TP 2 layout
for such an engine and chose it, promising 30.5 tokens/s for Llama-3-70B Q4_K_M on two RTX 4090 where llama-bench
measured 19.22 (XiongjieDai/GPU-Benchmarks-on-LLM-Inference README at aa72e0e, 2024-05-12, tg512, b2843: the
table ``tests/core/inference/xiongjiedai_table.py`` transcribes).
"""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.search import search
from llmplan.core.search.inference import candidate_layouts
from llmplan.core.workload import InferenceSettings, Scenario


def _scenario(engine: str, weight_format: str) -> Scenario:
    hw, models = load_hardware_catalog(), load_model_catalog()
    return Scenario(model=models.get("meta-llama/Meta-Llama-3-70B").spec,
                    cluster=ClusterSpec(gpu=hw.gpu("nvidia-rtx-4090-24gb").spec,
                    gpus_per_node=2), workload="inference",
                    inference=InferenceSettings(engine=engine, weight_format=weight_format, kv_dtype="fp16",
                                                prompt_tokens=1, output_tokens=511),
                    engine_profile=engine_profile(engine))


def test_llama_cpp_layouts_split_layers_only():
    assert {(lay.tp, lay.pp) for lay in candidate_layouts(_scenario("llama-cpp", "q4_k_m"))} == {(1, 1), (1, 2)}
    assert {lay.tp for lay in candidate_layouts(_scenario("vllm", "awq-4bit"))} == {1, 2}  # vLLM runs TP


def test_llama_cpp_on_two_rtx_4090_decodes_as_measured():
    best = search(_scenario("llama-cpp", "q4_k_m"), top=1, refine=estimate, use_fewer_gpus=False).best[0]
    assert (best.parallelism.tp, best.parallelism.pp) == (1, 2)
    # llama-bench tg512 on 2 x RTX 4090: 19.22 tokens/s; the layer split's estimate is within 10% of it
    assert best.estimate.inference.tokens_per_s_per_user.value == pytest.approx(19.22, rel=0.10)
