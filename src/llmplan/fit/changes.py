"""The nearest changes that make a plan fit this machine, ranked by how much of the intent they give up.

A *step* is one edit of the plan (``--set`` overrides) with a *distance*: lower is nearer to
what the user asked for. The scale (docs/fit.md, "Distance"):

- weights: ``0.05 + 2 × Δppl``, Δppl the perplexity increase llama.cpp's quantize tool prints for
  each type on Llama-3-8B (tools/quantize/quantize.cpp, ``QUANT_OPTIONS``: Q8_0 +0.0026, Q6_K
  +0.0217, Q5_K_M +0.0569, Q4_K_M +0.1754, Q3_K_M +0.6569, Q2_K +3.5199). Formats llama.cpp does
  not list are given the Δppl of the GGUF type of the same width (an llmplan assumption: fp8/int8
  as Q8_0, 4-bit AWQ/GPTQ/NF4/MLX as Q4_K_M, 3-bit GPTQ as Q3_K_M). A model released with MXFP4 experts
  (gpt-oss) loses nothing in them: its GGUFs are charged for the rest only (``mxfp4_moe``: Q8_0), and no
  other GGUF preset is offered for it, since every published quant of gpt-oss keeps the experts MXFP4 and
  differs by under 2 GB (bartowski's gpt-oss-20b model card, llama.cpp b6096) where llmplan's presets would
  requantise them;
- KV cache in 8 bits: 0.05 (q8_0) or 0.1 (fp8); 4 bits: 0.5 (assumptions: no common benchmark);
- context: ``2 × (1 - kept fraction)`` (halving the context costs 1.0);
- batch / concurrency: ``1 - kept fraction``;
- layers in host RAM: ``1.5 × the fraction of weight bytes left there`` (decode reads them at host
  bandwidth, an order of magnitude below the GPU's);
- switching to llama.cpp: 0.2 plus its weight format's distance;
- training speed changes (full recompute, CPU offload, smaller micro-batch, ZeRO-3): 0.05–0.1 plus the
  fraction of tokens/s lost, from the engine; LoRA instead of full: 1.0; QLoRA instead of full: 1.2,
  instead of LoRA: 0.2;
- more GPUs in the node (only for a plan on catalog hardware, where GPUs can be added): ``0.3`` per
  doubling (an llmplan assumption: it costs money, not quality or speed; a doubling is ranked below
  4-bit weights and below halving the context);
- a pair of changes: the sum.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from llmplan.core.framework_profile import offers_offload, offload_view, offload_words, zero_choices
from llmplan.core.kvcache import eight_bit_kv
from llmplan.core.search.policy import GGUF_LADDER, GPU_LADDER, MLX_LADDER
from llmplan.fit.local import FitChange, FitSummary, LocalMachine
from llmplan.fit.trial import engine_of, framework_of, gib, outcome, speed_of, try_change
from llmplan.plan.document import PlanDocument
from llmplan.plan.overrides import parse_value

# Perplexity increase on Llama-3-8B printed by llama.cpp's quantize tool (source above).
QUALITY_LOSS = {
    "fp32": 0.0, "f32": 0.0, "bf16": 0.0, "fp16": 0.0, "f16": 0.0,
    "q8_0": 0.0026, "q6_k": 0.0217, "q5_k_m": 0.0569, "q5_k_s": 0.1049, "q4_k_m": 0.1754,
    "q4_k_s": 0.2689, "q3_k_l": 0.5562, "q3_k_m": 0.6569, "q3_k_s": 1.6321, "q2_k": 3.5199,
    # assumed equal to the GGUF type of the same width (see the module docstring)
    "fp8": 0.0026, "fp8-channel": 0.0026, "int8": 0.0026, "w8a8": 0.0026, "gptq-8bit": 0.0026,
    "mlx-8bit": 0.0026, "awq-4bit": 0.1754, "gptq-4bit": 0.1754, "nf4": 0.1754, "mlx-4bit": 0.1754,
    "gptq-3bit": 0.6569, "gptq-2bit": 3.5199,
    # the released MXFP4 experts as they are; the rest as its own type
    "mxfp4": 0.0, "mxfp4_bf16": 0.0, "mxfp4_moe": 0.0026,
}
MXFP4_RELEASED = ("mxfp4", "mxfp4_bf16", "mxfp4_moe")  # formats that keep gpt-oss's MXFP4 experts
CONTEXT_FLOOR = 256
SEQ_FLOOR = 512
HALVINGS = 6
MAX_CHANGES = 5


@dataclass(frozen=True)
class Step:
    kind: str
    overrides: tuple[str, ...]
    what: str  # "Use Q4_K_M weights instead of bf16"
    base_distance: float
    speed_penalty: bool = False  # add the fraction of tokens/s lost (offloaded layers always add theirs)


_LABELS = {"awq-4bit": "AWQ 4-bit", "gptq-4bit": "GPTQ 4-bit", "gptq-3bit": "GPTQ 3-bit", "gptq-8bit": "GPTQ 8-bit",
           "mlx-4bit": "MLX 4-bit", "mlx-8bit": "MLX 8-bit", "nf4": "NF4", "int8": "INT8 (LLM.int8)"}


def format_label(fmt: str) -> str:
    """How people write a weight format: Q4_K_M, FP8, AWQ 4-bit, bf16."""
    low = fmt.lower()
    if low in ("bf16", "fp16", "fp32", "f16", "f32"):
        return low
    return _LABELS.get(low, low.upper())


def weight_distance(fmt: str) -> float:
    return 0.05 + 2 * QUALITY_LOSS.get(fmt.lower(), 0.2)


def _weight_steps(doc: PlanDocument, gguf_engine: bool, cpu_only: bool) -> list[Step]:
    fmt = doc.inference.weight_format.lower()
    now = QUALITY_LOSS.get(fmt, 0.0)
    engine = (doc.inference.engine or "").lower()
    ladder = GGUF_LADDER if gguf_engine else MLX_LADDER if engine == "mlx" else GPU_LADDER
    gguf_ladder = ("bf16", *GGUF_LADDER)
    if fmt in MXFP4_RELEASED:  # no smaller file exists than the MXFP4 GGUF with Q8_0 attention
        ladder = ("mxfp4_moe",) if gguf_engine else ()
        gguf_ladder = ("mxfp4_moe",)
    steps = [Step("weights", (f"inference.weight_format={f}",), f"Use {format_label(f)} weights instead of {format_label(fmt)}",
                  weight_distance(f)) for f in ladder if QUALITY_LOSS[f] > now]
    if not gguf_engine:
        # llama.cpp runs GGUF files on any GPU, a Mac or the CPU alone, splits layers over several GPUs
        # and, on one, can leave layers in host RAM
        gpus = doc.hardware.gpus_per_node
        for f in gguf_ladder:
            if QUALITY_LOSS[f] < now:
                continue
            steps.append(Step("engine", ("inference.engine=llama.cpp", f"inference.weight_format={f}",
                                         "inference.gpu_layers=null", "parallelism.tp=1", f"parallelism.pp={gpus}"),
                              f"Run it with llama.cpp and {format_label(f)} weights", 0.2 + weight_distance(f) - 0.05))
    return steps


def inference_steps(doc: PlanDocument, cpu_only: bool) -> list[list[Step]]:
    """Groups of steps, mildest first; within a group the first that fits is the nearest."""
    inf = doc.inference
    engine = engine_of(doc)
    gguf = engine is not None and engine.partial_offload
    if cpu_only and not gguf:  # only llama.cpp-style engines run without a GPU
        return [[s for s in _weight_steps(doc, gguf, cpu_only) if s.kind == "engine"]]
    weights = _weight_steps(doc, gguf, cpu_only)
    groups: list[list[Step]] = [[s for s in weights if s.kind == kind] for kind in ("weights", "engine")]
    kv = inf.kv_dtype.lower()
    eight = eight_bit_kv(engine.kv_dtypes) if engine is not None and engine.kv_dtypes else ("q8_0" if gguf else "fp8")
    if kv in ("bf16", "fp16", "fp32", "f16") and eight:  # the engine's 8-bit cache; MLX and Transformers have none
        groups.append([Step("kv_cache", ("inference.kv_dtype=q8_0",), f"Use a Q8_0 KV cache instead of {kv}", 0.05)
                       if eight == "q8_0" else Step("kv_cache", (f"inference.kv_dtype={eight}",),
                                                    f"Use an FP8 KV cache instead of {kv}", 0.1)])
    ctx = inf.prompt_tokens + inf.output_tokens
    prompts, p = [], inf.prompt_tokens
    for _ in range(HALVINGS):
        p //= 2
        if p < CONTEXT_FLOOR:
            break
        kept = (p + inf.output_tokens) / ctx
        prompts.append(Step("context", (f"inference.prompt_tokens={p}",),
                            f"Shorten the prompt to {p:,} tokens (from {inf.prompt_tokens:,})", 2 * (1 - kept)))
    groups.append(prompts)
    batches, b = [], inf.batch
    while b > 1 and len(batches) < HALVINGS:
        b //= 2
        batches.append(Step("batch", (f"inference.batch={b}",),
                            f"Serve {b} sequence{'s' if b > 1 else ''} at once (from {inf.batch})", 1 - b / inf.batch))
    groups.append(batches)
    if gguf and inf.gpu_layers is not None and doc.parallelism.tp * doc.parallelism.pp == 1:
        groups.append([Step("offload", ("inference.gpu_layers=null",), "Keep only the layers that fit on the GPU",
                            0.0)])
    return [g for g in groups if g]


_FREED = ("Offload the optimizer states and gradients to CPU RAM and free each gradient on the GPU once copied "
          "(torchao CPUOffloadOptimizer, offload_gradients)")
_FREED_ALONE = "Free each gradient on the GPU once it is copied to CPU RAM (torchao offload_gradients)"


def _one_micro_batch(tr) -> bool:
    """Whether a one-GPU plan runs one micro-batch per step: torchao's offload_gradients cannot accumulate."""
    return 0 < tr.global_batch <= tr.micro_batch


def training_steps(doc: PlanDocument, gpu_count: int) -> list[list[Step]]:
    tr = doc.training
    groups: list[list[Step]] = []
    if tr.recompute != "full":
        groups.append([Step("recompute", ("training.recompute=full",),
                            f"Recompute activations in full (from {tr.recompute})", 0.05, speed_penalty=True)])
    prof = framework_of(doc)
    if tr.offload == "none" and tr.method != "qlora" and prof is not None and offers_offload(prof, "cpu"):
        # only the offload the framework has (unsloth: none), in its terms: Megatron-Core's optimizer only,
        # FSDP's parameters with the optimizer (a fully sharded model), DeepSpeed's ZeRO-Offload
        stages = zero_choices(prof, gpu_count)  # the ZeRO stages it runs here (torchtune, one GPU: 0 only)
        zero = 3 if prof.offload_style == "fsdp" else 1
        sets = ("training.offload=cpu",) + ((f"training.zero_stage={zero}",) if tr.zero_stage < zero else ())
        offload = [Step("offload", sets, offload_words(prof), 0.1, speed_penalty=True)] if zero in stages else []
        if gpu_count == 1 and prof.single_gpu_offload_style and 0 in stages:
            # torchtune on one GPU: its single-device recipe's CPUOffloadOptimizer (no ZeRO, the parameters stay;
            # framework_profile.offload_view), first where the distributed recipe's FSDP offload is offered too
            one = offload_view(prof, "cpu", 0, 1)
            sets = ("training.offload=cpu",) + (("training.zero_stage=0",) if tr.zero_stage else ())
            offload = [Step("offload", sets, offload_words(one), 0.1, speed_penalty=True),
                       *([Step("offload", (*sets, "training.offload_gradients=true"), _FREED, 0.11, speed_penalty=True)]
                         if _one_micro_batch(tr) else []),
                       *(replace(s, base_distance=0.12) for s in offload)]
        if offload:
            groups.append(offload)
    elif (tr.offload == "cpu" and not tr.offload_gradients and _one_micro_batch(tr) and gpu_count == 1
          and tr.zero_stage == 0 and prof is not None and prof.single_gpu_offload_style == "torchao"):
        groups.append([Step("offload_gradients", ("training.offload_gradients=true",), _FREED_ALONE, 0.05)])
    if tr.optimizer == "adamw":
        groups.append([Step("optimizer", ("training.optimizer=adam8bit",), "Use 8-bit Adam instead of AdamW", 0.1)])
    batches, b = [], tr.micro_batch
    while b > 1 and len(batches) < HALVINGS:
        b //= 2
        batches.append(Step("batch", (f"training.micro_batch={b}",),
                            f"Use micro-batch {b} (from {tr.micro_batch}; gradient accumulation keeps the batch)",
                            0.05, speed_penalty=True))
    if batches:
        groups.append(batches)
    seqs, s = [], tr.seq_len
    for _ in range(HALVINGS):
        s //= 2
        if s < SEQ_FLOOR:
            break
        seqs.append(Step("context", (f"training.seq_len={s}",),
                         f"Train on {s:,}-token sequences (from {tr.seq_len:,})", 2 * (1 - s / tr.seq_len)))
    if seqs:
        groups.append(seqs)
    if doc.workload == "finetune" and tr.method == "full":
        groups.append([Step("method", ("training.method=lora",), "Fine-tune with LoRA instead of all weights", 1.0)])
        groups.append([Step("method_q", ("training.method=qlora",), "Fine-tune with QLoRA instead of all weights", 1.2)])
    elif doc.workload == "finetune" and tr.method == "lora":
        groups.append([Step("method_q", ("training.method=qlora",),
                            "Use QLoRA (4-bit base) instead of LoRA", 0.2)])
    if gpu_count > 1 and tr.zero_stage < 3 and (prof is None or 3 in zero_choices(prof, gpu_count)):
        groups.append([Step("zero3", ("parallelism.tp=1", "parallelism.pp=1", f"parallelism.dp={gpu_count}",
                                      "training.zero_stage=3"),
                            f"Shard everything over the {gpu_count} GPUs with ZeRO-3 (FSDP)", 0.05,
                            speed_penalty=True)])
    return groups


MORE_GPUS_PER_DOUBLING = 0.3
MAX_NODE_GPUS = 8  # the common server node (8-GPU HGX/DGX boards)


def more_gpu_steps(doc: PlanDocument) -> list[list[Step]]:
    """More GPUs in a one-node plan: 2, 4 … 8, split the way the engine splits (llama.cpp: layers;
    other engines: tensor parallel); training: ZeRO-3 over all of them, where the framework runs it
    (``framework_profile.zero_choices``). One group (mildest first)."""
    hw, par = doc.hardware, doc.parallelism
    if hw.nodes != 1 or par.cp != 1 or par.ep != 1:
        return []
    prof = framework_of(doc)
    if prof is not None and 3 not in prof.zero_stages:
        return []  # more GPUs help training by ZeRO-3, which this framework does not run (unsloth)
    steps: list[Step] = []
    n, doublings = hw.gpus_per_node, 0
    while n * 2 <= MAX_NODE_GPUS:
        n, doublings = n * 2, doublings + 1
        if doc.workload == "inference":
            engine = engine_of(doc)
            layers = engine is not None and engine.partial_offload
            split = ("parallelism.tp=1", f"parallelism.pp={n}", "inference.gpu_layers=null") if layers else (
                f"parallelism.tp={n}", "parallelism.pp=1")
            how = "layers split across them" if layers else f"tensor parallel {n}"
            sets = (f"hardware.gpus_per_node={n}", "parallelism.dp=1", *split)
        else:
            sets = (f"hardware.gpus_per_node={n}", "parallelism.tp=1", "parallelism.pp=1", f"parallelism.dp={n}",
                    "training.zero_stage=3")
            how = "ZeRO-3 shards the model states over them"
        steps.append(Step("gpus", sets, f"Use {n} GPUs ({how}; from {hw.gpus_per_node})",
                          MORE_GPUS_PER_DOUBLING * doublings))
    return [steps] if steps else []


@dataclass(frozen=True)
class Tried:
    step: Step
    summary: FitSummary


TIGHT = 0.5  # a change that fits only within the allocator's fragmentation margin (llmplan's assumption)


def _distance(step: Step, s: FitSummary, base_speed: float | None) -> float:
    d = step.base_distance
    if s.estimate is not None and s.estimate.memory.tight:  # it may still run out of memory: not a first choice
        d += TIGHT
    inf = s.estimate.inference if s.estimate is not None else None
    if s.mode == "offload" and inf is not None:
        w = inf.weight_bytes.value
        host = inf.host_weight_bytes.value if inf.host_weight_bytes is not None else 0.0
        d += 1.5 * (host / w if w else 0.0)
    elif s.mode == "offload" and s.gpu_layers is not None and s.total_layers:  # different cards: by layers
        d += 1.5 * (1 - s.gpu_layers / s.total_layers)
    if step.speed_penalty and base_speed:
        new = speed_of(s)
        if new is not None:
            d += max(0.0, 1 - new / base_speed)
    return d


def _pair(a: Step, b: Step) -> Step:
    keys = {o.split("=", 1)[0] for o in a.overrides}
    merged = a.overrides + tuple(o for o in b.overrides if o.split("=", 1)[0] not in keys)
    second = b.what[0].lower() + b.what[1:]
    return Step(f"{a.kind}+{b.kind}", merged, f"{a.what}, and {second}", a.base_distance + b.base_distance,
                a.speed_penalty or b.speed_penalty)


def nearest_changes(base: PlanDocument, base_summary: FitSummary | None, machine: LocalMachine,
                    cpu_only: bool = False, full_gpu: bool = False, max_pairs: int = 10,
                    layout: PlanDocument | None = None, prefix: tuple[str, ...] = (),
                    more_gpus: bool = False) -> tuple[FitChange, ...]:
    """Evaluate the ladder of single changes (each group until one fits), then a few pairs of the
    near misses with the mildest step of each other group; the nearest few that fit, one per kind.
    ``full_gpu``: the plan already fits with CPU offload; look for changes that put it all on the GPU.
    ``layout``/``prefix``: search from another layout of the same machine (``layout``, reached from
    ``base`` by the ``prefix`` overrides); the changes still apply to ``base``. ``more_gpus``: also try
    more GPUs in the node (a plan on catalog hardware; this machine's GPU count is what it is)."""

    def ok(s: FitSummary | None) -> bool:
        return s is not None and s.fits and not (full_gpu and s.mode == "offload")

    origin = layout or base
    groups = (inference_steps(origin, cpu_only) if origin.workload == "inference"
              else training_steps(origin, machine.gpu_count))
    if more_gpus:
        groups += more_gpu_steps(origin)
    if prefix:
        groups = [[replace(st, overrides=prefix + st.overrides) for st in g] for g in groups]
    base_speed = speed_of(base_summary) if base_summary is not None else None
    fitting: list[tuple[float, Step, FitSummary]] = []
    misses: list[Tried] = []
    for group in groups:
        best: tuple[float, Step, FitSummary] | None = None
        for step in sorted(group, key=lambda st: st.base_distance):
            if best is not None and step.base_distance >= best[0]:
                break  # penalties only add: no later step can be nearer
            s = try_change(base, step.overrides, machine, cpu_only)
            if s is None:
                continue
            if ok(s):
                d = _distance(step, s, base_speed)
                if best is None or d < best[0]:
                    best = (d, step, s)
                if s.mode != "offload":
                    break  # later steps in the group only give up more (offloaded ones may cost more speed)
            else:
                misses.append(Tried(step, s))
        if best is not None:
            fitting.append(best)
    if len(fitting) < 3 and misses:
        misses.sort(key=lambda t: t.summary.needed_bytes - t.summary.capacity_bytes)
        fit_kinds = {step.kind for _, step, _ in fitting}
        mildest = [g[0] for g in groups if g[0].kind not in fit_kinds]  # a step that fits alone needs no partner
        tried = 0
        for miss in misses[:3]:
            for other in mildest:
                if other.kind == miss.step.kind or tried >= max_pairs:
                    continue
                step = _pair(miss.step, other)
                tried += 1
                s = try_change(base, step.overrides, machine, cpu_only)
                if ok(s):
                    fitting.append((_distance(step, s, base_speed), step, s))
    current = base.model_dump(mode="json")
    return best_per_kind([FitChange(kind=step.kind, sentence=f"{step.what}: {_weights_note(step, s)}{outcome(s)}",
                                    overrides=_effective(step.overrides, current), distance=round(d, 4), summary=s)
                          for d, step, s in fitting])


def best_per_kind(changes: list[FitChange]) -> tuple[FitChange, ...]:
    """Nearest first, the best of each kind, at most ``MAX_CHANGES``."""
    seen: set[str] = set()
    out: list[FitChange] = []
    for c in sorted(changes, key=lambda c: c.distance):
        if c.kind not in seen:
            seen.add(c.kind)
            out.append(c)
    return tuple(out[:MAX_CHANGES])


def _effective(overrides: tuple[str, ...], current: dict) -> tuple[str, ...]:
    """The overrides that change something (``parallelism.tp=1`` on a one-GPU plan is left out)."""
    def now(path: str):
        node = current
        for key in path.split("."):
            if not isinstance(node, dict) or key not in node:
                return object()
            node = node[key]
        return node

    last: dict[str, str] = {}
    for o in overrides:  # one line per path, the last value wins (as with repeated --set)
        path, _, raw = o.partition("=")
        last[path] = raw
    return tuple(f"{path}={raw}" for path, raw in last.items() if now(path) != parse_value(raw))


def _weights_note(step: Step, s: FitSummary) -> str:
    if "weights" not in step.kind and "engine" not in step.kind:
        return ""
    if s.mixed is not None:
        return f"{gib(s.mixed.weight_bytes)} of weights, "
    if s.estimate is None or s.estimate.inference is None:
        return ""
    return f"{gib(s.estimate.inference.weight_bytes.value)} of weights, "
