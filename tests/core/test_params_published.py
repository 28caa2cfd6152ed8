"""Exact parameter counts against published checkpoint totals.

Sources: the safetensors index `metadata.total_size` of each Hugging Face checkpoint
divided by the bytes per parameter (2 for bf16/fp16), and the counts quoted in the
issue tracker. Tolerance: exact (0 parameters).
"""

import pytest

from llmplan.core.params import count_params
from llmplan.formats.hf_config import spec_from_config

LLAMA2_7B = dict(model_type="llama", vocab_size=32000, hidden_size=4096, num_hidden_layers=32,
                 num_attention_heads=32, intermediate_size=11008)
LLAMA3_8B = dict(model_type="llama", vocab_size=128256, hidden_size=4096, num_hidden_layers=32,
                 num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336)
MISTRAL_7B = dict(model_type="mistral", vocab_size=32000, hidden_size=4096, num_hidden_layers=32,
                  num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336, sliding_window=4096)
MIXTRAL_8X7B = dict(model_type="mixtral", vocab_size=32000, hidden_size=4096, num_hidden_layers=32,
                    num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336,
                    num_local_experts=8, num_experts_per_tok=2)


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        (LLAMA2_7B, 6_738_415_616),  # meta-llama/Llama-2-7b-hf: total_size 13,476,831,232 B / 2
        (LLAMA3_8B, 8_030_261_248),  # meta-llama/Meta-Llama-3-8B: total_size 16,060,522,496 B / 2
        (MISTRAL_7B, 7_241_732_096),  # mistralai/Mistral-7B-v0.1: total_size 14,483,464,192 B / 2
        (MIXTRAL_8X7B, 46_702_792_704),  # mistralai/Mixtral-8x7B-v0.1: total_size 93,405,585,408 B / 2
    ],
)
def test_total_matches_checkpoint(cfg, expected):
    assert count_params(spec_from_config(cfg)).total == expected


def test_mixtral_active_params():
    # Mistral AI's Mixtral announcement: "12.9B active parameters"; exact value from shapes:
    # total minus 6/8 of the routed experts (32 layers · 8 experts · 3·4096·14336).
    pc = count_params(spec_from_config(MIXTRAL_8X7B))
    assert pc.active == 46_702_792_704 - 32 * 6 * 3 * 4096 * 14336
    assert round(pc.active / 1e9, 1) == 12.9


def test_llama3_embedding_split():
    pc = count_params(spec_from_config(LLAMA3_8B))
    assert pc.embedding == 2 * 128256 * 4096  # untied input embedding and output head
    assert pc.non_embedding == pc.total - pc.embedding
