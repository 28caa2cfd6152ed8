"""LoRA and QLoRA: trainable adapter counts, NF4 storage, and the papers' memory claims."""

import pytest

from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec, GpuSpec, PeakFlops
from llmplan.core.params import count_params
from llmplan.core.training.lora import adapter_params, nf4_bits_per_param
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings
from llmplan.formats.hf_config import spec_from_config

from .helpers import gpt, scenario

GPT3 = gpt(12288, 96, 96, vocab=50257, name="GPT-3 175B")
LLAMA_65B = spec_from_config(dict(model_type="llama", vocab_size=32000, hidden_size=8192, num_hidden_layers=80,
                                  num_attention_heads=64, intermediate_size=22016))


@pytest.mark.parametrize(("targets", "rank"), [(("q", "v"), 4), (("q", "k", "v", "o"), 2), (("q",), 8)])
def test_gpt3_adapter_budget_of_lora_table5(targets, rank):
    # Hu et al. 2022, Table 5 header: "# of Trainable Parameters = 18M" for Wq,Wv r=4; Wq,Wk,Wv,Wo r=2; Wq r=8
    # on GPT-3 175B. Exactly: 96 layers · modules · r · (12288 + 12288) = 18,874,368. Tolerance 5% (the paper
    # rounds to "18M").
    n = adapter_params(count_params(GPT3), GPT3, None, TrainingSettings(lora_rank=rank, lora_targets=targets))
    assert n == 96 * len(targets) * rank * 2 * 12288
    assert n == pytest.approx(18e6, rel=0.05)


def test_gpt3_lora_model_states_are_the_frozen_fp16_weights():
    # Hu et al. 2022 §4.2: LoRA on GPT-3 175B (r=4, Wq and Wv) needs 350 GB of VRAM for training instead of
    # 1.2 TB; 350 GB is the fp16 frozen model (175B × 2 B). Our model states (weights + adapter gradients,
    # master copy and Adam states) must equal 2 B/param + 18 B per adapter param; within 1% of 350 GB.
    sc = scenario(GPT3, 1, method="lora", lora_rank=4, lora_targets=("q", "v"), seq_len=2048, zero_stage=0)
    mem = estimate(sc).memory
    states = mem.weights.value + mem.gradients.value + mem.master_weights.value + mem.optimizer.value
    assert states == pytest.approx(350e9, rel=0.01)


def test_nf4_bits_per_parameter():
    # Dettmers et al. 2023 §3: blocksize-64 fp32 absmax costs 32/64 = 0.5 bit/param; double quantisation
    # (8-bit constants, blocksize 256) brings it to 8/64 + 32/(64·256) = 0.127 bit/param (the paper: 0.127).
    assert nf4_bits_per_param(False) == pytest.approx(4.5)
    assert nf4_bits_per_param(True) == pytest.approx(4.127, abs=5e-4)


def test_qlora_65b_fits_one_48gb_gpu():
    # Dettmers et al. 2023, abstract: QLoRA "reduces memory usage enough to finetune a 65B parameter model on
    # a single 48GB GPU". Setting as in their §4 (LoRA on all linear layers, r=64, gradient checkpointing,
    # micro-batch 1 of 512 tokens). A 48 GB RTX A6000-like card; it must fit, and full LoRA in bf16 must not.
    gpu = GpuSpec(id="a6000", name="RTX A6000", vendor="nvidia", memory_bytes=48 * 2**30,
                  memory_bandwidth=768e9, peak_flops=PeakFlops(bf16=154.8e12))
    cluster = ClusterSpec(gpu=gpu)

    def sc(method):
        return Scenario(model=LLAMA_65B, cluster=cluster, workload="finetune",
                        training=TrainingSettings(method=method, lora_rank=64, seq_len=512, recompute="full",
                                                  zero_stage=0, optimizer="adam8bit"),
                        parallelism=ParallelLayout())

    q = estimate(sc("qlora"))
    assert q.fits, q.memory.total.value / 2**30
    # 65.3B params: 64.7B block weights in NF4 at 4.127 bits + bf16 embeddings + 0.8B bf16 adapters (r=64)
    assert 35e9 < q.memory.weights.value < 37e9
    assert not estimate(sc("lora")).fits


def test_lora_trains_less_and_flops_skip_weight_gradients():
    m = LLAMA_65B
    full = estimate(scenario(m, 8, tp=8, seq_len=1024))
    lora = estimate(scenario(m, 8, tp=8, seq_len=1024, method="lora"))
    assert lora.memory.optimizer.value < 0.02 * full.memory.optimizer.value
    # frozen base weights: forward + input gradient only, ~2/3 of full training's FLOPs
    ratio = lora.compute.flops_per_step.value / full.compute.flops_per_step.value
    assert 0.6 < ratio < 0.75
