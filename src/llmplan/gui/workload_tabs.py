"""The workload editor: Inference, Fine-tune and Pre-train tabs over every engine knob.

The tab that is showing is the plan's ``workload``. Each knob is a bound editor
(``bind.py``) labelled with its unit and with a tooltip saying what it does and which
plan field it sets. The layout-related knobs (ZeRO, offload, recompute) live in the
layout editor beside the parallel sizes.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)
from shiboken6 import isValid

from llmplan.core.workload import InferenceSettings, TrainingSettings, wraps_stacked_experts
from llmplan.gui import backend
from llmplan.gui.auto_knobs import AutoSpin
from llmplan.gui.batch_knobs import BATCH_FIELDS, add_batch_rows
from llmplan.gui.bind import bound_check, bound_combo, bound_float, bound_spin
from llmplan.gui.engine_rows import follow_engine
from llmplan.gui.extra_knobs import add_extra_knobs
from llmplan.gui.ft_switches import limits_group, switches_group
from llmplan.gui.kv_choices import add_kv_row
from llmplan.gui.machine_cards import MachineCards
from llmplan.gui.page_state import PageState
from llmplan.gui.profile_choices import ProfileChoices, loss_options
from llmplan.gui.released_note import add_released_row
from llmplan.gui.state import PlanState
from llmplan.gui.system_options import system_group
from llmplan.gui.tooltips import wrap_tip

WORKLOADS = ("inference", "finetune", "pretrain")
LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")
LORA_EXPERTS = [("auto", "Auto (as PEFT does)"), ("peft_converted", "PEFT's conversion (2r)"),
                ("target_parameters", "Target parameters (r)"), ("per_expert_modules", "Per expert (transformers 4)"),
                ("none", "Not adapted")]
LORA_EXPERT_TIPS = {
    "auto": "What transformers 5 and PEFT >= 0.19 do with gate/up/down targets: PEFT's conversion on Mixtral, "
            "Qwen3-MoE, DeepSeek and the other families it converts; not adapted elsewhere (gpt-oss, Qwen2-MoE)",
    "peft_converted": "PEFT turns gate/up/down names into target_parameters: one adapter pair per expert, gate_up_proj "
                      "at rank 2r, down_proj at r; dense and shared-expert MLPs lose their adapters",
    "target_parameters": "PEFT's target_parameters on experts.gate_up_proj and experts.down_proj at rank r",
    "per_expert_modules": "transformers 4: every expert's gate, up and down projection a Linear with its own adapter",
    "none": "Routed experts frozen; shared experts and dense layers keep their adapters"}
# Fields with a hand-made editor here or in the layout editor; any other field gets a generic one.
TRAINING_KNOWN = ("method", "precision", "optimizer", "seq_len", "micro_batch", "global_batch", "tokens",
                  "recompute", "recompute_modules", "flash_attention", "zero_stage", "offload", "offload_params", "distributed_optimizer",
                  "fp32_grad_accumulation", "lora_rank", "lora_targets", "qlora_double_quant", "shard_group",
                  "dropout", "overlap_grad_reduce", "framework", "regime", "loss", "lora_dropout",
                  "liger", "torch_compile", "optimizer_in_backward", "paged_optimizer", "bf16_optimizer_states",
                  "activation_offload", "lora_on_lm_head", "modules_to_save", "grad_clip", "quant_base", "batching",
                  "mean_sequence_tokens", "lora_experts", *BATCH_FIELDS)
INFERENCE_KNOWN = ("weight_format", "kv_dtype", "batch", "prompt_tokens", "output_tokens", "engine", "backend",
                   "gpu_memory_utilization", "gpu_layers", "cpu_moe_layers", "host_memory_bandwidth",
                   "shared_prefix_tokens", "dp_attention", "draft_tokens", "draft_acceptance", "draft_cost_ratio",
                   "weight_file_bytes")  # set from a Hub file (model.hub.file_bytes), shown in the model summary


def _opts(values) -> list[tuple[str, str]]:
    return [(v, v) for v in values]


def _scrolled(inner: QWidget) -> QScrollArea:
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QScrollArea.Shape.NoFrame)
    # Forms scroll down; sideways only if a field cannot shrink further (never clipped: issue 18).
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
    for form in inner.findChildren(QFormLayout):  # a field moves under its label when the pane is narrow
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
    area.setWidget(inner)
    return area


def add_experts_row(f: QFormLayout, state: PlanState) -> None:
    """llama.cpp's --n-cpu-moe / --cpu-moe (inference.cpu_moe_layers), shown where it means something: llama.cpp
    on a mixture-of-experts model (or while the plan sets it, so that it can be cleared)."""
    box = bound_combo(state, "inference.cpu_moe_layers", "Experts in host RAM",
                      "llama.cpp's --n-cpu-moe N: the routed experts of the first N layers stay in host RAM, every "
                      "other weight, the KV cache and the head on the GPUs; type a number of layers. Automatic: "
                      "only when the model does not fit on the GPUs, as few as leave room, where that is faster "
                      "than whole layers in host RAM (docs/inference.md)",
                      [(None, "automatic"), (0, "none (all on the GPUs)"), ("all", "all (--cpu-moe)")],
                      editable=True, chars=14)
    f.addRow("Experts in host RAM (--n-cpu-moe)", box)
    row = f.rowCount() - 1

    def follow(outcome) -> None:
        if not isValid(box):  # the tab was rebuilt; the plan lives on
            return
        sc = outcome.scenario if outcome is not None else None
        engine = sc.engine_profile if sc is not None else None
        moe = sc is not None and sc.model.is_moe and engine is not None and engine.experts_in_host
        f.setRowVisible(row, moe or state.doc.inference.cpu_moe_layers is not None)

    state.evaluated.connect(follow)
    follow(state.outcome)


def inference_form(state: PlanState) -> QWidget:
    w = QWidget()
    f = QFormLayout(w)
    f.addRow("Weight format", bound_combo(state, "inference.weight_format", "Weight format",
             "How the weights are stored: 16-bit, 8-bit, 4-bit GPTQ/AWQ/NF4 or a GGUF type (q4_k_m…); "
             "type another GGUF type in lower case; hover an entry for what it is and its bits per weight",
             _opts(backend.weight_formats()), editable=True, item_tips=backend.weight_format_words()))
    add_released_row(f, state)
    add_kv_row(f, state)
    f.addRow("Concurrent sequences", bound_spin(state, "inference.batch", "Concurrent sequences",
             "Sequences decoded together (the batch); KV cache grows with it", 1, 1_000_000))
    f.addRow("Prompt length (tokens)", bound_spin(state, "inference.prompt_tokens", "Prompt length",
             "Input tokens per request: sets the prefill work and the time to first token", 1, 10_000_000, 256))
    f.addRow("Output length (tokens)", bound_spin(state, "inference.output_tokens", "Output length",
             "Generated tokens per request: prompt + output is the context the KV cache holds", 1, 10_000_000, 64))
    engines = backend.engine_choices()
    f.addRow("Engine", bound_combo(state, "inference.engine", "Serving engine",
             "Serving engine profile from the engine catalog (catalogs/engines.toml and your own engines.toml): "
             "its GPU memory reservation, runtime context and framework bytes, KV block size and decode speed",
             [(key, name) for key, name, _tip in engines], aliases=backend.engine_aliases(),
             item_tips={key: tip for key, _name, tip in engines}, chars=14))
    f.addRow("GPU back-end", bound_combo(state, "inference.backend", "GPU back-end",
             "The GPU API llama.cpp and Ollama run on: automatic is the vendor's own (CUDA on NVIDIA, ROCm on AMD, "
             "SYCL on Intel, Metal on Apple); Vulkan runs on NVIDIA, AMD and Intel. It sets the runtime context "
             "counted per GPU and the prompt kernels' speed (docs/inference.md)",
             [("auto", "automatic"), ("cuda", "CUDA"), ("rocm", "ROCm (HIP)"), ("vulkan", "Vulkan"),
              ("sycl", "SYCL"), ("metal", "Metal")], chars=14))
    f.addRow("GPU memory utilisation", bound_float(state, "inference.gpu_memory_utilization",
             "GPU memory utilisation", "vLLM's --gpu-memory-utilization: the share of GPU memory the "
             "engine may take; at the minimum it uses the engine's default", 0.0, 1.0, 2, 0.05,
             none_text="engine default"))
    f.addRow("GPU layers (-ngl)", bound_spin(state, "inference.gpu_layers", "GPU layers",
             "llama.cpp's -ngl: layers kept on the GPU, the rest run on the CPU", -1, 10_000,
             special_zero="as many as fit", none_below=True))
    add_experts_row(f, state)
    f.addRow("Host RAM bandwidth (GB/s)", bound_float(state, "inference.host_memory_bandwidth",
             "Host RAM bandwidth", "Bytes per second the CPU reads layers left in host RAM (partial offload, "
             "llama.cpp); at the minimum: the engine's default", 0.0, 10_000.0, 1, 10.0, "GB/s", none_text="engine default",
             scale=1e-9))
    f.addRow("Shared prompt prefix (tokens)", bound_spin(state, "inference.shared_prefix_tokens", "Shared prompt prefix",
             "Leading prompt tokens every sequence shares (a system prompt): their KV cache is held once", 0,
             100_000_000, 256))
    f.addRow("", bound_check(state, "inference.dp_attention", "Data-parallel attention (SGLang)",
             "SGLang's --enable-dp-attention, for multi-latent-attention models (DeepSeek-V2/V3): every GPU of the "
             "tensor-parallel group holds the whole attention and runs its own requests, each caching its own KV; "
             "the feed-forward stays split over them"))
    spec = QGroupBox("Speculative decoding")
    g = QFormLayout(spec)
    g.addRow("Draft tokens per step", bound_spin(state, "inference.draft_tokens", "Draft tokens per step",
             "Tokens a small draft model proposes per target step (0: no speculative decoding)", 0, 64,
             special_zero="off"))
    g.addRow("Acceptance rate", bound_float(state, "inference.draft_acceptance", "Draft acceptance rate",
             "Probability the target model accepts each draft token (0–1)", 0.0, 0.99, 2, 0.05))
    g.addRow("Draft step cost (× target step)", bound_float(state, "inference.draft_cost_ratio", "Draft step cost",
             "Time of one draft-model step as a fraction of one target-model step (0–1)", 0.0, 1.0, 3, 0.01))
    add_extra_knobs(f, state, "inference", InferenceSettings, INFERENCE_KNOWN)
    follow_engine(state, f)  # llama.cpp's rows only under an engine that has them
    outer = QWidget()
    lay = QVBoxLayout(outer)
    lay.addWidget(w)
    lay.addWidget(spec)
    lay.addWidget(system_group(state, training=False))
    lay.addWidget(efficiency_group(state))
    cards = MachineCards(state)
    lay.addWidget(cards)
    lay.addStretch(1)
    area = _scrolled(outer)
    area.machine_cards = cards
    return area


def training_form(state: PlanState, finetune: bool) -> QWidget:
    w = QWidget()
    outer = QVBoxLayout(w)
    if finetune:
        box = QGroupBox("Method")
        f = QFormLayout(box)
        f.addRow("Method", bound_combo(state, "training.method", "Fine-tuning method",
                 "full: train every weight; LoRA: train small low-rank adapters on frozen weights; "
                 "QLoRA: LoRA on 4-bit NF4 weights", [("full", "Full fine-tune"), ("lora", "LoRA"),
                                                      ("qlora", "QLoRA")]))
        rank = bound_spin(state, "training.lora_rank", "LoRA rank",
                          "Rank r of each adapter: adapter parameters grow linearly with it (Hu et al. 2021)", 1, 65_536)
        f.addRow("LoRA rank", rank)
        drop_tip = ("PEFT lora_dropout: above 0 each adapted projection keeps a 1-byte mask and a copy of its input "
                    "for the backward (0.05: the QLoRA paper's setting); at the minimum: the framework's default "
                    "(torchtune, unsloth, LLaMA-Factory 0; Hugging Face, axolotl 0.05), and 0 where LoRA reaches a "
                    "mixture of experts' stacked expert parameters (PEFT's ParamWrapper refuses any dropout)")
        lora_drop = bound_float(state, "training.lora_dropout", "LoRA dropout", drop_tip,
                                -0.01, 0.99, 2, 0.05, none_text="framework's own")
        f.addRow("LoRA dropout", lora_drop)
        targets = QGridLayout()  # two rows, so the form fits a narrow centre pane
        boxes = [_target_box(state, t) for t in LORA_TARGETS]
        for i, b in enumerate(boxes):
            targets.addWidget(b, i // 4, i % 4)
        f.addRow("LoRA targets", targets)
        experts = bound_combo(state, "training.lora_experts", "LoRA on routed experts",
                              "Mixture of experts: how LoRA reaches the routed experts, which transformers 5 keeps as "
                              "two stacked 3-D parameters per layer (plan field training.lora_experts). Stacked "
                              "adapters rebuild each layer's expert weights every forward and keep the copy for the "
                              "backward", LORA_EXPERTS, chars=16, item_tips=LORA_EXPERT_TIPS)
        f.addRow("Routed experts", experts)
        double_quant = bound_check(state, "training.qlora_double_quant", "QLoRA double quantisation",
                                   "Quantise the 4-bit quantisation constants too (QLoRA §3): saves ~0.37 bits "
                                   "per parameter")
        f.addRow("", double_quant)

        def follow_method(doc) -> None:  # adapter knobs only mean something for the methods that use them
            adapters = doc.training.method in ("lora", "qlora")
            for w_ in (rank, lora_drop, *boxes):
                w_.setEnabled(adapters)
            follow_model(state.outcome)
            double_quant.setEnabled(doc.training.method == "qlora")

        def follow_model(outcome) -> None:  # the routed-experts choice only means something on a mixture of experts
            if not isValid(experts):  # the tab was rebuilt; the plan lives on
                return
            sc = outcome.scenario if outcome is not None else None
            moe = sc is not None and sc.model.is_moe
            experts.setEnabled(moe and state.doc.training.method in ("lora", "qlora"))
            show_dropout(sc)

        dropout_shown: list[tuple[str, str]] = []  # the special text and tooltip last set: set again only when new

        def show_dropout(sc) -> None:  # "framework's own" says the value it resolved to, and why where it is 0
            if sc is None or sc.workload == "inference" or state.doc.training.lora_dropout is not None:
                shown = ("framework's own", wrap_tip(drop_tip + "\n(plan field: training.lora_dropout)"))
            else:
                value = sc.training.lora_dropout
                stacked = wraps_stacked_experts(sc.model, sc.training)
                why = (f"0, as LoRA reaches {sc.model.name}'s stacked expert parameters (training.lora_experts), "
                       "where PEFT's ParamWrapper refuses any dropout (peft 0.21.2, tuners/lora/layer.py)" if stacked
                       else f"{value:g}, the {sc.framework.name} default")
                shown = (f"framework's own ({value:g})",
                         wrap_tip(f"{drop_tip}\nFramework's own here: {why}\n(plan field: training.lora_dropout)"))
            if dropout_shown != [shown]:  # each set cost ~0.1 ms (the spin box re-lays out its text)
                dropout_shown[:] = [shown]
                lora_drop.setSpecialValueText(shown[0])
                lora_drop.setToolTip(shown[1])

        state.doc_changed.connect(follow_method)
        state.evaluated.connect(follow_model)
        follow_method(state.doc)
        outer.addWidget(box)
    box = QGroupBox("Training")
    f = QFormLayout(box)
    f.addRow("Framework", bound_combo(state, "training.framework", "Framework",
             "The training framework whose memory and speed the estimate describes (catalogs/frameworks.toml): "
             "Hugging Face Trainer + PEFT (eager modeling code, fp32 loss upcast), torchtune, unsloth, "
             "LLaMA-Factory, axolotl, Megatron-Core (fused kernels), DeepSpeed ZeRO, PyTorch FSDP2, MosaicML's "
             "Composer FSDP (llm-foundry) or Meta's Llama 3 stack as its paper describes it; the switches it supports show below. Auto: Hugging Face Trainer for LoRA/QLoRA and for full fine-tunes within one node (ZeRO/FSDP on several GPUs), Megatron for pre-training and multi-node full fine-tunes; the line above the switches says which it chose", backend.framework_choices()))
    f.addRow("Precision regime", bound_combo(state, "training.regime", "Precision regime",
             "AMP: 16-bit compute with fp32 master weights (PyTorch AMP, Megatron). Pure: the model loaded in "
             "16 bits and trained as is — no master copy, 16-bit optimizer states. Auto: the framework's "
             "(torchtune: pure; axolotl: pure for full fine-tunes, AMP for adapters; the others: AMP)",
             [("auto", "framework's own"), ("amp", "AMP (fp32 master weights)"), ("pure", "pure 16-bit")]))
    f.addRow("Loss", ProfileChoices(state, "training.loss", "Loss",
             "How the loss treats the logits: the framework's own (auto), Hugging Face's fp32 upcast (tokens × "
             "vocabulary × 12 bytes at its peak), Megatron's fp32 logits, or a fused linear cross-entropy "
             "(Liger, unsloth) that never materialises them, or torchtune's chunked cross-entropy (8 chunks), or "
             "axolotl's compiled chunked cross-entropy over the whole 16-bit logits (4 bytes per logit); "
             "\"fp32 upcast, shifted copy\" is Hugging Face's loss before transformers PR #35646 (January 2025), "
             "which held a second fp32 copy of the logits (14 bytes per logit in the forward); \"16-bit, shifted "
             "copy\" is model code that shifts the logits itself and never upcasts them, run without autocast "
             "(Qwen 1.0 under DeepSpeed): 6 bytes per logit; \"fused CE\" is flash-attn's cross-entropy kernel on "
             "the 16-bit logits (llm-foundry's default): 4 bytes per logit; \"TE fused CE\" is Transformer "
             "Engine's cross-entropy kernel, Megatron-Core's fused loss with the te implementation (NeMo's "
             "performance scripts): the 16-bit logits, the gradient written over them. Only the losses the plan's "
             "framework runs are listed",
             loss_options, lambda doc, _prof: doc.training.loss, chars=14))
    f.addRow("Precision", bound_combo(state, "training.precision", "Precision",
             "Compute precision of the forward and backward pass (mixed precision keeps fp32 master weights)",
             _opts(["bf16", "fp16", "fp8", "fp32"])))
    f.addRow("Optimizer", bound_combo(state, "training.optimizer", "Optimizer",
             "Optimizer states per parameter: AdamW 8 bytes, 8-bit Adam 2, SGD 0, momentum/Lion 4 …",
             _opts(["adamw", "adam8bit", "adafactor", "lion", "muon", "momentum", "sgd"])))
    f.addRow("Sequence length (tokens)", bound_spin(state, "training.seq_len", "Sequence length",
             "Tokens per training sequence: activation memory grows with it", 1, 10_000_000, 512))
    f.addRow("Micro-batch (sequences per GPU)", AutoSpin(state, "training.micro_batch", "Micro-batch",
             "Sequences per GPU per forward/backward pass", 100_000))
    add_batch_rows(f, state)
    f.addRow("Tokens to train (billions)", bound_float(state, "training.tokens", "Tokens to train",
             "Total training tokens, for the time and cost figures", 0.001, 1e8, 3, 10, "B tokens", scale=1e-9))
    f.addRow("", bound_check(state, "training.flash_attention", "FlashAttention",
             "Fused attention: no s×s score matrix is stored (Dao et al. 2022)"))
    f.addRow("", bound_check(state, "training.fp32_grad_accumulation", "fp32 gradient buffer",
             "Keep gradients in fp32 for accumulation (Megatron's default): 4 bytes per parameter"))
    f.addRow("", bound_check(state, "training.distributed_optimizer", "Distributed optimizer",
             "Megatron's distributed optimizer: optimizer states sharded over data parallel (≈ ZeRO-1)"))
    f.addRow("", bound_check(state, "training.overlap_grad_reduce", "Overlap gradient reduction",
             "Overlap the data-parallel gradient reduction with the last micro-batch's backward pass"))
    f.addRow("ZeRO/FSDP shard group (GPUs)", bound_spin(state, "training.shard_group", "ZeRO shard group",
             "GPUs that ZeRO/FSDP shards states over; 8: FSDP HYBRID_SHARD within a node (0: all of DP × CP)",
             0, 1_000_000, special_zero="all of DP × CP"))
    f.addRow("Dropout (probability)", bound_float(state, "training.dropout", "Dropout",
             "Attention and hidden dropout probability; above 0 it stores 1-byte masks (modern LLMs use 0)",
             0.0, 0.99, 2, 0.05))
    add_extra_knobs(f, state, "training", TrainingSettings, TRAINING_KNOWN)
    outer.addWidget(box)
    outer.addWidget(switches_group(state))  # both tabs: torchtitan's torch.compile (fsdp2) is a pre-training switch
    if finetune:
        outer.addWidget(limits_group(state))
    outer.addWidget(system_group(state, training=True))
    outer.addWidget(efficiency_group(state))
    outer.addStretch(1)
    return _scrolled(w)


def efficiency_group(state: PlanState) -> QGroupBox:
    """This plan's overrides of the catalog's achievable fractions of peak."""
    box = QGroupBox("Efficiency (fraction of peak)")  # short: a group title never wraps
    box.setToolTip(wrap_tip("Achievable fractions of peak for this plan; at the lowest value each field shows "
                   "\"catalog default\" and the GPU's catalog default applies"))
    f = QFormLayout(box)
    for key, label, tip in (
            ("matmul", "Matmul", "Fraction of dense peak FLOP/s that large matrix multiplies reach"),
            ("memory_bandwidth", "Memory bandwidth", "Fraction of peak HBM bandwidth reached"),
            ("network", "Network", "Fraction of link bandwidth collectives reach"),
            ("host_memory_bandwidth", "Host memory (offload)",
             "Fraction of the host's theoretical DRAM bandwidth a CPU optimizer step reaches (ZeRO-Offload)"),
            ("pcie", "PCIe copies (offload)", "Fraction of the GPU's PCIe payload rate pinned host copies reach")):
        f.addRow(label, bound_float(state, f"efficiency.{key}", f"{label} efficiency", tip, 0.0, 1.0, 2, 0.05,
                                    none_text="catalog default"))
    f.addRow("Clock under full load", bound_float(
        state, "efficiency.sustained_clock", "Clock under full load",
        "Share of its full clock a power-limited GPU holds when GEMMs and attention fill all of its time (H100 SXM: "
        "0.87, measured). Training step times keep the full clock while they fill up to the catalog's "
        "full_clock_share of the time (H100: 40%) and fall to this value at 100%; GeForce cards hold 1.0",
        0.3, 1.0, 2, 0.01, none_text="catalog default"))
    return box


def _target_box(state: PlanState, target: str):
    from PySide6.QtWidgets import QCheckBox

    box = QCheckBox(target)
    box.setAccessibleName(f"LoRA target {target}")
    box.setToolTip(wrap_tip(f"Put a LoRA adapter on the {target} projection (plan field training.lora_targets); where the "
                   "checkpoint fuses it with others (q/k/v in Qwen 1.0, Phi-3, GPT-NeoX; gate/up in Phi-3), "
                   "one adapter covers the whole fused module"))

    def refresh(_doc=None) -> None:
        wanted = target in state.doc.training.lora_targets
        if box.isChecked() == wanted:  # most edits keep the targets: nothing to set
            return
        box.blockSignals(True)
        box.setChecked(wanted)
        box.blockSignals(False)

    def toggled(on: bool) -> None:
        current = list(state.get("training.lora_targets"))
        wanted = [t for t in LORA_TARGETS if (t in current and t != target) or (t == target and on)]
        if not wanted or not state.edit("training.lora_targets", tuple(wanted), f"LoRA target {target}"):
            refresh()

    state.doc_changed.connect(refresh)
    refresh()
    box.toggled.connect(toggled)
    return box


class WorkloadTabs(QTabWidget):
    """Inference / Fine-tune / Pre-train; the visible tab is the plan's workload."""

    def __init__(self, state: PlanState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.setAccessibleName("Workload")
        # each tab's editors follow the plan while their tab is shown (page_state: a hidden tab catches up when shown)
        self.pages = tuple(PageState(state, self) for _ in WORKLOADS)
        inference = inference_form(self.pages[0])
        self.machine_cards = inference.machine_cards  # different cards in one machine (machine_cards.py)
        self.addTab(inference, "&Inference")
        self.addTab(training_form(self.pages[1], finetune=True), "Fine-&tune")
        self.addTab(training_form(self.pages[2], finetune=False), "&Pre-train")
        for i, tip in enumerate(("Serve the model: memory, latency and throughput",
                                 "Adapt a trained model: full, LoRA or QLoRA",
                                 "Train from scratch on many tokens")):
            self.setTabToolTip(i, tip)
        state.doc_changed.connect(self._follow)
        self._follow(state.doc)
        self.currentChanged.connect(self._tab_changed)

    def _follow(self, doc) -> None:
        self.blockSignals(True)
        self.setCurrentIndex(WORKLOADS.index(doc.workload))
        self.blockSignals(False)
        self._show_page(self.currentIndex())

    def _show_page(self, index: int) -> None:
        for i, page in enumerate(self.pages):
            if i != index:
                page.set_shown(False)
        self.pages[index].set_shown(True)  # last: a tab shown again catches up with the plan

    def _tab_changed(self, index: int) -> None:
        self._show_page(index)
        workload = WORKLOADS[index]
        if workload == self.state.doc.workload:
            return
        changes: dict[str, object] = {"workload": workload}
        tokens = self.state.doc.training.tokens
        pretrain_tokens = TrainingSettings.model_fields["tokens"].default
        if workload == "pretrain":
            changes["training.method"] = "full"  # pre-training trains every weight
            if tokens == backend.FINETUNE_TOKENS:  # untouched fine-tune length: a pre-training run is far longer
                changes["training.tokens"] = pretrain_tokens
        elif workload == "finetune" and self.state.doc.workload == "pretrain":
            changes["training.method"] = "lora"
            if tokens == pretrain_tokens:
                changes["training.tokens"] = backend.FINETUNE_TOKENS
        if not self.state.edit_many(changes, f"Workload: {self.tabText(index).replace('&', '')}"):
            self._follow(self.state.doc)
