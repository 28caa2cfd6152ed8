"""The 8 GB M1 case of issue 24: Metal lets the GPU wire 2/3 of 8 GiB (5.33 GiB), and LLaMA 7B Q4_0 runs there.

Published run: llama.cpp PR #1642 (Metal inference, 2023-06-03), an 8 GB M1 MacBook Air, 7B q4_0, -c 2048,
all layers on the GPU: 71.24 ms per token. The verdict must be "fits"; speed within 25% (the run predates
llama.cpp's later Metal kernels, and the M1 Air's 7-core GPU). 13B Q4_0 (6.9 GiB of weights) cannot fit."""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.workload import InferenceSettings, Scenario

M1_8GB = load_hardware_catalog().gpu("apple-m1-7c-8gb").spec
GIB = 2**30


def run(model_id: str, fmt: str, engine: str = "llama-cpp"):
    sc = Scenario(model=load_model_catalog().get(model_id).spec, cluster=ClusterSpec(gpu=M1_8GB),
                  workload="inference",
                  inference=InferenceSettings(engine=engine, weight_format=fmt, kv_dtype="fp16",
                                              prompt_tokens=2048 - 64, output_tokens=64, gpu_layers=10_000),
                  engine_profile=engine_profile(engine))
    return estimate(sc)


def test_wired_limit_is_two_thirds_of_8_gib():
    assert M1_8GB.usable_memory_bytes == pytest.approx(8 * GIB * 2 / 3, rel=1e-3)


def test_7b_q4_0_fits_and_runs_near_the_published_speed():
    est = run("meta-llama/Llama-2-7b-hf", "q4_0")
    assert est.fits
    assert est.inference.tpot_s.value == pytest.approx(71.24e-3, rel=0.25)


def test_7b_mlx_4bit_fits_too_and_13b_does_not():
    assert run("meta-llama/Llama-2-7b-hf", "mlx-4bit", engine="mlx").fits
    assert not run("meta-llama/Llama-2-13b-hf", "q4_0").fits
