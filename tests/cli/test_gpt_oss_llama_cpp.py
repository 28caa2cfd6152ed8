"""gpt-oss with llama.cpp and no weight format named: planned as the MXFP4 GGUF (``mxfp4_moe``), and the fit
answers a local user asks for.

What the release says (openai/gpt-oss model cards and Hugging Face's release post, quoted in sgl-project/sglang
issue #8821, 2025-08-05): "The large model fits on a single H100 GPU, while the small one runs within 16GB of
memory". The MXFP4 GGUFs hold 11.27 / 59.02 GiB of tensors (tests/core/inference/test_gguf_mxfp4.py). A Mac's GPU
may wire 3/4 of its unified memory by default (docs/fit.md), 48 GiB of 64: the 120B needs the sysctl raised.
"""

import json

import pytest

from llmplan.cli import main

BASE = ["estimate", "--workload", "inference", "--set", "inference.engine=llama.cpp", "--json"]


def _estimate(capsys, model, *gpu):
    assert main([*BASE, "--model", model, *gpu]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("model", "gpu"), [
    ("openai/gpt-oss-20b", ["--gpu", "nvidia-rtx-4080-16gb"]),  # "runs within 16GB of memory"
    ("openai/gpt-oss-120b", ["--gpu", "nvidia-h100-sxm-80gb"]),  # "fits on a single H100 GPU"
    ("openai/gpt-oss-120b", ["--gpu", "apple-m2-max-38c-96gb"]),  # 72 GiB the GPU may wire
    ("openai/gpt-oss-120b", ["--gpu", "apple-m4-max-40c-128gb"]),
])
def test_the_released_mxfp4_gguf_fits_where_openai_says(capsys, model, gpu):
    data = _estimate(capsys, model, *gpu)
    assert data["released_format"] == "mxfp4_moe" and data["inference"]["weight_format"] == "mxfp4_moe"
    assert data["fits"] and data["verdict"]["tier"] in ("fits", "tight")
    assert data["inference"]["gpu_layers"] == {"openai/gpt-oss-20b": 24, "openai/gpt-oss-120b": 36}[model]


def test_120b_on_a_64_gb_mac_needs_the_wired_limit_raised(capsys):
    assert main([*BASE, "--model", "openai/gpt-oss-120b", "--gpu", "apple-m4-max-40c-64gb"]) == 2
    err = capsys.readouterr().err
    assert "mxfp4_moe" in err and "48.0 GiB usable" in err and "sysctl iogpu.wired_limit_mb" in err


def test_120b_on_two_24_gb_cards_offloads_experts(capsys):
    # 59 GiB of tensors on 2 x 24 GB: llama.cpp keeps the experts of the first layers in host RAM (--n-cpu-moe),
    # every layer on the cards: faster than whole layers there (docs/inference.md, "Experts in host RAM").
    data = _estimate(capsys, "openai/gpt-oss-120b", "--gpu", "nvidia-rtx-3090-24gb", "--gpus", "2")
    assert data["inference"]["weight_format"] == "mxfp4_moe"
    assert data["verdict"]["tier"] == "offload" and data["verdict"]["layers_in_cpu_ram"] == 0
    assert 0 < data["inference"]["cpu_moe_layers"] < 36 and data["inference"]["gpu_layers"] == 36
    assert data["inference"]["experts_in_host"].startswith("experts of ")
    # stated 0: whole layers, as before
    layers = _estimate(capsys, "openai/gpt-oss-120b", "--gpu", "nvidia-rtx-3090-24gb", "--gpus", "2",
                       "--cpu-moe-layers", "0")
    assert 0 < layers["verdict"]["layers_in_cpu_ram"] < 36
    assert data["inference"]["tokens_per_s"] > layers["inference"]["tokens_per_s"]


def test_120b_split_over_two_different_cards_is_the_mxfp4_gguf(capsys):
    # Several --gpu cards run llama.cpp's layer split: the released format is looked up for llama.cpp (the plan's
    # default engine, vLLM, would have given "mxfp4", which llama.cpp refuses to load).
    assert main(["estimate", "--model", "openai/gpt-oss-120b", "--gpu", "nvidia-rtx-4090-24gb",
                 "--gpu", "nvidia-rtx-3090-24gb", "--workload", "inference", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["inference"]["weight_format"] == "mxfp4_moe"
    assert 0 < data["inference"]["gpu_layers"] < 36  # the rest in host RAM


def test_ollama_plans_gpt_oss_as_its_library_serves_it(capsys):
    # Ollama's gpt-oss blobs keep the non-expert weights BF16 (ollama/ollama issue #16416: 61,223 + 1,104 MiB for
    # the 120B), 1.9 GiB more than ggml-org's Q8_0 files.
    assert main(["estimate", "--workload", "inference", "--set", "inference.engine=ollama", "--json",
                 "--model", "openai/gpt-oss-20b", "--gpu", "nvidia-rtx-4080-16gb"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["released_format"] == "mxfp4_bf16" and data["fits"]
