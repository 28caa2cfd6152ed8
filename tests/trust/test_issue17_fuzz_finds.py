"""What the new issue 17 families (tests/property/_families.py, ``make fuzz``) found, one regression test
each; every one failed on the code before its fix."""

from __future__ import annotations

import json
import os

import pytest

from llmplan.errors import CatalogError, InputError, LlmplanError
from llmplan.formats.bounded import parse_toml
from tests.property._targets import GPU_ENTRY, calibration_doc, plan_doc, system_doc
from tests.property._toml import array_of_tables


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("value", ["1e3", " 8", False])
def test_a_user_gpu_file_refuses_text_and_booleans_as_numbers(data_dir, value):
    """Was: ``tflops.bf16 = "1e3"`` read as 1,000 TFLOP/s, ``false`` as 0 (pydantic's lax mode). The problem names
    the field and what it must be (``core.strict_fields``)."""
    from llmplan.catalog.hardware import load_hardware_catalog

    (data_dir / "hardware").mkdir()
    entry = dict(GPU_ENTRY, tflops=dict(GPU_ENTRY["tflops"], fp16=value))
    (data_dir / "hardware" / "mine.toml").write_text(array_of_tables("gpu", [entry]))
    catalog = load_hardware_catalog()
    assert "my-gpu" not in {g.id for g in catalog.gpus}
    assert any("mine.toml" in p and "tflops.fp16: must be a number" in p and "not a number" in p
               for p in catalog.problems), catalog.problems


@pytest.mark.parametrize(("path", "value"), [(("schema_version",), True), (("matmul", 0, "n"), True),
                                             (("matmul", 0, "seconds"), False), (("copy_bytes",), "1073741824")])
def test_a_calibration_refuses_booleans_and_text_as_numbers(tmp_path, path, value):
    """Was: ``schema_version: true`` passed as 1 (``True == 1``); a matmul's ``n``/``seconds`` were not checked."""
    from llmplan.hw.measured import load_calibration

    doc = calibration_doc()
    target = doc
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = value
    (tmp_path / "c.json").write_text(json.dumps(doc))
    with pytest.raises(InputError):
        load_calibration(tmp_path / "c.json")


def test_numbers_inside_a_plans_number_lists_are_numbers():
    """Was: ``hardware.fabric_spec.ramp_share: [..., "0", ...]`` accepted (a tuple of floats was not checked)."""
    from llmplan.plan.planfile import loads_plan

    doc = plan_doc()
    spec = doc["hardware"]["fabric_spec"]
    spec["ramp_share"] = [*spec["ramp_share"][:-1], "1"]
    with pytest.raises(LlmplanError, match="not numbers"):
        loads_plan(json.dumps(doc))


@pytest.mark.parametrize("number", ["inf", "nan", "-inf", "1e999", "1" + "0" * 5000 + ".5"])
def test_toml_refuses_numbers_that_are_not_finite(number):
    """Was: a user engines.toml or system preset with ``1e999`` (a 5,000-digit decimal) loaded as infinity."""
    with pytest.raises(CatalogError, match="not finite"):
        parse_toml(f"a = {number}\n", "mine.toml", error=CatalogError)


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_a_dangling_link_in_the_user_system_folder_is_listed(data_dir):
    """Was: silently ignored (the file stamp dropped what ``stat`` could not follow)."""
    from llmplan.catalog.system_presets import system_problems

    (data_dir / "system").mkdir()
    (data_dir / "system" / "mine.toml").symlink_to(data_dir / "gone.toml")
    assert any("mine.toml" in p for p in system_problems())


def test_a_problem_line_stays_one_line(data_dir):
    """Was: a key with a line break in a user GPU file made a two-line problem (pydantic names the key)."""
    from llmplan.catalog.hardware import load_hardware_catalog

    (data_dir / "hardware").mkdir()
    entry = dict(GPU_ENTRY, **{"evil\n\x1b[31mkey": 1})
    (data_dir / "hardware" / "mine.json").write_text(json.dumps({"gpu": [entry]}))
    problems = load_hardware_catalog().problems
    assert problems and all(p.isprintable() for p in problems), problems
    assert any("evil\\n\\x1b[31mkey" in p for p in problems)


def test_recovery_survives_a_folder_in_place_of_the_autosave_note(data_dir):
    """Was: IsADirectoryError from discarding the recovered slot (``<slot>.json`` was a folder)."""
    pytest.importorskip("PySide6.QtCore")
    from llmplan.gui import files

    folder = data_dir / "autosave"
    folder.mkdir()
    (folder / "4194301-0f0f0f0f.llmplan").write_text(json.dumps(plan_doc()))
    (folder / "4194301-0f0f0f0f.json").mkdir()
    problems: list[str] = []
    found = files.recoverable(problems)
    assert found is not None and found.origin is None, (problems, list(folder.iterdir()), files.autosave_folder())
    found.discard()
    assert not (folder / "4194301-0f0f0f0f.llmplan").exists()


def test_system_doc_is_a_valid_user_preset(data_dir):
    """Control for the tests above: the base documents the families damage load cleanly."""
    from llmplan.catalog.system_presets import load_system_catalog, system_problems

    (data_dir / "system").mkdir()
    (data_dir / "system" / "mine.toml").write_text(array_of_tables("storage", system_doc()["storage"]))
    assert not system_problems() and "my-storage" in load_system_catalog().storage


def test_a_gguf_architecture_with_a_line_break_gives_a_one_line_error(tmp_path):
    """Was: "the GGUF header lacks '<arch with a newline>.attention.head_count'" spread over two lines."""
    from llmplan.errors import ConfigError
    from llmplan.formats.gguf_header import spec_from_gguf
    from tests.property import _gguf_bytes as g

    kvs = [(k, t, "evil\n\x1b[31march" if k == "general.architecture" else v) for k, t, v in g.llama_kvs()]
    (tmp_path / "m.gguf").write_bytes(g.header(kvs, g.llama_tensors()))
    with pytest.raises(ConfigError) as err:
        spec_from_gguf(tmp_path / "m.gguf")
    assert str(err.value).isprintable() and "evil\\n\\x1b[31march" in str(err.value)
