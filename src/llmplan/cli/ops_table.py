"""``llmplan-cli estimate … --ops``: the step's operations (``core.training.step_ops``) as a table or JSON.

The table lists the top N operations by time, the rest summed in one line, then the totals, which equal the
estimate's compute time and step time (docs/training.md, "Reading the operation list"). ``--json`` gives every row
with stable keys.
"""

from __future__ import annotations

from llmplan.core.present import duration, si
from llmplan.core.training.step_ops import StepOps, step_operations
from llmplan.core.workload import Scenario
from llmplan.errors import InputError

ROW_KEYS = ("name", "group", "phase", "count", "flops", "bytes", "seconds", "share", "rate", "rate_unit",
            "priced_by", "source", "in_compute")


def operations(scenario: Scenario, est) -> StepOps:
    """The operation list of a training estimate; an inference plan has none (its latency is priced per token,
    docs/inference.md)."""
    if scenario.workload == "inference" or est.compute is None:
        raise InputError("--ops lists a training step's operations; an inference plan has no such list (its "
                         "latency is priced per token: docs/inference.md)")
    return step_operations(scenario, est)


def ops_json(so: StepOps, title: str) -> dict:
    return {"plan": title, "step_time_s": so.step_s, "compute_time_s": so.compute_s,
            "layers_on_slowest_stage": so.layers, "micro_batches": so.micro_batches, "clock_share": so.clock,
            "rows": [{k: d[k] for k in ROW_KEYS} for d in (r.as_dict(so.step_s) for r in so.rows)]}


def _rate(r) -> str:
    return si(r.rate, r.rate_unit) if r.rate and r.rate_unit else "—"


def _amount(v: float, unit: str) -> str:
    return si(v, unit) if v else "—"


def ops_text(so: StepOps, title: str, top: int = 15) -> str:
    rows = sorted(so.rows, key=lambda r: -r.seconds)
    shown, rest = rows[:top], rows[top:]
    head = ("operation", "group", "phase", "count", "FLOPs", "bytes", "rate", "time", "share")
    body = [(r.name, r.group, r.phase, f"{r.count:,.0f}" if r.count else "—", _amount(r.flops, "FLOP"),
             _amount(r.bytes, "B"), _rate(r), duration(r.seconds), f"{r.seconds / so.step_s:.1%}") for r in shown]
    if rest:
        s = sum(r.seconds for r in rest)
        body.append((f"{len(rest)} more operations", "", "", "", "", "", "", duration(s), f"{s / so.step_s:.1%}"))
    widths = [max(len(str(x[i])) for x in (head, *body)) for i in range(len(head))]
    right = {3, 4, 5, 6, 7, 8}

    def line(cells) -> str:
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    out = [f"{title}: operations of one step on the slowest GPU", *so.notes, "", line(head),
           line(["-" * w for w in widths]), *map(line, body), "",
           f"compute time {duration(so.compute_s)} (the estimate's compute time); step time {duration(so.step_s)} "
           "with the exposed communication, bubble and offload",
           "rate: the rate the operation was priced at (FLOP/s for GEMMs and attention, bytes/s for memory-bound "
           "kernels); --json gives every row with what priced it and its source"]
    return "\n".join(out)
