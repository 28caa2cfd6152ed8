"""Memory and speed of Qwen's published fine-tuning profile, planned with the hf-trainer profile (issue 26).

Source: QwenLM/Qwen README.md, "Profiling of Memory and Speed" (commit 2df8e8a, 2026-03-05; the table dates
from the Qwen-72B and 1.8B release, 2023-11-30): one A100-SXM4-80G, CUDA 11.8, PyTorch 2.0, FlashAttention 2,
batch size 1, gradient accumulation 8, sequences of 256 ... 8,192 tokens; peak GPU memory ("G", read here as
GiB, the whole device as nvidia-smi shows it: llmplan's total with the CUDA context; the README names neither,
see "How Qwen measured") and seconds per iteration (8 micro-batches). 7B full-parameter on 2 GPUs, "LoRA
(multinode)" on 2 × 2, 72B LoRA + ZeRO-3 on 4: their memory is the sum over the GPUs (7B full at 256 tokens:
139.2 G = 69.6 per GPU).

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
- the runs without DeepSpeed step with torch.optim.AdamW's foreach code (the Trainer's optim adamw_torch, its
  default from transformers 4.32, PR #25109; Qwen asks for transformers ≥ 4.32, < 4.38), which in PyTorch 2.0
  holds two tensor lists the size of one Adam moment beside the states (``_multi_tensor_adamw``:
  ``exp_avg_sq_sqrt`` and ``denom``; one from torch 2.1, PR #104898): the profile's
  ``optimizer_intermediates`` = 2 here (``INTERMEDIATES``), as a user's frameworks.toml entry would set it. LoRA
  (emb) trains the embeddings and head, so its step becomes its peak at short lengths, and the published
  figures are flat there as a step peak is (7B: 33.7-35.2 G from 256 to 2,048 tokens; llmplan 34.0 at each):
  1.8B LoRA (emb) −24 … −8% → −10 … −7%, 7B −16 … −7% → −8 … +1%, 14B −12 … −6% → −8 … +2%, 7B LoRA
  −10.5 … −4.2% → −10.5 … −3.7%; memory median 13.1% → 10.3%, rows more than 10% under 49 → 41.
- ZeRO-3's prefetch is DeepSpeed's (``deepspeed_zero.prefetch_elements``: the "auto" bucket, 0.9 · hidden²,
  and the one matrix that may cross it), not a whole block: 72B LoRA −18.3 … −14.6% → −20.5 … −16.3%.
- the GPTQ base as auto-gptq v0.5.1 runs it (qlinear_cuda_old, at 128 rows or more): the dequantised fp16
  weights ``torch.matmul``'s backward keeps (``ops.gptq_saved_weights``; one block's under full recompute, in the
  blocks' backward) and the dequantisation's int32 unpacking beside its int8 cast, 5 B per element of the
  matrix in hand, not bitsandbytes' 2 (``ops.dequant_transient_bytes``): 1.8B Q-LoRA −25.3 … −19.7% → −24.7 …
  −19.4%, 7B −18.0 … −11.3% → −17.5 … −9.5%, 14B −17.4 … −7.9% → −15.5 … −7.2%, 72B −6.8 … −2.8% → −4.8 …
  −2.0%; memory median 10.3% → 9.7%, rows more than 10% under 41 → 40.
- the caching allocator's reserve for ZeRO-3's side-stream gathers (``core.training.allocator_reserve``, read
  from PyTorch's CUDACachingAllocator and DeepSpeed v0.12.3): a block freed with ``record_stream`` onto the compute
  stream, the flat all-gather buffer beside its per-parameter copies, and the all-gather stream's pool keeping
  the most it gathered (the output head through the loss) whatever the peak phase holds: 72B LoRA + ZeRO-3
  −20.5 … −16.3% → −16.6 … −13.3%, 7B full on 2 GPUs −17.5 … −4.0% → −15.3 … −1.5% (1.8B full runs on one
  GPU: nothing gathered); memory median 9.7% → 9.5%, rows more than 10% under 40 → 40.
- one adapter per fused ``c_attn`` (``core.lora_modules``, 2026-11-28): Qwen's q, k and v are one Linear module
  (modeling_qwen.py ``QWenAttention``: ``c_attn`` = nn.Linear(h, 3h)), and PEFT wraps whole modules, so it adds
  one A (r × h) and one B (3h × r) there, where llmplan had counted three adapters: 16.8M parameters too many on
  7B (``test_fused_c_attn_gets_one_adapter``), and two adapters' GEMMs, dropout, casts, scale and add too many in
  every block. Each row drops the fp32 adapters, gradients and Adam states of 2·r·h per layer (0.4 GiB on 7B,
  1.9 GiB on 72B) and runs faster by the kernels left out (most at short lengths, where the steps are
  launch-bound). Memory, before → after: 1.8B LoRA −21.0 … −5.7% → −21.6 … −6.2%, 7B LoRA −10.5 … −3.7% →
  −11.4 … −4.9%, 14B LoRA −8.8 … −1.6% → −9.6 … −3.1%, 7B LoRA (emb) −7.6 … +0.8% → −8.2 … −0.4%, 7B Q-LoRA
  −17.5 … −9.5% → −18.6 … −11.9%, 14B Q-LoRA −15.5 … −7.2% → −17.8 … −8.6%, 72B Q-LoRA −4.8 … −2.0% → −7.7 …
  −3.8%, 72B LoRA + ZeRO-3 −16.6 … −13.3% → −17.2 … −13.8%; full fine-tuning unchanged. Memory median 9.5% →
  10.8% (above the issue's 10% again: the over-count had covered part of the missing bytes), rows more than 10%
  under 40 → 41, over 4 → 3; tokens/s median 16.3% → 11.6% (7B LoRA −24.6 … −4.1% → −11.6 … +3.3%).
- the clock30 time model (2026-11-28; docs/training.md: GEMMs at the catalog's best-shape rate and full clock,
  the clock lowered only as far as the step's share of compute-bound kernels says, 1.8 µs between kernels, a
  hidden collective slowing the compute beside it by 18.9%; constants from H100/H200 microbenchmarks and Lee et
  al. 2025, none from this table): the single-GPU groups move faster, the lowest tokens/s error of each by 3-7
  points (7B LoRA −11.6 … +3.3% → −8.4 … +8.2%, 14B LoRA −14.1 … −2.2% → −7.3 … +2.7%); the ZeRO-3 runs'
  shortest rows slower (72B LoRA +144.8% → +116.6% at 256 tokens, 7B full on 2 GPUs +361% → +303%): each
  hidden second of their gathers and reductions now adds 0.189 s (72B LoRA at 256 tokens: exposed
  communication 1.82 → 3.17 s of an 8.1 s step). Memory unchanged; tokens/s median 11.6% → 9.5%.

Results (2026-11-28), llmplan ÷ published − 1, per row group in ``BANDS``:
- memory, median |error| 10.8% over the 81 rows; per method LoRA 12.4% (30 rows, 16 more than 10% under), LoRA
  (emb) 7.2% (18, 1), Q-LoRA 13.9% (24, 17), full 19.3% (9, 7): the issue's ≤ 10% overall, per tool and method
  and "no row more than 10% under" are not met. 41 rows more than 10% under, 3 over (LoRA (emb) at short lengths,
  +1.2% at most): 7B and 14B LoRA −3 … −11%; LoRA (emb) −11 … +1%; Q-LoRA −26 … −4%; 1.8B LoRA, Q-LoRA and full
  −6 … −26%; 72B LoRA + ZeRO-3 −17 … −14%; 7B full on 2 GPUs −15 … −2%.
- tokens/s, median |error| 8.5% after ops34 added the kernels outside the modules (the issue asks ≤ 20%; 9.45% before
  it, 9.2% before ew31 priced elementwise kernels by kind,
  which moved the GPTQ Q-LoRA groups 1-3 points faster, 14B at 256 tokens +225.3% → +228.3%, 72B +270.4% →
  +273.7%: their dequantisation and pointwise kernels run at the measured H100 rates, not 0.8 of peak; 9.5% before
  gradient clipping was priced — every run
  clips: Qwen's finetune.py keeps the Trainer's max_grad_norm 1.0, and DeepSpeed's ZeRO optimizer computes the
  norm at every step anyway (``core.training.grad_clip``); the fastest-estimated rows moved most, 7B full on 2 GPUs
  +66.4 … +303.1% → +62.6 … +279.4%, 1.8B full −7.5 … +317.9% → −8.0 … +295.2%; 11.6% before the clock30 time
  model, 16.3% before the
  adapters of the fused c_attn were counted once, 17.1% before the per-operation price audit of 2026-11-27,
  which took the sweep harness's host latency out of each GEMM's GPU time: every group moved faster).
- every published run fits; 72B LoRA and LoRA (emb) on 4 GPUs without ZeRO-3 do not, as the README says.

How Qwen measured (checked 2026-11-27 for zgap28; not established): the README's text around the table says "we
profile the memory (GB) and speed (s/iter)" and nothing more, and the repository holds no training profiler (its
history searched for max_memory_allocated, memory_reserved and nvidia-smi): finetune.py runs the Trainer with
``report_to none`` and reads no memory counter. The one profiler Qwen published for the same README, its inference
"profile.py" (linked from the README's Inference Performance section; copies of it are public), records
``torch.cuda.max_memory_allocated()`` and prints it divided by 1024³ as "GB": PyTorch's allocated bytes, in GiB,
without the CUDA context or the caching allocator's reserve. If the fine-tuning table was read the same way,
llmplan's figure to compare is its total less its ``overhead`` term (the CUDA context, 0.5 GiB for hf-trainer, and
the allocator's reserve, 5% of the allocated bytes: the device figure, as the Figure's formula says), and the rows
are further under (``test_the_reading_of_the_published_figure``: median 16.4% instead of 9.7%, 62 rows more than
10% under). Read as decimal GB of the whole device, the median is 5.3% with 28 rows still more than 10% under and 29
over; that reading is recorded, not chosen. Either way the missing bytes are not the context or the workspaces:
PyTorch's cuBLAS workspace is 4096 KiB × 2 + 16 KiB × 8 = 8,519,680 bytes per handle and stream on a pre-Hopper GPU
(pytorch/pytorch aten/src/ATen/cuda/CublasHandlePool.cpp ``parseChosenWorkspaceSize``, default ":4096:2:16:8"),
allocated from PyTorch's own pool: two handles (the forward's thread and autograd's) are 16 MiB.

ZeRO-3 as DeepSpeed v0.12.3 runs it, read for zgap28 (``core.training.deepspeed_zero`` module doc): on one GPU
nothing is gathered (``all_gather_coalesced`` → ``_no_gather_coalesced``), at the step nothing is gathered
(``_partition_all_parameters`` first), at the loss the output head is held gathered from its forward to its backward
(``max_reuse_distance``), and the gradient norm copies one gradient piece to fp64 before the step copies.
stage3_max_live_parameters = 1e9 only caps the prefetch; with max_reuse_distance = 1e9 a block's parameters would
stay gathered from its forward to its recompute only when the head's forward and backward and the blocks after it
come to less than 1e9 parameters (Qwen-7B's head alone is 0.62e9, twice; Qwen-72B's 1.25e9). Priced, these move 1.8B
full −24.8 … −18.6% → −25.4 … −19.3% (no gathered block on one GPU), 7B full on 2 GPUs −16.1 … −2.3% → −17.5 … −4.0%
(none at its step peak) and 72B LoRA −19.2 … −15.5% → −18.3 … −14.6% (the head gathered at the loss; −20.5 … −16.3%
with DeepSpeed's prefetch, below); the median stays 13.1%. The rest of the ZeRO-3 gap (about 11 GiB per GPU on 72B
LoRA, 8.4 on 1.8B full) is not in what DeepSpeed's code allocates. The caching allocator's reserve for ZeRO-3's
side-stream gathers, as far as the allocator's and DeepSpeed's code give it, is priced since 2026-11-28 (below);
it leaves about 9 GiB per GPU on 72B LoRA. 1.8B full runs on one GPU, where nothing is gathered.

Why rows miss, as far as found (pinned, not fixed):
- memory under by an amount that hardly grows with the tokens, per GPU: 0.5-1.5 GiB on one GPU without
  DeepSpeed up to 2,048 tokens (1.8B, 7B and 14B LoRA), about 1.5 GiB with ZeRO-2 on one GPU (1.8B and 7B
  Q-LoRA; 14B and 72B Q-LoRA 2-4), about 9 GiB with ZeRO-3 on 72B LoRA and 8.4 on 1.8B full. Not the CUDA
  context: PyTorch sets CUDA_MODULE_LOADING=LAZY when it is unset since 1.13 (pytorch/pytorch PR #86509: 287 MB
  of context against 667 MB loaded eagerly), so PyTorch 2.0 / CUDA 11.8's context is no larger than the 0.5 GiB the
  profile carries. ZeRO-3's gathers are priced as DeepSpeed's code makes them (above), and the caching
  allocator's reserve for them as far as the code bounds it: one block awaiting the compute stream. DeepSpeed's
  rate limiter waits on its all-gather stream only, so a host further ahead of the GPU leaves more blocks
  pending (about 5-6 more of Qwen-72B's 1.6 GiB blocks would close the 72B LoRA rows); how far it runs ahead is
  timing, not code, and is not priced. The adapters are fp32, as the profile
  prices them: Qwen's Docker images pin ``peft==0.5.0`` (QwenLM/Qwen 6c467b5, 2023-12-28, "Fix peft version in
  dockerfiles"), whose ``LoraLayer.update_layer`` moves the new adapters to the weight's device only
  (``self.to(self.weight.device)``; huggingface/peft v0.5.0, 2023-08-22, ``src/peft/tuners/lora.py``); PEFT casts
  them to the base's 16-bit dtype from v0.6.0 (2023-11-02) until 0.12's ``autocast_adapter_dtype``. (Until
  2026-11-27 this note read Qwen's ``peft<0.8.0``, a README note of 2024-02-01 about loading adapters for
  inference, as the training environment.)
- 7B full on 2 GPUs grows 11.4 G per GPU from 256 to 1,024 tokens (69.6 → 81.0; out of memory at 2,048, as the
  README says), about 16 MB per token, twice what the blocks would save without any checkpointing (Qwen's
  eager block saves about 0.2 MB per token per layer, 6.5 MB over 32 layers, the logits 1-2 MB more); llmplan
  stays at 66.8 G (the optimizer step is its peak there). No allocation read in DeepSpeed's, the Trainer's or
  Qwen's code grows that fast; not priced.
- short sequences: the table's steps do not fall below about 1 s per 8 micro-batches whatever the model
  (1.8B LoRA: 1.0 s at 256 and 512 tokens), a per-step floor llmplan does not price; Q-LoRA on auto-gptq's
  kernels (``disable_exllama=True``) is 2-7× slower than LoRA at 256 tokens, far beyond the dequantisation
  bytes llmplan charges.
- "LoRA (multinode)" is 78-149% fast (65-126% before the clock30 time model; 63-86% before the price audit's
  7.5 µs GEMM fixed cost; 30-71% before the DeepSpeed terms dropped its autocast casts) and its memory grows twice as fast as llmplan's: both read as the
  multinode script's own ``--per_device_train_batch_size 2`` rather than the README's 1
  (``test_multinode_lora_reads_as_the_scripts_batch_of_two``: memory −5 … −11%, tokens/s +68 … −11% with 2, the
  256-token row the one left fast); recorded, not chosen. The servers' network is
  not stated.
Qwen's own code, read item by item for what the run allocates beyond llmplan's terms (qwen29, 2026-11-27;
QwenLM/Qwen finetune.py, finetune/*.sh and ds_config_zero2/3.json at b1d80a9 and b5fad3d, the README history;
modeling_qwen.py as published with the checkpoints; DeepSpeed v0.12.3; peft v0.5.0; accelerate's prepare_model). None
adds memory the peak does not already hold, so the bands are unchanged (memory median 9.7%; per method LoRA 11.8%,
LoRA (emb) 6.3%, Q-LoRA 11.9%, full 19.3%; 40 rows more than 10% under, 4 over):
- the loss without DeepSpeed: ``lm_logits`` is bf16 (modeling_qwen's ``QWenLMHeadModel.__init__`` casts the model to
  bf16 when the config names no dtype, and the Trainer's autocast keeps the head in bf16), the loss makes a shifted
  ``.contiguous()`` bf16 copy, autocast runs ``cross_entropy`` in fp32 (an fp32 copy, then fp32 log-probabilities):
  2 + 2 + 4 + 4 = 12 B per logit in the forward, 2 B more than ``upcast`` charges there; accelerate's
  ``convert_outputs_to_fp32`` (``Accelerator.prepare_model`` under native AMP) then makes an fp32 copy of the
  returned logits beside the bf16 ones and the saved log-probabilities (10 B), freed when the Trainer's
  ``compute_loss`` returns. The backward holds 12 B (``upcast``'s) beside the same tensors, so the forward's 2 B
  only tie with it (``test_qwen_loss_forward_under_autocast_never_sets_the_peak``);
- flash-attention: ``use_flash_attn = "auto"`` turns it on wherever flash_attn imports and the model is 16-bit,
  at every length (no length-dependent fallback); Qwen's Docker image builds flash-attn v2.3.3 and its layer_norm
  extension; the eager softmax path would add s² scores per head, which the 8,192-token rows rule out;
- logn attention scaling runs only when ``not self.training``; the rotary cache is ``max(2·s, 16)`` × head_dim
  fp32 cos and sin (16 MiB at 8,192 tokens); a causal-mask buffer of max_position_embeddings² bools is
  registered by some modeling_qwen versions (``registered_causal_mask``, 64 MiB for the 8,192 positions of the
  four configs), only without flash-attention by later ones;
- gradient checkpointing is modeling_qwen's own ``torch.utils.checkpoint.checkpoint`` per block (reentrant):
  each block keeps its input, as ``recompute = full`` prices; labels and input ids are int32, padded to
  ``model_max_length`` (every position computed, as planned);
- ZeRO-2 (ds_config_zero2.json): ``allgather_bucket_size`` 2e8 only cuts the step's gather into shards, each an
  ``all_gather`` into views of the flat 16-bit groups (runtime/utils.py ``all_gather_dp_groups``; skipped on one
  rank): no buffer; ``reduce_bucket_size`` 2e8 with ``overlap_comm``:
  the two buckets already priced; fp16's overflow check (``_has_inf_or_nan``: ``x.float().sum()``, a 4 B copy of
  one gradient at a time) comes before, and is smaller than, the norm's 8 B copy that is priced;
- ZeRO-3's optimizer construction (``_create_fp32_partitions``: a 16-bit clone then its fp32 copy per sub-group;
  ``initialize_optimizer_states``: an fp32 gradient buffer of the largest sub-group's ``ds_numel``, which on a
  partition's tensor is the partition's size) holds less than the step's 6 B copies, and the 16-bit gradient
  buffer is allocated after it;
- counted as PEFT adds them since 2026-11-28: Qwen's q, k and v are one fused ``c_attn``, so PEFT adds one adapter
  (r × (h + 3h)) where llmplan had counted three (``test_fused_c_attn_gets_one_adapter``).
What is left is the allocator's reserve if "G" is the device figure (a flat 5% of the allocated bytes here), or
something no code read shows; it needs a measured run.

Tolerances: the medians as recorded (memory 10.8%, pinned ≤ 11%: the issue's ≤ 10% is not met since the fused
c_attn's adapters are counted once; tokens/s ≤ 20%, the issue's); each row group pinned to its
recorded band ± 3 points, so that a change to the model shows here and this note is updated.
"""

from __future__ import annotations

import statistics

import pytest

from llmplan.core.engine import estimate
from llmplan.core.training import eager_memory
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
# recorded (2026-11-28, memory after one adapter per fused c_attn, tokens/s after ops34's kernels outside the modules;
# module doc): (lowest, highest memory error), (lowest, highest tokens/s error) of each group. Before ops34 (the
# clock30 time model, clip31's clipping, ew31's kinds) the tokens/s bands were 0.1-13 points higher: 1.8B LoRA
# (-0.011, 0.119), 7B LoRA (-0.085, 0.081), 1.8B full (-0.08, 2.952), 14B QLoRA (0.043, 2.283)
BANDS = {
    ("1.8B", "lora", 1, 1): ((-0.216, -0.062), (-0.036, 0.06)),
    ("1.8B", "lora-emb", 1, 1): ((-0.108, -0.076), (-0.052, 0.064)),
    ("1.8B", "qlora", 1, 1): ((-0.264, -0.204), (0.013, 0.408)),
    ("1.8B", "full", 1, 1): ((-0.254, -0.193), (-0.095, 2.686)),
    ("7B", "lora", 1, 1): ((-0.114, -0.049), (-0.133, 0.059)),
    ("7B", "lora-emb", 1, 1): ((-0.082, -0.004), (-0.068, 0.083)),
    ("7B", "qlora", 1, 1): ((-0.186, -0.119), (0.038, 1.264)),
    ("7B", "full", 1, 2): ((-0.153, -0.015), (0.602, 2.764)),
    ("7B", "lora", 2, 2): ((-0.310, -0.065), (0.759, 1.443)),
    ("14B", "lora", 1, 1): ((-0.096, -0.031), (-0.085, 0.008)),
    ("14B", "lora-emb", 1, 1): ((-0.083, 0.012), (-0.089, 0.058)),
    ("14B", "qlora", 1, 1): ((-0.178, -0.086), (0.027, 2.201)),
    ("72B", "lora", 1, 4): ((-0.172, -0.138), (-0.033, 1.161)),
    ("72B", "qlora", 1, 1): ((-0.077, -0.038), (0.071, 2.695)),
}


# the Trainer's optim under transformers 4.32-4.37 (Qwen's requirements.txt) is adamw_torch, torch.optim.AdamW
# with its foreach step on CUDA; PyTorch 2.0's _multi_tensor_adamw holds two moment-sized intermediates
INTERMEDIATES = 2


def plan(size: str, method: str, nodes: int, per_node: int, seq_len: int, zero_stage: int | None = None,
         micro_batch: int = 1):
    """The run as Qwen's scripts make it (module doc); ``zero_stage`` overrides the script's, ``micro_batch`` the
    README's batch of 1."""
    n = nodes * per_node
    kw = dict(framework="hf-trainer", micro_batch=micro_batch, global_batch=8 * n * micro_batch, seq_len=seq_len,
              recompute="full", optimizer="adamw", lora_rank=64, lora_dropout=0.05)
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
    # user's frameworks.toml entry for hf-trainer would set it. No measured block host time (``block_host_s``):
    # it was measured for transformers 5.17 / peft 0.21 / torch 2.11 and Hugging Face's Llama modules, and Qwen's
    # 2023 stack (its own modeling code with flash-attn's fused rotary and RMSNorm, torch 2.0, peft 0.5) ran a
    # checkpointed LoRA block of Qwen-7B in at most 4.7 ms with its GPU work (1,707 tokens/s at 256 tokens), a
    # third of the 13.2 ms measured for the 2026 stack: the kernel count alone, as before
    sc = sc.model_copy(update={"framework_profile": sc.framework_profile.model_copy(
        update={"zero2_reduce_bucket": 200_000_000, "optimizer_intermediates": INTERMEDIATES, "block_host_s": ()})})
    return estimate(sc), n


@pytest.fixture(scope="module")
def results() -> dict[tuple, list[tuple[float, float, bool, float]]]:
    """Per group and sequence length: (memory error, tokens/s error, fits, memory error of llmplan's allocated
    bytes alone: the total less the CUDA context and the allocator's reserve)."""
    out = {}
    for key, rows in TABLE.items():
        out[key] = []
        for seq_len, (gib, s_per_it) in zip(LENGTHS, rows, strict=False):
            est, n = plan(*key, seq_len)
            memory = est.memory.total.value / GIB * n
            allocated = (est.memory.total.value - est.memory.overhead.value) / GIB * n
            tokens_per_s = 8 * n * seq_len / s_per_it
            out[key].append((memory / gib - 1, est.compute.tokens_per_s.value / tokens_per_s - 1, est.fits,
                             allocated / gib - 1))
            print(f"{key} {seq_len:5}: {memory:6.1f} vs {gib:5.1f} G, "
                  f"{est.compute.tokens_per_s.value:8.0f} vs {tokens_per_s:8.0f} tokens/s")
    return out


def test_medians(results):
    """Memory 10.8% recorded (pinned ≤ 11%; the issue's ≤ 10% is not met since the fused c_attn's adapters are
    counted once, 9.5% before), tokens/s 8.5% (the issue's ≤ 20%; 9.45% before ops34, 9.2% before ew31, 11.6% before the clock30 time model, 16.3% before
    the fused c_attn's single adapter, 17.1% before the price audit); module doc."""
    rows = [r for group in results.values() for r in group]
    assert len(rows) == 81
    assert statistics.median(abs(m) for m, *_ in rows) <= 0.11
    assert statistics.median(abs(t) for _, t, *_ in rows) <= 0.20


@pytest.mark.parametrize("key", TABLE, ids=lambda k: "-".join(map(str, k)))
def test_each_group_stays_in_its_recorded_band(results, key):
    (m_lo, m_hi), (t_lo, t_hi) = BANDS[key]
    mem = [m for m, *_ in results[key]]
    tps = [t for _, t, *_ in results[key]]
    assert m_lo - 0.03 <= min(mem) and max(mem) <= m_hi + 0.03, mem
    assert t_lo - 0.03 <= min(tps) and max(tps) <= t_hi + 0.03, tps


def test_every_published_run_fits(results):
    assert all(fits for group in results.values() for _, _, fits, _ in group)


# Memory under each reading of the published "G" (module doc, "How Qwen measured"), recorded 2026-11-28 (after one
# adapter per fused c_attn; before: GiB device 0.095, 40, 4; GiB allocated 0.164, 62, 0; GB device 0.057, 24, 29;
# GB allocated 0.102, 44, 5): the unit
# (GiB, or 1e9 bytes) and the quantity (the device, as llmplan's total; or PyTorch's allocated bytes, as Qwen's
# published inference profiler reads them: llmplan's total less its overhead term) → (median |error|, rows more
# than 10% under, rows over).
READINGS = {("GiB", "device"): (0.108, 41, 3), ("GiB", "allocated"): (0.173, 69, 0),
            ("GB", "device"): (0.066, 25, 24), ("GB", "allocated"): (0.112, 44, 4)}


@pytest.mark.parametrize("unit, quantity", READINGS, ids=lambda x: str(x))
def test_the_reading_of_the_published_figure(results, unit, quantity):
    """Pinned (median ± 1 point, row counts ± 3), so a change shows. The reading the comparison uses (GiB of the
    whole device) is not chosen for its fit: the decimal one fits best and has the least support."""
    scale = GIB / 1e9 if unit == "GB" else 1.0
    index = 0 if quantity == "device" else 3
    errors = [(1 + row[index]) * scale - 1 for group in results.values() for row in group]
    median, under, over = READINGS[unit, quantity]
    assert statistics.median(abs(e) for e in errors) == pytest.approx(median, abs=0.01)
    assert abs(sum(e < -0.10 for e in errors) - under) <= 3
    assert abs(sum(e > 0 for e in errors) - over) <= 3



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


def test_gptq_block_keeps_its_dequantised_weights_for_the_backward():
    """auto-gptq's QuantLinear (v0.5.1 qlinear_cuda_old) dequantises with torch ops at 128 rows or more and multiplies
    with torch.matmul, whose backward keeps the fp16 weight (``ops.gptq_saved_weights``): a block's saved tensors
    carry 2 B per quantised weight more on a GPTQ base than on NF4 (bitsandbytes' MatMul4Bit keeps none). Qwen-7B's
    block has 4096 × (3 · 4096 + 4096) + 3 × 4096 × 11,008 quantised weights; exact."""
    from llmplan.core.training.ops import dequant_transient_bytes, gptq_saved_weights

    tr = TrainingSettings(method="qlora", quant_base="gptq")
    prof = resolve(PlanDocument(model=ModelRef(id=MODELS["7B"]), hardware=HardwareRef(gpu=A100), training=tr,
                                workload="finetune")).framework
    block = 4096 * (3 * 4096 + 4096) + 3 * 4096 * 11_008
    assert gptq_saved_weights(tr, prof, block) == 2.0 * block
    assert gptq_saved_weights(tr.model_copy(update={"quant_base": "nf4"}), prof, block) == 0.0
    # the matrix in hand while it is dequantised: int32 unpacking beside its int8 cast (bitsandbytes: bf16 only)
    assert dequant_transient_bytes(tr, prof) == 4 + 1
    assert dequant_transient_bytes(tr.model_copy(update={"quant_base": "nf4"}), prof) == 2



def test_multinode_lora_reads_as_the_scripts_batch_of_two():
    """Recorded, not chosen: "LoRA (multinode)" is off in memory growth (−6% at 256 tokens, −31% at 8,192) and in
    speed (65-126% fast) together. finetune_lora_ds.sh, the multinode script, passes
    ``--per_device_train_batch_size 2``; the README says every run used a batch of 1, and the single-GPU rows
    (whose script also says 2) agree with 1. Planned with the script's 2, both gaps close at once but for the
    shortest rows' speed (memory −5 … −11%, tokens/s +68% at 256 tokens, +33% at 512, +11% at 1,024, then −1 …
    −11%; pinned ± 3 points), which no one missing term would do. The README's 1 stays the test's setting; this records what the
    rows look like. Recorded 2026-11-27; moved when kern28 + head28 + eager28 combined (tokens/s was +25 … −18%:
    the price audit's 7.5 µs GEMM fixed cost, not 23 µs, shortens the 256-token steps most, where each of the
    many small GEMMs and LoRA adapter GEMMs paid the host latency twice; the head and eager changes do not touch
    this run; moved again 2026-11-28, when the fused c_attn got one adapter: memory −4.4 … −11.1%, tokens/s +52 …
    −17%; and again with the clock30 time model, 2026-11-28: tokens/s +57.7 … −16.3% → +68.3 … −10.8%)."""
    key = ("7B", "lora", 2, 2)
    mem, tps = [], []
    for seq_len, (gib, s_per_it) in zip(LENGTHS, TABLE[key], strict=True):
        est, n = plan(*key, seq_len, micro_batch=2)
        mem.append(est.memory.total.value / GIB * n / gib - 1)
        tps.append(est.compute.tokens_per_s.value / (8 * n * 2 * seq_len / s_per_it) - 1)
    assert min(mem) >= -0.114 - 0.03 and max(mem) <= -0.049 + 0.03, mem
    assert min(tps) >= -0.108 - 0.03 and max(tps) <= 0.683 + 0.03, tps


def test_qwen_loss_forward_under_autocast_never_sets_the_peak(monkeypatch):
    """Qwen's loss without DeepSpeed holds 12 B per logit in its forward (module doc: bf16 ``lm_logits``, its shifted
    ``.contiguous()`` bf16 copy, autocast's fp32 copy for ``cross_entropy``, the fp32 log-probabilities), 2 B more
    than ``upcast``'s 10; its backward holds ``upcast``'s 12 beside the same tensors. Charged at 12, the forward only
    ties with the backward, so no row planned without DeepSpeed moves (relative 1e-9); if this fails, the forward
    has become a peak and Qwen's 12 B must be priced (at 13 B, 21 of the 36 rows would move)."""
    assert eager_memory.loss_bytes_per_logit("upcast", False)[1] >= 2 + 2 + 4 + 4
    keys = [k for k in TABLE if k[1] in ("lora", "lora-emb") and k[2] * k[3] == 1]
    before = [plan(*k, n)[0].memory.total.value for k in keys for n in LENGTHS]
    monkeypatch.setitem(eager_memory.LOSS_FORWARD_BYTES, "upcast", 2 + 2 + 4 + 4)
    after = [plan(*k, n)[0].memory.total.value for k in keys for n in LENGTHS]
    assert after == pytest.approx(before, rel=1e-9)


def test_fused_c_attn_gets_one_adapter():
    """Qwen's attention projects q, k and v with one fused ``c_attn`` (h → 3h; modeling_qwen.py ``QWenAttention``,
    as published with the checkpoints), so PEFT (finetune.py's ``lora_target_modules`` c_attn, c_proj, w1, w2; r 64;
    peft ``LoraLayer.update_layer``: lora_A in → r, lora_B r → out per wrapped module) adds one adapter of
    r × (h + 3h) there: Qwen-7B (h 4096, 32 layers, w1/w2 11,008 wide) has 32 × (64 × 16,384 + 64 × 8,192 +
    3 × 64 × 15,104) = 143,130,624 adapter parameters. llmplan counted 16,777,216 more (three adapters of
    r × (h + h)) until 2026-11-28. Exact, and the same count in the search's quick model."""
    from llmplan.core.bytes_per_param import trainable_params
    from llmplan.core.params import count_params
    from llmplan.core.training.lora import adapter_params

    sc = resolve(PlanDocument(model=ModelRef(id=MODELS["7B"]), hardware=HardwareRef(gpu=A100),
                              training=TrainingSettings(method="lora", lora_rank=64), workload="finetune"))
    m = sc.model
    h, inter, r = m.hidden_size, m.intermediate_size, 64
    peft = m.num_layers * (r * (h + 3 * h) + r * (h + h) + 3 * r * (h + inter))
    assert peft == 143_130_624
    assert adapter_params(count_params(m), m, None, sc.training) == peft
    assert trainable_params(count_params(m), "lora", 64, sc.training.lora_targets) == peft
