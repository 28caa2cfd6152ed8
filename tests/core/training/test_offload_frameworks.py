"""Offload as each framework's code offers it (issue 26, left by ft32 on 2026-11-28).

What each profile can offload is catalog data (``catalogs/frameworks.toml``: ``offload_targets``,
``offload_devices``, ``offload_style``), each read from the framework's code:
- Megatron-Core ``--optimizer-cpu-offload`` (megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py,
  NVIDIA/Megatron-LM 0d41ecd, re-read at d98e8a6): fp32 CPU copies of the parameters and their Adam states; the
  gradients stay in the GPU's buffer and are copied to pinned fp32 CPU buffers inside ``step()``; the updated
  fp32 values go back into the GPU parameters. Optimizer only, CPU only;
- DeepSpeed ZeRO-Offload / ZeRO-Infinity (the Hugging Face Trainer's ``--deepspeed``): optimizer at any stage,
  the gradient partition at ZeRO-2/3, parameters at ZeRO-3, CPU or NVMe;
- FSDP CPU offload (torchtune ``fsdp_cpu_offload``, torchtitan ``--training.enable_cpu_offload``, FSDP2
  ``CPUOffloadPolicy``; LLaMA-Factory and axolotl through FSDP1 ``CPUOffload(offload_params=True)``):
  parameters, gradients and optimizer states together, CPU only;
- unsloth: none (its offload is the checkpointed activations, the activation_offload switch); Composer's FSDP1
  path: none (``get_cpu_offload`` raises "FSDP CPU Offload not supported yet.").

Every expected figure below is hand arithmetic from the parameter count of Llama-3.2-1B (1,235,814,400,
tied embeddings) and the bytes per parameter each framework keeps; tolerance 1e-9 relative (the same
formula, no fitting).
"""

from __future__ import annotations

import json

import pytest

from llmplan.core.engine import estimate
from llmplan.core.search import search
from llmplan.core.search.policy import apply_policy
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings
from llmplan.errors import PlanFileError
from llmplan.fit.changes import training_steps
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan
from llmplan.plan.planfile import load_plan
from llmplan.plan.resolve import resolve

P = 1_235_814_400  # Llama-3.2-1B parameters (count_params)
H100 = "nvidia-h100-sxm-80gb"


def _doc(framework: str, zero: int, offload: str = "cpu", gpus: int = 2, method: str = "full",
         model: str = "meta-llama/Llama-3.2-1B", gpu: str = H100, **extra) -> PlanDocument:
    t = TrainingSettings(framework=framework, seq_len=2048, micro_batch=1, global_batch=4 * gpus, zero_stage=zero,
                         offload=offload, recompute="full", optimizer="adamw", method=method, **extra)
    return PlanDocument(model=ModelRef(id=model), hardware=HardwareRef(gpu=gpu, gpus_per_node=gpus),
                        workload="finetune", training=t, parallelism=ParallelLayout(dp=gpus))


def _pcie(sc) -> float:
    return sc.cluster.gpu.pcie_bandwidth * sc.efficiency.pcie


def test_megatron_offloads_the_optimizer_only_and_copies_the_gradients_in_the_step():
    """ZeRO-1 (distributed optimizer) on 2 GPUs: each GPU's half of the fp32 master (4 B), Adam states (8 B) and
    pinned fp32 gradient buffer (4 B, ``cpu_copy_map_grad`` in the CPU copy's dtype) is on the host, 16 × P / 2 B;
    the fp32 main-grad buffer (4 B × P, --accumulate-allreduce-grads-in-fp32) stays on the GPU. The gradient copy
    runs in step() after the backward: all of it is exposed, 4 B × P / 2 over PCIe × 0.8; the fp32 values come
    back (a non-blocking copy into the bf16 parameter converts on the GPU), 4 B × P / 2."""
    sc, est = evaluate_plan(_doc("megatron", 1))
    m, parts = est.memory, est.compute.offload_time_s.inputs
    assert m.host_ram.inputs["per_gpu"] == pytest.approx(16 * P / 2, rel=1e-9)
    assert m.gradients.value == pytest.approx(4 * P, rel=1e-9)
    assert parts["grad_exposed_s"] == parts["grad_copy_s"] == pytest.approx(4 * P / 2 / _pcie(sc), rel=1e-9)
    assert parts["param_copy_s"] == pytest.approx(4 * P / 2 / _pcie(sc), rel=1e-9)
    assert parts["param_fetch_s"] == 0.0
    assert parts["bytes_per_param"] == 28.0  # 2·(4 + 8) + 4: fp32 master and states, fp32 grad; no 16-bit copy


def test_hugging_face_trainer_offloads_with_deepspeed_zero_offload_terms():
    """--deepspeed ZeRO-2 with offload_optimizer: master (4) + Adam states (8) + the 16-bit gradient partition
    (2, DeepSpeed keeps gradients in the model dtype) on the host, 14 × P / 2 B per GPU; no gradient partition on
    the GPU;
    the partition is copied once per micro-batch (4 accumulation steps), hidden behind each backward."""
    sc, est = evaluate_plan(_doc("hf-trainer", 2))
    m, parts = est.memory, est.compute.offload_time_s.inputs
    assert sc.framework.name.endswith("under DeepSpeed ZeRO-2")
    assert m.host_ram.inputs["per_gpu"] == pytest.approx(14 * P / 2, rel=1e-9)
    assert m.gradients.value < 2 * P / 2  # no gradient partition held (the eager peak phase's own gradients only)
    assert parts["grad_copy_s"] == pytest.approx(4 * 2 * P / 2 / _pcie(sc), rel=1e-9)
    assert parts["grad_exposed_s"] < parts["grad_copy_s"]
    assert parts["param_copy_s"] == pytest.approx(2 * P / 2 / _pcie(sc), rel=1e-9)


@pytest.mark.parametrize(("framework", "host_bytes", "weight_bytes", "cpu_bytes"), [
    ("torchtune", 2 + 2 + 4, 2, 2 * (2 + 4) + 2),  # pure bf16: weights, gradients and AdamW states in bf16
    ("fsdp2", 4 + 4 + 8, 4, 2 * (4 + 8) + 4),      # fp32 sharded parameters (the master), fp32 gradients
])
def test_fsdp_cpu_offload_takes_the_parameters_along(framework, host_bytes, weight_bytes, cpu_bytes):
    """FSDP2 CPUOffloadPolicy (torchtune fsdp_cpu_offload, torchtitan --training.enable_cpu_offload): the sharded
    parameters, their gradients and the optimizer states live on the host whether or not the plan says
    offload_params; the CPU steps the parameters themselves (no 16-bit copy back), and every all-gather first
    copies the shard to the GPU: 2 passes + 1 recomputed forward per micro-batch, 4 micro-batches."""
    sc, est = evaluate_plan(_doc(framework, 3))
    m, parts = est.memory, est.compute.offload_time_s.inputs
    assert m.host_ram.inputs["per_gpu"] == pytest.approx(host_bytes * P / 2, rel=1e-9)
    assert parts["param_copy_s"] == 0.0
    assert parts["param_fetch_s"] == pytest.approx(weight_bytes * P / 2 * 4 * 3 / _pcie(sc), rel=1e-9)
    assert parts["bytes_per_param"] == cpu_bytes


def test_an_offload_the_profile_lacks_is_a_field_error_naming_the_profiles_that_have_it():
    with pytest.raises(PlanFileError, match=r"^training\.offload: the unsloth profile has no optimizer or parameter "
                       r"offload; profiles that do: axolotl, deepspeed, fsdp2, hf-trainer, llama-factory, "
                       r"megatron, torchtune \(training.framework\); without offload: QLoRA"):
        resolve(_doc("unsloth", 0, gpus=1, method="lora"))
    with pytest.raises(PlanFileError, match=r"^training\.offload: the megatron profile offloads to cpu only, not nvme "
                       r"\(--optimizer-cpu-offload\); profiles that do: deepspeed, hf-trainer"):
        resolve(_doc("megatron", 1, offload="nvme"))
    with pytest.raises(PlanFileError, match=r"^training\.offload_params: the megatron profile offloads only the "
                       r"optimizer states.*profiles that do: axolotl, deepspeed, fsdp2, hf-trainer, "
                       r"llama-factory, torchtune "):
        resolve(_doc("megatron", 3, offload_params=True))


def test_deepspeed_offload_at_zero_0_is_a_field_error_with_its_fix():
    """DeepSpeed's ZeRO-Offload belongs to a ZeRO optimizer: ``zero_optimization.offload_optimizer`` is "Valid for
    ZeRO stage 1, 2, 3" (deepspeed/runtime/zero/config.py DeepSpeedZeroConfig, docs/_pages/config-json.md). The
    Hugging Face Trainer (its ``--deepspeed``) and the deepspeed profile at ZeRO-0 with offload used to be priced;
    they are refused with the fix, in the plan layer and in the core alike. ZeRO-1 with offload is accepted."""
    fix = r"set training\.zero_stage to 1 or more, or training\.offload to none"
    for framework in ("hf-trainer", "deepspeed"):
        for offload in ("cpu", "nvme"):
            with pytest.raises(PlanFileError, match=rf"^training\.zero_stage: DeepSpeed's ZeRO-Offload needs a ZeRO "
                               rf"stage .*: {fix}$"):
                resolve(_doc(framework, 0, offload=offload, gpus=1))
        sc = resolve(_doc(framework, 0, offload="none", gpus=1))
        offloading = sc.training.model_copy(update={"offload": "cpu"})
        with pytest.raises(ValueError, match=rf"training\.zero_stage: .*{fix}"):  # the core's own check
            Scenario.model_validate({**dict(sc), "training": offloading})
        assert resolve(_doc(framework, 1, gpus=1)).training.offload == "cpu"
    assert resolve(_doc("torchtune", 0, gpus=1)).training.offload == "cpu"  # FSDP's offload has no such stage rule


def test_an_invalid_plan_file_gets_the_message_and_old_plans_load(tmp_path):
    """A saved plan is not rewritten: one that asks unsloth to offload opens and says why it cannot run; one on
    the default framework policy that offloads to NVMe still resolves (auto: the Hugging Face Trainer, whose
    DeepSpeed has ZeRO-Infinity), and over two nodes auto leaves Megatron-Core, which has no NVMe offload."""
    path = tmp_path / "unsloth-offload.llmplan"
    doc = _doc("unsloth", 0, gpus=1, method="lora")
    path.write_text(json.dumps({"format": "llmplan", "schema_version": 5, **doc.model_dump(mode="json")}))
    with pytest.raises(PlanFileError, match="unsloth profile has no optimizer or parameter offload"):
        evaluate_plan(load_plan(path))
    assert resolve(_doc("auto", 1, offload="nvme")).framework_profile.id == "hf-trainer"
    two = _doc("auto", 1, offload="nvme")
    two = two.model_copy(update={"hardware": two.hardware.model_copy(update={"nodes": 2, "network": "ib-ndr-400"})})
    assert resolve(two).framework_profile.id == "hf-trainer"  # megatron first for multi-node full fine-tunes


def test_nearest_changes_propose_only_the_profiles_offload():
    """unsloth: no offload step (the other changes remain: recompute, QLoRA, ...); Megatron: the optimizer
    alone, never offload_params; the Hugging Face Trainer: DeepSpeed's ZeRO-Offload (ZeRO-1 at least); torchtune:
    FSDP's, a fully sharded model (ZeRO-3), on several GPUs, and on one GPU its single-device recipes' torchao
    CPUOffloadOptimizer alone (those recipes run no ZeRO stage: the profile's single_gpu_zero_stages)."""
    def offload_steps(doc):
        return [s for g in training_steps(doc, 1) for s in g if s.kind == "offload"]

    unsloth = _doc("unsloth", 0, offload="none", gpus=1, method="lora")
    kinds = {s.kind for g in training_steps(unsloth, 1) for s in g}
    assert "offload" not in kinds and kinds  # other changes are still proposed
    mega = offload_steps(_doc("megatron", 1, offload="none"))
    assert [s.overrides for s in mega] == [("training.offload=cpu",)]
    assert "optimizer states" in mega[0].what and "offload_params" not in " ".join(mega[0].overrides)
    hf = offload_steps(_doc("hf-trainer", 0, offload="none", gpus=1))
    assert [s.overrides for s in hf] == [("training.offload=cpu", "training.zero_stage=1")]
    assert "ZeRO-Offload" in hf[0].what
    tune = offload_steps(_doc("torchtune", 0, offload="none", gpus=1))  # one GPU: the single-device recipe's
    assert [s.overrides for s in tune] == [("training.offload=cpu",)]  # CPUOffloadOptimizer alone (no ZeRO)
    assert "CPUOffloadOptimizer" in tune[0].what
    two = [s for g in training_steps(_doc("torchtune", 0, offload="none", gpus=2), 2) for s in g if s.kind == "offload"]
    assert [s.overrides for s in two] == [("training.offload=cpu", "training.zero_stage=3")]


def test_auto_policy_and_search_never_offload_under_unsloth():
    """A LoRA of Llama-3.1-8B at 64k tokens on one 24 GB card does not fit under unsloth as stated: the auto
    policy's ladder skips the offload step (and the ZeRO-3 step it would come with on one GPU), and the
    search tries no offload layouts; under the Hugging Face Trainer both may offload."""
    doc = _doc("unsloth", 0, offload="none", gpus=1, method="lora", model="meta-llama/Llama-3.1-8B",
               gpu="nvidia-rtx-4090-24gb")
    doc = doc.model_copy(update={"training": doc.training.model_copy(update={"seq_len": 65536})})
    knobs = ("micro_batch", "zero_stage", "recompute", "offload")
    sc = resolve(doc)
    assert not estimate(sc).fits
    choice = apply_policy(sc, knobs, estimate)
    assert all(k not in ("offload", "zero_stage") for k, _ in choice.chosen)
    res = search(sc, top=3)
    assert all(x.training.offload == "none" for x in res.best)
    assert "unsloth has no CPU offload" in res.note
    hf = resolve(doc.model_copy(update={"training": doc.training.model_copy(update={"framework": "hf-trainer"})}))
    assert ("offload", "cpu") in apply_policy(hf, knobs, estimate).chosen


def test_the_verdict_says_what_the_framework_offloads():
    """The "fits with offload" headline names what leaves the GPU under each framework (fit.tiers)."""
    from llmplan.catalog.frameworks import load_framework_profiles
    from llmplan.core.framework_profile import offload_summary

    p = load_framework_profiles()
    assert offload_summary(p["hf-trainer"], "cpu", False, 2) == "optimizer states in CPU RAM (ZeRO-Offload)"
    assert offload_summary(p["deepspeed"], "nvme", True, 3) == "parameters and optimizer states in NVMe (ZeRO-Infinity)"
    assert offload_summary(p["deepspeed"], "cpu", True, 2) == "optimizer states in CPU RAM (ZeRO-Offload)"
    assert offload_summary(p["torchtune"], "cpu", False, 3) == \
        "parameters, gradients and optimizer states in CPU RAM (FSDP CPU offload)"
    assert offload_summary(p["megatron"], "cpu", False, 1) == \
        "optimizer states in CPU RAM (the gradients stay on the GPU: --optimizer-cpu-offload)"
