"""A model released quantised is planned as released, by the CLI and the app alike (one rule, here).

gpt-oss ships its routed experts in MXFP4 (12.8 GiB for gpt-oss-20b, "runs within 16 GB") and DeepSeek-V3/R1
in block FP8; their config.json says so in ``quantization_config``. A person asking about gpt-oss-20b means
that release, not a 39 GiB bf16 copy. So for an inference plan that does not state ``inference.weight_format``,
the format is the release's, where the plan's engine loads it (``released_format``); a format the user
states always wins.

- The CLI applies it to a plan built from ``--model`` (``cli.cmd_estimate``); a plan file is taken as written.
- The app applies it whenever the model, the workload or the engine changes (``follow_release``, called by
  the plan state on those edits), so picking gpt-oss-20b on the Inference tab plans MXFP4, as the CLI does;
  switching to llama.cpp (which loads GGUF files only) or to training puts the plan's default back.

``RELEASED_FILES`` lists, per released format, the weight formats that carry those weights as released, tried
in order until the engine loads one: the checkpoint's own format first, then another file type's encoding of
the same weights. An engine that loads GGUF files only (llama.cpp, Ollama) then gets the GGUF made from the
release where there is one (``core.quant.released_as_gguf``: gpt-oss as ``mxfp4_moe``, ggml-org's 11.27 GiB
files; on Ollama ``mxfp4_bf16``, its library's 12.8 GiB).
"""

from __future__ import annotations

from llmplan.plan.document import PlanDocument

# released format -> formats that keep the released weights, in the order tried (a format not listed: itself)
RELEASED_FILES: dict[str, tuple[str, ...]] = {"mxfp4": ("mxfp4",), "fp8": ("fp8",)}

# the plan fields whose change re-applies the rule in the app (the model, what it is used for, what runs it)
FOLLOWED_FIELDS = ("model", "workload", "inference.engine")


def release_of(doc: PlanDocument, engine_id: str | None = None) -> str | None:
    """The format of the model's release that the plan's engine loads, for an inference plan whose model's
    config.json declares one (``quantization_config``); None otherwise. Whether the plan states a format of
    its own is not asked here (``released_format`` asks). ``engine_id``: the engine the command will run where
    the plan names none (the CLI's several different cards: llama.cpp's layer split)."""
    from llmplan.catalog.engines import engine_profile
    from llmplan.catalog.models import load_model_catalog
    from llmplan.core.engine_profile import check_weight_format
    from llmplan.core.quant import released_as_gguf
    from llmplan.errors import LlmplanError
    from llmplan.plan.hub_plan import safetensors_weight_format

    if doc.workload != "inference" or doc.model.hub:  # a Hub plan's format is its files' (plan.hub_plan)
        return None
    config = doc.model.config
    if config is None and doc.model.id:
        try:
            config = load_model_catalog().get(doc.model.id).config
        except LlmplanError:
            return None
    if not isinstance(config, dict) or not isinstance(config.get("quantization_config"), dict):
        return None
    released = safetensors_weight_format(config)
    if released is None:
        return None
    try:
        engine = engine_profile(engine_id or doc.inference.engine)
    except LlmplanError:
        return None
    files = (*RELEASED_FILES.get(released, (released,)), released_as_gguf(released, engine.id))
    return next((f for f in files if f is not None and check_weight_format(engine, f) is None), None)


def released_format(doc: PlanDocument, engine_id: str | None = None) -> str | None:
    """``release_of(doc, engine_id)`` where the plan leaves ``inference.weight_format`` open; None where it
    states one."""
    if "weight_format" in doc.inference.model_fields_set:
        return None
    return release_of(doc, engine_id)


def released_words(fmt: str, another: str) -> str:
    """What the CLI prints and the app shows beside a plan in its release's format; ``another``: how to pick
    another format there."""
    return f"weights as released: {fmt} (the model's config.json quantization_config; {another})"


def as_released(doc: PlanDocument, engine_id: str | None = None) -> tuple[PlanDocument, str | None]:
    """``doc`` with its weight format set to the release's where the rule applies, and that format (or None);
    ``engine_id`` as for ``release_of``."""
    from llmplan.plan.overrides import apply_overrides

    fmt = released_format(doc, engine_id)
    if fmt is None:
        return doc, None
    return apply_overrides(doc, [f"inference.weight_format={fmt}"]), fmt


def follow_release(before: PlanDocument, after: PlanDocument) -> PlanDocument:
    """``after`` (an edit of ``FOLLOWED_FIELDS`` applied to ``before``) with the weight format following the
    release: where ``before`` left the format to the rule (not stated, or the release's own format), ``after``
    gets its release's format, or the plan's default back when it has none (another model, a training
    workload, an engine that does not load it). A format the user chose is never touched."""
    inf = before.inference
    if "weight_format" in inf.model_fields_set and inf.weight_format != release_of(before):
        return after  # the user's choice
    fmt = release_of(after)
    if fmt is not None:
        return after if after.inference.weight_format == fmt else _with_format(after, fmt)
    if "weight_format" not in after.inference.model_fields_set:
        return after
    return _with_format(after, None)


def _with_format(doc: PlanDocument, fmt: str | None) -> PlanDocument:
    """``doc`` with ``inference.weight_format`` set to ``fmt``, or left unstated (the plan's default) for None."""
    data = doc.model_dump(exclude_unset=True)  # what the plan does not state stays unstated
    inference = dict(data.get("inference") or {})
    if fmt is None:
        inference.pop("weight_format", None)
    else:
        inference["weight_format"] = fmt
    data["inference"] = inference
    return PlanDocument.model_validate(data)
