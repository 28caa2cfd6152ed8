"""``llmplan-cli hub ORG/NAME``: what the Hugging Face Hub says about a model, without its weights.

Prints the architecture (from config.json, the base model of an adapter, or a GGUF header), the exact
parameter counts and stored bytes per dtype from the safetensors headers, and a GGUF repo's files
grouped by quant with their real sizes; ``--json`` prints the same as one object (keys documented in
docs/models.md, added to, never renamed).
"""

from __future__ import annotations

import argparse
import json

from llmplan.cli.models import fetch_hub
from llmplan.core import present
from llmplan.errors import InputError

SIZE = present.MemoryUnit().fmt_any  # bytes as the app's tables show them: '4.68 GiB', '160 MiB'


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("hub", help="what the Hugging Face Hub says about a model (counts, files, sizes)")
    p.add_argument("ref", metavar="ORG/NAME", help="ORG/NAME[@REVISION][:QUANT], or a https://huggingface.co URL "
                   "(/tree/REV, /blob/REV/FILE.gguf)")
    p.add_argument("--file", metavar="FILE|QUANT", help="pick one GGUF file or quant of the repo (e.g. Q4_K_M)")
    p.add_argument("--timeout", type=float, default=10.0, metavar="S",
                   help="seconds to wait for each answer from the Hub (default 10)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from llmplan.core.params import count_params
    from llmplan.formats.hub_ref import parse_hub_ref
    from llmplan.plan.hub_plan import effective_choice, model_ref_from_hub, spec_from_hub

    if not 0 < args.timeout <= 600:
        raise InputError("--timeout: give seconds between 0 and 600")
    ref = parse_hub_ref(args.ref, require=True)
    if args.file:
        ref = replace(ref, file=args.file)
    model = fetch_hub(ref, timeout=args.timeout)
    spec = spec_from_hub(model)
    pc = count_params(spec)
    _, fmt = model_ref_from_hub(model, spec)
    chosen = effective_choice(model)
    data = model.as_dict()
    data["plan_file"] = None if chosen is None else {"label": chosen.label, "files": list(chosen.files),
                                                     "size": chosen.size}
    data.update(architecture={"model_type": spec.model_type, "layers": spec.num_layers, "hidden": spec.hidden_size,
                              "approximate": spec.approximate, "notes": list(spec.notes)},
                params={"total": pc.total, "active": pc.active, "embedding": pc.embedding},
                weight_format=fmt)
    if model.safetensors is not None:
        data["safetensors"].update(params=model.safetensors.params, stored_bytes=model.safetensors.stored_bytes)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    rev = f"@{model.revision}" if model.revision else ""
    print(f"{model.repo}{rev}" + (f"  (commit {model.commit[:12]})" if model.commit else "")
          + ("  [from the cache]" if model.from_cache else ""))
    print(f"  architecture     {spec.model_type}, {spec.num_layers} layers, hidden {spec.hidden_size:,}"
          f"{' (approximate: unknown family)' if spec.approximate else ''}  — from {model.config_source}")
    print(f"  parameters       {pc.total:>20,}" + (f"  ({pc.active:,} active per token)" if pc.active != pc.total
                                                  else ""))
    st = model.safetensors
    if st is not None:
        print(f"  safetensors      {st.params:>20,} params in {st.files} file{'s' if st.files != 1 else ''}, "
              f"{SIZE(st.stored_bytes)} stored")
        for dtype, n in st.params_by_dtype.items():
            print(f"    {dtype:<14} {n:>20,} params  {SIZE(st.bytes_by_dtype.get(dtype, 0)):>12}")
    if model.gguf:
        print("  GGUF files (quant, parts, size):")
        for c in model.gguf:
            mark = "*" if chosen is not None and c.label == chosen.label else " "
            parts = f"{len(c.files)}/{c.parts_expected}" if c.parts_expected > 1 else "1"
            extra = "  (vision projector)" if c.projector else ""
            print(f"   {mark}{c.label:<18} {parts:>5} {SIZE(c.size):>12}  {c.files[0]}{extra}")
        if model.chosen is None:
            print(("  * the plan's weights by default; " if chosen else "  ")
                  + "pick another with --file QUANT (or ORG/NAME:QUANT)")
    if fmt:
        print(f"  weight format    {fmt}")
    for note in (*model.notes, *spec.notes):
        print(f"  note: {note}")
    return 0
