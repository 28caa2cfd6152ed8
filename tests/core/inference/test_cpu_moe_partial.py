"""llama.cpp's ``--n-cpu-moe`` composed with ``-ngl`` below the layer count and with a layer split over cards
(core/inference/cpu_moe.py, layer_split.py, memory.py; docs/inference.md "Experts in host RAM").

llama.cpp composes them (PR #14992 / #15077: the flags only add tensor buffer-type overrides; src/llama-model.cpp
applies an override on top of the layer placement): the layers left in host RAM are the first n_layer - ngl, the
override keeps the routed experts of the first N layers in host RAM wherever their layer went, so an offloaded
layer among the first N leaves its experts in host RAM and the rest of it on its card.

Bytes exact (tolerance 0 B), by hand from gpt-oss-120b's MXFP4_MOE file, as in test_cpu_moe.py."""

from __future__ import annotations

from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.inference import estimate_inference
from llmplan.core.inference.multi_gpu import split_layers
from tests.core.inference.test_cpu_moe import OSS_EMBED, OSS_EXPERTS, OSS_HEAD, OSS_REST, RTX3090, scenario

RTX4090 = load_hardware_catalog().gpu("nvidia-rtx-4090-24gb").spec
OSS = "openai/gpt-oss-120b"


def test_one_card_ngl_30_with_n_cpu_moe_30():
    """-ngl 30 --n-cpu-moe 30 on one RTX 3090: layers 0-5 stay whole in host RAM with the head (the output goes to
    the GPU only with every layer offloaded); layers 6-29 are on the card without their experts; 30-35 whole."""
    e = estimate_inference(scenario(OSS, "mxfp4_moe", 30, gpu_layers=30))
    assert e.memory.weights.value == 30 * OSS_REST + 6 * OSS_EXPERTS == 11_070_827_520
    assert e.inference.host_weight_bytes.value == OSS_EMBED + OSS_HEAD + 6 * (OSS_REST + OSS_EXPERTS) \
        + 24 * OSS_EXPERTS == 52_303_496_448
    assert e.memory.activations.inputs["expert_upload"] == OSS_EXPERTS  # one layer's experts for prompts
    assert e.inference.cpu_moe_layers.inputs["flag"] == "--n-cpu-moe 30"
    assert e.inference.cpu_moe_layers.inputs["moe_layers_in_host"] == 24  # those on the card: 6-29
    # the same -ngl without the override reads every offloaded expert from the card: faster, and it does not fit
    plain = estimate_inference(scenario(OSS, "mxfp4_moe", 0, gpu_layers=30))
    assert plain.inference.tpot_s.value < e.inference.tpot_s.value
    assert not plain.fits and e.fits


def test_different_cards_with_n_cpu_moe_24():
    """RTX 4090 + RTX 3090, --tensor-split 1,1, every layer offloaded: layers 0-18 on the 4090 (the head counts as a
    layer: 18/37 < 0.5), 19-35 and the head on the 3090. --n-cpu-moe 24 keeps the experts of layers 0-23: all of
    the 4090's, five of the 3090's. Each card's compute buffer holds one layer's experts for prompts."""
    sc = scenario(OSS, "mxfp4_moe", 24)
    plan = split_layers(sc, [RTX4090, RTX3090], [1, 1], gpu_layers=36)
    c0, c1 = plan.cards
    assert (c0.layers, c1.layers, c1.has_output) == (19, 17, True)
    assert c0.weights == 19 * OSS_REST == 564_895_232
    assert c1.weights == 17 * OSS_REST + 12 * OSS_EXPERTS + OSS_HEAD == 21_478_548_736
    assert plan.host_bytes == OSS_EMBED + 24 * OSS_EXPERTS == 41_330_880_000
    none = split_layers(scenario(OSS, "mxfp4_moe", 0), [RTX4090, RTX3090], [1, 1], gpu_layers=36)
    assert [a.runtime - b.runtime for a, b in zip(plan.cards, none.cards, strict=True)] == [OSS_EXPERTS] * 2
    assert plan.fits and not none.fits
    assert plan.tpot_s > none.tpot_s  # the CPU reads the routed experts of 24 layers per token


def test_identical_cards_ngl_34_with_n_cpu_moe_26_equals_the_card_split():
    """2 x RTX 3090 (hardware.gpus_per_node 2), -ngl 34 --n-cpu-moe 26: layers 0-1 and the head in host RAM, 2-18 on
    card 0 (every one of their experts in host RAM), 19-35 on card 1 (19-25's experts in host RAM). The fullest
    card is "per GPU"; the same bytes and time as the split over the two cards listed (multi_gpu.split_layers)."""
    e = estimate_inference(scenario(OSS, "mxfp4_moe", 26, cards=2, gpu_layers=34))
    assert e.memory.weights.value == 17 * OSS_REST + 10 * OSS_EXPERTS == 17_470_245_376
    assert e.inference.host_weight_bytes.value == OSS_EMBED + OSS_HEAD + 2 * (OSS_REST + OSS_EXPERTS) \
        + 24 * OSS_EXPERTS == 45_398_646_016
    cards = split_layers(scenario(OSS, "mxfp4_moe", 26, gpu_layers=34), [RTX3090, RTX3090], gpu_layers=34)
    assert max(c.weights for c in cards.cards) == e.memory.weights.value
    assert abs(cards.tpot_s / e.inference.tpot_s.value - 1) < 0.01
