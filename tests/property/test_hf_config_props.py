"""config.json -> ModelSpec under hostile input: a ModelSpec whose parameters count, or a ConfigError.

Inputs start from one real config per family in the shipped catalog (so the parser gets deep
into each family's code) and then get keys replaced by NaN, infinities, huge, negative, wrong
typed or nested values, or removed; and whole files of random bytes, broken or deeply nested JSON.
"""

from __future__ import annotations

import json
from functools import cache

from hypothesis import given
from hypothesis import strategies as st

from llmplan.core.model import ModelSpec
from llmplan.core.params import count_params
from llmplan.errors import ConfigError
from llmplan.formats.hf_config import MAX_CONFIG_BYTES, load_config_file, spec_from_config
from llmplan.resources_path import catalogs_dir
from tests.property._support import JSON_VALUES, SCALARS, deep, deep_json_text, dumps, fuzz, outcome


@cache
def _base_configs() -> dict[str, dict]:
    """One real config.json per model_type, from the shipped catalog."""
    out: dict[str, dict] = {}
    for path in sorted((catalogs_dir() / "models").glob("*.json")):
        cfg = json.loads(path.read_text(encoding="utf-8"))["config"]
        out.setdefault(str(cfg.get("model_type")), cfg)
    return out


def _keys() -> list[str]:
    keys = sorted({k for cfg in _base_configs().values() for k in cfg})
    return [*keys, "text_config", "layer_types", "mlp_only_layers", "q_lora_rank", "sliding_window"]


def _spec_or_error(cfg) -> None:
    result = outcome("config.json", lambda: spec_from_config(cfg))
    if isinstance(result, ModelSpec):  # a spec that validated must also count: no crash later in the engine
        outcome("config.json", lambda: count_params(result))
    else:
        assert isinstance(result, ConfigError)


@fuzz
@given(st.sampled_from(sorted(_base_configs())), st.dictionaries(st.sampled_from(_keys()), JSON_VALUES, max_size=4),
       st.lists(st.sampled_from(_keys()), max_size=3))
def test_real_config_with_hostile_values(model_type, replaced, removed):
    cfg = {k: v for k, v in _base_configs()[model_type].items() if k not in removed}
    cfg.update(replaced)
    _spec_or_error(cfg)


@fuzz
@given(st.sampled_from(sorted(_base_configs())), st.sampled_from(_keys()), SCALARS)
def test_one_key_wrong(model_type, key, value):
    _spec_or_error({**_base_configs()[model_type], key: value})


@fuzz
@given(JSON_VALUES)
def test_any_json_value(value):
    _spec_or_error(value)


@fuzz
@given(st.sampled_from(sorted(_base_configs())), JSON_VALUES)
def test_hostile_text_config(model_type, inner):
    _spec_or_error({**_base_configs()[model_type], "model_type": "llava", "text_config": inner})


@fuzz
@given(st.binary(max_size=400) | st.sampled_from([b"", b"\xff\xfe{", b"{", b"NaN", b"[1,2", b'{"a": Infinity}']))
def test_config_file_of_random_bytes(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_bytes(data)
    result = outcome("config.json file", lambda: load_config_file(path))
    assert isinstance(result, dict | ConfigError)


@fuzz
@given(st.sampled_from(sorted(_base_configs())), st.integers(min_value=1, max_value=len(dumps({"a": 1})) * 40))
def test_truncated_config_file(tmp_path_factory, model_type, cut):
    text = dumps(_base_configs()[model_type]).encode()
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_bytes(text[: cut % max(len(text), 1)])
    result = outcome("config.json file", lambda: load_config_file(path))
    if isinstance(result, dict):
        _spec_or_error(result)


def test_deeply_nested_config_file_is_refused(tmp_path):
    path = tmp_path / "config.json"
    for kind in "[{":
        path.write_text(deep_json_text(200_000, kind))
        assert isinstance(outcome("config.json file", lambda: load_config_file(path)), ConfigError)
    assert isinstance(outcome("config.json", lambda: spec_from_config({"model_type": "llama", "x": deep(5000)})),
                      ConfigError)


def test_a_10_gb_sparse_config_is_not_read(tmp_path):
    path = tmp_path / "config.json"
    with path.open("wb") as f:
        f.truncate(10 * 2**30)  # sparse: no disk used; reading it whole would take 10 GB of memory
    result = outcome("config.json file", lambda: load_config_file(path))
    assert isinstance(result, ConfigError) and f"{MAX_CONFIG_BYTES:,}" in str(result)
