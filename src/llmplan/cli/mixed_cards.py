"""``estimate --gpu A --gpu B ...``: several different cards in one machine, split llama.cpp's way.

llama.cpp (and Ollama) put a contiguous run of layers on each device in proportion to its free memory
(``--split-mode layer``, the default); what fits nowhere stays in host RAM. The estimate is
`llmplan.core.inference.multi_gpu.split_layers` through ``plan.evaluate.estimate_cards``; this module turns
the command line into that call and its answer into per-card rows (text) or stable JSON keys (``mixed_gpus``,
``inference``, ``fits``). The cards
are the plan's ``hardware.cards`` (schema 5), so ``--save`` writes them and the saved plan reopens to the same
numbers.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from llmplan.cli.report import json_text, table
from llmplan.core import present
from llmplan.core.inference.context_fit import longest_context_split
from llmplan.core.inference.multi_gpu import MixedPlan
from llmplan.core.present import MemoryUnit
from llmplan.errors import InputError
from llmplan.plan.document import HardwareRef, PlanDocument, cards_of
from llmplan.plan.evaluate import estimate_cards
from llmplan.plan.overrides import apply_overrides
from llmplan.plan.planfile import save_plan
from llmplan.plan.validation import describe_validation_error


def gpu_ids(values: list[str] | None) -> list[str]:
    """``--gpu`` values as ids: repeated flags and comma-separated lists both name the machine's cards."""
    ids = [part.strip() for v in values or [] for part in str(v).split(",")]
    if any(not i for i in ids):
        raise InputError("--gpu: an empty GPU id (give --gpu ID once per card, or --gpu ID,ID)")
    return ids


def tensor_split(text: str | None, cards: int) -> list[float] | None:
    """``--tensor-split 3,2``: llama.cpp's relative shares per card (None: by usable memory)."""
    if not text:
        return None
    try:
        shares = [float(x) for x in text.split(",")]
    except ValueError:
        raise InputError(f"--tensor-split {text!r}: give {cards} numbers separated by commas, e.g. 3,2") from None
    if len(shares) != cards or any(s < 0 or s != s for s in shares) or sum(shares) <= 0:
        raise InputError(f"--tensor-split {text!r}: give {cards} non-negative shares with a positive sum")
    return shares


def with_cards(doc: PlanDocument, ids: list[str], split: list[float] | None) -> PlanDocument:
    """``doc`` on one machine holding the cards ``ids`` (device order): ``hardware.cards`` with neighbouring
    identical ids counted together, and ``hardware.tensor_split``."""
    cards = cards_of(ids)
    if doc.hardware.nodes != 1 or doc.hardware.gpus_per_node not in (1, len(ids)):
        raise InputError("with several --gpu cards the machine is exactly those cards: leave out --gpus/--nodes")
    hw = doc.hardware.model_copy(update={"gpu": ids[0], "gpu_spec": None, "gpu_efficiency": None,
                                         "gpus_per_node": 1})
    try:
        hw = HardwareRef.model_validate({**hw.model_dump(exclude_unset=True), "cards": cards, "tensor_split": split})
    except ValidationError as exc:
        raise InputError(f"hardware: {describe_validation_error(exc)}") from None
    return doc.model_copy(update={"hardware": hw})


def rows_over_identical_cards(doc: PlanDocument) -> bool:
    """An inference plan of N identical GPUs in one machine with ``inference.split_mode = row``: llama.cpp's row
    split runs over the machine's cards, so it is estimated as those cards (``split_cards``), as with
    ``--gpu X --gpu X``."""
    hw = doc.hardware
    return (doc.workload == "inference" and doc.inference.split_mode == "row" and not hw.cards and hw.nodes == 1
            and hw.gpus_per_node > 1)


def mixed_document(doc: PlanDocument) -> tuple[PlanDocument, str]:
    """The plan with the engine the split needs (llama.cpp when the plan does not name one) and that note."""
    if doc.workload != "inference":
        raise InputError("several different --gpu cards are for inference (llama.cpp's layer split); training "
                         "plans need identical GPUs: give one --gpu and --gpus N")
    return split_engine(doc)


def split_engine(doc: PlanDocument) -> tuple[PlanDocument, str]:
    """The plan with llama.cpp as its engine when it names none, and the note that says why in the split's own
    words (rows, or layers across the cards, unequal or not); ``doc`` and "" when it names one."""
    if "engine" in doc.inference.model_fields_set:
        return doc, ""
    ids = doc.hardware.card_ids()
    what = ("splits every weight matrix's rows across the cards" if doc.inference.split_mode == "row"
            else "splits layers across unequal cards" if len(set(ids)) > 1 else "splits layers across the cards")
    return apply_overrides(doc, ["inference.engine=llama-cpp"]), f"engine chosen: llama.cpp, which {what}"


def rows_engine(doc: PlanDocument) -> tuple[PlanDocument, str]:
    """An inference plan with ``split_mode = row`` that names no engine runs on llama.cpp, the engine that splits
    rows (``split_engine``): the estimate, the search and ``--this-machine`` alike; other plans as they are."""
    if doc.workload == "inference" and doc.inference.split_mode == "row":
        return split_engine(doc)
    return doc, ""


def run_mixed(args: argparse.Namespace, doc: PlanDocument, engine_note: str = "") -> int:
    """Estimate ``doc``, a plan with ``hardware.cards``, and print it (and save it with ``--save``); when it
    does not fit on the cards alone, the nearest changes that make it fit (``fit.tiers.plan_fixes``).
    ``engine_note``: why the engine is llama.cpp when the caller chose it already (``rows_engine``)."""
    from llmplan.fit.tiers import plan_fixes

    doc, note = mixed_document(doc)
    note = note or engine_note
    plan, scenario = estimate_cards(doc)
    if getattr(args, "save", None):
        save_plan(doc, args.save)
    data = mixed_json(plan, scenario, note, doc.hardware.tensor_split)
    changes = plan_fixes(doc) if not plan.fits or plan.host_layers else ()
    data["changes"] = [{"kind": c.kind, "sentence": c.sentence, "overrides": list(c.overrides),
                        "distance": c.distance} for c in changes]
    print(json_text(data) if args.json else mixed_text(data, scenario.model.name, MemoryUnit.decimal(args.gb)))
    return 0


def mixed_json(plan: MixedPlan, scenario, note: str = "", split: Sequence[float] | None = None) -> dict[str, Any]:
    """The stable keys of a layer split (docs/inference.md), the longest context that fits every card
    included (``split``: the plan's ``hardware.tensor_split``)."""
    inf = scenario.inference
    tpot = plan.tpot_s
    context = longest_context_split(scenario, [c.gpu for c in plan.cards], split)
    data: dict[str, Any] = {
        "fits": plan.fits,
        "workload": "inference",
        "mixed_gpus": {
            "split_mode": plan.split_mode,
            "cards": [{
                "gpu": c.gpu.id, "name": c.gpu.name, "layers": c.layers, "output_head": c.has_output,
                "weights": c.weights, "kv_cache": c.kv_cache, "runtime": c.runtime, "total": c.total,
                "capacity": c.capacity, "fits": c.fits, "decode_s": c.decode_s, "prefill_s": c.prefill_s,
            } for c in plan.cards],
            "host_layers": plan.host_layers,
            "host_bytes": plan.host_bytes,
        },
        "inference": {
            "engine": inf.engine, "weight_format": inf.weight_format, "ttft_s": plan.ttft_s, "tpot_s": tpot,
            "tokens_per_s": inf.batch / tpot if tpot > 0 else None,
            "tokens_per_s_per_user": 1 / tpot if tpot > 0 else None,
            "gpu_layers": plan.gpu_layers,
            "longest_context_tokens": context.tokens, "trained_context_tokens": context.trained_context,
        },
    }
    if note:
        data["automatic"] = note
    return data


def mixed_text(data: dict[str, Any], model: str, mem: MemoryUnit) -> str:
    m, i = data["mixed_gpus"], data["inference"]
    cards = m["cards"]
    kinds = "different GPUs" if len({c["gpu"] for c in cards}) > 1 else "GPUs"
    lines = [f"{model} — inference on {len(cards)} {kinds} in one machine "
             f"({i['engine']}, {i['weight_format']}, {m['split_mode']} split)"]
    if "automatic" in data:
        lines.append(f"({data['automatic']})")
    short = [c["name"] for c in cards if not c["fits"]]
    lines += ["", "FITS: every card holds its share" if data["fits"] else f"DOES NOT FIT on {', '.join(short)}", ""]
    header = ("card", "GPU", "layers", "weights", "KV cache", "runtime", "total", "usable")
    rows = [header] + [(str(n), c["name"], f"{c['layers']}{' + head' if c['output_head'] else ''}",
                        mem.fmt(c["weights"]), mem.fmt(c["kv_cache"]), mem.fmt(c["runtime"]), mem.fmt(c["total"]),
                        mem.fmt(c["capacity"])) for n, c in enumerate(cards)]
    widths = [max(len(r[k]) for r in rows) for k in range(len(header))]
    lines += ["  " + "  ".join(cell.ljust(w) if k < 2 else cell.rjust(w) for k, (cell, w) in
                               enumerate(zip(r, widths, strict=True))) for r in rows]
    host = (f"{m['host_layers']} layers + input embedding, {mem.fmt(m['host_bytes'])}" if m["host_layers"]
            else f"input embedding only, {mem.fmt(m['host_bytes'])}")
    lines += ["", "inference", table([
        ("host RAM", host),
        ("time to first token", present.duration(i["ttft_s"])),
        ("time per output token", present.duration(i["tpot_s"])),
        ("throughput per user", present.tokens_per_s(i["tokens_per_s_per_user"] or 0)),
        ("longest context that fits", f"{i['longest_context_tokens']:,} tokens (every layer on a card)"
         if i["longest_context_tokens"] else "none: with every layer on a card, a card overflows"),
        ("model's trained context", f"{i['trained_context_tokens']:,} tokens"),
    ])]
    if data.get("changes"):
        head = "To fit on the cards alone" if data["fits"] else "Nearest changes that make it fit"
        lines += ["", f"{head} (add to this command):"]
        for n, c in enumerate(data["changes"], 1):
            lines += [f"  {n}. {c['sentence']}", "     " + " ".join(f"--set {o}" for o in c["overrides"])]
    return "\n".join(lines)
