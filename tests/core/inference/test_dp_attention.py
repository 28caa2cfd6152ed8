"""SGLang's --enable-dp-attention (inference.dp_attention; core/inference/dp_attention.py), as SGLang v0.4.1.post2
(PyPI sdist, 2024-12-29) runs it: srt/server_args.py (dp_size = tp_size, chunked prefill 8,192 -> 4,096),
srt/models/deepseek_v2.py (ReplicatedLinear MLA projections, replicated embedding and head, the hidden states
all-gathered before each feed-forward and all-reduced after it), srt/model_executor/cuda_graph_runner.py (graphs
captured with global_num_tokens = [bs] * tp_size).

DeepSeek-V3 (config.json: hidden 7168, 128 heads, q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64,
v_head 128, vocab 129,280, 61 layers, 3 dense), fp8 (e4m3 + one fp32 scale per tensor), by hand, per layer:
q_a 7168 x 1536 = 11,010,048; kv_a 7168 x 576 = 4,128,768 (both replicated under TP already); q_b 1536 x 24,576 =
37,748,736; kv_b 512 x 32,768 = 16,777,216; o 16,384 x 7168 = 117,440,512 (split over TP). Embedding and head
129,280 x 7168 = 926,679,040 each, bf16. Bytes and counts exact.
"""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference.dp_attention import local_tokens
from llmplan.core.inference.latency import touched_expert_fraction
from llmplan.core.inference.memory import plan_memory
from llmplan.core.inference.serving_floor import step_kernels
from llmplan.core.workload import InferenceSettings, ParallelLayout, Scenario
from llmplan.errors import InputError

HW, MODELS = load_hardware_catalog(), load_model_catalog()
DS = "deepseek-ai/DeepSeek-V3"


def _scenario(dp: bool, batch: int = 1, engine: str = "sglang", model: str = DS, fmt: str = "fp8") -> Scenario:
    return Scenario(model=MODELS.get(model).spec,
                    cluster=ClusterSpec(gpu=HW.gpu("nvidia-h200-sxm-141gb").spec, gpus_per_node=8),
                    workload="inference", parallelism=ParallelLayout(tp=8), engine_profile=engine_profile(engine),
                    inference=InferenceSettings(engine=engine, weight_format=fmt, batch=batch, prompt_tokens=128,
                                                output_tokens=256, dp_attention=dp))


def test_each_gpu_holds_the_whole_attention_embedding_and_head():
    split = (37_748_736 + 16_777_216 + 117_440_512) * 61 + 3 * 61 * 4  # q_b, kv_b, o in fp8 + their scales
    ends = 2 * 926_679_040 * 2  # embedding and head, bf16
    tp, dp = plan_memory(_scenario(False), engine_profile("sglang")), plan_memory(_scenario(True),
                                                                                   engine_profile("sglang"))
    assert dp.weights_gpu - tp.weights_gpu == pytest.approx((split + ends) * 7 / 8, abs=1)
    assert dp.weights.total_bytes == tp.weights.total_bytes  # the checkpoint is the same
    sglang = engine_profile("sglang")  # 64 prompts of 128 tokens: one 8,192-token pass, two under DP attention
    assert plan_memory(_scenario(True, 64), sglang).chunk_tokens == 4096
    assert plan_memory(_scenario(False, 64), sglang).chunk_tokens == 8192


def test_each_rank_caches_its_own_requests():
    """The latent (70,272 B a token in bf16) of a sequence lives on one rank: 1/8 of it per GPU on average, so the
    group holds 8x the sequences one GPU's pool does; the batch's cache sits on its busiest rank."""
    tp, dp = plan_memory(_scenario(False, 32), engine_profile("sglang")), plan_memory(_scenario(True, 32),
                                                                                       engine_profile("sglang"))
    assert dp.kv_per_seq_gpu == pytest.approx(tp.kv_per_seq_gpu / 8, rel=1e-12)
    assert dp.kv_batch_gpu == pytest.approx(tp.kv_per_seq_gpu * 4, rel=1e-12)  # 32 over 8 ranks: 4 each
    assert dp.max_concurrency == int(dp.kv_budget // (tp.kv_per_seq_gpu / 8))


def test_rows_through_the_feed_forward():
    """A replayed graph runs the feed-forward on tp x the busiest rank's batch: 8 rows at batch 1 and 8, 32 at 32."""
    assert [local_tokens(b, 8) for b in (1, 8, 9, 32)] == [1, 1, 2, 4]
    ds = MODELS.get(DS).spec
    assert touched_expert_fraction(ds, 8 * local_tokens(1, 8)) == pytest.approx(1 - (1 - 8 / 256) ** 8, rel=1e-12)


def test_kernels_and_collectives_per_step():
    """61 layers x 3 more kernels (pad, all-gather, concatenation); per layer one all-gather and one all-reduce,
    no logits gather: 122 collectives, where TP has 2 x 61 + 1."""
    ds, sglang = MODELS.get(DS).spec, engine_profile("sglang")
    plain, dp = step_kernels(ds, sglang, 61, fp8=True), step_kernels(ds, sglang, 61, fp8=True, dp_attention=True)
    assert (dp[0] - plain[0], dp[1] - plain[1]) == (61 * 3, 0)
    on, off = estimate(_scenario(True)).inference.tpot_s, estimate(_scenario(False)).inference.tpot_s
    assert on.value > 2 * off.value  # the whole attention (11.4 GB of fp8) read by one GPU at batch 1


def test_batch_1_and_8_cost_the_same_step():
    """At batch 8 each of the 8 ranks decodes one sequence and the feed-forward sees 8 rows, as at batch 1."""
    one, eight = estimate(_scenario(True, 1)).inference, estimate(_scenario(True, 8)).inference
    assert one.tpot_s.value == pytest.approx(eight.tpot_s.value, rel=1e-3)


@pytest.mark.parametrize(("engine", "model", "fmt"), [("vllm", DS, "fp8"), ("sglang", "meta-llama/Llama-3.1-8B",
                                                                               "bf16")])
def test_refused_where_sglang_has_no_dp_attention(engine, model, fmt):
    """Refused with the plan, before any layout (a search answered "no layout fits ... add GPUs"); a scenario
    copied without validation still meets the estimate's own check."""
    with pytest.raises(ValueError, match=r"inference\.dp_attention: "):
        _scenario(True, engine=engine, model=model, fmt=fmt)
    off = _scenario(False, engine=engine, model=model, fmt=fmt)
    with pytest.raises(InputError, match="dp_attention"):
        estimate(off.model_copy(update={"inference": off.inference.model_copy(update={"dp_attention": True})}))


def test_a_prompt_runs_on_its_own_rank():
    """One 128-token prompt: its rank runs the whole attention on it, and the feed-forward runs on 8 x 128 gathered
    rows (7 ranks' padding), 1/8 of them per GPU: 8x the matmul FLOPs of the TP split on the busiest GPU."""
    on, off = (estimate(_scenario(dp)).inference.ttft_s.inputs for dp in (True, False))
    assert on["compute_s"] == pytest.approx(8 * off["compute_s"], rel=1e-9)


def test_collectives_priced_per_layer():
    """Batch 1: 8 gathered rows x 7168 x 2 B = 114,688 B a collective. Per layer: the all-gather (NCCL: the flat
    10 µs plus 7/8 of the buffer over the link) and the feed-forward's all-reduce (SGLang's custom all-reduce, its
    measured rows interpolated; at least the ring's bytes)."""
    from llmplan.core.inference.latency import rates, serving_floor
    from llmplan.core.inference.serving_floor import small_allreduce_s

    sc, sglang = _scenario(True), engine_profile("sglang")
    plan = plan_memory(sc, sglang)
    r = rates(sc, plan, sc.efficiency)
    floor = serving_floor(sc, plan, r, 1, 1e9, local=1)
    buf = 8 * 7168 * 2
    gather = 10e-6 + 7 / 8 * buf / r.link
    reduce = max(small_allreduce_s(sglang, 8, buf), 2 * 7 / 8 * buf / r.link)
    assert floor.collectives == 122
    assert floor.collective_s == pytest.approx(61 * (gather + reduce), rel=1e-12)
