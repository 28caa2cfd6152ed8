"""The real ``huggingface_hub`` client against a local fake Hub (tests/fake_hub.py): what it reads, what
it never downloads, and the one-line answer for every failure the Hub can give."""

from __future__ import annotations

import json
import time

import pytest

from llmplan.errors import ConfigError, HubError
from llmplan.formats.hub import GGUF_HEADER_READS, HubCancelled, fetch_hub_model
from llmplan.formats.hub_ref import HubRef, parse_hub_ref
from tests.fake_hub import (
    FakeFile,
    gguf_bytes,
    index_json,
    safetensors_bytes,
    safetensors_file,
    tiny_llama_config,
)

pytest.importorskip("huggingface_hub")

CFG = json.dumps(tiny_llama_config()).encode()


def test_config_and_exact_safetensors_counts_without_the_weights(fake_hub):
    shards = {"model-00001-of-00002.safetensors": {"embed": ("BF16", [96, 64]), "norm": ("F32", [64])},
              "model-00002-of-00002.safetensors": {"q": ("F8_E4M3", [64, 64]), "scale": ("F32", [1])}}
    files: dict = {"config.json": CFG}
    total = 0
    for name, tensors in shards.items():
        data, size = safetensors_bytes(tensors)
        files[name] = FakeFile(data, size + 2_000_000_000)  # big declared size: must never be fetched
        total += size
    files["model.safetensors.index.json"] = index_json(shards, total)
    fake_hub.add("acme/sharded", files)
    m = fetch_hub_model(HubRef("acme/sharded"))
    assert m.config == tiny_llama_config() and m.config_source == "config.json"
    assert m.safetensors.params_by_dtype == {"BF16": 96 * 64, "F32": 64 + 1, "F8_E4M3": 64 * 64}
    assert m.safetensors.bytes_by_dtype == {"BF16": 96 * 64 * 2, "F32": 65 * 4, "F8_E4M3": 64 * 64}
    assert m.safetensors.files == 2 and m.commit == fake_hub.repos["acme/sharded"].commit
    assert fake_hub.weight_bytes_sent() <= 2 * 100_001  # two header range reads, never the 2 GB
    assert m.file_count == 4 and not m.from_cache


def test_gguf_repo_without_config_reads_the_header_and_sums_split_parts(fake_hub, tmp_path):
    head = gguf_bytes(tmp_path)
    fake_hub.add("acme/tiny-GGUF", {
        "tiny-Q4_K_M.gguf": FakeFile(head, 4_920_000_123),
        "Q8_0/tiny-Q8_0-00001-of-00002.gguf": FakeFile(head, 5_000_000_000),
        "Q8_0/tiny-Q8_0-00002-of-00002.gguf": FakeFile(b"", 3_500_000_000),
        "mmproj-F16.gguf": FakeFile(b"", 600_000_000),
        "README.md": b"# tiny",
    })
    m = fetch_hub_model(parse_hub_ref("https://huggingface.co/acme/tiny-GGUF/blob/main/Q8_0/tiny-Q8_0-00001-of-00002.gguf"))
    assert m.chosen.label == "Q8_0" and m.chosen.size == 8_500_000_000
    assert [c.label for c in m.gguf] == ["Q4_K_M", "Q8_0", "F16"]
    assert m.config["model_type"] == "llama" and m.config["hidden_size"] == 64 and m.config["num_hidden_layers"] == 2
    assert m.config_source == "GGUF header of Q8_0/tiny-Q8_0-00001-of-00002.gguf"
    assert fake_hub.weight_bytes_sent() == GGUF_HEADER_READS[0]  # one range read of the header, not 8.5 GB


def test_an_unknown_quant_names_what_the_repo_has(fake_hub, tmp_path):
    fake_hub.add("acme/g", {"g-Q4_K_M.gguf": FakeFile(gguf_bytes(tmp_path), 10**9)})
    with pytest.raises(HubError, match=r"no GGUF file or quant 'Q2_K'; it has: Q4_K_M"):
        fetch_hub_model(HubRef("acme/g", None, "Q2_K"))


def test_an_adapter_is_sized_as_its_base_model(fake_hub):
    fake_hub.add("acme/base", {"config.json": CFG})
    fake_hub.add("acme/lora", {"adapter_config.json": json.dumps(
        {"peft_type": "LORA", "r": 16, "base_model_name_or_path": "acme/base"}).encode(),
        "adapter_model.safetensors": safetensors_file({"lora_A": ("F32", [16, 64])})})
    m = fetch_hub_model(HubRef("acme/lora"))
    assert m.repo == "acme/lora" and m.adapter_of == "acme/base" and m.config == tiny_llama_config()
    assert any("LORA adapter (rank 16) of acme/base" in n for n in m.notes)


def test_pagination_of_a_large_tree(fake_hub):
    fake_hub.page_size = 3
    fake_hub.add("acme/many", {"config.json": CFG, **{f"extra/{i}.txt": b"x" for i in range(10)}})
    assert fetch_hub_model(HubRef("acme/many")).file_count == 11
    assert sum(1 for m, p, _ in fake_hub.requests if "/tree/" in p) == 4


def test_gated_repo_says_where_access_and_token_go(fake_hub, monkeypatch):
    fake_hub.add("acme/gated", {"config.json": CFG}, gated=True)
    with pytest.raises(HubError, match=r"acme/gated is gated: accept its terms on https://huggingface.co/acme/gated"
                       r".*HF_TOKEN.*hf auth login"):
        fetch_hub_model(HubRef("acme/gated"))
    monkeypatch.setenv("HF_TOKEN", "hf_without_access")  # a token, but not granted: the Hub answers 403
    with pytest.raises(HubError, match="is gated"):
        fetch_hub_model(HubRef("acme/gated"))
    assert any(p.endswith("config.json") for m, p, _ in fake_hub.requests)
    fake_hub.tokens.add("hf_granted")
    monkeypatch.setenv("HF_TOKEN", "hf_granted")
    assert fetch_hub_model(HubRef("acme/gated")).config == tiny_llama_config()


@pytest.mark.parametrize(("setup", "ref", "message"), [
    (None, HubRef("acme/nothing"), r"acme/nothing: no such model on the Hub"),
    ("ok", HubRef("acme/r", "v9"), r"acme/r has no revision 'v9'"),
    ("429", HubRef("acme/r"), r"limiting requests \(HTTP 429\); try again in 17 s"),
    ("500", HubRef("acme/r"), r"the Hub answered HTTP 500 \(a server error\)"),
])
def test_failures_are_one_line_and_immediate(fake_hub, setup, ref, message):
    if setup:
        fake_hub.add("acme/r", {"config.json": CFG})
        if setup != "ok":
            fake_hub.modes["acme/r"] = setup
    start = time.monotonic()
    with pytest.raises(HubError, match=message) as info:
        fetch_hub_model(ref)
    assert time.monotonic() - start < 3  # no retry loop, no back-off sleeps
    assert "\n" not in str(info.value)


def test_a_stalled_connection_times_out_and_says_so(fake_hub):
    fake_hub.add("acme/slow", {"config.json": CFG})
    fake_hub.modes["acme/slow"] = "stall"
    start = time.monotonic()
    with pytest.raises(HubError, match=r"did not answer within 0.5 s, and it is not in the cache"):
        fetch_hub_model(HubRef("acme/slow"), timeout=0.5)
    assert time.monotonic() - start < 5


def test_oversized_and_malformed_files_hit_the_readers_limits(fake_hub):
    fake_hub.add("acme/huge", {"config.json": FakeFile(b"{", 50_000_000)})
    with pytest.raises(HubError, match=r"config.json is 50,000,000 bytes, far too large"):
        fetch_hub_model(HubRef("acme/huge"))
    assert not any(m == "GET" and "acme/huge/resolve" in p for m, p, _ in fake_hub.requests)
    fake_hub.add("acme/broken", {"config.json": b"{not json"})
    with pytest.raises(ConfigError, match=r"acme/broken: config.json: broken JSON at line 1"):
        fetch_hub_model(HubRef("acme/broken"))
    fake_hub.add("acme/badst", {"config.json": CFG, "model.safetensors": FakeFile(b"\xff" * 8 + b"{", 10**9)})
    with pytest.raises(HubError, match=r"acme/badst: a safetensors header is malformed"):
        fetch_hub_model(HubRef("acme/badst"))
    fake_hub.add("acme/notgguf", {"x-Q4_K_M.gguf": FakeFile(b"NOPE" + b"\0" * 60, 10**9)})
    with pytest.raises(ConfigError, match=r"acme/notgguf: x-Q4_K_M.gguf: .*GGUF"):
        fetch_hub_model(HubRef("acme/notgguf"))
    fake_hub.add("acme/empty", {"README.md": b"hi"})
    with pytest.raises(HubError, match=r"neither a config.json nor a .gguf file"):
        fetch_hub_model(HubRef("acme/empty"))


def test_second_run_with_the_server_stopped_works_from_the_cache(fake_hub):
    fake_hub.add("acme/cached", {"config.json": CFG, "model.safetensors": safetensors_file({"w": ("BF16", [8, 8])})})
    first = fetch_hub_model(HubRef("acme/cached"))
    fake_hub.stop()
    again = fetch_hub_model(HubRef("acme/cached"), timeout=1)
    assert again.from_cache and again.config == first.config
    assert again.safetensors.params_by_dtype == {"BF16": 64}
    assert "cannot reach the Hub" in again.notes[-1]


def test_a_rate_limited_hub_falls_back_to_the_cached_copy(fake_hub):
    fake_hub.add("acme/busy", {"config.json": CFG})
    fetch_hub_model(HubRef("acme/busy"))
    fake_hub.modes["acme/busy"] = "429"
    m = fetch_hub_model(HubRef("acme/busy"))
    assert m.from_cache and "the Hub answered HTTP 429 (retry after 17 s)" in m.notes[-1]


def test_offline_mode_uses_the_cache_and_never_connects(fake_hub, monkeypatch):
    fake_hub.add("acme/off", {"config.json": CFG})
    fetch_hub_model(HubRef("acme/off"))
    seen = len(fake_hub.requests)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    m = fetch_hub_model(HubRef("acme/off"))
    assert m.from_cache and "HF_HUB_OFFLINE is set" in m.notes[-1]
    assert len(fake_hub.requests) == seen
    with pytest.raises(HubError, match=r"acme/never: HF_HUB_OFFLINE is set, and it is not in the cache"):
        fetch_hub_model(HubRef("acme/never"))


def test_the_huggingface_hub_cache_answers_when_llmplans_summary_is_gone(fake_hub, tmp_path, monkeypatch):
    fake_hub.add("acme/hfc", {"config.json": CFG})
    fetch_hub_model(HubRef("acme/hfc"))
    monkeypatch.setenv("LLMPLAN_CACHE_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    m = fetch_hub_model(HubRef("acme/hfc"))
    assert m.config == tiny_llama_config() and "huggingface_hub cache" in m.config_source


def test_cancel_between_requests(fake_hub):
    fake_hub.add("acme/c", {"config.json": CFG})
    calls = []
    with pytest.raises(HubCancelled):
        fetch_hub_model(HubRef("acme/c"), cancelled=lambda: len(calls) > 0, progress=lambda f, t: calls.append(t))
    assert not any(p.endswith("config.json") for m, p, _ in fake_hub.requests)
