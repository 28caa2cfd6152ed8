"""The verdict of a plan on different cards (the layer split, ``Outcome.cards``), for the window's banner and
for the exports alike, so a report says what the banner says.

On such a plan the figures of the results table are those of one card of the plan's GPU; the split's layers
left in host RAM are the one figure the split adds to them: the CLI's ``mixed_gpus.host_bytes``, one pool in
the machine's RAM, never per card. The memory bar's legend ends with it and the exports print it, in the same
words (``theme.off_gpu_entry``).
"""

from __future__ import annotations

from typing import Any

from llmplan.core import present
from llmplan.fit.tiers import PlanVerdict


def cards_verdict(split: Any, gpu_name: str) -> PlanVerdict:
    """Tier and headline of the layer split ``split`` (a ``MixedPlan``); ``off_gpu`` holds its host RAM when layers
    stay there. ``cost`` is the sentence that says which figures are the split's: the rest are for one
    ``gpu_name`` (the plan's GPU)."""
    layers = " + ".join(str(c.layers) for c in split.cards)
    n = len(split.cards)
    speed = f", ~{present.tokens_per_s(1 / split.tpot_s)}" if split.tpot_s > 0 else ""
    if not split.fits:
        short = ", ".join(c.gpu.name for c in split.cards if not c.fits)
        tier, text = "does_not_fit", f"Does not fit on {n} cards: {short} overflows"
    elif split.host_layers:
        tier, text = "offload", (f"Fits with offload on {n} cards: layers {layers}, {split.host_layers} of "
                                 f"{split.host_layers + split.gpu_layers} in CPU RAM{speed}")
    else:
        tier, text = "fits", f"Fits on {n} cards: layers {layers}{speed}"
    off_gpu = (("host_ram", float(split.host_bytes)),) if split.fits and split.host_layers else ()
    host = (f", but for the host RAM per node (offload, not on a GPU): the {split.host_layers} layers the cards "
            f"leave there, and the input embedding" if off_gpu else "")
    return PlanVerdict(tier, False, text, f"The figures below are for one {gpu_name}{host}.", off_gpu=off_gpu)
