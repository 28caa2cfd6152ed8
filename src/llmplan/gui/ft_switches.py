"""Fine-tune and Pre-train tabs: the chosen framework profile's switches; what fits on the GPU (fine-tune).

The profile (``training.framework``) decides which switches mean anything: only those it supports
are shown (and any the plan turned on that it does not, so the user can turn them off again), each
as auto / on / off with the profile's auto policy written beside them ("torchtune default: optimizer
in backward ..."); gradient clipping, which every profile has, always, with its default ("Hugging Face
Trainer + PEFT default: on (max_grad_norm 1.0)"). Below, the longest sequence and the largest
micro-batch that fit one GPU of the plan's kind under that profile (``core.training.limits``),
recomputed a moment after each estimate.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox, QLabel, QVBoxLayout, QWidget

from llmplan.core.framework_profile import SWITCH_NAMES
from llmplan.core.training.switches import SWITCHES
from llmplan.gui.after_paint import after_first_paint
from llmplan.gui.bind import bound_combo, bound_spin, compact
from llmplan.gui.state import PlanState
from llmplan.gui.tooltips import wrap_tip
from llmplan.plan.resolve import plan_framework_profile

LIMITS_DELAY_MS = 250  # the searches take tens of ms: run them once the user pauses
_VALUES = (None, True, False)


def plan_profile(state: PlanState, fresh: bool = False) -> Any:
    """The framework profile of the latest outcome, or the one the plan names (None when unknown); ``fresh``: the
    plan's own, not the outcome's (which lags an edit until the plan is evaluated again)."""
    out = state.outcome
    if not fresh and out is not None and out.scenario is not None and out.scenario.framework_profile is not None:
        return out.scenario.framework_profile
    doc = state.doc
    cached = state.profile_memo
    if cached is not None and cached[0] is doc:  # every picker refreshes on each edit: resolve once per document
        return cached[1]
    try:  # the plan layer keeps it too: the evaluation of this document that follows does not work it out again
        prof = plan_framework_profile(doc)
    except Exception:  # an unknown id: the estimate's own error line says so
        prof = None
    state.profile_memo = (doc, prof)  # an edit makes a new document (commands.set_path), so this never goes stale
    return prof


def auto_framework_text(doc: Any, prof: Any) -> str:
    """What "auto" chose and why, as the app shows other auto policies ("Auto: Hugging Face Trainer + PEFT for
    LoRA/QLoRA, …"); "" when the plan names its framework. The policy is ``catalog.frameworks.auto_choice``."""
    if doc.training.framework.strip().lower() != "auto" or prof is None:
        return ""
    from llmplan.catalog.frameworks import auto_choice

    preferred, why = auto_choice(doc.workload, doc.training.method, doc.hardware.nodes)
    if prof.id != preferred:
        why = f"because the plan's layout or switches need it ({preferred} cannot run them)"
    return f"Auto: {prof.name} {why}."


GRAD_CLIP_TIP = ("Clip the gradient norm before each optimizer step: one pass reading every gradient this GPU holds "
                 "for the norm, one reading and writing them to scale (torch clip_grad_norm_, Megatron "
                 "clip_grad_norm_fp32); DeepSpeed computes the norm at every step either way.\nSource: "
                 "llmplan.core.training.grad_clip\n(plan field: training.grad_clip; auto: the framework's default)")


class SwitchRow(QComboBox):
    """auto / on / off for one switch; "auto" says what the profile does. ``values``: the plan field's value
    for each item (None, True, False for the on/off switches; "auto", "on", "off" for ``grad_clip``)."""

    def __init__(self, state: PlanState, name: str, values: tuple = _VALUES, label: str = "",
                 tip: str = "") -> None:
        super().__init__()
        compact(self, 14)
        self._state, self.name, self._values = state, name, values
        info = SWITCHES.get(name)
        self.label = label or info.label
        path = f"training.{name}"
        self.setObjectName(path)
        self.setAccessibleName(self.label)
        self.setToolTip(wrap_tip(tip or f"{info.changes}.\nSource: {info.source}\n(plan field: {path}; auto: the framework's "
                        "default)"))
        self.addItems(["auto", "on", "off"])
        self.currentIndexChanged.connect(self._changed)
        state.doc_changed.connect(self.refresh)

    def refresh(self, _doc: Any = None, default_on: bool | None = None) -> None:
        index = self._values.index(getattr(self._state.doc.training, self.name))
        if index == self.currentIndex() and default_on is None:  # the switch kept (most edits): nothing to set
            return
        self.blockSignals(True)
        if default_on is not None:
            self.setItemText(0, f"auto ({'on' if default_on else 'off'})")
        self.setCurrentIndex(index)
        self.blockSignals(False)

    def _changed(self, i: int) -> None:
        if not self._state.edit(f"training.{self.name}", self._values[i], f"Set {self.label}"):
            self.refresh()


def grad_clip_policy(prof: Any) -> str:
    """The profile's clipping default in words: "Hugging Face Trainer + PEFT default: on (max_grad_norm 1.0)"."""
    default = "on" if prof.grad_clip else "off"
    tail = "; it cannot be turned off" if prof.grad_clip_always else ""
    return f"Gradient clipping — {prof.name} default: {default} ({prof.grad_clip_setting}){tail}."


class SwitchesGroup(QGroupBox):
    """The profile's switches, its policy, the quantised base and the batching (slots are methods, so Qt
    drops the connections with the widget)."""

    def __init__(self, state: PlanState) -> None:
        super().__init__("Framework switches")
        self._state = state
        outer = QVBoxLayout(self)
        self.policy = QLabel()
        self.policy.setObjectName("framework policy")
        self.policy.setWordWrap(True)
        outer.addWidget(self.policy)
        form_host = QWidget()
        self.form = form = QFormLayout(form_host)
        form.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(form_host)
        self.rows = {name: SwitchRow(state, name) for name in SWITCH_NAMES}
        for name, row in self.rows.items():
            form.addRow(SWITCHES[name].label, row)
        self.grad_clip = SwitchRow(state, "grad_clip", ("auto", "on", "off"), "Gradient clipping", GRAD_CLIP_TIP)
        form.addRow("Gradient clipping", self.grad_clip)
        from llmplan.gui.profile_choices import ProfileChoices, quant_base_options

        self.quant = ProfileChoices(state, "training.quant_base", "Quantised base",
                                    "QLoRA: the format of the frozen base — NF4 (bitsandbytes), GPTQ or AWQ 4-bit "
                                    "(group 128), LLM.int8, or MXFP4; sets its bits per weight and the "
                                    "dequantisation traffic. Only the bases the plan's framework trains LoRA on are "
                                    "listed", quant_base_options, lambda doc, _prof: doc.training.quant_base,
                                    chars=14)
        form.addRow("Quantised base", self.quant)
        form.addRow("Batches", bound_combo(state, "training.batching", "Batches",
                    "packed: sequences concatenated to the sequence length, every token real; padded: each batch "
                    "padded to its longest sequence — memory and compute at the sequence length, throughput "
                    "counts the real tokens only", [("packed", "packed"), ("padded", "padded to longest")],
                    chars=14))
        self.mean = bound_spin(state, "training.mean_sequence_tokens", "Mean real tokens per sequence",
                               "Padded batches: the mean number of real tokens per sequence (tokens/s and "
                               "training time count these)", 0, 10_000_000, 128, special_zero="= sequence length")
        form.addRow("Mean real tokens", self.mean)
        self._view: tuple | None = None  # what ``follow`` last showed
        state.doc_changed.connect(self.follow)
        state.evaluated.connect(self.follow)
        self.follow()

    def follow(self, _x: Any = None) -> None:
        """Show the profile's switches, each "auto" with what the result (else the profile) runs, and its policy.
        Runs after each edit and each estimate; when what it would show is what it shows (most knob changes),
        it leaves the widgets alone."""
        state, form = self._state, self.form
        prof = plan_profile(state)
        doc = state.doc
        tr = doc.training
        supported = set(prof.switches) if prof is not None else set()
        defaults = set(prof.on_by_default) if prof is not None else set()
        out = state.outcome
        effective = out.scenario.training if out is not None and out.scenario is not None else None
        rows = tuple((name in supported or bool(getattr(tr, name)),
                      bool(getattr(effective, name)) if effective is not None else name in defaults)
                     for name in self.rows)
        clip = effective.grad_clip == "on" if effective is not None else bool(prof is not None and prof.grad_clip)
        view = (prof, rows, clip, tr.method, tr.batching == "padded", tr.framework, doc.workload,
                doc.hardware.nodes)  # the policy line reads the profile and (auto_framework_text) the rest
        if view == self._view:
            return
        self._view = view
        for row, (visible, default_on) in zip(self.rows.values(), rows, strict=True):
            form.setRowVisible(row, visible)
            row.refresh(default_on=default_on)
        self.grad_clip.refresh(default_on=clip)
        form.setRowVisible(self.quant, tr.method == "qlora")
        form.setRowVisible(self.mean, tr.batching == "padded")
        if prof is None:
            self.policy.setText("Unknown framework: pick one above.")
        else:
            shown = ", ".join(SWITCHES[n].label for n in prof.switches) or "none"
            auto = auto_framework_text(state.doc, prof)
            self.policy.setText((f"{auto}<br>" if auto else "") +
                                f"<b>{prof.name}</b>: {prof.policy or prof.describes}<br>Switches: {shown}.<br>"
                                f"{grad_clip_policy(prof)}")


def switches_group(state: PlanState) -> QGroupBox:
    return SwitchesGroup(state)


class LimitsGroup(QGroupBox):
    """Longest sequence and largest micro-batch that fit one GPU of the plan's kind, for its profile."""

    def __init__(self, state: PlanState) -> None:
        super().__init__("What fits on one GPU")
        self._state = state
        form = QFormLayout(self)
        self.longest = QLabel("—")
        self.longest.setObjectName("longest sequence that fits")
        self.largest = QLabel("—")
        self.largest.setObjectName("largest micro-batch that fits")
        for label in (self.longest, self.largest):  # long sentences: unwrapped they pushed the tab past its
            label.setWordWrap(True)                  # scroll area and clipped its right edge (issue 18)
        form.addRow("Longest sequence", self.longest)
        form.addRow("Largest micro-batch", self.largest)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(LIMITS_DELAY_MS)
        self._timer.timeout.connect(self.compute_now)
        self._painted, self._due = False, False
        after_first_paint(self, self._first_painted)  # the searches wait until the window is on screen
        state.evaluated.connect(self.schedule)

    def _first_painted(self) -> None:
        self._painted = True
        if self._due:
            self._timer.start()

    def schedule(self, _outcome: Any = None) -> None:
        if self._painted:
            self._timer.start()
        else:
            self._due = True

    def compute_now(self) -> None:
        from llmplan.core.training.limits import largest_micro_batch, longest_sequence

        out = self._state.outcome
        sc = out.scenario if out is not None else None
        if sc is None or sc.workload != "finetune":
            self.longest.setText("— (no estimate)")
            self.largest.setText("—")
            return
        tr, gpu, prof = sc.training, sc.cluster.gpu.name, sc.framework.name
        try:
            s, b = longest_sequence(sc), largest_micro_batch(sc)
        except Exception as exc:  # a plan the searches cannot vary: say so, never crash the tab
            self.longest.setText(f"— ({exc})")
            self.largest.setText("—")
            return
        self.longest.setText(f"{s:,} tokens at micro-batch {tr.micro_batch} ({prof}, {gpu})" if s else
                             f"none: micro-batch {tr.micro_batch} does not fit even one token ({gpu})")
        self.largest.setText(f"{b:,} sequence{'s' if b != 1 else ''} of {tr.seq_len:,} tokens ({prof}, {gpu})" if b else
                             f"none: one sequence of {tr.seq_len:,} tokens does not fit ({gpu})")


def limits_group(state: PlanState) -> QGroupBox:
    return LimitsGroup(state)
