"""The app plans a model released quantised as released, as the CLI does (one rule: ``llmplan.plan.released``).

Found by a new-user trial on 2026-11-28: ``llmplan-cli estimate --model openai/gpt-oss-20b --workload inference``
planned MXFP4 ("weights as released: mxfp4"), but picking gpt-oss-20b in the app planned bf16. The formats are
what the models' config.json files declare (``quantization_config``: gpt-oss ``quant_method: mxfp4``,
huggingface.co/openai/gpt-oss-20b; DeepSeek-V3 ``quant_method: fp8``, huggingface.co/deepseek-ai/DeepSeek-V3),
as the catalog holds them. Exact comparisons: the app and the CLI must give the same format and the same words.
"""

from __future__ import annotations

import json

from llmplan.cli import main
from llmplan.gui.released_note import ANOTHER
from llmplan.plan.released import released_words

GPT_OSS, DEEPSEEK, LLAMA = "openai/gpt-oss-20b", "deepseek-ai/DeepSeek-V3", "meta-llama/Llama-3.1-8B"


def _cli(capsys, model: str, gpu: str, *extra: str) -> dict:
    """The CLI on the app's plan: its GPU and its layout (one GPU), so both estimate the plan's own format."""
    assert main(["estimate", "--model", model, "--gpu", gpu, "--workload", "inference", "--set", "parallelism.tp=1",
                 *extra, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _released_label(window):
    from PySide6.QtWidgets import QLabel

    return next(w for w in window.findChildren(QLabel) if w.accessibleName() == "Released weight format")


def _pick(window, model_id: str) -> None:
    window.models.search.setText(model_id)
    assert window.models.select(model_id)
    assert window.state.doc.model.id == model_id


def _to_inference(window) -> None:
    window.workload.setCurrentIndex(0)  # the Inference tab
    assert window.state.doc.workload == "inference"


def test_picking_a_model_plans_it_as_released_like_the_cli(window, capsys):
    _to_inference(window)
    gpu = window.state.doc.hardware.gpu
    for model, fmt in ((GPT_OSS, "mxfp4"), (DEEPSEEK, "fp8")):
        _pick(window, model)
        cli = _cli(capsys, model, gpu)
        assert window.state.doc.inference.weight_format == cli["inference"]["weight_format"] == fmt
        assert cli["released_format"] == fmt
        note = _released_label(window)
        assert not note.isHidden() and note.text() == "W" + released_words(fmt, ANOTHER)[1:]
        assert window.state.evaluate_now().scenario.inference.weight_format == fmt
    _pick(window, LLAMA)  # a model released in bf16: the plan's default comes back, the note goes
    cli = _cli(capsys, LLAMA, gpu)
    assert window.state.doc.inference.weight_format == cli["inference"]["weight_format"] == "bf16"
    assert "released_format" not in cli and _released_label(window).isHidden()
    assert "weight_format" not in window.state.doc.inference.model_fields_set  # left open, as before


def test_the_model_and_its_format_are_one_undo_step(window):
    _to_inference(window)
    before = window.state.doc
    _pick(window, GPT_OSS)
    assert window.state.doc.inference.weight_format == "mxfp4"
    window.state.undo_stack.undo()
    assert window.state.doc == before


def test_a_format_the_user_chose_always_wins(window, capsys):
    _to_inference(window)
    assert window.state.edit("inference.weight_format", "awq-4bit")
    _pick(window, GPT_OSS)
    assert window.state.doc.inference.weight_format == "awq-4bit"
    assert _cli(capsys, GPT_OSS, window.state.doc.hardware.gpu, "--set",
                "inference.weight_format=awq-4bit")["inference"]["weight_format"] == "awq-4bit"
    assert _released_label(window).isHidden()
    _pick(window, DEEPSEEK)
    assert window.state.doc.inference.weight_format == "awq-4bit"


def test_workload_and_engine_changes_follow_the_release(window, capsys):
    # picked on the Fine-tune tab, the model is trained in bf16; the Inference tab then serves it as released
    _pick(window, GPT_OSS)
    assert window.state.doc.workload == "finetune" and "weight_format" not in window.state.doc.inference.model_fields_set
    _to_inference(window)
    assert window.state.doc.inference.weight_format == "mxfp4"
    # llama.cpp loads GGUF files only: the GGUF made from the release (ggml-org's MXFP4 MoE mix), as the CLI says
    assert window.state.edit("inference.engine", "llama.cpp")
    cli = _cli(capsys, GPT_OSS, window.state.doc.hardware.gpu, "--set", "inference.engine=llama.cpp")
    assert window.state.doc.inference.weight_format == cli["inference"]["weight_format"] == "mxfp4_moe"
    assert cli["released_format"] == "mxfp4_moe"
    assert window.state.edit("inference.engine", "vllm")
    assert window.state.doc.inference.weight_format == "mxfp4"
