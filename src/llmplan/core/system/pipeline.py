"""The data pipeline: the token rate a plan consumes, the storage bandwidth and CPU it needs.

Pre-tokenised data (Megatron's indexed datasets) stores each token id in the smallest
integer that holds the vocabulary: uint16 below 65,500 ids, else int32 (Megatron-LM,
``megatron/core/datasets/indexed_dataset.py``, ``DType.optimal_dtype``). Raw text is
tokenised on the fly by CPU workers instead, at the catalog's bytes/s per core.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.explain import Figure
from llmplan.core.system.settings import PipelineProfile, StoragePreset

MEGATRON_DTYPE_SOURCE = (
    "Megatron-LM megatron/core/datasets/indexed_dataset.py, DType.optimal_dtype: uint16 when the vocabulary "
    "has fewer than 65,500 ids, else int32"
)


@dataclass(frozen=True, slots=True)
class DataPipeline:
    tokens_per_s: Figure  # tokens the whole job consumes per second
    bytes_per_token: Figure  # bytes read from storage per token (id width, or raw text)
    read_bandwidth_needed: Figure  # B/s for the whole job
    read_bandwidth_needed_per_node: Figure
    read_bandwidth_available: Figure
    storage_load: Figure  # needed / available (> 1: storage is the bottleneck)
    tokenizer_cores_per_node: Figure  # 0 when pre-tokenised
    cpu_load: Figure  # cores needed / cores per node (> 1: CPU is the bottleneck)


def token_id_bytes(vocab_size: int) -> int:
    """2 bytes per id below 65,500 ids (uint16), else 4 (int32), as Megatron stores them."""
    return 2 if vocab_size < 65_500 else 4


def data_pipeline(tokens_per_s: float, vocab_size: int, nodes: int, profile: PipelineProfile,
                  storage: StoragePreset) -> DataPipeline:
    nodes = max(1, nodes)
    if profile.pretokenized:
        per_token = float(token_id_bytes(vocab_size))
        bpt = Figure.of(per_token, "B", "2 if vocab < 65,500 else 4 (token id width)",
                        {"vocab_size": vocab_size}, MEGATRON_DTYPE_SOURCE)
    else:
        per_token = profile.text_bytes_per_token
        bpt = Figure.of(per_token, "B", "raw text bytes per token", {}, profile.source)
    need = tokens_per_s * per_token
    avail = storage.bandwidth("read", nodes)
    if profile.pretokenized:
        cores = 0.0
        cores_fig = Figure.of(0.0, "1", "0 (data is pre-tokenised)")
    else:
        cores = tokens_per_s / nodes * profile.text_bytes_per_token / profile.tokenizer_bytes_per_s_per_core
        cores_fig = Figure.of(cores, "1", "tokens/s per node × text bytes per token / tokenizer bytes/s per core",
                              {"tokens_per_s": tokens_per_s, "nodes": nodes,
                               "text_bytes_per_token": profile.text_bytes_per_token,
                               "bytes_per_s_per_core": profile.tokenizer_bytes_per_s_per_core}, profile.source)
    return DataPipeline(
        tokens_per_s=Figure.of(tokens_per_s, "tokens/s", "the estimate's training throughput", {}, "megatron-2021"),
        bytes_per_token=bpt,
        read_bandwidth_needed=Figure.of(need, "B/s", "tokens/s × bytes per token",
                                        {"tokens_per_s": tokens_per_s, "bytes_per_token": per_token}),
        read_bandwidth_needed_per_node=Figure.of(need / nodes, "B/s", "needed / nodes", {"nodes": nodes}),
        read_bandwidth_available=Figure.of(avail, "B/s", "min(nodes × read_per_node, read_aggregate)",
                                           {"storage": storage.id, "nodes": nodes}, storage.source),
        storage_load=Figure.of(need / avail, "1", "needed / available read bandwidth",
                               {"needed": need, "available": avail}),
        tokenizer_cores_per_node=cores_fig,
        cpu_load=Figure.of(cores / profile.cpu_cores_per_node, "1", "tokenizer cores / CPU cores per node",
                           {"cores": cores, "cpu_cores_per_node": profile.cpu_cores_per_node}, profile.source),
    )
