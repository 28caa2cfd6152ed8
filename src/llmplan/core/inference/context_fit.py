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

On a machine of different cards (``longest_context_split``) the same search runs over llama.cpp's layer split
(``multi_gpu.split_layers`` with every layer on a GPU): the context fits when every card holds its share, and
the card that runs out first is the one reported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.explain import Figure
from llmplan.core.hardware import GpuSpec
from llmplan.core.inference.memory import plan_memory
from llmplan.core.inference.multi_gpu import split_layers
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


def _with_context(scenario: Scenario, engine: EngineProfile, tokens: int) -> Scenario:
    """``scenario`` with ``tokens`` of prompt + output per sequence (the output kept as planned where it fits)
    and, for engines that can offload, every layer on the GPU."""
    inf = scenario.inference
    output = min(inf.output_tokens, max(1, tokens - 1))
    prompt = max(1, tokens - output)
    changes = {"prompt_tokens": prompt, "output_tokens": output}
    if engine.partial_offload:
        changes["gpu_layers"] = scenario.model.num_layers
    return scenario.model_copy(update={"inference": inf.model_copy(update=changes)})


def _total(scenario: Scenario, engine: EngineProfile, tokens: int) -> tuple[float, float]:
    plan = plan_memory(_with_context(scenario, engine, tokens), engine)
    return plan.fixed_gpu + plan.kv_batch_gpu, plan.capacity


def _largest_tokens(fits: Callable[[int], bool]) -> int:
    """The largest context in [2, MAX_TOKENS] for which ``fits`` holds (memory grows with the context, so
    ``fits`` is monotone): grow by 4x from 4,096 until it fails, then bisect. Call only when 2 fits."""
    lo, hi = 2, 4096
    while hi < MAX_TOKENS and fits(hi):
        lo, hi = hi, min(MAX_TOKENS, hi * 4)
    if hi >= MAX_TOKENS and fits(hi):
        return hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def longest_context(scenario: Scenario) -> ContextFit:
    """The largest prompt + output length per sequence whose memory fits one GPU of the plan."""
    engine = scenario.engine_profile or EngineProfile()
    trained = scenario.model.max_position_embeddings
    need, capacity = _total(scenario, engine, 2)
    if need > capacity:
        return ContextFit(0, trained, scenario.inference.batch, need, capacity)
    lo = _largest_tokens(lambda t: _total(scenario, engine, t)[0] <= capacity)
    return ContextFit(lo, trained, scenario.inference.batch, _total(scenario, engine, lo)[0], capacity)


def longest_context_split(scenario: Scenario, gpus: Sequence[GpuSpec],
                          tensor_split: Sequence[float] | None = None) -> ContextFit:
    """The largest prompt + output length per sequence for which llama.cpp's layer split of every layer over
    ``gpus`` (device order, ``tensor_split`` as in ``split_layers``) fits each card. ``bytes_at_limit`` and
    ``capacity`` are those of the card with the least memory to spare there."""
    engine = scenario.engine_profile or EngineProfile()
    layers = scenario.model.num_layers

    def tightest(tokens: int) -> tuple[float, float]:
        plan = split_layers(_with_context(scenario, engine, tokens), gpus, tensor_split, gpu_layers=layers)
        card = plan.fullest
        return card.total, card.capacity

    def fits(tokens: int) -> bool:
        need, capacity = tightest(tokens)
        return need <= capacity

    trained = scenario.model.max_position_embeddings
    if not fits(2):
        return ContextFit(0, trained, scenario.inference.batch, *tightest(2))
    lo = _largest_tokens(fits)
    return ContextFit(lo, trained, scenario.inference.batch, *tightest(lo))
