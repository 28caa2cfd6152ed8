"""SGLang's data-parallel attention (``--enable-dp-attention``) for multi-latent-attention models.

What SGLang v0.4.1.post2 (the PyPI release of 2024-12-29; the release of the DeepSeek-V3 validation rows) does
with the flag, read from its code:

- ``srt/server_args.py`` ``__post_init__``: ``dp_size = tp_size`` (every GPU of the TP group is its own attention
  replica), the chunked-prefill size halved (8,192 -> 4,096, "to avoid MoE kernel issues"), the overlap scheduler
  turned off. CUDA graphs stay on (``cuda_graph_runner.py`` captures DP batches; ``can_run`` replays when every rank
  is decoding or idle and the largest rank's batch is within the captured sizes).
- ``srt/models/deepseek_v2.py``: the MLA attention of each layer is held whole on every GPU (``ReplicatedLinear``
  q_a/q_b/kv_a/kv_b/o projections, ``num_local_heads = num_heads``) and runs only the rank's own requests; the
  embedding (``enable_tp=False``) and the output head (``ReplicatedLinear``, no logits all-gather) are replicated
  too. Before each layer's feed-forward the ranks all-gather their hidden states (``all_gather``: pad to the largest
  rank's count, ``all_gather_into_tensor`` into the graph's ``gathered_buffer``, concatenate the ranks' rows: 3
  kernels), the feed-forward (dense MLP or fused MoE, split over the GPUs as under TP) runs on the gathered rows
  and all-reduces them, and each rank keeps its own rows (a view). There is no all-reduce after attention.
- ``srt/model_executor/cuda_graph_runner.py``: a graph is captured with ``global_num_tokens = [bs] * tp_size``, so
  a replayed step runs the feed-forward on tp x (the largest rank's batch) rows, idle ranks' padding included.
- The KV cache: each rank's pool holds only its own requests' latent.

Priced here with costs llmplan already has: the attention weights and the head read whole by each GPU (their
bytes at the bandwidth), the experts the gathered rows route to (``touched_expert_fraction`` of tp x local rows),
each layer's all-gather as one more small collective (inside a node the engine's flat ``allreduce_latency_s``
plus the ring's bytes: NCCL, not SGLang's custom all-reduce), the feed-forward's all-reduce at the engine's measured custom
all-reduce for the gathered rows, and the 3 kernels per layer (``decode_kernels`` row ``dp``). Not priced: the
per-step host work the flag adds (two gloo collectives on the CPU in ``Scheduler.prepare_dp_attn_batch`` and the
overlap scheduler off); no measurement of it was found.
"""

from __future__ import annotations

import dataclasses
import math

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.quant import GroupBytes, QuantizedWeights
from llmplan.core.workload import Scenario, dp_attention_refusal
from llmplan.errors import InputError

# Tensor groups each GPU holds whole under DP attention: the attention projections, the embedding and the head.
_REPLICATED = ("attention", "embedding", "lm_head")


def uses_dp_attention(scenario: Scenario, engine: EngineProfile) -> bool:
    """Whether the plan runs DP attention; an InputError when it asks for it where the engine cannot."""
    if not scenario.inference.dp_attention:
        return False
    refusal = dp_attention_refusal(scenario.model, engine, True)
    if refusal:
        raise InputError(refusal)
    return True


def replicate_attention(q: QuantizedWeights) -> QuantizedWeights:
    """``q`` with the attention, embedding and head groups held whole on every GPU (tp_split 'replicated')."""
    groups = tuple(GroupBytes(dataclasses.replace(gb.group, tp_split="replicated"), gb.bytes, gb.dtype)
                   if gb.group.category in _REPLICATED else gb for gb in q.groups)
    return QuantizedWeights(q.format, groups, q.total_bytes, q.params)


def local_tokens(tokens: int, tp: int) -> int:
    """The share of the busiest DP rank when ``tokens`` (or sequences) are spread evenly over ``tp`` ranks (the step
    waits for it); every rank pads to it before the all-gather, so the feed-forward runs on tp x as many rows."""
    return max(1, math.ceil(tokens / tp))


def allgather_s(latency: float, tp: int, rows: int, hidden: int, act_bytes: int, link: float) -> float:
    """One all-gather of ``rows`` rows of ``hidden`` activations over ``tp`` GPUs (NCCL): the plan's fixed latency
    per collective (inside a node the engine's flat ``allreduce_latency_s``; across nodes the ring's network hops)
    plus each GPU receiving (tp-1)/tp of the gathered buffer over the link."""
    return latency + (tp - 1) / tp * rows * hidden * act_bytes / link
