"""The newest plan fields on the command line, tried as users type them (hardening round trial34, 2026-11-28):
llama.cpp's experts in host RAM (``--cpu-moe-layers``, ``inference.cpu_moe_layers``), SGLang's DP attention
(``inference.dp_attention``) and an inference plan that carries a fine-tune's training settings.

Each case failed before its fix: a refusal that does not depend on the layout was raised inside the layout search,
which reported "no layout fits ... add GPUs" instead; the flag's error was worded as a ``--set`` the user never
typed, with pydantic's type name ("expected Annotated or ..."); ``search`` lacked the flag the docs give it; an
inference plan was refused for training switches its Fine-tune tab had set. Exact words, no tolerance."""

from __future__ import annotations

import json

import pytest

from llmplan.cli import main

OSS = ["--model", "openai/gpt-oss-120b", "--workload", "inference", "--set", "inference.engine=llama-cpp-2026"]
RTX3090 = ["--gpu", "nvidia-rtx-3090-24gb"]


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("value", ["-1", "2.5", "none", "100001"])
def test_a_bad_cpu_moe_layers_flag_is_named_as_typed(capsys, value):
    rc, _, err = _run(capsys, "estimate", *OSS, *RTX3090, "--cpu-moe-layers", value)
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("llmplan-cli: error: --cpu-moe-layers: give the number of leading layers")
    assert "--set" not in err and "Annotated" not in err and "expected an integer or one of 'all'" in err


@pytest.mark.parametrize("value", ["ALL", "All", " all "])
def test_all_in_any_case_is_cpu_moe(capsys, value):
    rc, out, _ = _run(capsys, "estimate", *OSS, *RTX3090, "--cpu-moe-layers", value, "--json")
    assert rc == 0 and json.loads(out)["inference"]["experts_in_host"] == "every layer's experts in host RAM (--cpu-moe)"


@pytest.mark.parametrize("command", ["estimate", "search"])
def test_experts_in_host_with_fewer_gpu_layers_run(capsys, command):
    """-ngl below the layer count composes with --n-cpu-moe (llama.cpp applies the override on top of the layer
    placement: core.inference.cpu_moe); both commands answer it, neither refuses."""
    rc, _, err = _run(capsys, command, *OSS, *RTX3090, "--cpu-moe-layers", "all", "--set", "inference.gpu_layers=20")
    assert rc == 0, err


def test_search_takes_the_flag_the_docs_give_it(capsys):
    rc, out, err = _run(capsys, "search", *OSS, *RTX3090, "--cpu-moe-layers", "all", "--json")
    assert rc == 0, err
    assert "--cpu-moe" in json.loads(out)["note"]


@pytest.mark.parametrize("command", ["estimate", "search"])
@pytest.mark.parametrize(("extra", "words"), [
    (["--cpu-moe-layers", "10", "--gpu", "apple-m3-max-40c-128gb"],
     "inference.cpu_moe_layers=10: the GPU shares the host's memory (unified memory)"),
])
def test_experts_in_host_refusals_are_said_not_no_layout_fits(capsys, command, extra, words):
    rc, _, err = _run(capsys, command, *OSS, *extra)
    assert rc == 2 and words in err and "no layout fits" not in err


@pytest.mark.parametrize("command", ["estimate", "search"])
@pytest.mark.parametrize(("model", "engine", "words"), [
    ("meta-llama/Llama-3.1-8B", "sglang", "to multi-latent-attention models only"),
    ("deepseek-ai/DeepSeek-V2-Lite", "vllm", "vLLM has no data-parallel attention"),
])
def test_dp_attention_refusals_are_said_with_the_layout_left_open(capsys, command, model, engine, words):
    rc, _, err = _run(capsys, command, "--model", model, "--gpu", "nvidia-h100-sxm-80gb", "--gpus", "2",
                      "--workload", "inference", "--set", f"inference.engine={engine}",
                      "--set", "inference.dp_attention=true")
    assert rc == 2 and f"inference.dp_attention: {'SGLang applies' if engine == 'sglang' else ''}" in err
    assert words in err and "no layout fits" not in err


@pytest.mark.parametrize("training", [
    ["training.framework=hf-trainer", "training.liger=true"],
    ["training.framework=torchtune", "training.optimizer_in_backward=true"],
    ["training.framework=megatron", "training.offload=cpu", "training.optimizer_offload_fraction=0.5"],
])
def test_an_inference_plan_ignores_its_fine_tune_settings(capsys, training):
    """The app keeps the Fine-tune tab's settings when the plan switches to Inference; the inference estimate was
    refused ("training.liger: the megatron profile does not support it"). It is the same as without them."""
    base = ["estimate", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "nvidia-h100-sxm-80gb", "--workload",
            "inference", "--json"]
    rc, out, err = _run(capsys, *base, *(a for t in training for a in ("--set", t)))
    assert rc == 0, err
    rc0, plain, _ = _run(capsys, *base)
    assert rc0 == 0
    assert json.loads(out)["inference"] == json.loads(plain)["inference"]


@pytest.mark.parametrize("command", ["estimate", "search"])
def test_a_zero_stage_one_gpu_cannot_run_is_not_a_memory_answer(capsys, command):
    """ZeRO-3 stated on one GPU under unsloth: the answer was "no layout fits in memory on these GPUs ... add GPUs"
    for a 1B model on an 80 GB card. unsloth runs no ZeRO stage (its profile's zero_stages), so both commands give
    the field error naming what it runs."""
    rc, _, err = _run(capsys, command, "--model", "meta-llama/Llama-3.2-1B", "--gpu", "nvidia-h100-sxm-80gb",
                        "--workload", "finetune", "--set", "training.framework=unsloth",
                        "--set", "training.zero_stage=3")
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "training.zero_stage: the unsloth profile runs ZeRO stages 0" in err
    assert "in memory" not in err and "no layout fits" not in err


def test_dp_attention_is_said_with_the_figures_it_changes(capsys):
    """The text's "inference:" line and --json name the flag (DeepSeek-V2-Lite on 2 x H100: it moves every
    figure, and nothing in the output said it was on)."""
    base = ["estimate", "--model", "deepseek-ai/DeepSeek-V2-Lite", "--gpu", "nvidia-h100-sxm-80gb", "--gpus", "2",
            "--workload", "inference", "--set", "inference.engine=sglang"]
    assert main([*base, "--set", "inference.dp_attention=true"]) == 0
    assert "out, DP attention (--enable-dp-attention) (inference.engine" in capsys.readouterr().out
    for on in (True, False):
        rc, out, _ = _run(capsys, *base, "--set", f"inference.dp_attention={str(on).lower()}", "--json")
        assert rc == 0 and json.loads(out)["inference"]["dp_attention"] is on


def test_an_inference_plan_saved_keeps_its_training_section(capsys, tmp_path):
    """``estimate --save`` wrote the inference scenario's resolved training settings over the plan's (loss
    fp32_logits, grad_clip on ... of the default profile), so the saved plan switched to fine-tuning was refused
    ("training.loss: the hf-trainer profile does not run fp32_logits"); with a fine-tune's Liger on, it lost it."""
    path = tmp_path / "serve.llmplan"
    for training in ([], ["--set", "training.framework=hf-trainer", "--set", "training.liger=true"]):
        rc, _, err = _run(capsys, "estimate", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "nvidia-h100-sxm-80gb",
                          "--workload", "inference", *training, "--save", str(path))
        assert rc == 0, err
        saved = json.loads(path.read_text()).get("training", {})
        assert saved == ({"framework": "hf-trainer", "liger": True} if training else {})
        rc, out, err = _run(capsys, "estimate", str(path), "--set", "workload=finetune",
                            "--set", "training.framework=hf-trainer", "--json")
        assert rc == 0, err
        assert json.loads(out)["training"]["loss"] == ("fused_linear" if training else "upcast")


def test_search_holds_the_knobs_a_plan_file_states(capsys, tmp_path):
    """A plan file stating torchtune's one-GPU offload (offload cpu, ZeRO-0): ``estimate`` priced it (~9,013
    tokens/s, fits with offload), ``search`` of the same file ranked layouts without the offload (its best 8,117
    tokens/s), and the app's Auto… held it: the file's knobs were held only when given with --set."""
    path = tmp_path / "tt.llmplan"
    path.write_text(json.dumps({
        "format": "llmplan", "schema_version": 5, "workload": "finetune", "model": {"id": "meta-llama/Llama-3.1-8B"},
        "hardware": {"gpu": "nvidia-h100-sxm-80gb"},
        "training": {"framework": "torchtune", "method": "full", "offload": "cpu", "zero_stage": 0, "tokens": 1e8}}))
    rc, out, err = _run(capsys, "estimate", str(path), "--json")
    assert rc == 0, err
    est = json.loads(out)
    rc, out, err = _run(capsys, "search", str(path), "--json")
    assert rc == 0, err
    best = json.loads(out)["best"][0]
    assert best["training"]["offload"] == "cpu" and best["training"]["zero_stage"] == 0
    assert best["tokens_per_s"] == pytest.approx(est["compute"]["tokens_per_s"], rel=1e-9)


def test_held_zero_0_where_offload_needs_zero_1_answers_by_memory(capsys):
    """The QLoRA example (ZeRO-0 stated) at 8K tokens on one RTX 4090: nothing fits without offload, and DeepSpeed's
    offload needs ZeRO-1, so the offload phase has no layout; the answer is the layouts tried without it, by how far
    they are from fitting, not "0 layouts evaluated"."""
    from llmplan.resources_path import resources_dir

    plan = resources_dir() / "examples" / "qlora-llama-3-8b-rtx4090.llmplan"
    rc, out, _ = _run(capsys, "search", str(plan), "--quick", "--set", "training.seq_len=8192")
    assert rc == 0 and "5 layouts evaluated, 0 fit" in out
    assert ("no layout fits in memory on these GPUs with training.zero_stage=0, training.recompute=full as set "
            "(the most frugal layout needs 26.8 GiB per GPU, 24.0 GiB usable)") in out
