"""``--set path=value``: typed, validated, with suggestions for unknown paths."""

import pytest

from llmplan.errors import InputError
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.overrides import apply_overrides, field_paths

DOC = PlanDocument(model=ModelRef(id="m"))


def test_contract_paths_exist():
    paths = set(field_paths())
    for p in ("parallelism.tp", "training.zero_stage", "hardware.gpus_per_node", "inference.kv_dtype",
              "efficiency.matmul", "workload", "notes", "model.id"):
        assert p in paths
    assert "format" not in paths and "schema_version" not in paths


def test_values_are_typed():
    doc = apply_overrides(DOC, ["parallelism.tp=8", "training.flash_attention=false", "efficiency.matmul=0.5",
                                "training.optimizer=lion", "notes=hello world", "training.lora_targets=[\"q\"]"])
    assert doc.parallelism.tp == 8 and doc.training.flash_attention is False
    assert doc.efficiency.matmul == 0.5 and doc.training.optimizer == "lion" and doc.notes == "hello world"
    assert doc.training.lora_targets == ("q",)
    assert DOC.parallelism.tp == 1  # the original is untouched


def test_unknown_path_lists_the_nearest_valid_ones():
    with pytest.raises(InputError, match=r"no such plan field; nearest valid paths: parallelism\.tp"):
        apply_overrides(DOC, ["parallelism.tpp=2"])


@pytest.mark.parametrize(
    ("assignment", "expected"),
    [("parallelism.tp=abc", "expected an integer"), ("training.zero_stage=5", "expected one of 0, 1, 2, 3"),
     ("training.flash_attention=maybe", "expected true or false"), ("parallelism.tp=0", "greater than or equal")],
)
def test_bad_values_say_the_expected_type(assignment, expected):
    with pytest.raises(InputError, match=expected):
        apply_overrides(DOC, [assignment])


def test_malformed_and_fixed_fields():
    with pytest.raises(InputError, match="PATH=VALUE"):
        apply_overrides(DOC, ["parallelism.tp"])
    with pytest.raises(InputError, match="fixed by the file format"):
        apply_overrides(DOC, ["schema_version=2"])


def test_new_id_drops_the_inline_spec_it_replaces():
    from tests.core.search.specs import A100_80GB

    doc = DOC.model_copy(update={"hardware": HardwareRef(gpu=A100_80GB.id, gpu_spec=A100_80GB)})
    assert apply_overrides(doc, ["hardware.gpu=other-gpu"]).hardware.gpu_spec is None
    assert apply_overrides(doc, ["hardware.gpu_spec.memory_bytes=1000000000"]).hardware.gpu_spec.memory_bytes == 10**9


def test_inline_config_keys_are_settable():
    doc = PlanDocument(model=ModelRef(config={"model_type": "llama"}))
    assert apply_overrides(doc, ["model.config.num_hidden_layers=2"]).model.config["num_hidden_layers"] == 2


def test_any_path_and_value_gives_a_document_or_one_input_error():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    paths = [*field_paths(), "model.config.x", "nope", "parallelism..tp", ".", "hardware.gpu_spec.peak_flops.bf16"]
    values = st.sampled_from(["1", "0", "-3", "true", "null", "x", "[1]", "{}", '{"a": 1}', "1e400", "", "0.5"])

    @settings(max_examples=120, deadline=None)
    @given(st.sampled_from(paths), values)
    def check(path, value):
        try:
            doc = apply_overrides(DOC, [f"{path}={value}"])
        except InputError as exc:
            assert "\n" not in str(exc)
        else:
            assert isinstance(doc, PlanDocument)

    check()
