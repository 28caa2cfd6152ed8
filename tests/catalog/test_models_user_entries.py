"""User catalog entries: import, override, and broken files reported instead of crashing."""

from __future__ import annotations

import json

import pytest

from llmplan.catalog.models import ModelEntry, load_model_catalog, save_user_model
from llmplan.core.params import count_params
from llmplan.errors import ConfigError

TINY = {"model_type": "llama", "vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 128}


@pytest.fixture()
def user_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    load_model_catalog(refresh=True)
    yield tmp_path / "models"
    monkeypatch.delenv("LLMPLAN_DATA_DIR")
    load_model_catalog(refresh=True)


def test_save_user_model_round_trips(user_dir):
    entry = save_user_model(TINY, "Tiny test", model_id="me/tiny")
    assert entry.user and (user_dir / "me__tiny.json").is_file()
    assert not list(user_dir.glob("*.tmp"))  # the temp file was renamed away
    got = load_model_catalog().get("me/tiny")
    assert got.user and got.display_name == "Tiny test"
    # 2·1000·64 embeddings + 2 layers · (4·64² attention + 3·64·128 MLP + 2·64 norms) + 64 final norm
    assert count_params(got.spec).total == 2 * 1000 * 64 + 2 * (4 * 64 * 64 + 3 * 64 * 128 + 2 * 64) + 64


def test_user_entry_overrides_shipped_one(user_dir):
    save_user_model(TINY, "My Llama", model_id="meta-llama/Meta-Llama-3-8B")
    entry = load_model_catalog().get("meta-llama/Meta-Llama-3-8B")
    assert entry.user and entry.display_name == "My Llama"
    assert len(load_model_catalog()) >= 60  # the others are still there


def test_bad_config_is_refused_before_writing(user_dir):
    with pytest.raises(ConfigError, match="hidden_size"):
        save_user_model({"model_type": "llama", "vocab_size": 10}, "broken")
    assert not user_dir.exists() or not list(user_dir.iterdir())


def test_broken_files_are_skipped_and_reported(user_dir):
    user_dir.mkdir(parents=True)
    (user_dir / "garbage.json").write_text("{not json")
    (user_dir / "list.json").write_text("[1, 2]")
    (user_dir / "nokeys.json").write_text(json.dumps({"id": "x/y", "display_name": "Y", "family": "llama",
                                                       "source": "me", "config": {"model_type": "llama"}}))
    (user_dir / "baddate.json").write_text(json.dumps({"id": "x/z", "display_name": "Z", "family": "llama",
                                                       "source": "me", "release_date": "2024-13",
                                                       "config": TINY}))
    catalog = load_model_catalog(refresh=True)
    problems = "\n".join(catalog.problems)
    assert "garbage.json: broken JSON at line 1" in problems
    assert "list.json: expected a JSON object" in problems
    assert "nokeys.json: config.json lacks 'hidden_size'" in problems
    assert "baddate.json: release_date" in problems
    assert "x/y" not in catalog and len(catalog) >= 60


def test_shipped_entry_without_reference_must_explain_why():
    with pytest.raises(ValueError, match="reference_note"):
        ModelEntry(id="a/b", display_name="B", family="llama", source="s", config=TINY)
