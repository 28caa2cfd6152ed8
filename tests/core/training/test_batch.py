"""The published global batch by model size (core.training.batch), each row against its paper."""

import pytest

from llmplan.core.training.batch import FINETUNE_SEQUENCES, published_tokens, target_sequences
from llmplan.core.workload import Scenario, TrainingSettings

from .even_golden import LLAMA3_8B
from .helpers import cluster


@pytest.mark.parametrize(("params", "tokens", "source"), [
    (125e6, 0.5 * 2 ** 20, "Table 2.1"),  # GPT-3 Small: 0.5M tokens (Brown et al. 2020)
    (2.7e9, 2 ** 20, "Table 2.1"),  # GPT-3 2.7B: 1M
    (7e9, 4 * 2 ** 20, "Llama 2"),  # Llama 2 7B-70B: 4M (Touvron et al. 2023 §2.2)
    (70e9, 4 * 2 ** 20, "Llama 2"),
    (405e9, 2048 * 8192, "Llama 3"),  # Llama 3 405B: 16M at the end of training (Dubey et al. 2024 Table 4)
    (671e9, 15_360 * 4096, "DeepSeek-V3"),  # 15,360 sequences of 4K (DeepSeek-AI 2024 §4.2)
])
def test_published_batch_by_size(params, tokens, source):
    got, src = published_tokens(params)
    assert got == tokens and source in src


def test_target_in_sequences_by_workload_and_rule():
    def sc(workload="pretrain", **t):
        return Scenario(model=LLAMA3_8B, cluster=cluster(8), workload=workload,
                        training=TrainingSettings(seq_len=8192, method="full" if workload == "pretrain" else "lora",
                                                  **t))

    assert target_sequences(sc()) == 512  # 4M tokens / 8,192
    assert target_sequences(sc("finetune")) == FINETUNE_SEQUENCES == 64  # Llama 2-Chat SFT (§3.1)
    assert target_sequences(sc(global_batch_tokens=1_000_000)) == 122  # rounded to whole sequences
    assert target_sequences(sc(global_batch=96, global_batch_tokens=1_000_000)) == 96  # sequences win
    assert target_sequences(sc(batch_rule="per_replica")) == 0  # micro-batch × DP, as before schema 4
