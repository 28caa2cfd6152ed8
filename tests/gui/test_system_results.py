"""Beyond the GPU in the window: the system report in the results table, the plan's
``system`` options in the workload editor, and the engine list from the engine catalog.
All against the real engine, system report and catalogs (no stand-ins)."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox

from llmplan.catalog.engines import load_engine_profiles
from llmplan.catalog.system_presets import load_system_catalog
from llmplan.gui.tooltips import wrap_tip
from llmplan.plan.evaluate import evaluate_plan


def _rows(window) -> dict[str, tuple[str, str]]:
    """label -> (shown value, tooltip) of every row of the results table."""
    t = window.results.table
    return {t.topLevelItem(i).text(0).strip(): (t.topLevelItem(i).text(1), t.tooltip(i, 1))
            for i in range(t.topLevelItemCount())}


def _editor(window, cls, path):
    found = [w for w in window.workload.findChildren(cls, path) if w.isVisibleTo(window)]
    assert found, f"no visible editor for {path}"
    return found[0]


def test_training_plan_shows_checkpoint_goodput_power_with_formulas(window):
    window.state.evaluate_now()
    rows = _rows(window)
    _, est = evaluate_plan(window.state.doc)  # the CLI's pipeline: the window must show the same figures
    sys_ = est.system
    for label, fig in (("Checkpoint size", sys_.checkpoint.total), ("Checkpoint interval", sys_.goodput.interval_s),
                       ("Goodput (useful share of wall time)", sys_.goodput.goodput),
                       ("Effective training time (with failures)", sys_.goodput.wall_time_s),
                       ("Data read bandwidth needed", sys_.data.read_bandwidth_needed),
                       ("Host RAM per node", sys_.host.ram_per_node), ("Power at the wall (× PUE)", sys_.power.facility_watts),
                       ("Energy", sys_.power.energy_kwh), ("Electricity cost", sys_.power.cost_usd),
                       ("CO₂ emitted", sys_.power.co2_kg)):
        assert label in rows, label
        assert rows[label][1] == wrap_tip(fig.describe()), label  # tooltip: formula, inputs, source (wrapped)
        assert "nan" not in rows[label][0].lower() and "e+" not in rows[label][0], rows[label]
    assert "Cold start in all" not in rows  # inference only
    assert "Offload PCIe traffic per GPU per step" not in rows  # nothing is offloaded


def test_offload_rows_appear_only_when_offloading(window):
    window.state.edit_many({"training.method": "full", "training.zero_stage": 3, "training.offload": "cpu"},
                           "offload")
    window.state.evaluate_now()
    rows = _rows(window)
    assert "Offload PCIe traffic per GPU per step" in rows
    assert rows["PCIe load (share of the step)"][0].endswith("%")


def test_inference_plan_shows_cold_start_not_checkpoints(window):
    window.workload.setCurrentIndex(0)
    out = window.state.evaluate_now()
    assert out.doc.workload == "inference"
    rows = _rows(window)
    assert rows["Cold start in all"][1] == wrap_tip(out.estimate.system.cold_start.total_s.describe())
    assert "Energy per hour" in rows and "Checkpoint interval" not in rows


def test_storage_preset_edit_changes_figures_and_undoes(window):
    window.state.evaluate_now()
    before = _rows(window)["Checkpoint save (training stalls)"][0]
    combo = _editor(window, QComboBox, "system.storage")
    assert combo.itemText(0).startswith("default: ")  # the named default is shown
    cat = load_system_catalog()
    assert cat.defaults["storage"] and cat.storage[cat.defaults["storage"]].name.startswith(
        combo.itemText(0).removeprefix("default: "))
    combo.setCurrentIndex(combo.findData("nfs-100gbe"))  # as a user picking from the list
    assert window.state.doc.system.storage == "nfs-100gbe"
    window.state.evaluate_now()
    after = _rows(window)["Checkpoint save (training stalls)"][0]
    assert after != before
    window.undo_action.trigger()
    assert window.state.doc.system.storage is None
    assert combo.currentIndex() == 0
    window.redo_action.trigger()
    assert window.state.doc.system.storage == "nfs-100gbe"


def test_electricity_price_and_checks_are_undoable_edits(window):
    price = _editor(window, QDoubleSpinBox, "system.price_per_kwh")
    assert price.specialValueText() == "use the preset" and price.value() == price.minimum()
    window.state.evaluate_now()
    cost_default = _rows(window)["Electricity cost"][0]
    price.setValue(0.5)
    assert window.state.doc.system.price_per_kwh == 0.5
    window.state.evaluate_now()
    assert _rows(window)["Electricity cost"][0] != cost_default
    check = _editor(window, QCheckBox, "system.pretokenized")
    assert check.isChecked()  # the catalog's default (pre-tokenised) shown while the plan leaves it unset
    check.setChecked(False)
    window.state.evaluate_now()
    assert "Tokeniser CPU cores per node" in _rows(window)
    window.undo_action.trigger()
    window.undo_action.trigger()
    assert window.state.doc.system.price_per_kwh is None and window.state.doc.system.pretokenized is None


def test_engine_list_comes_from_the_catalog(window):
    window.workload.setCurrentIndex(0)
    combo = _editor(window, QComboBox, "inference.engine")
    profiles = load_engine_profiles()
    listed = {combo.itemData(i): combo.itemText(i) for i in range(combo.count())}
    assert listed == {k: p.name for k, p in profiles.items()}
    assert {"tgi", "ollama", "mlx", "llama-cpp"} <= set(listed)
    combo.setCurrentIndex(combo.findData("ollama"))
    assert window.state.doc.inference.engine == "ollama"
    assert window.state.evaluate_now().ok
    window.state.edit("inference.engine", "llama.cpp")  # an alias a hand-written plan may hold
    assert combo.currentText() == "llama.cpp" and combo.count() == len(profiles)  # no duplicate entry


def test_a_desktop_gpu_gets_a_personal_machines_defaults_and_the_editor_names_them(window):
    """One RTX 4090 is a desktop, not a data-centre node: PUE 1.0 (IT only), local NVMe, a desktop's
    host draw (120.1 W), residential electricity; the "default: ..." entries say which."""

    pue = _editor(window, QComboBox, "system.pue")  # the Fine-tune tab's: the tab on show
    assert window.state.edit_many({"hardware.gpu": "nvidia-rtx-4090-24gb", "hardware.gpu_spec": None,
                                   "hardware.gpu_efficiency": None}, "GPU")
    out = window.state.evaluate_now()
    power = out.estimate.system.power
    assert out.scenario.cluster.is_personal_machine
    assert pue.itemText(0).startswith("default: IT power only")
    assert "personal_defaults" in pue.itemData(0, 3)  # ToolTipRole
    assert power.facility_watts.value == pytest.approx(power.it_watts.value)  # PUE 1.0
    window.state.edit_many({"hardware.gpu": "nvidia-h100-sxm-80gb", "hardware.gpu_spec": None,
                            "hardware.gpu_efficiency": None}, "GPU")
    out = window.state.evaluate_now()
    assert not out.scenario.cluster.is_personal_machine
    assert pue.itemText(0).startswith("default: Industry average")
