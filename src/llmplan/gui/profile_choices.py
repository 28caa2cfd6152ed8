"""Pickers that list only what the plan's framework can run: the loss (``FrameworkProfile.losses``), the
quantised LoRA base (``quant_bases``), the offload device (``offload_devices``), the ZeRO stage (``zero_stages``,
``single_gpu_zero_stages``) and the recompute setting (selective only where the framework has it,
``selective_recompute``; torchtitan's per-op policy only under ``selective_op``), in the framework's own words
("gradient checkpointing" under the Hugging Face Trainer, ``recompute_words``).

A value the plan holds that the profile cannot run stays listed, marked "not run by …", so the banner's field
error and the way out are on screen together. The layout editor hides a knob the framework never runs and greys
one that does nothing for the plan, saying why (``zero_knob``, ``offload_knob``, ``offload_weights_knob``). A plan
that leaves recompute on its default (selective) under a framework without selective recompute shows what it runs:
none (``core.workload.effective_training``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt

from llmplan.core.framework_profile import offload_summary, offload_view, zero_choices
from llmplan.core.workload import DEFAULT_RECOMPUTE_MODULES
from llmplan.gui.auto_knobs import AUTO, AUTO_TIP, auto_text, automatic, used_value
from llmplan.gui.bind import ElidedCombo, compact, route_undo
from llmplan.gui.commands import is_stated
from llmplan.gui.ft_switches import plan_profile
from llmplan.gui.state import PlanState
from llmplan.gui.tooltips import wrap_tip

Option = tuple[Any, str, str]  # value, text, tooltip

LOSS_TEXT = {"auto": "framework's own", "upcast": "fp32 upcast (HF)",
             "upcast_shifted": "fp32 upcast, shifted copy (HF ≤ 4.48)",
             "shifted_16bit": "16-bit, shifted copy (Qwen 1.0, DeepSpeed)", "fp32_logits": "fp32 logits",
             "fused_linear": "fused linear CE (Liger)", "chunked": "chunked CE (torchtune)",
             "chunked_ce": "chunked CE (axolotl)",
             "fused_ce": "fused CE, 16-bit logits (flash-attn)", "te_ce": "TE fused CE (Megatron)"}

RECOMPUTE_TIPS = {
    "none": "Keep every activation the backward needs: fastest, most memory",
    "selective": "Korthikanti et al. 2022: recompute only the attention scores (nothing to recompute with "
                 "FlashAttention, which never stores them); under Megatron-Core also the modules ticked below "
                 "(--recompute-modules)",
    "selective_op": "torchtitan's per-operator checkpointing (FSDP2 profile): keep the attention output and "
                    "every second matmul's output, recompute the rest in the backward (about a third of each "
                    "layer's matmuls run twice)",
    "full": "Keep only each layer's input and run the whole layer's forward again in the backward "
            "(about a third more compute)",
}


def loss_options(prof: Any) -> list[Option]:
    """``auto`` (naming the profile's own loss) and the losses the profile's code runs; every kind without one."""
    kinds = prof.losses if prof is not None else tuple(k for k in LOSS_TEXT if k != "auto")
    own = f"framework's own: {LOSS_TEXT[prof.loss]}" if prof is not None else LOSS_TEXT["auto"]
    return [("auto", own, "The framework's default loss (Liger's fused linear cross-entropy when Liger is on)")] + \
        [(k, LOSS_TEXT[k], "") for k in kinds]


QUANT_TEXT = {"nf4": "NF4 (bitsandbytes)", "gptq": "GPTQ 4-bit", "awq": "AWQ 4-bit", "int8": "LLM.int8",
              "mxfp4": "MXFP4"}


def quant_base_options(prof: Any) -> list[Option]:
    """The quantised bases the profile trains LoRA on (``FrameworkProfile.quant_bases``: torchtune's and unsloth's
    NF4 only); every base without a profile."""
    kinds = prof.quant_bases if prof is not None else tuple(QUANT_TEXT)
    return [(k, QUANT_TEXT[k], "") for k in kinds]


OFFLOAD_TEXT = {"none": "no offload", "cpu": "offload to CPU", "nvme": "offload to NVMe"}


def offload_options(prof: Any) -> list[Option]:
    """No offload, and the devices the framework offloads its optimizer to (``FrameworkProfile.offload_devices``:
    NVMe only under DeepSpeed, nothing under unsloth), each saying what leaves the GPU there
    (``framework_profile.offload_summary``; a profile with a one-GPU offload, torchtune's CPUOffloadOptimizer, names
    both); every device without a profile."""
    devices = prof.offload_devices if prof is not None else ("cpu", "nvme")
    opts: list[Option] = [("none", OFFLOAD_TEXT["none"], "Everything stays on the GPUs")]
    for d in devices:
        tip = offload_summary(prof, d, False) if prof is not None else "optimizer states off the GPU"
        if prof is not None and d == "cpu" and prof.single_gpu_offload_style:
            one = offload_summary(offload_view(prof, d, 0, 1), d, False)
            tip = f"on one GPU without ZeRO: {one}; otherwise: {tip}"
        opts.append((d, OFFLOAD_TEXT[d], tip[0].upper() + tip[1:]))
    return opts


def offload_shown(doc: Any, _prof: Any) -> str:
    return doc.training.offload


ZERO_TEXT = {k: f"ZeRO {k}" for k in range(4)}


def zero_options(prof: Any, gpus: int) -> list[Option]:
    """The ZeRO stages the framework runs on ``gpus`` GPUs (``framework_profile.zero_choices``: unsloth 0 only,
    torchtune's single-device recipes 0 on one GPU); every stage without a profile."""
    stages = zero_choices(prof, gpus) if prof is not None else tuple(ZERO_TEXT)
    return [(k, ZERO_TEXT[k], "") for k in stages]


@dataclass(frozen=True, slots=True)
class KnobShow:
    """How the layout editor shows a training knob under the plan's profile: ``shown`` (hidden where the framework
    never runs it), ``enabled`` (greyed where it does nothing for this plan) and, when greyed, ``why``."""

    shown: bool = True
    enabled: bool = True
    why: str = ""


def zero_knob(doc: Any, prof: Any) -> KnobShow:
    """The ZeRO picker: hidden under a framework that runs no ZeRO stage (``zero_stages`` 0 only: unsloth); greyed
    where it runs none on this many GPUs (torchtune on one GPU); shown as usual while the plan states a stage the
    framework does not run, so the "not run by …" entry and the way back are on screen."""
    if prof is None or doc.workload == "inference":
        return KnobShow()
    tr, gpus = doc.training, doc.parallelism.gpus
    if is_stated(doc, "training.zero_stage") and tr.zero_stage not in zero_choices(prof, gpus):
        return KnobShow()
    if prof.zero_stages == (0,):
        return KnobShow(shown=False)
    if zero_choices(prof, gpus) == (0,):
        return KnobShow(enabled=False, why=f"Off on {gpus} GPU{'s' if gpus > 1 else ''}: {prof.name} runs no ZeRO "
                        "sharding there (its single-device run shards nothing, as the default ZeRO 1 shards nothing "
                        "on one GPU). The plan keeps the setting for more GPUs")
    return KnobShow()


def offload_knob(doc: Any, prof: Any) -> KnobShow:
    """The Offload picker: hidden under a framework with no optimizer or parameter offload (unsloth, Composer,
    Meta's Llama 3 stack: empty ``offload_devices``) unless the plan holds one (its field error and the way out)."""
    if prof is None or prof.offload_devices or doc.training.offload != "none":
        return KnobShow()
    return KnobShow(shown=False)


def offload_weights_knob(doc: Any, prof: Any) -> KnobShow:
    """"Offload weights" (``training.offload_params``) is DeepSpeed's separate ``offload_param`` (offload style
    ``zero``): hidden where the framework cannot offload the weights (no ``parameters`` in ``offload_targets``:
    unsloth, Megatron-Core's optimizer-only offload); greyed with the reason under FSDP's CPU offload, which always
    takes the weights with the optimizer (``framework_profile.offloads_params``). A plan that holds it on keeps the
    box, to turn it off."""
    if prof is None or doc.training.offload_params:
        return KnobShow()
    if "parameters" not in prof.offload_targets:
        return KnobShow(shown=False)
    if prof.offload_style == "fsdp":
        return KnobShow(enabled=False, why=f"Always on under {prof.name}'s offload ({prof.offload_setting or 'FSDP'}"
                        "): FSDP's CPU offload takes the weights, their gradients and the optimizer states together")
    return KnobShow()


def recompute_options(prof: Any) -> list[Option]:
    """none, selective where the framework has it, torchtitan's per-op policy where it runs it, full; under a
    framework with its own words for checkpointing every block (the Hugging Face Trainer's "gradient
    checkpointing") those words."""
    words = prof.recompute_words if prof is not None else ""
    full_tip = RECOMPUTE_TIPS["full"] + (f"; {prof.name} calls it {words}" if words else "")
    opts: list[Option] = [("none", f"no {words}" if words else "no recompute", RECOMPUTE_TIPS["none"])]
    if prof is None or prof.selective_recompute:
        opts.append(("selective", "selective recompute", RECOMPUTE_TIPS["selective"]))
    if prof is None or prof.selective_op:
        opts.append(("selective_op", "per-op selective", RECOMPUTE_TIPS["selective_op"]))
    opts.append(("full", words or "full recompute", full_tip))
    return opts


def recompute_shown(doc: Any, prof: Any) -> str:
    """The setting the plan runs: its own, or none where it leaves the default selective under a framework that
    has no selective recompute (named modules keep their value: the estimate's field error says why)."""
    tr = doc.training
    if (tr.recompute == "selective" and prof is not None and not prof.selective_recompute
            and "recompute" not in tr.model_fields_set and tr.recompute_modules == DEFAULT_RECOMPUTE_MODULES):
        return "none"
    return tr.recompute


class ProfileChoices(ElidedCombo):
    """A combo for one plan field whose entries are ``options(profile)``, rebuilt when the plan or its resolved
    profile changes; the entry shown is ``shown(doc, profile)``. With ``automatic``, a knob the default policy
    chooses (``gui.auto_knobs``): an "auto (…)" entry first, selected while the plan leaves the field open and
    naming the value the result used in this combo's words; a pick states the field."""

    def __init__(self, state: PlanState, path: str, label: str, tip: str,
                 options: Callable[[Any], list[Option]], shown: Callable[[Any, Any], Any], chars: int = 10,
                 automatic: bool = False) -> None:
        super().__init__()
        compact(self, chars)
        self._state, self._path, self._label = state, path, label
        self._options, self._shown, self._automatic = options, shown, automatic
        if automatic:
            tip = f"{tip}\n{AUTO_TIP}"
        self._listed: list[tuple[Any, str, str]] = []
        self._seen: tuple | None = None  # (profile, value, left open, value the result used, options) last shown
        self.setObjectName(path)
        self.setAccessibleName(label)
        self.setToolTip(wrap_tip(f"{tip}\n(plan field: {path})"))
        self.currentIndexChanged.connect(self._changed)
        state.doc_changed.connect(self.refresh)
        state.evaluated.connect(self.refresh)
        route_undo(self)
        self.refresh()

    def refresh(self, _x: Any = None) -> None:
        """Show the plan's value among its profile's options. What is shown follows from the profile (resolved
        from the document), the value the plan runs, whether the plan leaves the knob open and, for an automatic
        knob, the value the result used: with all four as last time (most knob changes) nothing is done."""
        doc = self._state.doc
        prof = plan_profile(self._state, fresh=True)
        value = self._shown(doc, prof)
        left_open = self._automatic and automatic(doc, self._path)
        used = used_value(self._state, self._path) if self._automatic else None
        opts = list(self._options(prof))
        seen = (prof, value, left_open, used, tuple(opts))  # the ZeRO options also follow the GPU count
        if seen == self._seen:
            return
        self._seen = seen
        if self._automatic:
            words = {v: t for v, t, _tip in opts}.get(used) or {v: t for v, t, _tip in self._options(None)}.get(
                used, None if used is None else str(used))  # a value this profile does not list: in the usual words
            opts.insert(0, (AUTO, auto_text(words), AUTO_TIP))
            if left_open:
                value = AUTO
        if value not in [v for v, _t, _tip in opts]:
            name = prof.name if prof is not None else "this framework"
            text = dict((v, t) for v, t, _ in self._options(None)).get(value, str(value))
            opts.append((value, f"{text} (not run by {name})", f"{name} cannot run this: pick another"))
        self.blockSignals(True)
        try:
            if opts != self._listed:
                self.clear()
                for v, text, item_tip in opts:
                    self.addItem(text, v)
                    if item_tip:
                        self.setItemData(self.count() - 1, wrap_tip(item_tip), Qt.ItemDataRole.ToolTipRole)
                self._listed = opts
            self.setCurrentIndex(self.findData(value))
        finally:
            self.blockSignals(False)

    def _changed(self, i: int) -> None:
        if i < 0:
            return
        value, doc = self.itemData(i), self._state.doc
        if value == AUTO:
            self._state.unstate(self._path, f"Automatic {self._label}")
            return
        if value == self._shown(doc, plan_profile(self._state, fresh=True)) and (
                not self._automatic or is_stated(doc, self._path)):
            return
        edit = self._state.pin if self._automatic else self._state.edit
        if not edit(self._path, value, f"Set {self._label}", merge=self._path):
            self._seen = None  # the list shows the refused pick: show the plan's value again
            self.refresh()
