"""Data pipeline: token id width, storage bandwidth needed, tokenizer cores, by hand."""

import pytest
from system_fixtures import STORE, settings

from llmplan.core.system.pipeline import data_pipeline, token_id_bytes
from llmplan.core.system.settings import PipelineProfile


@pytest.mark.parametrize(("vocab", "width"), [(32000, 2), (65499, 2), (65500, 4), (128256, 4)])
def test_token_id_width_follows_megatron(vocab, width):
    # Megatron-LM indexed_dataset.py DType.optimal_dtype: uint16 if cardinality < 65500 else int32.
    assert token_id_bytes(vocab) == width


def test_pretokenized_read_bandwidth_and_storage_load():
    p = data_pipeline(2.0e6, 128256, 4, settings().pipeline, STORE)
    assert p.read_bandwidth_needed.value == 2.0e6 * 4
    assert p.read_bandwidth_needed_per_node.value == 2.0e6
    assert p.read_bandwidth_available.value == 40e9  # min(4 × 10 GB/s, 100 GB/s)
    assert p.storage_load.value == pytest.approx(8e6 / 40e9)
    assert p.tokenizer_cores_per_node.value == 0
    assert p.cpu_load.value == 0


def test_on_the_fly_tokenisation_needs_cores():
    prof = PipelineProfile(text_bytes_per_token=4.0, tokenizer_bytes_per_s_per_core=2e6, cpu_cores_per_node=100,
                           pretokenized=False, source="test")
    p = data_pipeline(1.0e6 * 8, 32000, 8, prof, STORE)  # 1e6 tokens/s per node
    assert p.bytes_per_token.value == 4.0  # raw text is read
    assert p.tokenizer_cores_per_node.value == pytest.approx(1e6 * 4 / 2e6)  # 2 cores
    assert p.cpu_load.value == pytest.approx(2 / 100)


def test_storage_overload_is_visible():
    p = data_pipeline(1e12, 128256, 1, settings().pipeline, STORE)
    assert p.storage_load.value == pytest.approx(4e12 / 10e9)
