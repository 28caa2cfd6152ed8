"""The Hub in the app, with real key events against the local fake Hub (tests/fake_hub.py): type ORG/NAME,
press Enter, the plan fills in the background; Cancel mid-fetch leaves the plan as it was."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt
from tests.fake_hub import FakeFile, gguf_bytes, safetensors_file, tiny_llama_config

pytest.importorskip("huggingface_hub")

Q4 = 48_312_001


@pytest.fixture
def hub(fake_hub, tmp_path):
    head = gguf_bytes(tmp_path, hidden=256, layers=4, heads=8, kv_heads=4, ff=512, vocab=1000)
    fake_hub.add("acme/tiny-GGUF", {"tiny-Q4_K_M.gguf": FakeFile(head, Q4), "tiny-Q8_0.gguf": FakeFile(head, 90_000_000)})
    fake_hub.add("acme/tiny", {"config.json": json.dumps(tiny_llama_config(512, 4, 8, 4, 1376, 32000)).encode(),
                               "model.safetensors": safetensors_file({"w": ("BF16", [32000, 512])})})
    return fake_hub


def test_paste_repo_id_and_press_enter_fills_the_plan(window, qtbot, hub):
    models = window.models
    qtbot.keyClicks(models.search, "acme/tiny")
    first = models.list.model().index(0, 0)
    assert first.data() == "Hub: acme/tiny"
    qtbot.keyClick(models.search, Qt.Key.Key_Return)
    assert models.hub.isVisible() and models.hub.busy
    # generous: a wall-clock bound here would test the machine's load, not the code (speed lives in benchmarks/)
    qtbot.waitUntil(lambda: window.state.doc.model.hub is not None, timeout=15000)
    doc = window.state.doc
    assert doc.model.hub.repo == "acme/tiny" and doc.model.config["hidden_size"] == 512
    assert doc.inference.weight_format == "bf16"
    assert "16,384,000 params" in models.hub.status.text()  # exact count from the safetensors header
    est = window.state.evaluate_now().estimate
    assert est is not None and est.params.total > 0
    window.undo_action.trigger()  # one undo step puts the previous model back
    assert window.state.doc.model.id == "meta-llama/Meta-Llama-3-8B"


def test_gguf_repo_offers_its_quants_and_uses_the_file_size(window, qtbot, hub):
    models = window.models
    qtbot.keyClicks(models.search, "https://huggingface.co/acme/tiny-GGUF")
    qtbot.keyClick(models.search, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.state.doc.model.hub is not None, timeout=15000)
    assert window.state.doc.model.hub.file == "tiny-Q4_K_M.gguf"  # Q4_K_M by default
    assert window.state.doc.workload == "inference"
    assert window.state.evaluate_now().estimate.inference.weight_bytes.value == Q4
    assert models.hub.quant.isVisible() and models.hub.quant.count() == 2
    models.hub.quant.setFocus()
    qtbot.keyClick(models.hub.quant, Qt.Key.Key_Down)  # pick the Q8_0 file with the keyboard
    qtbot.waitUntil(lambda: window.state.doc.model.hub.file == "tiny-Q8_0.gguf", timeout=2000)
    assert window.state.doc.inference.weight_format == "q8_0"
    assert window.state.evaluate_now().estimate.inference.weight_bytes.value == 90_000_000


def test_cancel_mid_fetch_keeps_the_plan_and_the_window_responsive(window, qtbot, hub):
    hub.modes["acme/tiny"] = "stall"
    models = window.models
    before = window.state.doc
    qtbot.keyClicks(models.search, "acme/tiny")
    qtbot.keyClick(models.search, Qt.Key.Key_Return)
    qtbot.wait(150)  # the worker is now waiting on the stalled server; the window still handles events
    assert models.hub.busy and models.hub.cancel_button.isVisible()
    qtbot.mouseClick(models.hub.cancel_button, Qt.MouseButton.LeftButton)
    assert not models.hub.busy and "cancelled" in models.hub.status.text()
    hub.modes.pop("acme/tiny")
    qtbot.wait(300)
    assert window.state.doc == before


def test_gated_repo_failure_is_shown_in_one_line(window, qtbot, hub):
    hub.add("acme/gated", {"config.json": b"{}"}, gated=True)
    models = window.models
    qtbot.keyClicks(models.search, "acme/gated")
    qtbot.keyClick(models.search, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: not models.hub.busy, timeout=3000)
    assert "acme/gated is gated" in models.hub.status.text() and "HF_TOKEN" in models.hub.status.text()


def test_unknown_architecture_opens_the_editor_prefilled(window, qtbot, hub):
    hub.add("acme/odd", {"config.json": json.dumps({"model_type": "oddnet", "dim": 256, "n_layers": 2,
                                                    "vocab_size": 1000}).encode()})
    models = window.models
    qtbot.keyClicks(models.search, "acme/odd")
    qtbot.keyClick(models.search, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: getattr(models, "arch_dialog", None) is not None, timeout=3000)
    dialog = models.arch_dialog
    assert dialog.spins["hidden_size"].value() == 256 and dialog.spins["num_hidden_layers"].value() == 2
    assert "num_attention_heads" in models.hub.status.text()
    dialog.spins["num_attention_heads"].setValue(4)
    dialog._ok()
    assert window.state.doc.model.config["hidden_size"] == 256


def test_a_plan_naming_only_a_hub_repo_is_read_in_the_background(window, qtbot, hub):
    from llmplan.plan.document import HubSource, ModelRef, PlanDocument

    doc = PlanDocument(name="shared", model=ModelRef(hub=HubSource(repo="acme/tiny")))
    window.state.load(doc, None)
    outcome = window.state.evaluate_now()  # on the UI thread: answers at once, no network
    assert outcome.estimate is None and "Reading acme/tiny from the Hugging Face Hub" in outcome.message
    qtbot.waitUntil(lambda: window.state.doc.model.config is not None, timeout=2000)
    assert window.state.evaluate_now().estimate is not None
