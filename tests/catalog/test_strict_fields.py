"""User catalog entries are read without pydantic's lax coercion (``llmplan.core.strict_fields``).

Was (issue 28's closing note, 2026-11-27): ``fused_projections = "yes"`` in a user's frameworks.toml was read as
true, ``= 1`` too, and ``prefill_metal_share = [["Q4_0", "0.5"]]`` in engines.toml as the number 0.5, so a typo
changed an estimate without a word. Now each such entry is skipped, the shipped one stays in use, and
``llmplan-cli catalog problems`` names the field and what it must be. Exact checks: the message text and the
value in use (no tolerance: nothing numeric is computed here).
"""

from __future__ import annotations

import json
import tomllib
from typing import Literal

import pytest
from tests.property._targets import GPU_ENTRY
from tests.property._toml import array_of_tables

from llmplan.catalog.engines import engine_problems, load_engine_profiles
from llmplan.catalog.frameworks import framework_problems, load_framework_profiles
from llmplan.cli import main
from llmplan.core.strict_fields import StrictFields, type_message, wrong_type
from llmplan.resources_path import catalogs_dir


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    return tmp_path


def _shipped(name: str) -> dict:
    return tomllib.loads((catalogs_dir() / name).read_text("utf-8"))


# (TOML line, the field, what the problem must say): one row per kind of wrong value.
FRAMEWORK_CASES = [
    ('fused_projections = "yes"', "fused_projections", "must be true or false, not 'yes' (write true or false "
     "without quotes)"),
    ('fused_projections = "true"', "fused_projections", "must be true or false, not 'true'"),
    ("fused_projections = 1", "fused_projections", "must be true or false, not 1"),
    ("overlap_grad_reduce = 0", "overlap_grad_reduce", "must be true or false, not 0"),
    ('optimizer_intermediates = "1"', "optimizer_intermediates", "must be an integer, not '1' (text is not a "
     "number: write it without quotes)"),
    ('launch_s = "1e-5"', "launch_s", "must be a number, not '1e-5'"),
    ("fragmentation = true", "fragmentation", "must be a number, not true (true/false is not a number)"),
    ("kernels = 1", "kernels", "must be one of 'fused', 'eager', 'triton', not 1"),
    ('expert_gemms = "fused"', "expert_gemms", "must be one of 'separate', 'multi_stream', 'grouped', not 'fused'"),
    ('switches = ["liger", 3]', "switches", "item 2 must be one of 'liger'"),
    ('switches = "liger"', "switches", "must be a list, not 'liger'"),
    ("name = 3", "name", "must be text (in quotes), not 3"),
]


@pytest.mark.parametrize(("line", "field", "says"), FRAMEWORK_CASES)
def test_a_wrong_type_in_frameworks_toml_is_skipped_and_named(data_dir, line, field, says):
    (data_dir / "frameworks.toml").write_text(f"[megatron]\n{line}\n")
    shipped = _shipped("frameworks.toml")["megatron"]
    profiles = load_framework_profiles()
    assert getattr(profiles["megatron"], field) == _as_model(shipped.get(field), profiles["megatron"], field)
    (problem,) = framework_problems()
    assert f"framework 'megatron': field '{field}': {says}" in problem, problem
    assert problem.endswith("skipped, the shipped entry is in use")


def _as_model(value, profile, field):
    """The shipped TOML value as the model holds it (lists become tuples); the code default where the
    shipped entry leaves the field out."""
    if value is None:
        return type(profile).model_fields[field].default
    return tuple(value) if isinstance(value, list) else value


ENGINE_CASES = [
    ('preallocates_kv = "true"', "preallocates_kv", "must be true or false, not 'true'"),
    ("partial_offload = 1", "partial_offload", "must be true or false, not 1"),
    ('kv_block_tokens = "16"', "kv_block_tokens", "must be an integer, not '16'"),
    ('prefill_metal_share = [["Q4_0", "0.5"]]', "prefill_metal_share", "row 1, item 2 must be a number, not '0.5'"),
    ('gemm_efficiency = [[16, 0.5], ["64", 0.6]]', "gemm_efficiency", "row 2, item 1 must be a number, not '64'"),
    ('backend_context_bytes = [["metal", true]]', "backend_context_bytes",
     "row 1, item 2 must be an integer, not true"),
    ('decode_bandwidth_efficiency_by_gpu = [["cuda", 5, 0.5]]', "decode_bandwidth_efficiency_by_gpu",
     "row 1, item 2 must be text (in quotes), not 5"),
    ('decode_bandwidth_efficiency = "0.8"', "decode_bandwidth_efficiency", "must be a number, not '0.8'"),
]


@pytest.mark.parametrize(("line", "field", "says"), ENGINE_CASES)
def test_a_wrong_type_in_engines_toml_is_skipped_and_named(data_dir, line, field, says):
    (data_dir / "engines.toml").write_text(f"[vllm]\n{line}\n")
    before = load_engine_profiles(user_file=data_dir / "none.toml")["vllm"]
    assert load_engine_profiles()["vllm"] == before  # the shipped entry, unchanged
    (problem,) = engine_problems()
    assert f"engine 'vllm': field '{field}': {says}" in problem, problem


def test_toml_integers_stay_numbers_and_good_entries_still_load(data_dir):
    """TOML writes 1 for 1.0: an integer in a float field is a number, as the shipped catalogs use it."""
    (data_dir / "engines.toml").write_text("[vllm]\ngpu_memory_utilization = 1\nprefill_metal_share = [['F16', 1]]\n"
                                           "gemm_efficiency = [[16, 1]]\n")
    (data_dir / "frameworks.toml").write_text("[megatron]\nfragmentation = 0\nfused_projections = true\n")
    vllm, megatron = load_engine_profiles()["vllm"], load_framework_profiles()["megatron"]
    assert (vllm.gpu_memory_utilization, vllm.prefill_metal_share, vllm.gemm_efficiency) == (1, (("F16", 1),),
                                                                                              ((16, 1),))
    assert megatron.fragmentation == 0 and megatron.fused_projections is True
    assert engine_problems() == [] and framework_problems() == []


def test_every_wrong_field_of_an_entry_is_reported(data_dir):
    (data_dir / "frameworks.toml").write_text('[megatron]\nfused_projections = "yes"\nlaunch_s = "1e-5"\n')
    (problem,) = framework_problems()
    assert "field 'launch_s': must be a number" in problem and "field 'fused_projections': must be true" in problem
    from pydantic import ValidationError

    from llmplan.core.framework_profile import FrameworkProfile

    with pytest.raises(ValidationError) as caught:
        FrameworkProfile(fused_projections="yes", launch_s="1e-5")
    assert [e["loc"] for e in caught.value.errors()] == [("fused_projections",), ("launch_s",)]


def test_catalog_problems_names_the_field_on_the_command_line(data_dir, capsys):
    (data_dir / "frameworks.toml").write_text('[megatron]\nfused_projections = "yes"\n')
    main(["catalog", "problems"])
    out = capsys.readouterr()
    assert ("framework 'megatron': field 'fused_projections': must be true or false, not 'yes' (write true or "
            "false without quotes); skipped, the shipped entry is in use") in out.out + out.err


def test_a_user_gpu_file_refuses_a_quoted_boolean(data_dir):
    from llmplan.catalog.hardware import load_hardware_catalog

    (data_dir / "hardware").mkdir()
    (data_dir / "hardware" / "mine.toml").write_text(array_of_tables("gpu", [dict(GPU_ENTRY, unified_memory="yes")]))
    catalog = load_hardware_catalog()
    assert "my-gpu" not in {g.id for g in catalog.gpus}
    assert any("gpu.0.unified_memory: must be true or false, not 'yes'" in p for p in catalog.problems), \
        catalog.problems


def test_a_user_network_refuses_a_number_for_a_boolean(data_dir):
    from llmplan.catalog.hardware import load_hardware_catalog

    (data_dir / "hardware").mkdir()
    (data_dir / "hardware" / "net.toml").write_text(array_of_tables("network", [{
        "id": "my-net", "name": "Mine", "gbit_per_port": 100, "ports_per": "gpu", "rail_optimized": 1,
        "source": "test"}]))
    catalog = load_hardware_catalog()
    assert "my-net" not in {n.id for n in catalog.networks}
    assert any("rail_optimized: must be true or false, not 1" in p for p in catalog.problems), catalog.problems


@pytest.mark.parametrize(("table", "line", "says"), [
    ("pipeline", 'pretokenized = "no"', "'pipeline.pretokenized': must be true or false, not 'no'"),
    ("checkpoint", "async_save = 1", "'checkpoint.async_save': must be true or false, not 1"),
    ("host", 'dataloader_workers_per_gpu = "4"', "'host.dataloader_workers_per_gpu': must be an integer, not '4'"),
    ("[pue]", 'id = "it-only"\nname = "x"\nvalue = "1.2"\nsource = "test"',
     "'pue.value': must be a number, not '1.2'"),
])
def test_a_user_system_table_refuses_a_wrong_type(data_dir, table, line, says):
    from llmplan.catalog.system_presets import default_system_settings, load_system_catalog, system_problems

    (data_dir / "system").mkdir()
    (data_dir / "system" / "mine.toml").write_text(f"[{table}]\n{line}\n")
    (problem,) = system_problems()
    assert says in problem and "mine.toml: skipped" in problem, problem
    shipped = _shipped("system/pipeline.toml")
    settings = default_system_settings(catalog=load_system_catalog())
    assert settings.pipeline.pretokenized is shipped["pipeline"]["pretokenized"]
    assert settings.checkpoint.async_save is shipped["checkpoint"]["async_save"]


def test_a_user_model_entry_refuses_a_quoted_context_length(data_dir):
    from llmplan.catalog.models import load_model_catalog

    (data_dir / "models").mkdir()
    entry = {"id": "me/tiny", "display_name": "Tiny", "family": "Tiny", "source": "test", "context_length": "4096",
             "config": {"model_type": "llama", "vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "intermediate_size": 128}}
    (data_dir / "models" / "tiny.json").write_text(json.dumps(entry))
    catalog = load_model_catalog(refresh=True)
    try:
        assert "me/tiny" not in catalog
        assert any("tiny.json: context_length: must be an integer, not '4096'" in p for p in catalog.problems), \
            catalog.problems
    finally:
        load_model_catalog(refresh=True)


def test_the_checker_on_the_annotations_catalog_models_use():
    assert wrong_type(bool, True) is None and wrong_type(bool, "yes") == ((), "true or false", "yes")
    assert wrong_type(float | None, None) is None and wrong_type(float | None, 3) is None
    assert wrong_type(float | None, "3") == ((), "a number", "3")
    assert wrong_type(int, 3.0) is None  # pydantic itself refuses 3.5 and keeps 3.0 as 3
    assert wrong_type(Literal["a", "b"] | None, "c") == ((), "one of 'a', 'b'", "c")
    assert wrong_type(tuple[tuple[str, float], ...], [["x", 1], ["y", "2"]]) == ((1, 1), "a number", "2")
    assert wrong_type(tuple[str, int], ["x", 1, "extra"]) is None  # a row too long: pydantic's own error
    assert wrong_type(dict[str, str], {"a": 1}) == (("a",), "text (in quotes)", 1)
    assert wrong_type(list[str], "x") == ((), "a list", "x")
    assert type_message((1, 1), "a number", "2") == ("row 2, item 2 must be a number, not '2' (text is not a number: "
                                                     "write it without quotes)")
    assert type_message(("a",), "text (in quotes)", 1) == "item 'a' must be text (in quotes), not 1"


def test_every_catalog_model_is_strict():
    """The models users edit by hand (profiles, hardware files, system presets, model entries) all check types;
    a new one that forgets would read "yes" as true again."""
    from llmplan.catalog import hardware_files
    from llmplan.catalog.models import ModelEntry, ReferenceParams
    from llmplan.core.engine_profile import EngineProfile
    from llmplan.core.framework_profile import FrameworkProfile
    from llmplan.core.system import settings

    models = [FrameworkProfile, EngineProfile, ModelEntry, ReferenceParams,
              *(getattr(settings, n) for n in ("StoragePreset", "FailureRate", "PowerProfile", "GridProfile",
                                                "PipelineProfile", "HostProfile", "CheckpointOptions")),
              *(c for c in vars(hardware_files).values() if isinstance(c, type) and c.__module__ == hardware_files.__name__
                and hasattr(c, "model_fields"))]
    assert len(models) > 15
    assert all(issubclass(m, StrictFields) for m in models), [m for m in models if not issubclass(m, StrictFields)]


def test_a_default_profile_is_not_checked_field_by_field():
    """The check reads only the fields an entry gives: ``FrameworkProfile()`` (the engine's hot paths build one
    when a plan names no profile) builds from its defaults as before."""
    from llmplan.core.framework_profile import DEFAULT_PROFILE, FrameworkProfile

    assert FrameworkProfile() == DEFAULT_PROFILE
    assert FrameworkProfile.model_validate(DEFAULT_PROFILE.model_dump()) == DEFAULT_PROFILE  # the merge path
