"""Layout validity: each broken rule raises LayoutError naming the rule and the fix."""

import pytest

from llmplan.core.engine import estimate
from llmplan.core.training.layout import resolve
from llmplan.core.workload import ParallelLayout
from llmplan.errors import LayoutError, LlmplanError
from llmplan.formats.hf_config import spec_from_config

from .helpers import gpt, scenario

LLAMA3_8B = spec_from_config(dict(model_type="llama", vocab_size=128256, hidden_size=4096, num_hidden_layers=32,
                                  num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336))
MIXTRAL = spec_from_config(dict(model_type="mixtral", vocab_size=32000, hidden_size=4096, num_hidden_layers=32,
                                num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336,
                                num_local_experts=8, num_experts_per_tok=2))


def _with(sc, **par):
    return sc.model_copy(update={"parallelism": ParallelLayout(**{**sc.parallelism.model_dump(), **par})})


def test_gpu_count_rule_names_the_fix():
    sc = _with(scenario(LLAMA3_8B, 16, tp=2), dp=4)
    with pytest.raises(LayoutError, match=r"tp·pp·dp·cp = GPUs.*parallelism.dp to 8"):
        resolve(sc)


@pytest.mark.parametrize(("model", "gpus", "par", "rule"), [
    (LLAMA3_8B, 48, dict(tp=3), "heads divisible by tp"),
    (gpt(4096, 32, 30), 32, dict(pp=32), "pp ≤ layers"),
    (LLAMA3_8B, 16, dict(pp=16, virtual_stages=3), "a layer in every pipeline chunk"),
    (LLAMA3_8B, 16, dict(ep=2), "ep needs experts"),
    (MIXTRAL, 6, dict(ep=4), "ep divides dp"),
])
def test_rules(model, gpus, par, rule):
    sc = scenario(model, gpus, tp=par.get("tp", 1), pp=par.get("pp", 1), ep=par.get("ep", 1),
                  vp=par.get("virtual_stages", 1), seq_len=2048, global_batch=0)
    with pytest.raises(LayoutError, match=rule):
        resolve(sc)


def test_experts_divisible_by_ep():
    sc = scenario(MIXTRAL, 48, ep=6, seq_len=2048)
    with pytest.raises(LayoutError, match="experts divisible by ep"):
        resolve(sc)


def test_kv_heads_fewer_than_tp_are_replicated_with_a_warning():
    sc = scenario(LLAMA3_8B, 16, tp=16, seq_len=2048)  # 8 KV heads on 16 ranks
    lay = resolve(sc)
    assert lay.kv_replicated
    assert any("replicated" in w for w in estimate(sc).warnings)


def test_global_batch_and_context_rules():
    with pytest.raises(LayoutError, match="global_batch = micro_batch·dp·accumulation"):
        resolve(scenario(LLAMA3_8B, 8, seq_len=2048, micro_batch=2, global_batch=20))
    with pytest.raises(LayoutError, match=r"seq_len divisible by 2·cp"):
        resolve(scenario(LLAMA3_8B, 8, cp=4, seq_len=2052))
    lay = resolve(scenario(LLAMA3_8B, 8, seq_len=2048, micro_batch=2, global_batch=0))
    assert lay.global_batch == 16 and lay.accumulation == 1  # 0 with batch_rule per_replica: micro_batch·dp
    lay = resolve(scenario(LLAMA3_8B, 8, seq_len=2048, micro_batch=2, global_batch=64))
    assert lay.accumulation == 4


def test_layout_errors_are_user_errors():
    assert issubclass(LayoutError, LlmplanError)


def test_sequence_parallel_only_with_tp():
    assert not resolve(scenario(LLAMA3_8B, 8, tp=1, sp=True, seq_len=2048)).sp
    assert resolve(scenario(LLAMA3_8B, 8, tp=2, sp=True, seq_len=2048)).sp


def test_gpu_without_a_usable_peak_is_a_clear_error():
    from llmplan.core.hardware import ClusterSpec, GpuSpec, PeakFlops
    from llmplan.errors import InputError

    gpu = GpuSpec(id="x", name="Mystery GPU", vendor="other", memory_bytes=2**34, memory_bandwidth=1e12,
                  peak_flops=PeakFlops(int8=100e12))
    sc = scenario(LLAMA3_8B, 1, seq_len=1024).model_copy(update={"cluster": ClusterSpec(gpu=gpu)})
    with pytest.raises(InputError, match=r"Mystery GPU has no peak FLOP/s for bf16.*peak_flops.bf16"):
        estimate(sc)


def test_the_published_batch_stays_fixed_while_the_layout_changes():
    """batch_rule "published": an 8B model pre-trains with Llama 2's 4M tokens (Touvron et al. 2023 §2.2) on
    any layout; DP 8 and DP 16 cut it into different accumulation steps, not different batches."""
    for gpus in (8, 16):
        lay = resolve(scenario(LLAMA3_8B, gpus, seq_len=4096, micro_batch=2, batch_rule="published"))
        assert lay.global_batch == 1024 and lay.global_batch * lay.seq_len == 2 ** 22
        assert lay.accumulation == 1024 // (2 * gpus)


def test_a_batch_in_tokens_is_rounded_to_what_the_layout_can_cut_and_says_so():
    sc = scenario(LLAMA3_8B, 24, seq_len=4096, global_batch_tokens=2 ** 22)  # DP 24 does not divide 1,024
    lay = resolve(sc)
    assert lay.global_batch == 1032 and lay.accumulation == 43  # the nearest multiple of 24
    assert any("global batch rounded from 1,024 to 1,032 sequences" in w for w in estimate(sc).warnings)
    with pytest.raises(LayoutError, match="not a multiple of 1·24"):  # in sequences it must divide exactly
        resolve(scenario(LLAMA3_8B, 24, seq_len=4096, global_batch=1024))
