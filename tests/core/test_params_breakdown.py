"""ParamBreakdown invariants the memory and parallelism engines build on.

The expected values are derived by hand from the tensor shapes of each architecture
(HF modeling files), independently of the code's grouping; tolerance: exact.
"""

from __future__ import annotations

import pytest

from llmplan.catalog.models import load_model_catalog
from llmplan.core.params import count_params

CAT = load_model_catalog(include_user=False)


@pytest.mark.parametrize("model_id", ["meta-llama/Meta-Llama-3-8B", "deepseek-ai/DeepSeek-V3", "openai/gpt-oss-20b",
                                      "facebook/opt-350m", "Qwen/Qwen1.5-MoE-A2.7B", "google/gemma-3-27b-it"])
def test_groups_and_categories_add_up(model_id):
    pc = count_params(CAT.get(model_id).spec)
    assert sum(g.params for g in pc.groups) == pc.total == sum(pc.by_category().values())
    assert pc.non_embedding == pc.total - pc.embedding


def test_gpt_oss_active_is_total_minus_unused_experts():
    spec = CAT.get("openai/gpt-oss-20b").spec
    pc = count_params(spec)
    # one expert: gate_up (2·2880·2880 + 2·2880 bias) + down (2880·2880 + 2880 bias)
    expert = 3 * 2880 * 2880 + 3 * 2880
    assert pc.routed_experts == 24 * 32 * expert
    assert pc.active == pc.total - 24 * (32 - 4) * expert


def test_deepseek_v3_layers_by_kind_and_mtp_not_active():
    spec = CAT.get("deepseek-ai/DeepSeek-V3").spec
    pc = count_params(spec)
    h, e = 7168, 2048
    attn = (1536 * h + 1536 + 128 * 192 * 1536 + (512 + 64) * h + 512 + 128 * 256 * 512 + h * 128 * 128)
    dense_layer = attn + 2 * h + 3 * h * 18432
    moe_layer = attn + 2 * h + 256 * h + 256 + 256 * 3 * h * e + 3 * h * e
    assert pc.per_layer("dense") == dense_layer
    assert pc.per_layer("moe") == moe_layer
    main = 129280 * h * 2 + h + 3 * dense_layer + 58 * moe_layer
    assert pc.total - pc.mtp == main
    assert pc.active == main - 58 * (256 - 8) * 3 * h * e


def test_tensor_parallel_hints():
    pc = count_params(CAT.get("mistralai/Mixtral-8x7B-v0.1").spec)
    split = {g.name: g.tp_split for g in pc.groups}
    assert split["embed_tokens"] == "vocab" and split["lm_head"] == "vocab"
    assert split["attn.q_proj"] == "column" and split["attn.o_proj"] == "row"
    assert split["moe.experts.gate_proj"] == "expert" and split["moe.router"] == "replicated"
    place = {g.name: g.place for g in pc.groups}
    assert place["embed_tokens"] == "first" and place["lm_head"] == "last" and place["attn.q_proj"] == "layer"


def test_llama3_block_counts_both_norms():
    pc = count_params(CAT.get("meta-llama/Meta-Llama-3-8B").spec)
    h = 4096
    assert pc.per_layer() == h * (h + 2 * 1024 + h) + 3 * h * 14336 + 2 * h
    assert pc.total == 2 * 128256 * h + 32 * pc.per_layer() + h
