"""The longest context that fits: how many tokens (prompt + output) each of the plan's sequences can hold
before the GPU runs out of memory, for this model, weight format, KV dtype, engine and batch.

Memory per GPU grows with the context through the KV cache (paged in the engine's blocks) and, for
engines that prefill a whole prompt at once, through the prefill activations; everything else is fixed.
The answer is the largest T with weights + KV(T) + activations(T) + buffers + overhead <= capacity,
found by bisection over the same ``plan_memory`` the estimate uses (so the two never disagree).
Engines that can leave layers in host RAM (llama.cpp, Ollama) are asked for the context with every
layer on the GPU: past it they still run, but slower, with layers in host RAM.
The model's trained context (``max_position_embeddings``) is reported beside it, not imposed: people
extend it with RoPE scaling, and a memory answer should say what memory allows.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.explain import Figure
from llmplan.core.inference.memory import plan_memory
from llmplan.core.workload import Scenario

MAX_TOKENS = 100_000_000  # InferenceSettings' own limit on prompt_tokens


@dataclass(frozen=True, slots=True)
class ContextFit:
    tokens: int  # prompt + output tokens per sequence that fit; 0: not even one token
    trained_context: int  # the model's max_position_embeddings
    batch: int
    bytes_at_limit: float  # memory per GPU at ``tokens``
    capacity: float

    @property
    def limited_by_training(self) -> bool:
        return self.tokens >= self.trained_context

    def figure(self) -> Figure:
        return Figure.of(
            self.tokens, "1",
            formula="largest T with weights + batch × KV(T, paged) + activations(T) + buffers + overhead ≤ capacity",
            inputs={"batch": self.batch, "capacity": self.capacity, "bytes_at_limit": self.bytes_at_limit,
                    "trained_context": self.trained_context},
            source="vllm",
            assumptions=("prompt + output tokens per sequence; every layer on the GPU",
                         "the model's trained context is shown beside it, not imposed (RoPE scaling extends it)"),
        )


def _total(scenario: Scenario, engine: EngineProfile, tokens: int) -> tuple[float, float]:
    inf = scenario.inference
    output = min(inf.output_tokens, max(1, tokens - 1))
    prompt = max(1, tokens - output)
    changes = {"prompt_tokens": prompt, "output_tokens": output}
    if engine.partial_offload:
        changes["gpu_layers"] = scenario.model.num_layers
    sc = scenario.model_copy(update={"inference": inf.model_copy(update=changes)})
    plan = plan_memory(sc, engine)
    return plan.fixed_gpu + plan.kv_batch_gpu, plan.capacity


def longest_context(scenario: Scenario) -> ContextFit:
    """The largest prompt + output length per sequence whose memory fits one GPU of the plan."""
    engine = scenario.engine_profile or EngineProfile()
    trained = scenario.model.max_position_embeddings
    need, capacity = _total(scenario, engine, 2)
    if need > capacity:
        return ContextFit(0, trained, scenario.inference.batch, need, capacity)
    lo, hi = 2, 4096
    while hi < MAX_TOKENS and _total(scenario, engine, hi)[0] <= capacity:
        lo, hi = hi, min(MAX_TOKENS, hi * 4)
    if hi >= MAX_TOKENS and _total(scenario, engine, hi)[0] <= capacity:
        lo = hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _total(scenario, engine, mid)[0] <= capacity:
            lo = mid
        else:
            hi = mid - 1
    return ContextFit(lo, trained, scenario.inference.batch, _total(scenario, engine, lo)[0], capacity)
