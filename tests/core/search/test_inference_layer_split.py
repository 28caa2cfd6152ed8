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


def test_llama_cpp_layouts_split_layers_only_over_every_gpu_of_the_node():
    # llama.cpp offloads to every GPU it sees (llama_model_default_params: split_mode LAYER over all devices), so its
    # one layout is PP = the node's GPUs; the app's "GPUs per node" sets the same (gui.hardware_picker.engine_split)
    assert {(lay.tp, lay.pp) for lay in candidate_layouts(_scenario("llama-cpp", "q4_k_m"))} == {(1, 2)}
    four = _scenario("llama-cpp", "q4_k_m")
    four = four.model_copy(update={"cluster": four.cluster.model_copy(update={"gpus_per_node": 4})})
    assert [(lay.tp, lay.pp) for lay in candidate_layouts(four)] == [(1, 4)]
    assert {lay.tp for lay in candidate_layouts(_scenario("vllm", "awq-4bit"))} == {1, 2}  # vLLM runs TP


def test_a_small_model_on_two_cards_uses_both_as_llama_cpp_does():
    # Llama-3.1-8B Q4_K_M fits one RTX 4090, and one card decodes a little faster than two (a token visits both):
    # the search used to choose one card while the app split over both; llama.cpp itself uses both
    small = _scenario("llama-cpp", "q4_k_m")
    small = small.model_copy(update={"model": load_model_catalog().get("meta-llama/Llama-3.1-8B").spec})
    best = search(small, top=1, refine=estimate, use_fewer_gpus=False).best[0]
    assert (best.parallelism.tp, best.parallelism.pp) == (1, 2)


def test_llama_cpp_on_two_rtx_4090_decodes_as_measured():
    best = search(_scenario("llama-cpp", "q4_k_m"), top=1, refine=estimate, use_fewer_gpus=False).best[0]
    assert (best.parallelism.tp, best.parallelism.pp) == (1, 2)
    # llama-bench tg512 on 2 x RTX 4090: 19.22 tokens/s; the layer split's estimate is within 10% of it
    assert best.estimate.inference.tokens_per_s_per_user.value == pytest.approx(19.22, rel=0.10)


def test_an_open_format_is_quantised_onto_both_cards_before_bf16_is_offloaded():
    # Llama-3-70B with llama.cpp on 2 x RTX 4090, no format named, the CLI's default request (1,024 tokens in, 256
    # out, bf16 KV cache): bf16 (141 GB) "fits" only with most layers in host RAM on one card (~0.6 tokens/s), which
    # used to count as a fit, so no other format was tried. Every layer on the GPUs comes first now
    # (policy.offloads_layers): down llama.cpp's ladder, Q8_0 (75 GB), Q6_K and Q5_K_M (24.2 GiB a card here) do
    # not fit 2 x 24 GB; Q4_K_M split by layers does, at the measured speed (19.22 tokens/s, 10%).
    from llmplan.core.search.policy import formats_to_try

    open_bf16 = _scenario("llama-cpp", "bf16")
    open_bf16 = open_bf16.model_copy(update={"inference": open_bf16.inference.model_copy(
        update={"kv_dtype": "bf16", "prompt_tokens": 1024, "output_tokens": 256})})
    best = search(open_bf16, top=1, refine=estimate, use_fewer_gpus=False,
                  weight_formats=formats_to_try((), open_bf16.engine_profile))
    lead = best.best[0]
    assert lead.estimate.inference.weight_format == "q4_k_m" and (lead.parallelism.tp, lead.parallelism.pp) == (1, 2)
    assert lead.estimate.inference.gpu_layers.value == 80  # every layer on a card
    assert lead.estimate.inference.tokens_per_s_per_user.value == pytest.approx(19.22, rel=0.10)
    assert "q4_k_m, the least quantised weight format that fits on the GPUs" in best.note


def test_with_no_format_fitting_the_gpu_the_offload_is_llama_cpps_usual_q4_k_m():
    # One RTX 4090: even Q2_K of a 70B model (~26 GB) leaves layers in host RAM, so no format fits on the GPU. The
    # answer used to be the plan's own bf16 with 66 of 80 layers in host RAM; it is llama.cpp's usual file, Q4_K_M
    # (its quantize tool's "*recommended*" type: catalogs/engines.toml default_format), with its own layers in host
    # RAM, and the note says so (docs/fit.md). An engine without a usual format keeps the plan's bf16.
    from llmplan.core.search.policy import formats_to_try, offloads_layers

    hw = load_hardware_catalog()
    one = _scenario("llama-cpp", "bf16")
    one = one.model_copy(update={"cluster": ClusterSpec(gpu=hw.gpu("nvidia-rtx-4090-24gb").spec, gpus_per_node=1)})
    q2 = one.model_copy(update={"inference": one.inference.model_copy(update={"weight_format": "q2_k"})})
    assert offloads_layers(estimate(q2), 80)  # the smallest of the ladder does not fit on the card either
    result = search(one, top=1, refine=estimate, use_fewer_gpus=False,
                    weight_formats=formats_to_try((), one.engine_profile))
    lead = result.best[0]
    assert lead.estimate.inference.weight_format == "q4_k_m" and offloads_layers(lead.estimate, 80)
    host = 80 - int(lead.estimate.inference.gpu_layers.value)
    assert f"llama.cpp's usual Q4_K_M with {host} of 80 layers in host RAM" in result.note
    plain = one.model_copy(update={"engine_profile": one.engine_profile.model_copy(update={"default_format": ""})})
    kept = search(plain, top=1, refine=estimate, use_fewer_gpus=False,
                  weight_formats=formats_to_try((), plain.engine_profile)).best[0]
    assert kept.estimate.inference.weight_format == "bf16" and offloads_layers(kept.estimate, 80)
    stated = search(one, top=1, refine=estimate, use_fewer_gpus=False, weight_formats=()).best[0]
    assert stated.estimate.inference.weight_format == "bf16"  # a stated format (no formats to try) is kept


def test_a_stated_format_that_fits_no_card_set_splits_over_both_with_host_layers():
    # Q8_0 stated (70 GiB) on 2 x RTX 4090: the layout is still both cards (llama.cpp's default), with the first layers
    # in host RAM; before, offload needed one card, which holds 27 layers (0.85 GiB each) where both hold 54
    sc = _scenario("llama-cpp", "q8_0")
    best = search(sc, top=1, objective="cost", refine=estimate, use_fewer_gpus=False).best[0]
    assert (best.parallelism.tp, best.parallelism.pp) == (1, 2)
    one = estimate(sc.model_copy(update={"cluster": sc.cluster.model_copy(update={"gpus_per_node": 1})}))
    assert (one.inference.gpu_layers.value, best.estimate.inference.gpu_layers.value) == (27, 54)
    assert best.estimate.inference.tokens_per_s_per_user.value > 1.5 * one.inference.tokens_per_s_per_user.value
