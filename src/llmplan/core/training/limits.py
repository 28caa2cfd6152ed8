"""The longest sequence and the largest micro-batch that fit one GPU, for a plan's framework profile.

Both are searches over the memory estimate alone (``memory.worst_stage``, the same figures the
estimate reports), keeping every other setting of the plan: memory grows monotonically with the
tokens of a micro-batch, so a doubling search brackets the limit and a bisection finds it. The global
batch follows the micro-batch (no accumulation) so switches that refuse accumulation stay valid.
"""

from __future__ import annotations

from llmplan.core.params import count_params
from llmplan.core.training import memory
from llmplan.core.training.layout import resolve
from llmplan.core.workload import Scenario
from llmplan.errors import InputError

MAX_SEQ = 10_000_000
MAX_BATCH = 100_000


def _fits(sc: Scenario, seq_len: int, micro_batch: int) -> bool:
    tr = sc.training
    gb = tr.global_batch and max(tr.global_batch, micro_batch * sc.parallelism.dp)
    mean = min(tr.mean_sequence_tokens, seq_len)
    trial = sc.model_copy(update={"training": tr.model_copy(update={
        "seq_len": seq_len, "micro_batch": micro_batch, "global_batch": gb, "mean_sequence_tokens": mean})})
    try:
        lay = resolve(trial)
    except InputError:
        return False
    sm = memory.worst_stage(trial, count_params(trial.model), lay)
    return sm.total <= trial.cluster.gpu.usable_memory_bytes


def _largest(ok, hi_limit: int) -> int:
    """The largest n in [1, hi_limit] with ok(n), for a monotone ok; 0 when even 1 fails."""
    if not ok(1):
        return 0
    lo = 1
    hi = 2
    while hi <= hi_limit and ok(hi):
        lo, hi = hi, hi * 2
    hi = min(hi, hi_limit + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def longest_sequence(sc: Scenario) -> int:
    """Tokens per sequence of the longest sequence that fits at the plan's micro-batch (0: none)."""
    mb = sc.training.micro_batch
    return _largest(lambda s: _fits(sc, s, mb), MAX_SEQ)


def largest_micro_batch(sc: Scenario) -> int:
    """Sequences per micro-batch of the largest micro-batch that fits at the plan's seq_len (0: none)."""
    s = sc.training.seq_len
    return _largest(lambda b: _fits(sc, s, b), MAX_BATCH)
