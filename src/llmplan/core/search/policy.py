"""One rule for the training knobs a plan leaves automatic, shared by the CLI and the app.

A knob is *automatic* when the plan does not state it (it is not in the plan file, not given
with ``--set``, not edited in the app): ``automatic_knobs``. The rule:

- when the layout is automatic too (the CLI without ``parallelism.*``, the app's Auto…), the
  auto-planner chooses the layout and the automatic knobs together: the fastest that the engine
  says fits, the stated knobs held (``search(keep=...)``);
- when the layout is given, the automatic knobs keep their defaults if the plan fits as it is;
  if it does not, they move one step at a time, cheapest in speed first, to the first setting the
  engine says fits (``apply_policy``): full recompute (Korthikanti et al. 2022 §5: ~33% more
  compute, activations down to one input per layer), micro-batch 1, ZeRO-3 (Rajbhandari et al.
  2020, needs data parallelism; only where the framework runs it, ``framework_profile.zero_choices``: not
  unsloth, not torchtune's single-device recipes on one GPU), CPU offload of the optimizer (ZeRO-Offload,
  Ren et al. 2021) where the framework has one (``framework_profile.offers_offload``: not unsloth; Megatron-Core's is optimizer-only,
  FSDP's takes the parameters along: ``FrameworkProfile.offload_style``).
  On one data-parallel rank ZeRO-3 shards nothing on its own, but it is what DeepSpeed offloads from
  on one GPU, and the auto-planner's layouts include it there whenever they offload
  (``space.training_columns``: ZeRO left open needs dp·cp > 1 *or* offload). So there the ZeRO-3 step is taken
  together with the offload step, and the ladder ends on the same most frugal setting the search
  tries: the CLI's automatic layout, a given layout and the this-machine verdict agree (one truth).
  Where the framework has a one-GPU offload without ZeRO (``FrameworkProfile.single_gpu_offload_style``:
  torchtune's single-device recipes build torchao's ``CPUOffloadOptimizer``), a plan on one GPU at ZeRO-0 tries
  that offload alone, at the ZeRO-3 step's place, and no FSDP ZeRO-3 offload after it (the distributed recipe's
  ``fsdp_cpu_offload``; its profile's ``single_gpu_zero_stages`` is 0 only): what torchtune's docs tell a one-GPU user
  (pytorch/torchtune docs/source/tutorials/memory_optimizations.rst at bd2a0fc: CPUOffloadOptimizer "is only
  supported for single-device recipes. To use CPU-offloading in distributed recipes, use fsdp_cpu_offload=True";
  "Prioritize using it only if the other techniques are not enough", so it stays after recompute and micro-batch 1).
  If nothing fits, the verdict stays "does not fit" and shows the step of the ladder that needs the
  least memory (the plan's own values when no step helps), so "N GiB short" says how close the
  automatic knobs get, not what the plan needs before they move.

Before any of this, a ZeRO stage left automatic that the framework does not run on these GPUs moves to the nearest
it runs (``framework_profile.auto_zero``: every plan's default ZeRO-1 is ZeRO-2 under FSDP, whose smallest sharding is
SHARD_GRAD_OP; ZeRO-1 on one data-parallel rank without offload shards nothing and stays), and the label says why
("auto: ZeRO-2 (fsdp2 runs no ZeRO-1; the nearest it runs)"). A stated stage the framework runs on no GPU count is a
field error in the plan layer (``plan.resolve.framework_refusal``).

Both the CLI and the app say which values were chosen ("auto: full recompute").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.framework_profile import auto_zero, nearest_zero, offers_offload, zero_choices
from llmplan.core.model import ModelSpec
from llmplan.core.result import Estimate
from llmplan.core.workload import Scenario
from llmplan.errors import LlmplanError

AUTOMATIC = ("micro_batch", "zero_stage", "recompute", "offload")  # the planner's KEEPABLE knobs
LADDER = (("recompute", "full"), ("micro_batch", 1), ("zero_stage", 3), ("offload", "cpu"))
_WORDS = {"recompute": "{} recompute", "micro_batch": "micro-batch {}", "zero_stage": "ZeRO-{}",
          "offload": "{} offload"}


@dataclass(frozen=True, slots=True)
class AutoChoice:
    """The scenario to estimate and the knobs the policy set for the user (knob, value).

    ``estimate`` is the engine's estimate of ``scenario`` when the policy already ran it (None when it
    did not: inference, nothing automatic, an invalid plan), so the caller need not run the engine twice
    on the same scenario (the app's knob → verdict path)."""

    scenario: Scenario
    chosen: tuple[tuple[str, object], ...] = ()
    estimate: Estimate | None = None
    zero_note: tuple[int, str] | None = None  # (stage, why) where the stage left open moved to one the framework runs

    def label(self) -> str:
        """E.g. "auto: full recompute, micro-batch 1", "auto: ZeRO-2 (fsdp2 runs no ZeRO-1; the nearest it runs)"; "" when nothing
        was chosen."""
        if not self.chosen:
            return ""
        words = [_WORDS[k].format(str(v).upper() if k == "offload" else v)
                 + (f" ({self.zero_note[1]})" if k == "zero_stage" and self.zero_note and v == self.zero_note[0] else "")
                 for k, v in self.chosen]
        return "auto: " + ", ".join(words)


def automatic_knobs(stated: Iterable[str]) -> tuple[str, ...]:
    """The knobs of ``AUTOMATIC`` not among ``stated`` (training field names the plan states)."""
    given = set(stated)
    return tuple(k for k in AUTOMATIC if k not in given)


def held_knobs(stated: Iterable[str]) -> tuple[str, ...]:
    """The knobs of ``AUTOMATIC`` the plan states: the auto-planner holds them (``search(keep=...)``)."""
    given = set(stated)
    return tuple(k for k in AUTOMATIC if k in given)


# The formats each kind of engine is deployed with, least quantised first (``fit.changes`` walks the same
# ladders for its nearest changes): llama.cpp's common presets; the serving engines' checkpoint formats; MLX's.
GGUF_LADDER = ("q8_0", "q6_k", "q5_k_m", "q4_k_m", "q3_k_m", "q2_k")
GPU_LADDER = ("fp8", "int8", "awq-4bit", "gptq-3bit")
MLX_LADDER = ("mlx-8bit", "mlx-4bit")


def formats_to_try(stated: Iterable[str], engine: EngineProfile | None = None) -> tuple[str, ...]:
    """The weight formats to try when the plan leaves ``inference.weight_format`` open (``stated``: the
    inference fields the plan states), else none: the search tries them in order, least quantised first, only
    when nothing fits in the plan's own format. ``engine``: the plan's engine profile, whose own ladder is tried: GGUF
    presets for llama.cpp and Ollama (``partial_offload``), MLX's for MLX, and for the serving engines their
    checkpoint formats (FP8, INT8, AWQ, GPTQ), never GGUF types: vLLM was offered IQ3_S for Llama-3.1-8B at 128K
    tokens on a 24 GB card, and bitsandbytes NF4 (the largest 4-bit format, not the one people serve) for 70B.
    Without an engine (a neutral runtime): the serving ladder."""
    from llmplan.core.quant import parse_weight_format

    if "weight_format" in set(stated):
        return ()
    if engine is None:
        return GPU_LADDER
    ladder = GGUF_LADDER if engine.partial_offload else MLX_LADDER if "mlx" in engine.weight_formats else GPU_LADDER
    loads = engine.weight_formats
    return tuple(f for f in ladder if not loads or parse_weight_format(f).kind in loads)


def offloads_layers(est: Estimate, num_layers: int) -> bool:
    """llama.cpp or Ollama keeps some of the model's layers in host RAM (``gpu_layers`` below its layers): the
    engine says it "fits", at a fraction of the speed. Where the plan leaves the weight format open, any format of
    the engine's ladder that holds every layer on the GPUs is preferred to such a layout, and the layouts that
    hold every layer rank first (``search.inference``); offload is the answer only when no format fits on the GPUs.
    (A user with 2 × 24 GB asking about a 70B model means the Q4_K_M file split over both cards, ~18 tokens/s,
    not bf16 with 66 of 80 layers in host RAM at ~0.6.) llama.cpp's input embedding, always in host RAM, is
    not an offload. Routed experts kept in host RAM (``--n-cpu-moe``, ``experts_in_host``) are one: every layer is on
    the GPUs, but each token reads its experts from host RAM."""
    inf = est.inference
    return inf is not None and ((inf.gpu_layers is not None and inf.gpu_layers.value < num_layers)
                                or experts_in_host(est) > 0)


def experts_in_host(est: Estimate) -> int:
    """MoE layers whose routed experts the estimate keeps in host RAM (llama.cpp ``--n-cpu-moe``); 0 if none."""
    f = est.inference.cpu_moe_layers if est.inference is not None else None
    return int(f.inputs["moe_layers_in_host"]) if f is not None else 0


def smaller_formats(model: ModelSpec, own: str, formats: Iterable[str]) -> tuple[str, ...]:
    """The formats of ``formats`` (a ladder, in order) whose weights are smaller than in ``own``, the plan's
    format: the ones worth trying when ``own`` does not fit on the GPUs."""
    from llmplan.core.quant import quantized_weights

    size = quantized_weights(model, own.lower()).total_bytes
    return tuple(f for f in formats if f != own.lower() and quantized_weights(model, f).total_bytes < size)


def offload_format(model: ModelSpec, own: str, formats: Iterable[str], engine: EngineProfile | None) -> str:
    """The format of the offload answer where the plan leaves its format open (``formats``: ``formats_to_try``,
    empty when the plan states one) and no format fits on the GPUs: the engine's usual file
    (``EngineProfile.default_format``, llama.cpp's and Ollama's Q4_K_M) when it is one the engine's ladder offers
    and smaller than ``own``; else "" (offload in the plan's own format). Nobody runs a bf16 70B GGUF with 66 of
    80 layers in host RAM on a 24 GB card (0.60 tokens/s, 109 GiB of host RAM); the Q4_K_M file leaves 32 there
    (3.55 tokens/s, 16.8 GiB: docs/fit.md)."""
    usual = engine.default_format if engine is not None else ""
    return usual if usual and usual in smaller_formats(model, own, formats) else ""


def usual_offload_words(fmt: str, gpu_layers: float | None, num_layers: int, engine: EngineProfile | None) -> str:
    """What to say when the answer is ``offload_format``'s (``fmt`` with ``gpu_layers`` of ``num_layers`` on the
    GPUs), e.g. "the plan leaves the format open; llama.cpp's usual Q4_K_M with 32 of 80 layers in host RAM" (the
    CLI's auto line, the search note and the this-machine verdict say it alike); "" when it is not such an answer
    (not the engine's usual format, or every layer on the GPUs)."""
    if engine is None or gpu_layers is None or gpu_layers >= num_layers or fmt.lower() != engine.default_format:
        return ""
    return (f"the plan leaves the format open; {engine.name}'s usual {fmt.upper()} with {num_layers - int(gpu_layers)}"
            f" of {num_layers} layers in host RAM")


def apply_policy(scenario: Scenario, automatic: Iterable[str], engine: Callable[[Scenario], Estimate]
                 ) -> AutoChoice:
    """The plan as it is when it fits (or is not training); else the first step of ``LADDER`` over
    the ``automatic`` knobs at which ``engine`` says it fits (see module doc)."""
    auto = set(automatic)
    if scenario.workload == "inference" or not auto:
        return AutoChoice(scenario)
    t, p = scenario.training, scenario.parallelism
    # a ZeRO stage left automatic that the framework does not run here moves to the nearest it runs, and says so
    # ("auto: ZeRO-2": FSDP has no ZeRO-1); framework_profile.auto_zero
    zero = auto_zero(scenario.framework, t.zero_stage, p.gpus, p.dp * p.cp, t.offload, p.pp) \
        if "zero_stage" in auto else t.zero_stage
    updates: dict[str, Any] = {} if zero == t.zero_stage else {"zero_stage": zero}  # what the policy set
    note = None
    if updates:
        note = (zero, f"{scenario.framework.id} runs no ZeRO-{t.zero_stage}{' on one GPU' if p.gpus == 1 else ''}; "
                      f"the nearest it runs")
        scenario = scenario.model_copy(update={"training": t.model_copy(update=updates)})
        t = scenario.training
    try:
        as_is = engine(scenario)
    except LlmplanError:
        return AutoChoice(scenario)  # the plan itself is invalid: the caller reports that
    closest = AutoChoice(scenario, tuple(updates.items()), as_is, note)
    if as_is.fits:
        return closest
    taken: set[str] = set()  # the ladder's steps so far
    can_offload = offers_offload(scenario.framework, "cpu")  # unsloth has none: the ladder stops before it
    stages = zero_choices(scenario.framework, p.gpus)  # the ZeRO stages it runs on these GPUs
    for knob, value in LADDER:
        if knob not in auto or getattr(t, knob) == value or knob in taken:
            continue
        if knob == "offload" and not can_offload:
            continue
        step: dict[str, object] = {knob: value}
        if knob == "zero_stage" and p.pp > 1:
            continue  # DeepSpeed refuses ZeRO-3 with pipeline stages
        zero_now = updates.get("zero_stage", t.zero_stage)
        if knob == "offload" and zero_now not in stages and "zero_stage" in auto:  # the offload it runs here
            step["zero_stage"] = nearest_zero(scenario.framework, zero_now, p.gpus, p.pp)
        if knob == "zero_stage" and p.dp * p.cp == 1 and t.offload == "none":
            if "offload" not in auto or not can_offload:
                continue  # one rank and no offload to take with it: nothing to shard over
            step["offload"] = "cpu"  # ZeRO-3 on one GPU comes with its offload (module doc)
            if one_gpu_offload_first(scenario, updates, auto):  # torchtune: torchao's CPUOffloadOptimizer first
                zero0 = {"zero_stage": 0} if updates.get("zero_stage", t.zero_stage) else {}  # ZeRO-1 on one GPU
                got = _try(scenario, {**updates, **zero0, "offload": "cpu"}, engine)  # shards nothing: same plan
                if got is not None and got.estimate.fits:
                    return got
                if got is not None and got.estimate.memory.total.value < closest.estimate.memory.total.value:
                    closest = got
        if knob == "zero_stage" and value not in stages:
            continue  # no ZeRO-3 under this framework here (unsloth; torchtune's single-device recipes)
        trial = scenario.model_copy(update={"training": t.model_copy(update={**updates, **step})})
        try:
            est = engine(trial)
        except LlmplanError:
            continue  # this step is not valid for the layout: skip it
        updates.update(step)
        taken.update(step)
        if est.fits:
            return AutoChoice(trial, tuple(updates.items()), est, note)
        if est.memory.total.value < closest.estimate.memory.total.value:
            closest = AutoChoice(trial, tuple(updates.items()), est, note)
    return closest


def one_gpu_offload_first(scenario: Scenario, updates: dict[str, object], auto: Iterable[str]) -> bool:
    """Whether the ladder tries the framework's one-GPU offload (offload at ZeRO-0: torchtune's single-device
    recipes, torchao's CPUOffloadOptimizer; ``framework_profile.offload_view``) before ZeRO-3 with offload: the
    plan runs on one GPU under a profile that has one, at ZeRO-0 or with the ZeRO stage automatic (module doc)."""
    zero = updates.get("zero_stage", scenario.training.zero_stage)
    return (bool(scenario.framework.single_gpu_offload_style) and scenario.parallelism.gpus == 1
            and (zero == 0 or "zero_stage" in set(auto)) and offers_offload(scenario.framework, "cpu"))


def _try(scenario: Scenario, updates: dict[str, object], engine: Callable[[Scenario], Estimate]
         ) -> AutoChoice | None:
    """The plan with the training ``updates`` and its estimate, None where the engine refuses it."""
    trial = scenario.model_copy(update={"training": scenario.training.model_copy(update=updates)})
    try:
        return AutoChoice(trial, tuple(updates.items()), engine(trial))
    except LlmplanError:
        return None
