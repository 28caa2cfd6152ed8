"""Plan files: strict loading, migration, refusal of newer versions, atomic canonical saving."""

import json
import os

import pytest

from llmplan.core.hardware import Efficiency
from llmplan.errors import ConfigError, PlanFileError
from llmplan.plan.document import SCHEMA_VERSION, HardwareRef, ModelRef, PlanDocument
from llmplan.plan.planfile import (
    MAX_NESTING,
    MAX_PLAN_BYTES,
    dumps_plan,
    load_plan,
    loads_plan,
    plan_from_config,
    save_plan,
)

LLAMA_CONFIG = {  # meta-llama/Meta-Llama-3-8B config.json (the keys the parser reads)
    "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
    "tie_word_embeddings": False, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "hidden_act": "silu",
}


def _minimal(**extra) -> str:
    return json.dumps({"format": "llmplan", "schema_version": 1, "model": {"id": "m"}, **extra})


def test_minimal_plan_loads_with_defaults():
    doc = loads_plan(_minimal())
    assert doc.model.id == "m" and doc.parallelism.tp == 1 and doc.workload == "pretrain"


def test_save_is_canonical_and_round_trips_byte_identically(tmp_path):
    from ..core.search.specs import A100_80GB

    doc = plan_from_config(LLAMA_CONFIG, name="Llama 3 8B").model_copy(
        update={"hardware": HardwareRef(gpu=A100_80GB.id, gpu_spec=A100_80GB, gpu_efficiency=Efficiency())})
    path = save_plan(doc, tmp_path / "a.llmplan")
    first = path.read_bytes()
    assert first.endswith(b"\n") and first == dumps_plan(doc).encode()
    again = save_plan(load_plan(path), tmp_path / "b.llmplan").read_bytes()
    assert again == first
    assert list(json.loads(first)) == sorted(json.loads(first))
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]  # no temp file left behind


def test_save_replaces_atomically_and_keeps_the_old_file_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "p.llmplan"
    save_plan(loads_plan(_minimal(name="old")), path)  # unknown catalog id "m": saved as written
    monkeypatch.setattr(os, "replace", lambda *_a: (_ for _ in ()).throw(OSError(28, "No space left")))
    with pytest.raises(PlanFileError, match="cannot save"):
        save_plan(loads_plan(_minimal(name="new")), path, inline=False)
    assert load_plan(path).name == "old"
    assert os.listdir(tmp_path) == ["p.llmplan"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"\xff\xfe{}", "not UTF-8"),
        ('{"format": "llmplan",\n "schema_version": 1,,}', "line 2, column 22"),
        ("[1, 2]", "JSON object"),
        ('{"format": "other", "schema_version": 1}', "not an llmplan plan"),
        ('{"format": "llmplan", "schema_version": "1"}', "must be an integer"),
        ("[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1), "nested more than"),
        ("[" * 200_000, "nested more than"),
        (" " * (MAX_PLAN_BYTES + 1), "too large"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error(text, message):
    with pytest.raises(PlanFileError, match=message):
        loads_plan(text)


def test_brackets_inside_strings_do_not_count_as_nesting():
    doc = loads_plan(_minimal(notes="[" * 500 + "{" * 500))
    assert doc.notes.startswith("[[[")


def test_validation_error_names_the_dotted_field():
    with pytest.raises(PlanFileError, match=r"parallelism\.tp: input should be greater than or equal to 1"):
        loads_plan(_minimal(parallelism={"tp": 0}))
    with pytest.raises(PlanFileError, match=r"training\.zero_stag: unknown field"):
        loads_plan(_minimal(training={"zero_stag": 3}))


def test_newer_schema_is_refused_naming_both_versions():
    future = json.dumps({"format": "llmplan", "schema_version": SCHEMA_VERSION + 1, "model": {"id": "m"}})
    with pytest.raises(PlanFileError) as err:
        loads_plan(future)
    assert f"saved by a newer llmplan (schema {SCHEMA_VERSION + 1})" in str(err.value)
    assert f"reads up to schema {SCHEMA_VERSION}" in str(err.value) and "update llmplan" in str(err.value)


def test_v0_draft_migrates():
    old = {"format": "llmplan", "schema_version": 0, "model": {"id": "m"}, "workload": "training",
           "hardware": {"gpu": "nvidia-a100-sxm-80gb", "gpu_count": 4}, "layout": {"tp": 2, "dp": 2}}
    doc = loads_plan(json.dumps(old))
    assert doc.schema_version == SCHEMA_VERSION == 5
    assert doc.parallelism.tp == 2 and doc.parallelism.dp == 2
    assert doc.hardware.gpus_per_node == 4 and doc.hardware.nodes == 1
    assert doc.workload == "pretrain"


def test_schema_1_plan_migrates_and_keeps_following_the_catalog():
    """Schema 2 added hardware.gpu_efficiency; a schema-1 plan has none and keeps the catalog's (as before)."""
    old = json.loads(_minimal())
    old["schema_version"] = 1
    doc = loads_plan(json.dumps(old))
    assert doc.schema_version == 5 and doc.hardware.gpu_efficiency is None


def test_missing_and_folder_paths(tmp_path):
    with pytest.raises(PlanFileError, match="no such file"):
        load_plan(tmp_path / "missing.llmplan")
    with pytest.raises(PlanFileError, match="is a folder"):
        load_plan(tmp_path)


def test_loading_never_follows_paths_in_the_file(tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps(LLAMA_CONFIG))
    with pytest.raises(PlanFileError, match=r"model\.config"):
        loads_plan(_minimal(model={"config": str(secret)}))


def test_plan_from_config_file_and_bad_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_CONFIG))
    doc = plan_from_config(tmp_path)
    assert doc.model.config["hidden_size"] == 4096 and doc.model.name == tmp_path.name
    with pytest.raises(ConfigError):
        plan_from_config({"model_type": "llama"})


def test_document_needs_a_model():
    with pytest.raises(PlanFileError, match="model"):
        loads_plan('{"format": "llmplan", "schema_version": 1, "model": {}}')
    assert PlanDocument(model=ModelRef(id="x")).format == "llmplan"


def test_schema_2_plan_migrates_to_the_megatron_profile_and_keeps_its_numbers():
    """Schema 3 added training.framework (default "auto"); a schema-2 plan was estimated the Megatron way and
    migrates to that profile explicitly, so a one-GPU fine-tune saved before keeps its figures."""
    old = {"format": "llmplan", "schema_version": 2, "model": {"id": "m"}, "workload": "finetune",
           "training": {"method": "lora"}}
    doc = loads_plan(json.dumps(old))
    assert doc.schema_version == 5 and doc.training.framework == "megatron"
    fresh = loads_plan(json.dumps({**old, "schema_version": 3}))
    assert fresh.training.framework == "auto"


def test_schema_3_plan_keeps_one_micro_batch_per_replica_and_its_numbers():
    """Schema 4 fixed the batch (``training.batch_rule`` "published" by default); a schema-3 plan without a
    global batch trained micro_batch·dp sequences per step and migrates to "per_replica": same estimate."""
    from llmplan.core.engine import estimate
    from llmplan.plan.resolve import resolve

    old = {"format": "llmplan", "schema_version": 3, "model": {"id": "meta-llama/Meta-Llama-3-8B"},
           "workload": "pretrain", "hardware": {"gpu": "nvidia-h100-sxm-80gb", "gpus_per_node": 8},
           "training": {"seq_len": 4096, "recompute": "full"}, "parallelism": {"dp": 8}}
    doc = loads_plan(json.dumps(old))
    assert doc.schema_version == 5 and doc.training.batch_rule == "per_replica"
    e = estimate(resolve(doc))
    assert e.compute.global_batch.value == 8  # micro-batch 1 × DP 8, as schema 3 estimated it
    fresh = estimate(resolve(loads_plan(json.dumps({**old, "schema_version": 4}))))
    assert fresh.compute.global_batch.value * 4096 == 2 ** 22  # Llama 2's 4M tokens for an 8B model
    assert fresh.compute.accumulation.value == 128
    served = loads_plan(json.dumps({**old, "workload": "inference"}))
    assert "batch_rule" not in served.training.model_fields_set  # nothing to keep for a served model
    assert loads_plan(dumps_plan(doc)).training.batch_rule == "per_replica"  # written out, kept on reopen


def test_a_knob_pinned_at_its_default_stays_pinned_when_saved(tmp_path):
    """trial34 (2026-11-28): ``offload: "none"`` pinned (the app's pick, or ``--set``) was left out of the file as a
    default, so the reopened plan left offload to the auto policy, which offloaded: a plan that did not fit came
    back as "FITS WITH OFFLOAD" with ZeRO-3 (Llama 3.1 8B full fine-tune on one H100). The knobs the policy chooses,
    the engine and the weight format keep being stated; other defaults are still left out."""
    doc = loads_plan(_minimal(
        workload="finetune",
        training={"offload": "none", "zero_stage": 1, "micro_batch": 1, "recompute": "none", "seq_len": 4096},
        inference={"weight_format": "bf16"}))
    text = json.loads(dumps_plan(doc))
    pinned = {"offload": "none", "zero_stage": 1, "micro_batch": 1, "recompute": "none"}
    assert {k: v for k, v in text["training"].items() if k in pinned or k == "seq_len"} == pinned  # (schema 1
    # migrates to framework megatron and batch_rule per_replica: written as well)
    assert text["inference"] == {"weight_format": "bf16"}
    back = load_plan(save_plan(doc, tmp_path / "p.llmplan", inline=False))
    assert {"offload", "zero_stage", "micro_batch", "recompute"} <= back.training.model_fields_set
    assert "weight_format" in back.inference.model_fields_set
    unpinned = json.loads(dumps_plan(loads_plan(_minimal(workload="finetune"))))
    assert not {"offload", "zero_stage", "micro_batch", "recompute"} & set(unpinned["training"])
    assert "inference" not in unpinned
