"""Every input in a figure's explanation prints with its unit at a readable scale.

Found by the 2026-11-28 user trial of the app: the formula tooltips read "capacity = 2.57572e+10" and
"per_block = 1.05002e+09" (raw SI floats). ``Figure.describe`` now prints each input in its unit
(``core.input_units`` + ``core.present.quantity``); the app's tooltips and exports read it.
Exact text checks (no tolerance): the inputs are the engine's own values, formatted.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from llmplan.core.explain import Figure
from llmplan.core.input_units import input_unit
from llmplan.core.present import quantity
from llmplan.plan.document import PlanDocument
from llmplan.plan.evaluate import evaluate_plan

H100 = "nvidia-h100-sxm-80gb"
PLANS = {
    "lora-8b-h100": dict(model={"id": "meta-llama/Llama-3.1-8B"}, workload="finetune", training={"method": "lora"},
                         hardware={"gpu": H100, "gpus_per_node": 1, "nodes": 1}),
    "qlora-offload-4090": dict(model={"id": "meta-llama/Llama-3.1-8B"}, workload="finetune",
                               hardware={"gpu": "nvidia-rtx-4090-24gb", "gpus_per_node": 1, "nodes": 1},
                               training={"method": "full", "zero_stage": 3, "offload": "cpu"}),
    "pretrain-70b-512": dict(model={"id": "meta-llama/Meta-Llama-3-70B"}, workload="pretrain",
                             hardware={"gpu": H100, "gpus_per_node": 8, "nodes": 64, "network": "ib-ndr-400"},
                             parallelism={"tp": 4, "pp": 2, "dp": 64, "virtual_stages": 8}),
    "moe-ep": dict(model={"id": "Qwen/Qwen3-30B-A3B"}, workload="pretrain", training={"zero_stage": 3},
                   hardware={"gpu": H100, "gpus_per_node": 8, "nodes": 2, "network": "ib-ndr-400"},
                   parallelism={"tp": 1, "pp": 1, "dp": 16, "ep": 8}),
    "llama.cpp-70b-4090": dict(model={"id": "meta-llama/Llama-3.1-70B"}, workload="inference",
                               hardware={"gpu": "nvidia-rtx-4090-24gb", "gpus_per_node": 1, "nodes": 1},
                               inference={"engine": "llama.cpp", "weight_format": "q4_k_m"}),
    "vllm-70b-tp4": dict(model={"id": "meta-llama/Llama-3.1-70B"}, workload="inference", parallelism={"tp": 4},
                         hardware={"gpu": H100, "gpus_per_node": 4, "nodes": 1},
                         inference={"engine": "vllm", "weight_format": "fp8", "batch": 32}),
}


def _figures(obj, depth=0):
    if isinstance(obj, Figure):
        yield obj
    elif depth < 6 and dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from _figures(getattr(obj, f.name), depth + 1)
    elif depth < 6 and isinstance(obj, dict):
        for v in obj.values():
            yield from _figures(v, depth + 1)
    elif depth < 6 and isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _figures(v, depth + 1)


def _evaluation(name):
    return evaluate_plan(PlanDocument.model_validate({"name": name, **PLANS[name]}))[1]


@pytest.mark.parametrize("name", sorted(PLANS))
def test_every_numeric_input_has_a_unit_and_no_exponent(name):
    figures = list(_figures(_evaluation(name)))
    assert len(figures) > 20
    for fig in figures:
        for key, value in fig.inputs.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                assert input_unit(key, fig.unit), (key, fig.unit, fig.formula)
        inputs = [line for line in fig.describe().splitlines() if line.startswith("inputs: ")]
        assert not any(re.search(r"\de[+-]?\d", line) for line in inputs), inputs


def test_representative_tooltips_name_their_units():
    ev = _evaluation("vllm-70b-tp4")
    est = ev.estimate
    kv_pool = est.inference.kv_pool_bytes.describe()
    assert re.search(r"capacity = [\d.,]+ GiB, fixed = [\d.,]+ GiB", kv_pool), kv_pool
    tpot = est.inference.tpot_s.describe()
    assert re.search(r"bandwidth = [\d.,]+ GB/s", tpot) and "context = " in tpot and " tokens" in tpot, tpot
    train = _evaluation("lora-8b-h100").estimate
    step = train.compute.compute_time_s.describe()
    assert re.search(r"peak_flops = 989 TFLOP/s", step) and re.search(r"gemm = [\d.]+ s", step), step
    assert re.search(r"per_block = [\d.,]+ (MiB|GiB), blocks = 32,", train.memory.activations.describe())


def test_quantity_scales():
    assert quantity(2.57572e10, "B") == "23.99 GiB"
    assert quantity(2.68e12, "B/s") == "2,680.0 GB/s"
    assert quantity(9.894e14, "FLOP/s") == "989 TFLOP/s"
    assert quantity(0.005943, "s") == "5.94 ms"
    assert quantity(1152, "tokens") == "1,152 tokens"
    assert quantity(0.801, "share") == "80.1 %"
    assert quantity(8.03e9, "params") == "8.03 B"
    assert quantity(2.5e10, "") == "25,000,000,000"  # an input of no known unit: never '2.5e+10'
