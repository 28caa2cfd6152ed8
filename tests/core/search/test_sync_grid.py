"""The search and the engine agree (issue 16, "one truth").

Serving: every (model kind × weight format the quant module knows × inference engine) cell; the
search runs every layout through the inference engine, so its figures must equal a fresh
engine estimate of the layout it chose (to 1e-9), and it says "no layout fits" exactly when
the engine fits none of the layouts (tp, pp) on the cluster.

Training: every (model kind × bf16/fp8 × full/LoRA/QLoRA × optimizer × ZeRO 0-3) cell on 8 H100,
in two layouts (dp = 8; tp 2 × pp 2 × dp 2, with ep 2 for the MoE model, full recompute, micro-batch
2). Memory: the quick model calls the engine's own functions (``search/quick_memory.py``), so every
cell must agree within 2% (measured: to rounding). Tokens/s: the quick model's compute is the
engine's per-operation model (``timing.layer_and_head``, priced once per distinct per-GPU shape), and
its TP, CP, PP, EP and DP collectives, optimizer pass and offload are the engine's functions too
(``search/quick_time.py``). The issue asks for 5%; the test holds 1e-6, because the two are the same
functions (measured to rounding on 2026-11-27; with the quick model's own copies of the communication
terms the same grid was 0.940-1.037, the dense ZeRO-3 fp8 cells 5-6% low). The search still re-checks its finalists with the full engine and
says "no layout fits" only after the engine checked the most memory-frugal layouts
(``planner.FRUGAL_CHECKS``).
"""

from __future__ import annotations

import itertools

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.core.engine import estimate
from llmplan.core.engine_profile import check_weight_format
from llmplan.core.quant import known_formats
from llmplan.core.search import search
from llmplan.core.search.inference import candidate_layouts
from llmplan.core.search.planner import quick_layout, scenario_for
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.errors import LlmplanError
from llmplan.plan.document import HardwareRef, InferenceSettings, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve

MODELS = {"dense": "meta-llama/Llama-3.2-1B", "moe": "Qwen/Qwen1.5-MoE-A2.7B", "mla": "deepseek-ai/DeepSeek-V2-Lite"}
ENGINES = ("vllm", "sglang", "tensorrt-llm", "tgi", "llama-cpp", "ollama", "mlx", "transformers")
OPTIMIZERS = ("sgd", "momentum", "adamw", "adam8bit", "adafactor", "lion", "muon")


def _scenario(model: str, gpu: str, gpus: int, workload: str, **inference):
    doc = PlanDocument(name="grid", model=ModelRef(id=model), hardware=HardwareRef(gpu=gpu, gpus_per_node=gpus),
                       workload=workload, inference=InferenceSettings(**inference))
    return resolve(doc)


@pytest.mark.parametrize("kind", sorted(MODELS))
@pytest.mark.parametrize("engine", ENGINES)
def test_serving_search_equals_the_engine(kind, engine):
    gpu = "apple-m4-max-40c-64gb" if engine == "mlx" else "nvidia-rtx-4090-24gb"
    for fmt in known_formats():
        if check_weight_format(engine_profile(engine), fmt):
            continue  # a format the engine does not load is refused by resolve (plan/test_engine_formats.py)
        sc = _scenario(MODELS[kind], gpu, 1 if engine == "mlx" else 2, "inference", engine=engine,
                       weight_format=fmt, prompt_tokens=4096, output_tokens=512)
        result = search(sc, top=1, refine=estimate)
        fits = []
        for lay in candidate_layouts(sc):
            try:
                fits.append(estimate(scenario_for(sc, lay, sc.training)).fits)
            except LlmplanError:
                fits.append(False)
        assert bool(result.best) == any(fits), (kind, engine, fmt, result.note)
        if result.best:
            best = result.best[0]
            e = estimate(scenario_for(sc, best.parallelism, sc.training))
            assert best.memory_bytes == pytest.approx(e.memory.total.value, rel=1e-9)
            assert best.tokens_per_s == pytest.approx(e.inference.tokens_per_s.value, rel=1e-9)


LAYOUTS = {"dp8": (ParallelLayout(tp=1, pp=1, dp=8), "none", 1),
           "tp2-pp2-dp2": (ParallelLayout(tp=2, pp=2, dp=2), "full", 2)}


@pytest.mark.parametrize("kind", sorted(MODELS))
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_training_quick_model_is_the_engines_memory(kind, name):
    base = _scenario(MODELS[kind], "nvidia-h100-sxm-80gb", 8, "pretrain")
    layout, recompute, mb = LAYOUTS[name]
    if kind == "moe" and layout.dp > 1 and layout.pp > 1:
        layout = layout.model_copy(update={"ep": 2})
    cells = 0
    for prec, method, opt, zero in itertools.product(("bf16", "fp8"), ("full", "lora", "qlora"), OPTIMIZERS,
                                                     (0, 1, 2, 3)):
        if layout.pp > 1 and zero > 1:
            continue  # ZeRO-2/3 do not combine with pipeline stages (planner.space)
        t = TrainingSettings(precision=prec, method=method, optimizer=opt, zero_stage=zero, seq_len=2048,
                             global_batch=16, micro_batch=mb, recompute=recompute)
        sc = scenario_for(base.model_copy(update={"training": t}), layout, t)
        e = estimate(sc)
        _ranked, q = quick_layout(sc)
        mem = q.memory[0] / e.memory.total.value
        tps = q.tokens_per_s[0] / e.compute.tokens_per_s.value
        assert abs(mem - 1) <= 0.02, (prec, method, opt, zero, mem)
        assert abs(tps - 1) <= 1e-6, (prec, method, opt, zero, tps)  # the engine's functions (module doc)
        cells += 1
    assert cells == 2 * 3 * 7 * (2 if layout.pp > 1 else 4)
