"""The longest context that fits: how many tokens (prompt + output) each of the plan's sequences can hold
before the GPU runs out of memory, for this model, weight format, KV dtype, engine and batch.

Memory per GPU grows with the context through the KV cache (paged in the engine's blocks) and, for
engines that prefill a whole prompt at once, through the prefill activations; everything else is fixed.
The answer is the largest T with weights + KV(T) + activations(T) + buffers + overhead <= capacity,
found by bisection over the same ``plan_memory`` the estimate uses (so the two never disagree).
Engines that can leave layers in host RAM (llama.cpp, Ollama) are asked for the context with every
layer on the GPU: past it they still run, but slower, with layers in host RAM.

An MoE model on llama.cpp whose plan leaves the experts' placement open (``inference.cpu_moe_layers`` and
``gpu_layers`` unset) is asked what llama.cpp's users do when a longer context does not fit: raise
``--n-cpu-moe`` (every layer stays on the GPU, the first layers' routed experts go to host RAM and free room for
the KV cache). When the model's trained context does not fit with every expert on the GPU, the answer is the
context at the fewest MoE layers in host RAM that hold the trained context, or, if even ``--cpu-moe`` cannot,
the longest context ``--cpu-moe`` allows: "176,128 tokens with --n-cpu-moe 27" (gpt-oss-120b on an RTX 3090). A stated ``cpu_moe_layers`` is
honoured as it is. Past the trained context no more experts are moved (each one moved slows decoding).
The model's trained context (``max_position_embeddings``) is reported beside it, not imposed: people
extend it with RoPE scaling, and a memory answer should say what memory allows.

On a machine of different cards (``longest_context_split``) the same search runs over llama.cpp's layer split
(``multi_gpu.split_layers`` with every layer on a GPU) or row split (``split_cards``; also a plan of identical GPUs
with ``split_mode = row``): the context fits when every card holds its share, and
the card that runs out first is the one reported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.explain import Figure
from llmplan.core.hardware import GpuSpec
from llmplan.core.inference.cpu_moe import first_layers_for, flag_for, host_moe_layers
from llmplan.core.inference.memory import plan_memory
from llmplan.core.inference.multi_gpu import split_cards
from llmplan.core.workload import Scenario

MAX_TOKENS = 100_000_000  # InferenceSettings' own limit on prompt_tokens


@dataclass(frozen=True, slots=True)
class ContextFit:
    tokens: int  # prompt + output tokens per sequence that fit; 0: not even one token
    trained_context: int  # the model's max_position_embeddings
    batch: int
    bytes_at_limit: float  # memory per GPU at ``tokens``
    capacity: float
    host_moe_layers: int = 0  # MoE layers whose routed experts stay in host RAM at ``tokens`` (llama.cpp)
    experts_flag: str = ""  # the flag that keeps them there: "--n-cpu-moe 30", "--cpu-moe"; "" none
    experts_chosen: bool = False  # the placement is this function's choice (the plan left it open)
    first_layers: int = 0  # N of ``--n-cpu-moe N`` (layers counted by index, dense first layers included)

    @property
    def limited_by_training(self) -> bool:
        return self.tokens >= self.trained_context

    def figure(self) -> Figure:
        experts = {"moe_layers_in_host": self.host_moe_layers, "flag": self.experts_flag} if self.experts_flag else {}
        placement = ("every layer on the GPU but the routed experts " + self.experts_flag + " keeps in host RAM"
                     + ("; the fewest MoE layers' experts in host RAM that hold the trained context (or --cpu-moe)"
                        if self.experts_chosen else "")) if self.experts_flag else "every layer on the GPU"
        return Figure.of(
            self.tokens, "1",
            formula="largest T with weights + batch × KV(T, paged) + activations(T) + buffers + overhead ≤ capacity",
            inputs={"batch": self.batch, "capacity": self.capacity, "bytes_at_limit": self.bytes_at_limit,
                    "trained_context": self.trained_context, **experts},
            source="vllm",
            assumptions=(f"prompt + output tokens per sequence; {placement}",
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


def _total(scenario: Scenario, engine: EngineProfile, tokens: int, host_moe: int | None = None
           ) -> tuple[float, float]:
    plan = plan_memory(_with_context(scenario, engine, tokens), engine, host_moe=host_moe)
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
    """The largest prompt + output length per sequence whose memory fits one GPU of the plan; for an MoE model on
    llama.cpp with the experts' placement open, with as many layers' routed experts in host RAM as the trained
    context needs (the module's docstring)."""
    if scenario.inference.split_mode == "row" and scenario.cluster.total_gpus > 1:  # the machine's cards, by rows
        from llmplan.core.inference.row_estimate import row_cards

        return longest_context_split(scenario, row_cards(scenario))
    engine = scenario.engine_profile or EngineProfile()
    spec = scenario.model
    stated = host_moe_layers(spec, scenario.inference.cpu_moe_layers)
    fit = _fit_at(scenario, engine, None, stated, chosen=False)
    if not _experts_open(scenario, engine) or fit.tokens >= fit.trained_context:
        return fit
    top = spec.moe_layer_count
    most = _fit_at(scenario, engine, top, top, chosen=True)
    if not most.tokens:  # not even with every expert in host RAM: say so ("none, even with --cpu-moe")
        return most
    if most.tokens <= fit.tokens:  # moving experts frees nothing (a compute buffer's copy of them costs as much)
        return fit
    target = min(most.tokens, most.trained_context)
    lo, hi = 1, top  # the fewest MoE layers in host RAM at which ``target`` fits (memory falls as n grows)
    while lo < hi:
        mid = (lo + hi) // 2
        need, capacity = _total(scenario, engine, target, mid)
        lo, hi = (lo, mid) if need <= capacity else (mid + 1, hi)
    return most if lo == top else _fit_at(scenario, engine, lo, lo, chosen=True)


def _experts_open(scenario: Scenario, engine: EngineProfile) -> bool:
    """llama.cpp may keep this plan's routed experts in host RAM and the plan leaves where to the estimate."""
    inf, par = scenario.inference, scenario.parallelism
    return (engine.experts_in_host and scenario.model.is_moe and inf.cpu_moe_layers is None
            and inf.gpu_layers is None and par.tp == 1 and not scenario.cluster.gpu.unified_memory)


def _fit_at(scenario: Scenario, engine: EngineProfile, host_moe: int | None, n_moe: int, chosen: bool
            ) -> ContextFit:
    """The longest context with ``host_moe`` MoE layers' experts in host RAM (None: as the plan states, which
    keeps ``n_moe``)."""
    trained, batch = scenario.model.max_position_embeddings, scenario.inference.batch
    spec = scenario.model
    experts = {"host_moe_layers": n_moe, "experts_flag": flag_for(spec, n_moe), "experts_chosen": chosen,
               "first_layers": first_layers_for(spec, n_moe)} if n_moe else {}
    need, capacity = _total(scenario, engine, 2, host_moe)
    if need > capacity:
        return ContextFit(0, trained, batch, need, capacity, **experts)
    lo = _largest_tokens(lambda t: _total(scenario, engine, t, host_moe)[0] <= capacity)
    return ContextFit(lo, trained, batch, _total(scenario, engine, lo, host_moe)[0], capacity, **experts)


def longest_context_split(scenario: Scenario, gpus: Sequence[GpuSpec],
                          tensor_split: Sequence[float] | None = None) -> ContextFit:
    """The largest prompt + output length per sequence for which llama.cpp's split of every layer over ``gpus``
    (its ``split_mode``; device order, ``tensor_split`` as in ``split_layers``) fits each card. ``bytes_at_limit`` and
    ``capacity`` are those of the card with the least memory to spare there."""
    engine = scenario.engine_profile or EngineProfile()
    layers = scenario.model.num_layers

    def tightest(tokens: int) -> tuple[float, float]:
        plan = split_cards(_with_context(scenario, engine, tokens), gpus, tensor_split, gpu_layers=layers)
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
