"""``llmplan-cli measure``: what a plan runs as on one GPU, and a run file that --compare-run reads.

The torch part needs a GPU and the optional packages; here the plan -> settings mapping, the refusals and
the run file's compatibility are tested (the harness itself is the same code a user runs on a GPU), and what the
harness asks transformers and PEFT for, with stand-ins for them."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import types
from types import SimpleNamespace

import pytest

from llmplan.catalog.models import load_model_catalog
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.errors import InputError
from llmplan.hw.measure_run import RUN_FORMAT, _build, dumps_run, run_settings
from llmplan.hw.measured import import_measured_run
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument

CATALOG = load_model_catalog(include_user=False)


def _doc(**training) -> PlanDocument:
    return PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-8B"), hardware=HardwareRef(), workload="finetune",
                        training=TrainingSettings(**training), parallelism=ParallelLayout())


def test_a_qlora_plan_runs_as_qlora_with_checkpointing_and_its_targets():
    rs = run_settings(_doc(method="qlora", recompute="full", micro_batch=2, seq_len=1024, lora_rank=8,
                           lora_targets=("q", "v")))
    assert (rs.workload, rs.method, rs.checkpointing, rs.micro_batch, rs.seq_len) == ("train", "qlora", True, 2, 1024)
    assert rs.lora_targets == ("self_attn.q_proj", "self_attn.v_proj") and rs.lora_rank == 8
    assert rs.lora_dropout == 0.05


def test_pure_bf16_and_inference_plans():
    assert run_settings(_doc(regime="pure")).regime == "pure"
    inf = _doc().model_copy(update={"workload": "inference"})
    rs = run_settings(inf)
    assert rs.workload == "generate" and rs.prompt_tokens == inf.inference.prompt_tokens


@pytest.mark.parametrize(("change", "words"), [
    ({"hardware": HardwareRef(gpus_per_node=8)}, "this one GPU"),
    ({"parallelism": ParallelLayout(tp=2)}, "this one GPU"),
    ({"training": TrainingSettings(precision="fp8")}, "bf16, fp16 or fp32"),
    ({"training": TrainingSettings(optimizer="lion")}, "adamw, adam8bit or sgd"),
])
def test_what_one_process_cannot_run_is_refused_with_the_fix(change, words):
    with pytest.raises(InputError, match=words):
        run_settings(_doc().model_copy(update=change))


def test_the_run_file_is_what_compare_run_reads(tmp_path):
    run = {"format": RUN_FORMAT, "schema_version": 1, "peak_memory_bytes": 20_354_714_624,
           "peak_reserved_bytes": 21_812_477_952, "step_time_s": 0.448, "device_name": "NVIDIA H100 80GB HBM3"}
    path = tmp_path / "run.json"
    path.write_text(dumps_run(run), encoding="utf-8")
    back = import_measured_run(path)
    assert back.peak_memory_bytes == 20_354_714_624 and back.step_time_s == 0.448
    assert json.loads(path.read_text())["format"] == RUN_FORMAT


def test_cli_without_torch_says_what_to_install():
    try:
        import torch  # noqa: F401
        pytest.skip("torch is installed here: the missing-package message cannot be seen")
    except ImportError:
        pass
    p = subprocess.run([sys.executable, "-m", "llmplan", "measure", "--model", "meta-llama/Llama-3.2-1B",
                        "--gpu", "nvidia-h100-sxm-80gb", "--workload", "finetune"], capture_output=True, text=True)
    assert p.returncode != 0 and "pip install 'llmplan[measure]'" in p.stderr and "Traceback" not in p.stderr


# ---- PEFT's target_modules and the model built, with torch, transformers and peft stood in for --------------------
# The stand-ins record what the harness asks for; the names themselves are checked against the modeling code in
# tests/core/test_lora_module_names.py.

def _lora_doc(model_id: str, **training) -> PlanDocument:
    return PlanDocument(model=ModelRef(id=model_id), hardware=HardwareRef(), workload="finetune",
                        training=TrainingSettings(method="lora", lora_rank=16, **training), parallelism=ParallelLayout())


class _Peft(types.ModuleType):
    """peft's LoraConfig and get_peft_model as the harness calls them."""

    def __init__(self):
        super().__init__("peft")
        self.configs: list[dict] = []

    def LoraConfig(self, **kw):  # peft's name
        self.configs.append(kw)
        return kw

    def get_peft_model(self, model, config):
        return ("peft model", model, config)


@pytest.fixture
def peft(monkeypatch):
    fake = _Peft()
    monkeypatch.setitem(sys.modules, "peft", fake)
    return fake


def _stand_ins(known=("llama", "phi3", "gpt_neox", "gemma3_text", "mistral")):
    built: list[dict] = []
    torch = SimpleNamespace(device=lambda _d: contextlib.nullcontext(), bfloat16="bf16", float32="fp32")
    tf = SimpleNamespace(
        __version__="5.24.0", CONFIG_MAPPING=set(known),
        AutoConfig=SimpleNamespace(for_model=lambda **kw: built.append(kw) or SimpleNamespace(**kw)),
        AutoModelForCausalLM=SimpleNamespace(from_config=lambda cfg, **kw: ("model", cfg.model_type)))
    return torch, tf, built


@pytest.mark.parametrize(("model_id", "modules"), [
    ("microsoft/Phi-3-mini-4k-instruct", ["self_attn.qkv_proj", "self_attn.o_proj", "mlp.gate_up_proj",
                                          "mlp.down_proj"]),
    ("EleutherAI/pythia-1.4b", ["attention.query_key_value", "attention.dense", "mlp.dense_h_to_4h",
                                "mlp.dense_4h_to_h"]),
    ("meta-llama/Llama-3.1-8B", ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                                 "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]),
])
def test_peft_is_asked_for_the_modules_the_estimate_counts(peft, model_id, modules):
    """Phi-3's fused qkv_proj and gate_up_proj, Pythia's query_key_value and dense_*, Llama's seven projections:
    before, all three got Llama's names (Pythia: "Target modules ... not found"; Phi-3: only o_proj and
    down_proj adapted)."""
    torch, tf, _ = _stand_ins()
    config = CATALOG.get(model_id).config
    rs = run_settings(_lora_doc(model_id))
    model = _build(config, rs, torch, tf, "cuda")
    assert peft.configs == [{"r": 16, "lora_alpha": 32, "lora_dropout": 0.05, "target_modules": modules,
                             "task_type": "CAUSAL_LM"}]
    assert model[0] == "peft model" and model[1] == ("model", config["model_type"])


def test_a_multimodal_checkpoint_is_built_as_its_language_model(peft):
    """Gemma 3 12B and Mistral Small 3.2: the text_config alone, so neither the vision tower's weights (which
    llmplan does not count) nor its self_attn.q_proj ... (SigLIP's share the language model's names) come in;
    Mistral3Config is no AutoModelForCausalLM at all."""
    torch, tf, built = _stand_ins()
    for model_id, inner in (("google/gemma-3-12b-it", "gemma3_text"),
                            ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", "mistral")):
        _build(CATALOG.get(model_id).config, run_settings(_lora_doc(model_id)), torch, tf, "cuda")
        assert built[-1]["model_type"] == inner and "vision_config" not in built[-1]
    assert peft.configs[-1]["target_modules"][0] == "self_attn.q_proj"


def test_a_model_transformers_cannot_build_is_refused_with_the_reason(peft):
    torch, tf, _ = _stand_ins()
    rs = run_settings(_lora_doc("Qwen/Qwen-7B"))
    assert rs.lora_targets == ("attn.c_attn", "attn.c_proj", "mlp.w2", "mlp.w1", "mlp.c_proj")
    with pytest.raises(InputError, match="no model_type 'qwen'"):
        _build(CATALOG.get("Qwen/Qwen-7B").config, rs, torch, tf, "cuda")


@pytest.mark.parametrize(("experts", "params", "patterns"), [
    ("auto", ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"], {"mlp.experts.gate_up_proj": 2}),
    ("target_parameters", ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"], None),
    ("none", None, None),
])
def test_a_mixture_of_experts_gets_its_stacked_expert_parameters(peft, experts, params, patterns):
    """Mixtral under transformers 5 (MixtralSparseMoeBlock ``mlp``: MixtralExperts.gate_up_proj, down_proj are
    3-D nn.Parameters): target_modules names the attention, target_parameters the stacked experts; "auto" is what
    PEFT >= 0.19 makes of gate/up/down names (peft v0.21.2 utils/transformers_weight_conversion.py
    ``_convert_peft_config_moe``: gate_up_proj at rank 2r and alpha 2α), written out so any PEFT >= 0.17 runs it."""
    torch, tf, _ = _stand_ins(known=("mixtral",))
    doc = _lora_doc("mistralai/Mixtral-8x7B-v0.1", lora_dropout=0.0, lora_experts=experts)
    _build(CATALOG.get("mistralai/Mixtral-8x7B-v0.1").config, run_settings(doc), torch, tf, "cuda")
    config = peft.configs[-1]
    assert config["target_modules"] == ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"]
    assert config.get("target_parameters") == params
    if patterns is None:
        assert "rank_pattern" not in config and "alpha_pattern" not in config
    else:
        assert config["rank_pattern"] == {k: f * 16 for k, f in patterns.items()}
        assert config["alpha_pattern"] == {k: f * 32 for k, f in patterns.items()}


@pytest.mark.parametrize(("model_id", "experts", "words"), [
    ("mistralai/Mixtral-8x7B-v0.1", "per_expert_modules", "transformers 4 layout"),
    ("deepseek-ai/DeepSeek-V3", "target_parameters", "lora_experts = peft_converted"),
    ("openai/gpt-oss-20b", "peft_converted", "PEFT converts"),
])
def test_what_transformers_5_and_peft_cannot_build_is_refused_with_the_fix(model_id, experts, words):
    """The transformers 4 layout; DeepSeek's dense and shared-expert Linear MLPs, whose gate/up/down names PEFT
    >= 0.19 rewrites into expert parameters on a 'deepseek_v3' model; a conversion on a family PEFT does not
    convert (gpt_oss has no transformers 4 expert names)."""
    with pytest.raises(InputError, match=words):
        run_settings(_lora_doc(model_id, lora_dropout=0.0, lora_experts=experts))


def test_full_fine_tuning_and_inference_need_no_module_names():
    doc = _lora_doc("mistralai/Mixtral-8x7B-v0.1").model_copy(update={"training": TrainingSettings(method="full")})
    assert run_settings(doc).lora_targets == ()
    assert run_settings(doc.model_copy(update={"workload": "inference"})).lora_targets == ()


def test_cli_refuses_lora_dropout_on_stacked_experts_without_a_traceback():
    """Refused before torch is imported: Mixtral's experts are adapted through PEFT's target_parameters (the plan's
    lora_experts "auto": PEFT's conversion), whose ParamWrapper raises on lora_dropout > 0 (peft v0.21.2
    tuners/lora/layer.py), and the Hugging Face profile's default dropout is 0.05. The message names the fix."""
    p = subprocess.run([sys.executable, "-m", "llmplan", "measure", "--model", "mistralai/Mixtral-8x7B-v0.1",
                        "--gpu", "nvidia-h200-sxm-141gb", "--workload", "finetune", "--set", "training.method=lora"],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "training.lora_dropout = 0" in p.stderr and "Traceback" not in p.stderr


def test_the_harness_clips_where_the_plan_clips():
    """``training.grad_clip``: on (the Hugging Face profile's default, the Trainer's max_grad_norm 1.0) runs
    ``torch.nn.utils.clip_grad_norm_(params, 1.0)`` between the backward and the optimizer step, every step, as
    the Trainer does; off runs none (the plain loop the H100 and H200 rows were measured with)."""
    from llmplan.hw.measure_run import WARMUP_STEPS, _train

    assert run_settings(_doc()).max_grad_norm == 1.0  # auto: the profile clips
    assert run_settings(_doc(grad_clip="off")).max_grad_norm == 0.0
    assert run_settings(_doc().model_copy(update={"workload": "inference"})).max_grad_norm == 0.0

    calls: list[str] = []
    param = SimpleNamespace(requires_grad=True)
    loss = SimpleNamespace(backward=lambda: calls.append("backward"))
    opt = SimpleNamespace(step=lambda: calls.append("step"), zero_grad=lambda set_to_none: calls.append("zero"))

    class Model(SimpleNamespace):
        def __call__(self, **_):
            return SimpleNamespace(loss=loss)

    model = Model(parameters=lambda: [param], config=SimpleNamespace(vocab_size=10))

    def clip(params, max_norm):
        assert params == [param]
        calls.append(f"clip {max_norm}")

    torch = SimpleNamespace(optim=SimpleNamespace(AdamW=lambda params, lr, fused: opt), randint=lambda *a, **k: None,
                            autocast=lambda *a, **k: contextlib.nullcontext(), bfloat16="bf16",
                            nn=SimpleNamespace(utils=SimpleNamespace(clip_grad_norm_=clip)))
    cpu = SimpleNamespace(type="cpu")
    for plan, want in ((_doc(), ["backward", "clip 1.0", "step", "zero"]),
                       (_doc(grad_clip="off"), ["backward", "step", "zero"])):
        calls.clear()
        _train(model, run_settings(plan), torch, cpu, steps=1)
        assert calls == want * (1 + WARMUP_STEPS)
