"""The newest Inference-tab controls tried as users do (hardening round trial34, 2026-11-28; the window driven
offscreen with real key and mouse events, and looked at): a value the new engine refuses must stay where it can be
cleared, a typo must not change the plan, and a fine-tune's settings must not stop the Inference tab estimating.

Each test failed before its fix (exact values, no tolerance)."""

from __future__ import annotations

from drive import click_tab, field, pick_gpu, pick_model, type_into


def _pick(window, path: str, start: str) -> None:
    """Choose the entry of a combo whose text starts with ``start`` (a click on it in the open list)."""
    box = field(window, path)
    box.setCurrentIndex(next(i for i in range(box.count()) if box.itemText(i).lower().startswith(start.lower())))


def test_dp_attention_stays_clearable_under_an_engine_without_it(window):
    """SGLang's box was hidden under vLLM while the plan held it on, and the banner said "clear it"."""
    click_tab(window, 0)
    pick_model(window, "DeepSeek-V2-Lite", "DeepSeek-V2-Lite")
    pick_gpu(window, "H100 SXM 80", "H100 SXM 80GB")
    _pick(window, "inference.engine", "SGLang")
    box = field(window, "inference.dp_attention")
    box.click()
    _pick(window, "inference.engine", "vLLM")
    window.state.evaluate_now()
    banner = window.results.banner.text()
    assert "inference.dp_attention: vLLM has no data-parallel attention" in banner and "clear it" in banner
    assert box.isVisibleTo(window)
    box.click()  # cleared where the banner says
    window.state.evaluate_now()
    assert window.state.doc.inference.dp_attention is False
    assert window.results.banner.text().startswith("Fits")
    assert not box.isVisibleTo(window)  # nothing held: vLLM's tab shows no SGLang box


def test_a_typo_in_experts_in_host_ram_keeps_the_plan(window):
    """Enter added the typed text as an entry with no value, read as "automatic": "abc" or "-1" typed over 24 set
    the plan to automatic (--n-cpu-moe chosen by the estimate) instead of refusing the text."""
    click_tab(window, 0)
    pick_model(window, "gpt-oss-120", "gpt-oss-120b")
    pick_gpu(window, "3090", "GeForce RTX 3090 24GB")
    _pick(window, "inference.engine", "llama")
    type_into(window, "inference.cpu_moe_layers", "24")
    assert window.state.doc.inference.cpu_moe_layers == 24
    steps = window.state.undo_stack.count()
    for typo in ("abc", "-1", "2.5"):
        type_into(window, "inference.cpu_moe_layers", typo)
        assert window.state.doc.inference.cpu_moe_layers == 24, typo
        assert field(window, "inference.cpu_moe_layers").currentText() == "24"
        said = window.statusBar().currentMessage()
        assert said.startswith("inference.cpu_moe_layers: give the number of leading layers"), said
        assert "Value error" not in said  # pydantic's prefix, which the CLI strips
    assert window.state.undo_stack.count() == steps
    type_into(window, "inference.cpu_moe_layers", "ALL")
    assert window.state.doc.inference.cpu_moe_layers == "all"


def test_the_inference_tab_estimates_a_plan_with_fine_tune_switches(window):
    """Liger turned on in the Fine-tune tab (hf-trainer), then the Inference tab: "Cannot estimate: plan:
    training.liger: the megatron profile does not support it"."""
    click_tab(window, 1)
    window.state.edit_many({"training.framework": "hf-trainer", "training.liger": True}, "pick")
    click_tab(window, 0)
    window.state.evaluate_now()
    assert window.state.doc.workload == "inference" and window.state.doc.training.liger is True
    assert window.results.banner.text().startswith("Fits"), window.results.banner.text()
