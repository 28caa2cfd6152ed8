"""Our figures against two widely used estimators, for matching settings.

1. Megatron-LM ``megatron/training/theoretical_memory_usage.py`` (NVIDIA/Megatron-LM, read
   at commit 00caa53): weight+optimizer bytes = parameters on the most loaded shard ×
   (18, or 6 + 12/dp with the distributed optimizer); activations per Korthikanti Table 2
   with sequence parallelism and selective recompute, times the in-flight micro-batches,
   plus token ids, embedding dropout and (pp = 1) the output layer and loss.
   Known differences, each far below the tolerance (1e-4 relative): Megatron divides the
   replicated norm weights and the int64 token ids by tp; we keep them whole on every rank.
2. DeepSpeed ``estimate_zero2_model_states_mem_needs`` / ``estimate_zero3_model_states_mem_needs``
   (deepspeed/runtime/zero/stage_1_and_2.py and stage3.py): GPU and CPU bytes for model states.
   Differences: ZeRO-2 without offload, DeepSpeed counts the full 16-bit gradient of every
   parameter as live (4Ψ + 16Ψ/N) where we count only the sharded fp32 gradient (2Ψ + 16Ψ/N):
   the test checks the difference is exactly that 2Ψ. The CPU figures carry DeepSpeed's
   ``additional_buffer_factor`` 1.5 which we do not apply. For ZeRO-3 DeepSpeed's
   "largest layer" is one module; we gather one transformer block, so the test passes our
   block size as the largest layer to compare like with like.
"""

import pytest

from llmplan.core.engine import estimate
from llmplan.core.training.shard import StageParams
from llmplan.core.training.states import model_states
from llmplan.core.workload import TrainingSettings
from llmplan.formats.hf_config import spec_from_config

from .helpers import gpt, scenario

LLAMA3_8B = spec_from_config(dict(model_type="llama", vocab_size=128256, hidden_size=4096, num_hidden_layers=32,
                                  num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336))


def _megatron_params_most_loaded(m, tp, pp):
    h, L, ffn, V = m.hidden_size, m.num_layers, m.intermediate_size, m.vocab_size
    groups_ratio = m.num_kv_heads / m.num_heads
    layer = 2 * h * (ffn * 3 / 2 + 1) + 2 * h * h * (1 + groups_ratio)
    block = layer * L + h  # + final RMSNorm
    emb = h * V
    shard = (block / pp + emb) / tp
    if pp == 1:  # untied output layer lives on the same (only) stage
        shard += emb / tp
    return shard


@pytest.mark.parametrize(("tp", "pp", "dp", "dist_opt"), [(2, 1, 8, True), (1, 1, 16, False), (2, 4, 2, True),
                                                          (4, 2, 2, False)])
def test_weights_and_optimizer_match_megatron(tp, pp, dp, dist_opt):
    sc = scenario(LLAMA3_8B, tp * pp * dp, tp=tp, pp=pp, seq_len=2048, global_batch=dp * 8,
                  distributed_optimizer=dist_opt, zero_stage=0, precision="bf16", optimizer="adamw")
    mem = estimate(sc).memory
    ours = mem.weights.value + mem.gradients.value + mem.master_weights.value + mem.optimizer.value
    per_param = 6 + 12 / dp if dist_opt else 18
    theirs = _megatron_params_most_loaded(LLAMA3_8B, tp, pp) * per_param
    assert ours == pytest.approx(theirs, rel=1e-4)


@pytest.mark.parametrize(("tp", "pp", "micro_batches", "vp"), [(8, 1, 1, 1), (4, 4, 8, 1), (8, 4, 2, 1),
                                                               (2, 4, 8, 2), (4, 8, 16, 4)])
def test_activations_match_megatron(tp, pp, micro_batches, vp):
    s, b, h, a, L, V = 2048, 2, 4096, 32, 32, 51200
    m = gpt(h, a, L, vocab=V)
    sc = scenario(m, tp * pp, tp=tp, pp=pp, vp=vp, sp=True, seq_len=s, micro_batch=b,
                  global_batch=b * micro_batches, recompute="selective", flash_attention=False, dropout=0.1)
    ours = estimate(sc).memory.activations.value
    theirs = s * b * h * (18 + 4 * (4 * h) / h) * L + 8 * s * b * pp + s * b * h * pp
    if vp > 1:  # interleaved schedule penalty 1 + (p-1)/(p·v)
        theirs *= 1 + (pp - 1) / (pp * vp)
    elif pp > 1:
        theirs *= min(1, micro_batches / pp)
    else:
        theirs += s * b * h * 4 * (1 + V / h)
    theirs /= tp
    assert ours == pytest.approx(theirs, rel=1e-3)


def _states(psi, n_gpus, stage, offload="none", offload_params=False, largest=0.0):
    tr = TrainingSettings(precision="fp16", zero_stage=stage, offload=offload, offload_params=offload_params,
                          fp32_grad_accumulation=True)
    sp = StageParams("only", psi, 0.0, psi, psi, largest, True, True)
    return model_states(tr, sp, psi, 0.0, n_gpus, 1, True)


def _gpu(st):
    return st.weights + st.gradients + st.master + st.optimizer + st.gather_buffer


@pytest.mark.parametrize(("psi", "per_node", "nodes"), [(7e9, 8, 1), (70e9, 8, 4), (1.3e9, 4, 1)])
def test_zero2_matches_deepspeed(psi, per_node, nodes):
    n = per_node * nodes
    # DeepSpeed, no offload: gpu = 4Ψ + int(16Ψ/N)
    ds_gpu = 4 * psi + int(16 * psi / n)
    assert _gpu(_states(psi, n, 2)) + 2 * psi == pytest.approx(ds_gpu, rel=1e-9)
    # DeepSpeed, CPU offload: gpu = 2Ψ; cpu = Ψ·max(4·per_node, 16)·1.5 per node
    st = _states(psi, n, 2, "cpu")
    assert _gpu(st) == pytest.approx(2 * psi, rel=1e-9)
    ours_per_node = st.host * per_node
    assert ours_per_node == pytest.approx(16 * psi / nodes, rel=1e-9)  # the offloaded states, sharded over nodes
    if 4 * per_node <= 16 and nodes == 1:  # DeepSpeed's 16Ψ term is those states: equal
        assert ours_per_node * 1.5 == pytest.approx(psi * max(4 * per_node, 16) * 1.5, rel=1e-9)
    else:
        # Different on purpose: as we read it, DeepSpeed's 4·per_node·Ψ term is every process on the node holding
        # the whole model in fp32 on the CPU while it is built, before ZeRO partitions it, and its 16Ψ is not
        # divided by the node count. We size the steady state (the offloaded shard of this node); the load-time
        # peak depends on how the model is built (meta-device / low_cpu_mem_usage loading avoids it) and is
        # listed under "not modelled" in docs/offload.md.
        assert psi * max(4 * per_node, 16) > ours_per_node


@pytest.mark.parametrize(("psi", "largest", "per_node", "nodes"), [(7e9, 2.2e8, 8, 1), (70e9, 1.0e9, 8, 4)])
def test_zero3_matches_deepspeed(psi, largest, per_node, nodes):
    n = per_node * nodes
    # no offload: gpu = 4·largest + int(18Ψ/N)
    assert _gpu(_states(psi, n, 3, largest=largest)) == pytest.approx(4 * largest + int(18 * psi / n), rel=1e-9)
    # optimizer and parameters offloaded to CPU (zero_init): gpu = 4·largest; cpu = 18Ψ/nodes · 1.5 per node
    st = _states(psi, n, 3, "cpu", True, largest)
    assert _gpu(st) == pytest.approx(4 * largest, rel=1e-9)
    assert st.host * per_node * 1.5 == pytest.approx(psi * 18 / nodes * 1.5, rel=1e-9)
    # optimizer offloaded, parameters on the GPU: gpu = 4·largest + 2Ψ/N; cpu = 16Ψ/nodes · 1.5
    st = _states(psi, n, 3, "cpu", False, largest)
    assert _gpu(st) == pytest.approx(4 * largest + 2 * psi / n, rel=1e-9)
    assert st.host * per_node * 1.5 == pytest.approx(psi * 16 / nodes * 1.5, rel=1e-9)
