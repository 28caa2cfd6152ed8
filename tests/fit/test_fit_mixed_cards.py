"""``--this-machine`` and the app's "This machine" on different cards: an inference plan uses every detected
card (llama.cpp's layer split), not the largest group of identical GPUs.

The machine is built from recorded detection output: two RTX 3090s from an NVML recording
(nvml_2xrtx3090_nvlink.json) and an RTX 4090 from nvidia-smi's CSV (nvidia_smi_rtx4090.csv), renumbered as
device 2. The split and times must equal, exactly, those of ``estimate --gpu 3090 --gpu 3090 --gpu 4090``
(the same ``estimate_cards`` call with the catalog's specs and the memory the devices reported)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hw_fixtures import build_fake_pynvml, data_text

from llmplan.cli import main
from llmplan.core.workload import InferenceSettings
from llmplan.fit.local import fit_this_machine, local_hardware
from llmplan.hw.host import parse_meminfo
from llmplan.hw.nvidia import parse_nvidia_smi_csv, read_nvml
from llmplan.hw.types import DetectionReport, HostInfo
from llmplan.plan.document import ModelRef, PlanDocument
from llmplan.plan.evaluate import estimate_cards
from llmplan.plan.planfile import load_plan

L70 = "meta-llama/Llama-3.1-70B"
R3090, R4090 = "nvidia-rtx-3090-24gb", "nvidia-rtx-4090-24gb"


def mixed_report() -> DetectionReport:
    nvml = build_fake_pynvml(json.loads(data_text("nvml_2xrtx3090_nvlink.json")))
    r4090 = [dataclasses.replace(g, index=2) for g in parse_nvidia_smi_csv(data_text("nvidia_smi_rtx4090.csv"))]
    total, avail = parse_meminfo(data_text("proc_meminfo.txt"))
    return DetectionReport(gpus=(*read_nvml(nvml), *r4090), host=HostInfo("AMD EPYC", 2, 2, total, avail, "Linux"))


def plan(workload: str = "inference", **inference) -> PlanDocument:
    return PlanDocument(model=ModelRef(id=L70), workload=workload, inference=InferenceSettings(**inference))


def test_every_card_is_kept_in_device_order():
    m = local_hardware(mixed_report())
    assert [c.id for c in m.cards] == [R3090, R3090, R4090]
    assert m.cards_label == "2× NVIDIA GeForce RTX 3090 24GB + NVIDIA GeForce RTX 4090 24GB"
    assert m.cards[2].memory_bytes == 25_757_220_864  # the 4090's own reported memory
    assert m.gpu_count == 2  # training still plans on the largest identical group, and says so
    assert any("training uses the largest group" in n for n in m.notes)


def test_inference_uses_all_three_cards_like_the_cli_split():
    fit = fit_this_machine(plan(weight_format="q4_k_m"), local_hardware(mixed_report()))
    assert fit.status == "fits_split" and fit.fits
    assert fit.local_plan.hardware.card_ids() == [R3090, R3090, R4090]
    assert fit.local_plan.inference.engine == "llama-cpp" and any("engine: llama.cpp" in n for n in fit.notes)
    here, _ = estimate_cards(fit.local_plan)
    # llama.cpp's split by free memory with the head as an 81st layer: i / 81 below 0.333 / 0.667 / 1
    assert [c.layers for c in here.cards] == [28, 27, 25] and here.host_layers == 0
    assert "layers 28 + 27 + 25" in fit.verdict and "tokens/s per user" in fit.verdict


def test_cli_this_machine_prints_the_split_and_saves_the_cards(tmp_path, capsys):
    fixture = tmp_path / "detect.json"
    fixture.write_text(json.dumps(mixed_report().to_dict()), encoding="utf-8")
    saved = tmp_path / "here.llmplan"
    base = ["estimate", "--model", L70, "--workload", "inference", "--set", "inference.weight_format=q4_k_m"]
    assert main([*base, "--this-machine", "--detection-fixture", str(fixture), "--save", str(saved), "--json"]) == 0
    here = json.loads(capsys.readouterr().out)
    assert [c["gpu"] for c in here["mixed_gpus"]["cards"]] == [R3090, R3090, R4090]
    assert here["this_machine"]["status"] == "fits_split" and here["this_machine"]["estimated_here"]
    assert main([*base, "--gpu", f"{R3090},{R3090},{R4090}", "--json"]) == 0
    catalog = json.loads(capsys.readouterr().out)
    # the 4090 reports 24,564 MiB, the catalog's 24,564 MiB too: the same split and speed, exactly
    assert [c["layers"] for c in here["mixed_gpus"]["cards"]] == [c["layers"] for c in catalog["mixed_gpus"]["cards"]]
    assert here["inference"]["tpot_s"] == pytest.approx(catalog["inference"]["tpot_s"], rel=1e-12)
    assert load_plan(saved).hardware.card_ids() == [R3090, R3090, R4090]
    assert main(["estimate", str(saved), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["mixed_gpus"] == here["mixed_gpus"]


def test_the_current_llama_cpp_build_splits_too():
    """llama-cpp-2026 (current builds) is llama.cpp with faster CUDA figures: the same split, a shorter step."""
    machine = local_hardware(mixed_report())
    current = fit_this_machine(plan(weight_format="q4_k_m", engine="llama-cpp-2026"), machine)
    default = fit_this_machine(plan(weight_format="q4_k_m", engine="llama-cpp"), machine)
    assert current.status == default.status == "fits_split"
    assert current.local_plan.inference.engine == "llama-cpp-2026"
    now, _ = estimate_cards(current.local_plan)
    then, _ = estimate_cards(default.local_plan)
    assert [c.layers for c in now.cards] == [c.layers for c in then.cards] == [28, 27, 25]
    assert now.tpot_s < then.tpot_s


def test_an_engine_that_cannot_split_keeps_the_identical_group_and_says_how():
    fit = fit_this_machine(plan(weight_format="q4_k_m", engine="vllm"), local_hardware(mixed_report()))
    assert not fit.local_plan.hardware.cards and fit.local_plan.hardware.gpus_per_node == 2
    assert any("--set inference.engine=llama-cpp uses every card" in n for n in fit.notes)


def test_training_keeps_the_largest_identical_group():
    doc = PlanDocument(model=ModelRef(id="meta-llama/Meta-Llama-3-8B"), workload="finetune")
    fit = fit_this_machine(doc, local_hardware(mixed_report()))
    assert fit.local_plan is not None and not fit.local_plan.hardware.cards
    assert fit.local_plan.hardware.gpu == R3090


def _fits_on_the_cards(doc: PlanDocument) -> bool:
    """Every card holds its share and no layer is left in host RAM (the split the CLI prints)."""
    split, _ = estimate_cards(doc)
    return split.fits and split.host_layers == 0


def test_nearest_change_on_different_cards_is_judged_card_by_card():
    """F16 70B (131 GiB) cannot fit 72 GiB of cards even with CPU offload (23 GiB of host RAM): the nearest
    change is Q8_0 weights, judged card by card: llama.cpp's split gives the first 3090 28 of the 80 layers (the
    head counts as an 81st), 24.4 GiB of Q8_0, so one layer stays in host RAM and every card holds its share."""
    from llmplan.fit.local import apply_change

    fit = fit_this_machine(plan(weight_format="f16"), local_hardware(mixed_report()))
    assert fit.status == "does_not_fit" and fit.changes
    first = fit.changes[0]
    assert first.kind == "weights" and first.overrides == ("inference.weight_format=q8_0",)
    assert "fits with CPU offload: 79 of 80 layers on the cards" in first.sentence
    split, _ = estimate_cards(apply_change(fit, first))
    assert split.fits and split.host_layers == 1


def test_offloaded_layers_get_changes_that_put_them_all_on_the_cards():
    """Q8_0 with a 16k prompt leaves 15 of 80 layers in host RAM (without flash attention each card also holds a
    layer's 16.6k-token score matrix and its F16 pool copy, 3.1 GiB); every change offered fits on the cards alone.
    A shorter context is not offered: with every layer on the cards the first 3090's 28 Q8_0 layers alone exceed
    it."""
    from llmplan.fit.local import apply_change

    fit = fit_this_machine(plan(weight_format="q8_0", prompt_tokens=16384), local_hardware(mixed_report()))
    assert fit.status == "fits_offload" and fit.current.gpu_layers == 65
    assert {c.kind for c in fit.changes} == {"weights"}
    assert all(_fits_on_the_cards(apply_change(fit, c)) for c in fit.changes)


def test_largest_context_on_different_cards_is_the_edge_of_the_split():
    """Q4_K_M: the largest prompt (in 256-token steps) fits every card; 256 more leaves a layer in host RAM.
    It agrees with the core's search (core.inference.context_fit.longest_context_split) within one step."""
    from llmplan.core.inference.context_fit import longest_context_split
    from llmplan.plan.overrides import apply_overrides

    fit = fit_this_machine(plan(weight_format="q4_k_m"), local_hardware(mixed_report()))
    ctx = next(lim for lim in fit.limits if lim.name == "context")
    assert ctx.path == "inference.prompt_tokens" and not ctx.capped
    at = apply_overrides(fit.local_plan, [f"inference.prompt_tokens={ctx.maximum}"])
    past = apply_overrides(fit.local_plan, [f"inference.prompt_tokens={ctx.maximum + 256}"])
    assert _fits_on_the_cards(at) and not _fits_on_the_cards(past)
    _, scenario = estimate_cards(fit.local_plan)
    core = longest_context_split(scenario, local_hardware(mixed_report()).cards)
    assert 0 <= core.tokens - (ctx.maximum + scenario.inference.output_tokens) < 256
