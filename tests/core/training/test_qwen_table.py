"""Memory and speed of Qwen's published fine-tuning profile, planned with the hf-trainer profile (issue 26).

Source: QwenLM/Qwen README.md, "Profiling of Memory and Speed" (commit 2df8e8a, 2026-03-05; the table dates
from the Qwen-72B and 1.8B release, 2023-11-30): one A100-SXM4-80G, CUDA 11.8, PyTorch 2.0, FlashAttention 2,
batch size 1, gradient accumulation 8, sequences of 256 ... 8,192 tokens; peak GPU memory ("G", read here as
GiB, the whole device as nvidia-smi shows it: llmplan's total with the CUDA context; the README names neither)
and seconds per iteration (8 micro-batches). 7B full-parameter on 2 GPUs, "LoRA (multinode)" on 2 × 2, 72B LoRA
+ ZeRO-3 on 4: their memory is the sum over the GPUs (7B full at 256 tokens: 139.2 G = 69.6 per GPU).

Settings, from the repository's own scripts (finetune.py and finetune/*.sh at the same commit):
- every script passes ``--gradient_checkpointing`` (recompute full) and pads each sequence to
  ``model_max_length`` (every token is computed: packed in llmplan's terms); ``optim`` adamw_torch;
- LoRA: r = 64, dropout 0.05, targets c_attn, c_proj (the attention's and the MLP's), w1, w2: every linear
  layer. "LoRA (emb)" is the base model, for which finetune.py sets ``modules_to_save = ["wte", "lm_head"]``
  (``training.modules_to_save``); "LoRA" is the chat model (no modules_to_save). Single GPU: no DeepSpeed
  (finetune_lora_single_gpu.sh); multinode: ZeRO-2 (finetune_lora_ds.sh); 72B: ZeRO-3 (as the README says);
- Q-LoRA: the GPTQ Int4 chat model (``quant_base = gptq``), ``--fp16`` with DeepSpeed ZeRO-2 on one GPU
  (finetune_qlora_single_gpu.sh). PEFT's prepare_model_for_kbit_training leaves a GPTQ model's 16-bit
  weights as they are (no fp32 embeddings, head or residual stream: ``framework_profile.kbit_upcast``);
- full-parameter: finetune_ds.sh, ZeRO-3 (ds_config_zero3.json), bf16.
- under DeepSpeed (every run above with ZeRO) the Trainer runs no autocast: accelerate's Accelerator sets
  native_amp only outside DeepSpeed and Megatron-LM (huggingface/accelerate accelerator.py, since e3ebf176,
  2022-10-13) and DeepSpeed casts the model to 16 bits. Qwen's own loss (modeling_qwen.py at the Qwen-72B
  checkpoint: ``lm_logits[..., :-1, :].contiguous()``, then CrossEntropyLoss, no ``.float()``) then runs on
  the 16-bit logits: ``training.loss = shifted_16bit``, 6 B per logit. The runs without DeepSpeed (single-GPU
  LoRA) keep the profile's ``upcast``.
The multinode servers' network is not stated; ib-hdr-200 (one HDR port per GPU) is assumed.
Nothing here is fitted: the published figures are only compared with.

Found and fixed from code, with what each did to the table:
- GPTQ bases had been given fp32 embeddings, head and residual stream (PEFT skips the upcast for GPTQ since
  PR #771, commit a916465, 2023-08-11): Q-LoRA 7B at 256 tokens +14% → −19%, at 8,192 +34% → +10%.
- the 16-bit loss under DeepSpeed: memory growth from 256 to 8,192 tokens, per GPU, published / before /
  after: 7B Q-LoRA 12.0 / 16.4 / 9.4 G, 14B Q-LoRA 9.2 / 17.7 / 10.6, 72B LoRA + ZeRO-3 18.4 / 24.8 / 17.8,
  1.8B full 4.8 / 15.8 / 8.8; 7B LoRA on 2 × 2 GPUs 20.2 / 16.4 / 9.4 (the one group it moves away: that
  group grows faster per GPU than the same run on one GPU without DeepSpeed, 16.5, which no term explains).
  With the growth right, what is left is a fixed amount (below), so the median error rose: 10.3% → 15.4%.
- DeepSpeed's own terms (``zero_engine = "deepspeed"`` on the hf-trainer profile, ``core.training.deepspeed_zero``,
  read from DeepSpeed v0.12.3): the model cast to 16 bits with an fp32 master in the ZeRO optimizer and no
  autocast; ZeRO-2's two gradient buckets of reduce_bucket_size through the backward (Qwen's
  ds_config_zero2.json: 2e8 elements with overlap_comm, 0.75 GiB); ZeRO-3's flat bucket (auto: hidden_size²);
  the step's flat 16-bit and fp32 gradient copies (6 B per parameter of the partition, or of one sub-group).
  Memory median 15.4% → 13.1%; per group, before → after: 1.8B Q-LoRA −39 … −27% → −25 … −20%, 7B Q-LoRA
  −21 … −18% → −18 … −11%, 14B Q-LoRA −23 … −11% → −17 … −8%, 72B Q-LoRA −10 … −4% → −7 … −3%, 7B LoRA on
  2 × 2 GPUs −32 … −9% → −31 … −6%, 72B LoRA + ZeRO-3 −20 … −16% → −19 … −16%; 7B full on 2 GPUs −3 … +11%
  → −16 … −2% and 1.8B full −24 … −14% → −25 … −19% (no autocast copies of fp32 weights and no fp32
  residual stream any more: at short lengths the optimizer step is their peak). The DeepSpeed rows' tokens/s
  rise (no autocast casts): median 16.5% → 17.1%.

Results (2026-11-27), llmplan ÷ published − 1, per row group in ``BANDS``:
- memory, median |error| 13.1% over the 81 rows (the issue asks ≤ 10% per tool and method; not met), 49
  rows more than 10% under: 7B and 14B LoRA −2 … −10%; LoRA (emb) −6 … −24%; Q-LoRA −25 … −3%; 1.8B rows
  −6 … −25%; 72B LoRA + ZeRO-3 −19 … −16%; 7B full on 2 GPUs −16 … −2%.
- tokens/s, median |error| 16.3% (the issue asks ≤ 20%; 17.1% before the per-operation price audit of
  2026-11-27, which took the sweep harness's host latency out of each GEMM's GPU time: every group moved faster).
- every published run fits; 72B LoRA and LoRA (emb) on 4 GPUs without ZeRO-3 do not, as the README says.

Why rows miss, as far as found (pinned, not fixed):
- memory under by a fixed amount that does not grow with the tokens: 1.2-1.5 GiB on one GPU without
  DeepSpeed (1.8B and 7B LoRA), about 1.5 GiB with ZeRO-2 on one GPU (1.8B and 7B Q-LoRA at 256 tokens),
  about 10 GiB per GPU with ZeRO-3 (72B LoRA; 1.8B full: 8 GiB). Not the CUDA context: PyTorch sets
  CUDA_MODULE_LOADING=LAZY when it is unset since 1.13 (pytorch/pytorch PR #86509: 287 MB of context
  against 667 MB loaded eagerly), so PyTorch 2.0 / CUDA 11.8's context is no larger than the 0.5 GiB the
  profile carries. Not priced: ZeRO-3's prefetch and live-parameter budget beyond the next block
  (stage3_max_live_parameters and stage3_max_reuse_distance = 1e9 in ds_config_zero3.json) and the caching
  allocator's fragmentation from gathering and freeing whole layers; neither was measured here. Unmodelled,
  and it would widen the gap: PEFT before 0.8 (Qwen asks for ``peft<0.8.0``) cast the adapters to the base
  weight's dtype (peft v0.7.1 ``LoraLayer.update_layer``: ``self.to(weight.device, dtype=weight.dtype)``), so the
  single-GPU runs without DeepSpeed trained bf16 adapters with bf16 Adam states where the hf-trainer profile
  assumes fp32 ones.
- 7B full on 2 GPUs grows 11.4 G per GPU from 256 to 1,024 tokens (69.6 → 81.0), far beyond any activation
  or logits term at micro-batch 1; llmplan stays at 68.0 G (the optimizer step is its peak there).
- short sequences: the table's steps do not fall below about 1 s per 8 micro-batches whatever the model
  (1.8B LoRA: 1.0 s at 256 and 512 tokens), a per-step floor llmplan does not price; Q-LoRA on auto-gptq's
  kernels (``disable_exllama=True``) is 2-7× slower than LoRA at 256 tokens, far beyond the dequantisation
  bytes llmplan charges.
- "LoRA (multinode)" is 63-86% fast (30-71% before the DeepSpeed terms dropped its autocast casts): the
  servers' network is not stated.
- not modelled: Qwen's q, k and v are one fused ``c_attn``, so PEFT puts one adapter (r × 4h) and one dropout
  on it where llmplan counts three (r × 6h): 7B's adapters are 143.1M parameters, llmplan counts 159.9M
  (0.27 GB of states, under 1% of any row).
Tolerances: the issue's medians where they hold (tokens/s ≤ 20%); memory's median pinned at ≤ 14% (13.1%
recorded); each row group pinned to its recorded band ± 3 points, so that a change to the model shows here
and this note is updated.
"""

from __future__ import annotations

import statistics

import pytest

from llmplan.core.engine import estimate
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve

GIB = 2**30
A100 = "nvidia-a100-sxm4-80gb"
LENGTHS = (256, 512, 1024, 2048, 4096, 8192)
MODELS = {"1.8B": "Qwen/Qwen-1_8B", "7B": "Qwen/Qwen-7B", "14B": "Qwen/Qwen-14B", "72B": "Qwen/Qwen-72B"}
# (size, method, nodes, GPUs per node): (published memory in G, seconds per iteration) per sequence length
TABLE = {
    ("1.8B", "lora", 1, 1): [(6.7, 1.0), (7.4, 1.0), (8.4, 1.1), (11.0, 1.7), (16.2, 3.3), (21.8, 6.8)],
    ("1.8B", "lora-emb", 1, 1): [(13.7, 1.0), (14.0, 1.0), (14.0, 1.1), (15.1, 1.8), (19.7, 3.4), (27.7, 7.0)],
    ("1.8B", "qlora", 1, 1): [(5.8, 1.4), (6.0, 1.4), (6.6, 1.4), (7.8, 2.0), (10.2, 3.4), (15.8, 6.5)],
    ("1.8B", "full", 1, 1): [(43.5, 2.1), (43.5, 2.2), (43.5, 2.2), (43.5, 2.3), (47.1, 2.8), (48.3, 5.6)],
    ("7B", "lora", 1, 1): [(20.1, 1.2), (20.4, 1.5), (21.5, 2.8), (23.8, 5.2), (29.7, 10.1), (36.6, 21.3)],
    ("7B", "lora-emb", 1, 1): [(33.7, 1.4), (34.1, 1.6), (35.2, 2.9), (35.1, 5.3), (39.2, 10.3), (48.5, 21.7)],
    ("7B", "qlora", 1, 1): [(11.5, 3.0), (11.5, 3.0), (12.3, 3.5), (13.9, 7.0), (16.9, 11.6), (23.5, 22.3)],
    ("7B", "full", 1, 2): [(139.2, 4.0), (148.0, 4.0), (162.0, 4.5)],
    ("7B", "lora", 2, 2): [(74.7, 2.09), (77.6, 3.16), (84.9, 5.17), (95.1, 9.25), (121.1, 18.1), (155.5, 37.4)],
    ("14B", "lora", 1, 1): [(34.6, 1.6), (35.1, 2.4), (35.3, 4.4), (37.4, 8.4), (42.5, 17.0), (55.2, 36.0)],
    ("14B", "lora-emb", 1, 1): [(51.2, 1.7), (51.1, 2.6), (51.5, 4.6), (54.1, 8.6), (56.8, 17.2), (67.7, 36.3)],
    ("14B", "qlora", 1, 1): [(18.7, 5.3), (18.4, 6.3), (18.9, 8.2), (19.9, 11.8), (23.0, 20.1), (27.9, 38.3)],
    ("72B", "lora", 1, 4): [(215.4, 17.6), (217.7, 20.5), (222.6, 29.4), (228.8, 45.7), (249.0, 83.4),
                            (289.2, 161.5)],
    ("72B", "qlora", 1, 1): [(61.4, 27.4), (61.4, 31.5), (62.9, 41.4), (64.1, 59.5), (68.0, 97.7), (75.6, 179.8)],
}
# recorded (2026-11-27; tokens/s after the price audit): (lowest, highest memory error), (lowest, highest tokens/s
# error) of each group
BANDS = {
    ("1.8B", "lora", 1, 1): ((-0.210, -0.057), (-0.163, -0.032)),
    ("1.8B", "lora-emb", 1, 1): ((-0.242, -0.082), (-0.171, -0.009)),
    ("1.8B", "qlora", 1, 1): ((-0.253, -0.197), (-0.035, 0.309)),
    ("1.8B", "full", 1, 1): ((-0.248, -0.186), (-0.125, 3.179)),
    ("7B", "lora", 1, 1): ((-0.105, -0.042), (-0.246, -0.041)),
    ("7B", "lora-emb", 1, 1): ((-0.158, -0.073), (-0.143, -0.010)),
    ("7B", "qlora", 1, 1): ((-0.180, -0.113), (-0.027, 1.104)),
    ("7B", "full", 1, 2): ((-0.161, -0.023), (0.626, 3.612)),
    ("7B", "lora", 2, 2): ((-0.308, -0.060), (0.649, 1.263)),
    ("14B", "lora", 1, 1): ((-0.088, -0.020), (-0.196, -0.077)),
    ("14B", "lora-emb", 1, 1): ((-0.124, -0.060), (-0.169, -0.022)),
    ("14B", "qlora", 1, 1): ((-0.174, -0.079), (-0.041, 1.975)),
    ("72B", "lora", 1, 4): ((-0.192, -0.155), (-0.096, 1.446)),
    ("72B", "qlora", 1, 1): ((-0.068, -0.028), (-0.008, 2.389)),
}


def plan(size: str, method: str, nodes: int, per_node: int, seq_len: int, zero_stage: int | None = None):
    """The run as Qwen's scripts make it (module doc); ``zero_stage`` overrides the script's."""
    n = nodes * per_node
    kw = dict(framework="hf-trainer", micro_batch=1, global_batch=8 * n, seq_len=seq_len, recompute="full",
              optimizer="adamw", lora_rank=64, lora_dropout=0.05)
    if method == "full":
        kw.update(method="full", zero_stage=3)
    elif method == "qlora":
        kw.update(method="qlora", quant_base="gptq", precision="fp16", zero_stage=2)
    else:
        kw.update(method="lora", modules_to_save=method == "lora-emb",
                  zero_stage=0 if n == 1 else (3 if size == "72B" else 2))
    if zero_stage is not None:
        kw["zero_stage"] = zero_stage
    if kw["zero_stage"]:  # DeepSpeed: no autocast, so Qwen's own loss runs on the 16-bit logits (module doc)
        kw["loss"] = "shifted_16bit"
    hw = HardwareRef(gpu=A100, gpus_per_node=per_node, nodes=nodes, **({"network": "ib-hdr-200"} if nodes > 1 else {}))
    doc = PlanDocument(model=ModelRef(id=MODELS[size]), hardware=hw, training=TrainingSettings(**kw),
                       workload="pretrain" if method == "full" else "finetune", parallelism=ParallelLayout(dp=n))
    sc = resolve(doc)
    # Qwen's ds_config_zero2.json: reduce_bucket_size 2e8 (ds_config_zero3.json: "auto", the profile's), as a
    # user's frameworks.toml entry for hf-trainer would set it
    sc = sc.model_copy(update={"framework_profile": sc.framework_profile.model_copy(
        update={"zero2_reduce_bucket": 200_000_000})})
    return estimate(sc), n


@pytest.fixture(scope="module")
def results() -> dict[tuple, list[tuple[float, float, bool]]]:
    """Per group and sequence length: (memory error, tokens/s error, fits)."""
    out = {}
    for key, rows in TABLE.items():
        out[key] = []
        for seq_len, (gib, s_per_it) in zip(LENGTHS, rows, strict=False):
            est, n = plan(*key, seq_len)
            memory = est.memory.total.value / GIB * n
            tokens_per_s = 8 * n * seq_len / s_per_it
            out[key].append((memory / gib - 1, est.compute.tokens_per_s.value / tokens_per_s - 1, est.fits))
            print(f"{key} {seq_len:5}: {memory:6.1f} vs {gib:5.1f} G, "
                  f"{est.compute.tokens_per_s.value:8.0f} vs {tokens_per_s:8.0f} tokens/s")
    return out


def test_medians(results):
    """Memory: 13.1% recorded, pinned at 14% (the issue's 10% is not met; module doc). Tokens/s: the issue's 20%."""
    rows = [r for group in results.values() for r in group]
    assert len(rows) == 81
    assert statistics.median(abs(m) for m, _, _ in rows) <= 0.14
    assert statistics.median(abs(t) for _, t, _ in rows) <= 0.20


@pytest.mark.parametrize("key", TABLE, ids=lambda k: "-".join(map(str, k)))
def test_each_group_stays_in_its_recorded_band(results, key):
    (m_lo, m_hi), (t_lo, t_hi) = BANDS[key]
    mem = [m for m, _, _ in results[key]]
    tps = [t for _, t, _ in results[key]]
    assert m_lo - 0.03 <= min(mem) and max(mem) <= m_hi + 0.03, mem
    assert t_lo - 0.03 <= min(tps) and max(tps) <= t_hi + 0.03, tps


def test_every_published_run_fits(results):
    assert all(fits for group in results.values() for _, _, fits in group)


@pytest.mark.parametrize("method", ["lora", "lora-emb"])
def test_72b_lora_without_zero3_does_not_fit_on_four_gpus(method):
    """README: "OOM occurs on 4 A100-SXM4-80G GPUs both with LoRA (emb) fine-tuning and LoRA fine-tuning
    without Deepspeed ZeRO 3" (finetune_lora_ds.sh's default is ds_config_zero2.json)."""
    for seq_len in LENGTHS:
        est, _ = plan("72B", method, 1, 4, seq_len, zero_stage=2)
        assert not est.fits, seq_len


def test_gptq_base_keeps_its_16_bit_embeddings():
    """PEFT casts a quantised model's other weights to fp32 except on GPTQ (and AQLM, EETQ, HQQ, torchao)
    bases (peft src/peft/utils/other.py prepare_model_for_kbit_training, since PR #771): on the same run
    without DeepSpeed an NF4 base holds its 1.24e9 embedding and head parameters in fp32, 2 B each more than
    GPTQ's fp16. Under DeepSpeed (Qwen's ZeRO-2) the engine casts the whole module back to 16 bits
    (engine.py ``_configure_distributed_model``, DeepSpeed v0.12.3), so neither keeps fp32 copies: the two
    differ by less than 0.1 B per embedding parameter (GPTQ's group scales are a little larger than NF4's)."""
    embeddings = 2 * 151_936 * 4096
    for zero_stage, low, high in ((0, 1.9, 2.1), (2, -0.1, 0.1)):
        gptq, _ = plan("7B", "qlora", 1, 1, 256, zero_stage=zero_stage)
        t = TrainingSettings(framework="hf-trainer", micro_batch=1, global_batch=8, seq_len=256, recompute="full",
                             optimizer="adamw", lora_rank=64, lora_dropout=0.05, method="qlora", quant_base="nf4",
                             precision="fp16", zero_stage=zero_stage)
        nf4 = estimate(resolve(PlanDocument(model=ModelRef(id=MODELS["7B"]), hardware=HardwareRef(gpu=A100),
                                            training=t, workload="finetune")))
        weights = nf4.memory.weights.value - gptq.memory.weights.value
        assert low * embeddings < weights < high * embeddings, (zero_stage, weights / embeddings)
