"""``estimate --gpu A --gpu B``: a machine with different cards, estimated with llama.cpp's layer split
(core/inference/multi_gpu.py, whose rule tests/core/inference/test_multi_gpu.py checks by hand); here: the
command line reaches it, the per-card memory is shown, and bad input gets one clear line."""

import json

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.cli import main
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference.multi_gpu import split_layers
from llmplan.core.workload import InferenceSettings, Scenario

BASE = ["estimate", "--model", "meta-llama/Llama-3.1-70B", "--workload", "inference",
        "--set", "inference.weight_format=q4_k_m", "--set", "inference.prompt_tokens=4096",
        "--set", "inference.output_tokens=256"]
CAT = load_hardware_catalog()


def run_json(capsys, *extra):
    assert main([*BASE, *extra, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_repeated_and_comma_forms_agree_and_match_the_engine(capsys):
    a = run_json(capsys, "--gpu", "nvidia-rtx-5090-32gb", "--gpu", "nvidia-rtx-3090-24gb")
    b = run_json(capsys, "--gpu", "nvidia-rtx-5090-32gb,nvidia-rtx-3090-24gb")
    assert a == b
    cards = a["mixed_gpus"]["cards"]
    assert [c["gpu"] for c in cards] == ["nvidia-rtx-5090-32gb", "nvidia-rtx-3090-24gb"]
    # split by usable memory, the head counted as an 81st layer (llama.cpp llm_load_tensors): i / 81 < 0.570
    assert [c["layers"] for c in cards] == [47, 33] and cards[1]["output_head"]
    assert a["fits"] and a["inference"]["engine"] == "llama-cpp" and "engine chosen" in a["automatic"]
    # the same numbers as the engine's own call
    spec = CAT.gpu("nvidia-rtx-5090-32gb").spec
    from llmplan.catalog.models import load_model_catalog

    model = load_model_catalog().get("meta-llama/Llama-3.1-70B").spec
    sc = Scenario(model=model, cluster=ClusterSpec(gpu=spec), workload="inference",
                  inference=InferenceSettings(engine="llama-cpp", weight_format="q4_k_m", prompt_tokens=4096,
                                              output_tokens=256), engine_profile=engine_profile("llama-cpp"))
    plan = split_layers(sc, [spec, CAT.gpu("nvidia-rtx-3090-24gb").spec])
    assert a["inference"]["tpot_s"] == pytest.approx(plan.tpot_s, rel=1e-9)
    assert sum(c["total"] for c in cards) == pytest.approx(sum(c.total for c in plan.cards), rel=1e-9)


def test_text_shows_per_card_memory(capsys):
    assert main([*BASE, "--gpu", "nvidia-rtx-5090-32gb", "--gpu", "nvidia-rtx-3090-24gb"]) == 0
    out = capsys.readouterr().out
    assert "FITS: every card holds its share" in out
    assert "NVIDIA GeForce RTX 5090 32GB" in out and "33 + head" in out and "31.8 GiB" in out


def test_tensor_split_and_what_fits_nowhere(capsys):
    even = run_json(capsys, "--gpu", "nvidia-rtx-5090-32gb,nvidia-rtx-3090-24gb", "--tensor-split", "1,1")
    assert [c["layers"] for c in even["mixed_gpus"]["cards"]] == [41, 39]  # i / 81 < 0.5, the head on the 3090
    big, small = even["mixed_gpus"]["cards"]
    assert small["output_head"] and small["total"] < big["total"]  # two layers fewer, plus the (smaller) head
    q8 = run_json(capsys, "--gpu", "nvidia-rtx-5090-32gb,nvidia-rtx-3090-24gb", "--set", "inference.weight_format=q8_0")
    assert q8["fits"] and q8["mixed_gpus"]["host_layers"] > 0
    assert q8["inference"]["gpu_layers"] + q8["mixed_gpus"]["host_layers"] == 80


@pytest.mark.parametrize(("extra", "message"), [
    (["--gpu", "nvidia-rtx-5090-32gb", "--gpu", "nope"], "unknown GPU id 'nope'"),
    (["--gpu", "nvidia-rtx-5090-32gb,"], "empty GPU id"),
    (["--gpu", "nvidia-rtx-5090-32gb,nvidia-rtx-3090-24gb", "--tensor-split", "1"], "give 2 non-negative shares"),
    (["--gpu", "nvidia-rtx-5090-32gb,nvidia-rtx-3090-24gb", "--tensor-split", "a,b"], "give 2 numbers"),
    (["--gpu", "nvidia-rtx-5090-32gb,nvidia-rtx-3090-24gb", "--set", "inference.engine=vllm"],
     "engines that do: llama-cpp, llama-cpp-2026, ollama"),
    (["--gpu", "nvidia-rtx-5090-32gb,nvidia-rtx-3090-24gb", "--gpus", "4"], "leave out --gpus"),
    (["--gpu", "nvidia-rtx-5090-32gb,nvidia-rtx-3090-24gb", "--workload", "finetune"], "training plans need"),
])
def test_bad_input_is_one_line(capsys, extra, message):
    assert main([*BASE, *extra]) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err


def test_a_user_engine_that_splits_layers_gets_the_split(capsys, tmp_path, monkeypatch):
    """Which engines split layers across unequal cards is the profile's ``splits_unequal_cards`` flag, not a
    list of ids: a llama.cpp fork added in the user's engines.toml gets the split (and its verdict) too."""
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    (tmp_path / "engines.toml").write_text("[my-fork]\nname = 'My llama.cpp fork'\npartial_offload = true\n"
                                           "splits_unequal_cards = true\nweight_formats = ['gguf', 'float']\n")
    data = run_json(capsys, "--gpu", "nvidia-rtx-5090-32gb,nvidia-rtx-3090-24gb", "--set", "inference.engine=my-fork")
    assert [c["layers"] for c in data["mixed_gpus"]["cards"]] == [47, 33] and data["fits"]
    (tmp_path / "engines.toml").write_text("[my-fork]\nname = 'My llama.cpp fork'\npartial_offload = true\n"
                                           "weight_formats = ['gguf', 'float']\n")
    assert main([*BASE, "--gpu", "nvidia-rtx-5090-32gb,nvidia-rtx-3090-24gb", "--set", "inference.engine=my-fork"]) != 0
    assert "does not split layers" in capsys.readouterr().err


def test_search_refuses_several_cards(capsys):
    assert main(["search", "--model", "meta-llama/Llama-3.1-70B", "--workload", "inference",
                 "--gpu", "nvidia-rtx-5090-32gb,nvidia-rtx-3090-24gb"]) != 0
    assert "this command plans identical GPUs" in capsys.readouterr().err


THREE = "nvidia-rtx-3090-24gb,nvidia-rtx-3090-24gb,nvidia-rtx-4090-24gb"


def test_three_cards_print_the_longest_context_and_the_nearest_changes(capsys):
    """2x RTX 3090 + RTX 4090, Llama 3.1 70B Q8_0 (69.8 GiB) with a 16k prompt and an fp16 KV cache: without flash
    attention (2024 builds) each card also holds a layer's score matrix for the 16.6k context and its F16 pool copy
    (3.1 GiB), so 15 of 80 layers stay in host RAM and the command lists changes that put every layer on a card,
    each checked here by running it. With every layer on the cards the first 3090 gets 28 layers (the head counts
    as an 81st), 24.4 GiB of Q8_0: no context fits (core.inference.context_fit.longest_context_split)."""
    extra = ["--gpu", THREE, "--set", "inference.weight_format=q8_0", "--set", "inference.kv_dtype=fp16",
             "--set", "inference.prompt_tokens=16384"]
    data = run_json(capsys, *extra)
    assert data["mixed_gpus"]["host_layers"] == 15
    assert data["inference"]["longest_context_tokens"] == 0 and data["inference"]["trained_context_tokens"] == 131072
    assert data["changes"][0]["overrides"] == ["inference.weight_format=q6_k"]
    for change in data["changes"]:
        sets = [x for o in change["overrides"] for x in ("--set", o)]
        after = run_json(capsys, *extra, *sets)
        assert after["fits"] and after["mixed_gpus"]["host_layers"] == 0 and after["changes"] == []
    assert main([*BASE, *extra]) == 0
    text = capsys.readouterr().out
    assert "longest context that fits  none: with every layer on a card, a card overflows" in text
    assert "To fit on the cards alone (add to this command):" in text and "--set inference.weight_format=q6_k" in text


def test_current_llama_cpp_build_splits_layers_too(capsys):
    """The llama-cpp-2026 engine (current builds) splits layers like the default, with the same per-card memory,
    and decodes faster: 21 kernels x 0.875 µs per layer instead of the 2024 builds' 86.7 µs."""
    gpus = ("--gpu", "nvidia-rtx-5090-32gb,nvidia-rtx-3090-24gb")
    default = run_json(capsys, *gpus)
    current = run_json(capsys, *gpus, "--set", "inference.engine=llama-cpp-2026")
    assert current["inference"]["engine"] == "llama-cpp-2026" and current["fits"]
    assert [c["layers"] for c in current["mixed_gpus"]["cards"]] == [c["layers"] for c in default["mixed_gpus"]["cards"]]
    assert current["inference"]["tpot_s"] < default["inference"]["tpot_s"]
    # the spellings the engine catalog accepts ('llama.cpp', 'llama.cpp-2026') split too
    spelt = run_json(capsys, *gpus, "--set", "inference.engine=llama.cpp-2026")
    assert spelt["inference"]["tpot_s"] == current["inference"]["tpot_s"]
    assert run_json(capsys, *gpus, "--set", "inference.engine=llama.cpp")["inference"]["tpot_s"] \
        == default["inference"]["tpot_s"]
