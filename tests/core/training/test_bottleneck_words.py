"""The "does not fit" sentence names only fixes the plan has not already taken: a plan recomputing in full is told
to add GPUs or shard more, not to recompute (the app's first start on a 24 GB card showed "or recompute" beside
"auto: full recompute")."""

from llmplan.core.engine import estimate
from llmplan.formats.hf_config import spec_from_config
from tests.core.inference.models import LLAMA3_8B

from .helpers import scenario


def test_a_plan_that_recomputes_in_full_is_not_told_to_recompute():
    model = spec_from_config(LLAMA3_8B)
    full = estimate(scenario(model, 1, seq_len=4096, recompute="full"))
    none = estimate(scenario(model, 1, seq_len=4096, recompute="none"))
    assert not full.fits and not none.fits  # 8B full training: 16 B per parameter does not fit one GPU
    assert full.bottleneck.statement.endswith("add GPUs or shard more (ZeRO, tp, pp).")
    assert none.bottleneck.statement.endswith("add GPUs, shard more (ZeRO, tp, pp) or recompute.")
