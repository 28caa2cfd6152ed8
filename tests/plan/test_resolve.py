"""PlanDocument -> Scenario: inline specs first, catalog ids otherwise, efficiency overrides on top."""


import pytest

from llmplan.core.hardware import Efficiency
from llmplan.errors import CatalogError, PlanFileError
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.overrides import apply_overrides
from llmplan.plan.resolve import inline_specs, resolve

from ..core.search.specs import A100_80GB, HDR_IB
from .test_planfile import LLAMA_CONFIG


def _doc(**hw) -> PlanDocument:
    hw.setdefault("gpu_efficiency", Efficiency())
    return PlanDocument(model=ModelRef(name="Llama 3 8B", config=LLAMA_CONFIG),
                        hardware=HardwareRef(gpu=A100_80GB.id, gpu_spec=A100_80GB, **hw))


def test_inline_specs_resolve_without_a_catalog():
    sc = resolve(_doc(gpus_per_node=8))
    assert sc.model.hidden_size == 4096 and sc.model.name == "Llama 3 8B"
    assert sc.cluster.gpu == A100_80GB and sc.cluster.total_gpus == 8


def test_efficiency_overrides_apply_on_top_of_the_defaults():
    sc = resolve(apply_overrides(_doc(), ["efficiency.matmul=0.42"]))
    assert sc.efficiency.matmul == 0.42
    assert sc.efficiency.memory_bandwidth == resolve(_doc()).efficiency.memory_bandwidth


def test_several_nodes_need_a_network():
    with pytest.raises(PlanFileError, match=r"hardware\.network: 4 nodes need a network"):
        resolve(_doc(nodes=4))
    assert resolve(_doc(nodes=4, network=HDR_IB.id, network_spec=HDR_IB)).cluster.network == HDR_IB


def test_pretraining_with_lora_is_refused_naming_the_field():
    with pytest.raises(PlanFileError, match=r"training\.method"):
        resolve(apply_overrides(_doc(), ["training.method=lora"]))


def test_unknown_catalog_ids_raise_catalog_error():
    with pytest.raises(CatalogError):
        resolve(PlanDocument(model=ModelRef(id="no-such/model-xyz")))
    with pytest.raises(CatalogError):
        resolve(PlanDocument(model=ModelRef(config=LLAMA_CONFIG), hardware=HardwareRef(gpu="no-such-gpu")))


def test_inline_specs_is_a_no_op_for_self_contained_plans():
    doc = _doc()
    assert inline_specs(doc) == doc


def test_a_shared_plan_keeps_its_efficiencies_on_a_machine_whose_catalog_rates_the_gpu_differently(monkeypatch):
    """DESIGN §3: a plan opens with the same numbers on another machine with another catalog. The GPU's
    catalog efficiencies are saved inline; a receiver whose catalog says otherwise gets the saved ones."""
    from llmplan.catalog.hardware import load_hardware_catalog
    from llmplan.core.engine import estimate
    from llmplan.plan import resolve as resolve_module

    doc = PlanDocument(model=ModelRef(id="meta-llama/Meta-Llama-3-8B"), hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb"))
    shared = inline_specs(doc)
    assert shared.hardware.gpu_efficiency.matmul == load_hardware_catalog().efficiency_for("nvidia-h100-sxm-80gb").matmul
    here = estimate(resolve(shared)).compute.step_time_s.value

    # the receiver's catalog rates the H100 at half the matmul efficiency
    monkeypatch.setattr(resolve_module, "default_efficiency", lambda gpu: Efficiency(matmul=0.4))
    assert estimate(resolve(shared)).compute.step_time_s.value == here
    assert resolve(doc).efficiency.matmul == 0.4  # a plan without them follows the receiver's catalog


def test_changing_the_gpu_drops_the_inline_efficiencies():
    shared = inline_specs(_doc(gpu_efficiency=Efficiency(matmul=0.5)))
    moved = apply_overrides(shared, ["hardware.gpu=nvidia-h100-sxm-80gb"])
    assert moved.hardware.gpu_spec is None and moved.hardware.gpu_efficiency is None


def test_saving_a_catalog_plan_inlines_its_specs(tmp_path):
    from llmplan.catalog.hardware import load_hardware_catalog
    from llmplan.catalog.models import load_model_catalog
    from llmplan.plan.planfile import load_plan, save_plan

    model_id = next(iter(load_model_catalog().entries)).id
    gpu_id = next(iter(load_hardware_catalog().gpus)).id
    doc = PlanDocument(model=ModelRef(id=model_id), hardware=HardwareRef(gpu=gpu_id))
    saved = load_plan(save_plan(doc, tmp_path / "p.llmplan"))
    assert (saved.model.config or saved.model.spec) and saved.hardware.gpu_spec is not None
    assert resolve(saved).model.hidden_size == resolve(doc).model.hidden_size


def test_catalog_ids_resolve_with_the_catalog_efficiency_then_the_overrides():
    from llmplan.catalog.hardware import load_hardware_catalog

    gpu_id = "nvidia-a100-sxm4-80gb"
    doc = PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-8B"), hardware=HardwareRef(gpu=gpu_id))
    sc = resolve(doc)
    catalog_eff = load_hardware_catalog().efficiency_for(gpu_id)
    assert sc.cluster.gpu.id == gpu_id and sc.model.hidden_size == 4096
    assert sc.efficiency == catalog_eff
    tuned = resolve(apply_overrides(doc, ["efficiency.network=0.5"]))
    assert tuned.efficiency == catalog_eff.model_copy(update={"network": 0.5})
