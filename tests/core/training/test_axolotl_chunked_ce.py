"""axolotl's ``chunked_cross_entropy: true`` as the loss ``chunked_ce`` (issue 26, left by ft32).

Read in axolotl-ai-cloud/axolotl at 067b021 (src/axolotl/monkeypatch/loss/chunked.py, last changed 79ddaeb,
2025-08-23; loaders/patch_manager.py ``_apply_chunked_cross_entropy_patch``): ``patch_chunked_ce_loss_fn``
replaces transformers' ``ForCausalLMLoss`` with ``CEWithChunkedOutputLoss(num_output_chunks=8)`` (or
``chunked_cross_entropy_num_chunks``). The model's head still makes the whole bf16 logits; the loss splits them
with ``chunk(8, dim=1)``, reshapes each chunk to (tokens, vocab) (a copy when the micro-batch is above 1) and runs
``F.cross_entropy(logits.float(), reduction="sum")`` under ``torch.compile``.

Memory by hand in bytes per logit (Llama-3.2-1B LoRA under the axolotl profile, 2,048 tokens, vocabulary 128,256,
recomputed blocks, one H100): the upcast loss peaks at its backward with 12 B per logit (fp32 log-probabilities
and two fp32 gradients); ``chunked_ce`` holds the whole bf16 logits (2 B; the compiled chunks save their bf16
input, never an fp32 copy) and at its backward the chunk gradients and their concatenation (4 B). So the
activations at the peak fall by exactly 8 B per logit at micro-batch 1 (both peaks at the loss backward) and at
micro-batch 4 (the chunk copies make the loss forward 4 B, equal to the backward). Tolerance 1e-9 relative (the
same arithmetic, no fitting).
"""

from __future__ import annotations

import pytest

from llmplan.catalog.frameworks import load_framework_profiles, profiles_supporting
from llmplan.core.params import count_params
from llmplan.core.training.layout import resolve as layout
from llmplan.core.training.ops import head_ops
from llmplan.core.workload import TrainingSettings
from llmplan.errors import PlanFileError
from llmplan.gui.profile_choices import loss_options
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan
from llmplan.plan.resolve import resolve

SEQ, VOCAB = 2048, 128_256


def _doc(loss: str, micro_batch: int = 1, framework: str = "axolotl") -> PlanDocument:
    t = TrainingSettings(method="lora", micro_batch=micro_batch, global_batch=0, batch_rule="per_replica",
                         seq_len=SEQ, recompute="full", zero_stage=0, offload="none", optimizer="adamw",
                         framework=framework, loss=loss)
    return PlanDocument(model=ModelRef(id="meta-llama/Llama-3.2-1B"), hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb"),
                        workload="finetune", training=t)


@pytest.mark.parametrize("micro_batch, phase", [(1, "loss backward"), (4, "loss forward")])
def test_the_chunked_loss_keeps_the_bf16_logits_and_their_gradient_only(micro_batch, phase):
    logits = micro_batch * SEQ * VOCAB
    _, up = evaluate_plan(_doc("upcast", micro_batch))
    _, ch = evaluate_plan(_doc("chunked_ce", micro_batch))
    assert up.memory.activations.inputs["phase"] == "loss backward"
    assert ch.memory.activations.inputs["phase"] == phase
    assert up.memory.activations.value - ch.memory.activations.value == pytest.approx(8.0 * logits, rel=1e-9)
    assert "chunked_ce (axolotl chunked_cross_entropy, 8 chunks, compiled)" in ch.memory.activations.inputs["loss"]


def test_its_kernels_move_10_bytes_per_logit_and_the_chunk_copies_4_more():
    """The compiled forward reads the bf16 logits (2 B), the backward reads them and writes the bf16 gradient
    (4 B), the chunks' SplitBackward concatenates the gradients (4 B); above micro-batch 1 each chunk's reshape
    copies it (4 B). No separate fp32 upcast kernel."""
    for mb, per_logit in ((1, 10.0), (4, 14.0)):
        sc = resolve(_doc("chunked_ce", mb))
        head = head_ops(sc.model, count_params(sc.model), layout(sc), sc.training, sc.framework, 2.0)
        assert head.loss_bytes == per_logit
        assert head.logits == mb * SEQ * VOCAB
        assert not any("upcast" in e.name for e in head.elementwise)
    _, up = evaluate_plan(_doc("upcast", 4))
    _, ch = evaluate_plan(_doc("chunked_ce", 4))
    assert ch.compute.breakdown["loss"] < up.compute.breakdown["loss"]
    assert ch.compute.step_time_s.value < up.compute.step_time_s.value


def test_only_axolotl_runs_it_and_the_app_lists_it_there():
    assert profiles_supporting("loss:chunked_ce") == ["axolotl"]
    with pytest.raises(PlanFileError, match=r"^training\.loss: the hf-trainer profile does not run chunked_ce; "
                       r"profiles that do: axolotl \(training\.framework\)"):
        resolve(_doc("chunked_ce", framework="hf-trainer"))
    profiles = load_framework_profiles()
    assert ("chunked_ce", "chunked CE (axolotl)") in [(v, t) for v, t, _ in loss_options(profiles["axolotl"])]
    assert "chunked_ce" not in [v for v, _, _ in loss_options(profiles["llama-factory"])]
