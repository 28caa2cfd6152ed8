"""``llmplan-cli catalog models`` and ``params`` with catalog ids and paths."""

from __future__ import annotations

import json

import pytest

from llmplan.catalog.models import load_model_catalog
from llmplan.cli import main


@pytest.fixture(autouse=True)
def _empty_user_dir(tmp_path, monkeypatch):
    """Only the shipped catalog: whatever the person running the tests imported must not matter."""
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path / "user"))
    load_model_catalog(refresh=True)
    yield
    monkeypatch.undo()
    load_model_catalog(refresh=True)


def test_catalog_models_table(capsys):
    assert main(["catalog", "models", "--family", "deepseek"]) == 0
    out = capsys.readouterr().out
    assert "deepseek-ai/DeepSeek-V3" in out and "684 B" in out and "37.6 B" in out
    assert out.strip().endswith("4 models")


def test_catalog_models_json(capsys):
    assert main(["catalog", "models", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["id"]: r for r in data["models"]}
    assert len(rows) >= 60 and data["problems"] == []
    llama = rows["meta-llama/Meta-Llama-3-8B"]
    assert llama["params_total"] == 8_030_261_248 and llama["layers"] == 32 and llama["context_length"] == 8192
    assert rows["mistralai/Mixtral-8x7B-v0.1"]["params_active"] == 12_879_925_248


def test_catalog_models_search_without_match(capsys):
    assert main(["catalog", "models", "--search", "no-such-model"]) == 1
    assert "no models match" in capsys.readouterr().out


def test_catalog_without_kind_prints_help(capsys):
    assert main(["catalog"]) == 2
    assert "models" in capsys.readouterr().out


def test_params_by_catalog_id(capsys):
    assert main(["params", "Qwen/Qwen3-30B-A3B", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["params"]["total"] == 30_532_122_624


def test_params_unknown_id_is_one_clear_line(capsys):
    assert main(["params", "meta-llama/Llama-9-8B"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a model in the catalog" in err and "Did you mean" in err


def test_params_from_config_file_and_folder(tmp_path, capsys):
    cfg = {"model_type": "mistral", "vocab_size": 32000, "hidden_size": 4096, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336}
    folder = tmp_path / "Mistral-7B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    for arg in (str(folder), str(folder / "config.json")):
        assert main(["params", arg, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["params"]["total"] == 7_241_732_096 and data["model"] == "Mistral-7B"


def test_params_from_gguf_and_safetensors_index(tmp_path, capsys):
    gguf = pytest.importorskip("gguf")
    import numpy as np

    path = tmp_path / "m.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    for add, v in ((w.add_embedding_length, 32), (w.add_block_count, 1), (w.add_feed_forward_length, 64),
                   (w.add_head_count, 2), (w.add_context_length, 128)):
        add(v)
    w.add_token_list([str(i) for i in range(10)])
    w.add_tensor("token_embd.weight", np.zeros((10, 32), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    assert main(["params", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    # tied (no output.weight): 10·32 embedding + (4·32² + 3·32·64 + 2·32) + 32 final norm
    assert data["params"]["total"] == 10 * 32 + 4 * 32 * 32 + 3 * 32 * 64 + 2 * 32 + 32

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": 10, "hidden_size": 32,
                                                      "num_hidden_layers": 1, "num_attention_heads": 2,
                                                      "intermediate_size": 64, "tie_word_embeddings": True}))
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": {}}))
    assert main(["params", str(index), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"]["total"] == data["params"]["total"]


def test_user_models_are_listed_and_marked(capsys):
    from llmplan.catalog.models import save_user_model

    save_user_model({"model_type": "llama", "vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 2,
                     "num_attention_heads": 4, "intermediate_size": 128}, "My Tiny", model_id="me/tiny")
    assert main(["catalog", "models", "--search", "tiny"]) == 0
    out = capsys.readouterr().out
    assert "me/tiny" in out and "(user)" in out
    assert main(["params", "me/tiny", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "My Tiny"


def test_catalog_gpus_is_wired_into_the_real_cli(capsys):
    """`llmplan-cli catalog gpus` goes through cli.main, not a throwaway parser."""
    from llmplan.cli import main

    assert main(["catalog", "gpus", "--vendor", "nvidia"]) == 0
    out = capsys.readouterr().out
    assert "nvidia-h100-sxm-80gb" in out and "amd-mi300x" not in out
