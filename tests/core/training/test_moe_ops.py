"""The MoE path of the per-operation list: each local expert's GEMM at the rows it really gets, and the token
permutation around the experts as memory-bound copies.

Source of the copies: Megatron-Core's ``MoEAlltoAllTokenDispatcher`` (NVIDIA/Megatron-LM
megatron/core/transformer/moe/token_dispatcher.py at d98e8a6, 2026-08-22): ``permute`` before the all-to-all
(k rows of h per token read and written), ``sort_chunks_by_idxs`` by local expert after it and back before the
return all-to-all (only when a GPU holds more than one expert), ``unpermute`` summing each token's k rows into
one. Eager code: transformers' Mixtral-style loop (gather, scale, index_add_ per local expert). The expected
bytes below are worked by hand from those steps for GPT-OSS 120B (h = 2,880, 128 experts, top-4); exact
(tolerance 1e-12 relative).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from llmplan.catalog.frameworks import load_framework_profiles
from llmplan.catalog.models import load_model_catalog
from llmplan.core.params import count_params
from llmplan.core.training.ops import layer_gemms, moe_permutation
from llmplan.core.workload import TrainingSettings

H, K, E = 2880, 4, 128


def _oss():
    return load_model_catalog(include_user=False).get("openai/gpt-oss-120b").spec


def _lay(ep: int, cp: int = 1, tp: int = 1):
    return SimpleNamespace(micro_batch=1, seq_len=4096, cp=cp, ep=ep, tp=tp, sp=tp > 1)


def _prof(kind: str):
    """A shipped profile of this kernel style; eager: a Hugging Face-style one (torchtitan's is not the Mixtral loop)."""
    return next(p for p in load_framework_profiles().values() if p.kernels == kind and p.eager_modules == "transformers")


def test_each_local_expert_gemm_has_its_own_rows():
    """4,096 tokens · top-4 · EP8 / 128 experts = 1,024 rows per expert, 16 experts per GPU per layer."""
    m = _oss()
    gemms = [g for g in layer_gemms(m, count_params(m), _lay(8), TrainingSettings()) if g.split == "expert"]
    assert gemms and all(g.m == 1024 for g in gemms)
    assert all(g.count == pytest.approx(E / 8) for g in gemms)


def test_fused_dispatcher_copies():
    """EP8, 16 local experts: permute 2k + sort 2k + unsort 2k + unpermute (k + 1) rows of 2·h bytes per token."""
    (op,) = moe_permutation(_oss(), _lay(8), 1, 2.0, _prof("fused"))
    assert op.bytes == pytest.approx(2 * H * (7 * K + 1) * 4096, rel=1e-12)
    assert op.kernels == 4 and op.backward == 1.0


def test_one_expert_per_gpu_needs_no_sort():
    (op,) = moe_permutation(_oss(), _lay(E), 1, 2.0, _prof("fused"))
    assert op.bytes == pytest.approx(2 * H * (3 * K + 1) * 4096, rel=1e-12)
    assert op.kernels == 2


def test_sequence_parallel_permutes_its_shard():
    """Under SP (tp 2) permute and unpermute see half the tokens; the sorts run on the gathered tokens."""
    (op,) = moe_permutation(_oss(), _lay(8, tp=2), 2, 2.0, _prof("fused"))
    assert op.bytes == pytest.approx(2 * H * ((3 * K + 1) / 2 + 4 * K) * 4096, rel=1e-12)


def test_eager_loop_launches_per_local_expert():
    (op,) = moe_permutation(_oss(), _lay(8), 1, 2.0, _prof("eager"))
    assert op.bytes == pytest.approx(2 * H * (6 * K + 1) * 4096, rel=1e-12)
    assert op.kernels == 3 * E / 8


def test_dense_models_have_no_permutation():
    dense = load_model_catalog(include_user=False).get("meta-llama/Meta-Llama-3-8B").spec
    assert moe_permutation(dense, _lay(1), 1, 2.0, _prof("fused")) == []
