"""The Hub from the command line and in plan files, against the local fake Hub (tests/fake_hub.py)."""

from __future__ import annotations

import json

import pytest

from llmplan.cli import main
from llmplan.core.quant import quantized_weights
from llmplan.formats.hf_config import spec_from_config
from llmplan.plan.planfile import load_plan, save_plan
from tests.fake_hub import (
    FakeFile,
    gguf_bytes,
    safetensors_file,
    tiny_llama_config,
)

pytest.importorskip("huggingface_hub")

Q4_SIZE = 52_123_457  # bytes the Hub lists for the Q4_K_M file (not what params × bits would give)


@pytest.fixture
def served(fake_hub, tmp_path):
    head = gguf_bytes(tmp_path, hidden=256, layers=4, heads=8, kv_heads=4, ff=512, vocab=1000)
    fake_hub.add("acme/tiny-GGUF", {"tiny-Q4_K_M.gguf": FakeFile(head, Q4_SIZE),
                                    "tiny-Q8_0-00001-of-00002.gguf": FakeFile(head, 60_000_000),
                                    "tiny-Q8_0-00002-of-00002.gguf": FakeFile(b"", 40_000_000)})
    fake_hub.add("acme/tiny", {"config.json": json.dumps(tiny_llama_config()).encode(),
                               "model.safetensors": safetensors_file({"w": ("BF16", [96, 64]), "n": ("F32", [64])})})
    return fake_hub


def test_hub_command_prints_counts_files_and_sizes(served, capsys):
    assert main(["hub", "acme/tiny"]) == 0
    out = capsys.readouterr().out
    assert "acme/tiny  (commit " in out and "llama, 2 layers, hidden 64" in out
    assert "6,208 params in 1 file" in out and "BF16" in out and "weight format    bf16" in out
    assert main(["hub", "https://huggingface.co/acme/tiny-GGUF", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(g["label"], g["size"]) for g in data["gguf"]] == [("Q4_K_M", Q4_SIZE), ("Q8_0", 100_000_000)]
    assert data["architecture"]["model_type"] == "llama" and data["params"]["total"] > 0
    assert data["config_source"].startswith("GGUF header of")


def test_hub_command_failures_are_one_line(served, capsys):
    assert main(["hub", "acme/missing"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("llmplan-cli: error: acme/missing: no such model on the Hub") and err.count("\n") == 1
    assert main(["hub", "https://huggingface.co/acme"]) == 2
    assert "not a model page" in capsys.readouterr().err


def test_estimate_with_a_gguf_quant_uses_the_files_real_size(served, capsys, tmp_path):
    assert main(["estimate", "--model", "acme/tiny-GGUF:Q4_K_M", "--gpu", "nvidia-rtx-4090-24gb", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["inference"]["weight_bytes"] == Q4_SIZE  # the chosen file's size, exactly
    spec = spec_from_config(json.loads(json.dumps(tiny_llama_config(256, 4, 8, 4, 512, 1000))))
    assert quantized_weights(spec, "q4_k_m").total_bytes != Q4_SIZE  # so the test could fail


def test_a_saved_hub_plan_opens_offline_with_the_same_numbers(served, capsys, tmp_path, monkeypatch):
    plan = tmp_path / "hub.llmplan"
    url = "https://huggingface.co/acme/tiny-GGUF/blob/main/tiny-Q8_0-00001-of-00002.gguf"
    assert main(["estimate", "--model", url, "--gpu", "nvidia-rtx-4090-24gb", "--json", "--save", str(plan)]) == 0
    first = json.loads(capsys.readouterr().out)
    doc = load_plan(plan)
    assert doc.model.hub.repo == "acme/tiny-GGUF" and doc.model.hub.file_bytes == 100_000_000
    assert doc.model.hub.file == "tiny-Q8_0-00001-of-00002.gguf" and doc.model.config["hidden_size"] == 256
    assert doc.inference.weight_format == "q8_0" and doc.workload == "inference"
    served.stop()
    monkeypatch.setenv("LLMPLAN_CACHE_DIR", str(tmp_path / "empty-cache"))  # the plan alone must be enough
    assert main(["estimate", str(plan), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["inference"]["weight_bytes"] == first["inference"]["weight_bytes"] == 100_000_000
    # another format is another file: the Hub file's size no longer applies
    assert main(["estimate", str(plan), "--set", "inference.weight_format=q4_0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inference"]["weight_bytes"] != 100_000_000
    # another model drops the Hub source with its inline config: its file size must not follow
    assert main(["estimate", str(plan), "--set", "model.id=Qwen/Qwen3-8B", "--json"]) == 0
    other = json.loads(capsys.readouterr().out)
    assert other["params"]["total"] == 8_190_735_360 and other["inference"]["weight_bytes"] != 100_000_000


def test_a_plan_naming_only_the_hub_fetches_it(served, capsys, tmp_path):
    plan = tmp_path / "handwritten.llmplan"
    plan.write_text(json.dumps({"format": "llmplan", "schema_version": 2, "workload": "inference",
                                "model": {"hub": {"repo": "acme/tiny"}},
                                "hardware": {"gpu": "nvidia-rtx-4090-24gb"}}))
    assert main(["estimate", str(plan), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"]["total"] == 86_336
    doc = load_plan(plan)
    save_plan(doc, tmp_path / "resaved.llmplan")  # saving never fetches or fails on a Hub-only model
    assert load_plan(tmp_path / "resaved.llmplan").model.hub.repo == "acme/tiny"


def test_catalog_ids_never_touch_the_hub(served, capsys):
    assert main(["params", "Qwen/Qwen3-8B", "--json"]) == 0
    assert served.requests == []
    capsys.readouterr()
    assert main(["params", "hf:acme/tiny", "--json"]) == 0  # the prefix asks for the Hub
    assert json.loads(capsys.readouterr().out)["params"]["total"] == 86_336
    assert any(p == "/api/models/acme/tiny/tree/main" for _, p, _ in served.requests)


def test_a_config_llmplan_cannot_size_names_every_missing_field(served, capsys):
    served.add("acme/odd", {"config.json": json.dumps({"model_type": "oddnet", "dim": 256, "vocab_size": 9}).encode()})
    assert main(["hub", "acme/odd"]) == 2
    err = capsys.readouterr().err
    assert "acme/odd: its config.json (model_type 'oddnet') lacks hidden_size, num_hidden_layers, " \
           "num_attention_heads, needed to size the model" in err


def test_a_tampered_cache_file_is_ignored_not_trusted(served, capsys, tmp_path, monkeypatch):
    assert main(["hub", "acme/tiny"]) == 0
    for f in (tmp_path / "llmplan-cache" / "hub").glob("*.json"):
        f.write_text(json.dumps({"repo": "acme/tiny", "gguf": [{"label": 3}], "safetensors": {"x": 1}}))
    served.stop()
    assert main(["hub", "acme/tiny", "--timeout", "1"]) == 0  # the huggingface_hub cache still has config.json
    assert "[from the cache]" in capsys.readouterr().out
