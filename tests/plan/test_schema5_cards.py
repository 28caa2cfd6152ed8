"""Plan schema 5: a machine of different cards (``hardware.cards``, ``hardware.tensor_split``) and the local
engines' back-end (``inference.backend``) are saved in plan files (DESIGN.md §3, the plan-file contract).

Checked exactly (no tolerance): a schema-4 plan migrates to identical numbers; ``estimate --gpu A --gpu B
--save`` writes a plan that reopens to the same JSON answer, byte for byte, even when the receiver's catalog
lacks the cards (their specs are inline); a newer schema is refused naming both versions."""

import json

import pytest

from llmplan.cli import main
from llmplan.core.engine import estimate
from llmplan.errors import PlanFileError
from llmplan.plan.document import SCHEMA_VERSION, CardRef, HardwareRef, ModelRef, PlanDocument
from llmplan.plan.planfile import dumps_plan, load_plan, loads_plan
from llmplan.plan.resolve import resolve

MIXED = ["--model", "meta-llama/Llama-3.1-70B", "--workload", "inference", "--gpu", "nvidia-rtx-5090-32gb",
         "--gpu", "nvidia-rtx-3090-24gb", "--set", "inference.weight_format=q4_k_m", "--set",
         "inference.prompt_tokens=4096", "--set", "inference.output_tokens=256"]


def cli_json(capsys, *args) -> dict:
    assert main(["estimate", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_schema_is_5():
    assert SCHEMA_VERSION == 5


def test_schema_4_plan_migrates_with_the_same_numbers():
    old = {"format": "llmplan", "schema_version": 4, "model": {"id": "meta-llama/Meta-Llama-3-8B"},
           "workload": "inference", "hardware": {"gpu": "nvidia-rtx-4090-24gb"},
           "inference": {"engine": "llama-cpp", "weight_format": "q4_k_m"}}
    doc = loads_plan(json.dumps(old))
    assert doc.schema_version == 5 and doc.hardware.cards == () and doc.inference.backend == "auto"
    same = loads_plan(json.dumps({**old, "schema_version": 5}))
    a, b = estimate(resolve(doc)), estimate(resolve(same))
    assert a.memory.total.value == b.memory.total.value and a.inference.tpot_s.value == b.inference.tpot_s.value


def test_newer_schema_is_refused_naming_both_versions():
    with pytest.raises(PlanFileError, match=r"newer llmplan \(schema 6\).*reads up to schema 5"):
        loads_plan(json.dumps({"format": "llmplan", "schema_version": 6, "model": {"id": "m"}}))


def test_cli_save_and_reopen_give_identical_numbers(capsys, tmp_path):
    path = tmp_path / "two-cards.llmplan"
    first = cli_json(capsys, *MIXED, "--tensor-split", "3,2", "--save", str(path))
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved["schema_version"] == 5
    assert [c["gpu"] for c in saved["hardware"]["cards"]] == ["nvidia-rtx-5090-32gb", "nvidia-rtx-3090-24gb"]
    assert all("gpu_spec" in c for c in saved["hardware"]["cards"])  # self-contained
    assert saved["hardware"]["tensor_split"] == [3.0, 2.0] and saved["inference"]["engine"] == "llama-cpp"
    again = cli_json(capsys, str(path))
    first.pop("automatic")  # "engine chosen: llama.cpp": the saved plan names its engine
    assert again == first
    assert [c["layers"] for c in again["mixed_gpus"]["cards"]] == [49, 31]  # 3:2 of 80 layers + the head: i / 81 < 0.6


def test_reopen_without_the_cards_in_the_catalog(capsys, tmp_path):
    """The receiver's catalog lacks the cards: the inline specs give the same answer."""
    path = tmp_path / "renamed.llmplan"
    cli_json(capsys, *MIXED, "--save", str(path))
    data = json.loads(path.read_text(encoding="utf-8"))
    want = cli_json(capsys, str(path))
    for card in data["hardware"]["cards"]:
        card["gpu"] = "not-in-any-catalog-" + card["gpu"]
    path.write_text(json.dumps(data), encoding="utf-8")
    assert cli_json(capsys, str(path))["mixed_gpus"]["host_bytes"] == want["mixed_gpus"]["host_bytes"]
    assert [c["total"] for c in cli_json(capsys, str(path))["mixed_gpus"]["cards"]] == \
        [c["total"] for c in want["mixed_gpus"]["cards"]]


def test_counts_group_neighbouring_identical_cards(capsys, tmp_path):
    path = tmp_path / "three.llmplan"
    cli_json(capsys, *MIXED, "--gpu", "nvidia-rtx-3090-24gb", "--save", str(path))
    doc = load_plan(path)
    assert [(c.gpu, c.count) for c in doc.hardware.cards] == [("nvidia-rtx-5090-32gb", 1),
                                                               ("nvidia-rtx-3090-24gb", 2)]
    assert doc.hardware.card_ids() == ["nvidia-rtx-5090-32gb", "nvidia-rtx-3090-24gb", "nvidia-rtx-3090-24gb"]
    assert loads_plan(dumps_plan(doc)) == doc


@pytest.mark.parametrize(("hardware", "message"), [
    ({"cards": [{"gpu": "a"}], "nodes": 2}, "set nodes to 1"),
    ({"cards": [{"gpu": "a"}, {"gpu": "b"}], "tensor_split": [1.0]}, "give 2 non-negative shares"),
    ({"tensor_split": [1.0, 1.0]}, "tensor_split needs cards"),
    ({"cards": [{"gpu": "a", "count": 17}]}, "hardware.cards"),
])
def test_bad_cards_are_refused_naming_the_field(hardware, message):
    plan = {"format": "llmplan", "schema_version": 5, "model": {"id": "m"}, "workload": "inference",
            "hardware": {"gpu": "a", **hardware}}
    with pytest.raises(PlanFileError, match=message):
        loads_plan(json.dumps(plan))


def test_backend_round_trips():
    doc = PlanDocument(model=ModelRef(id="m"), workload="inference",
                       hardware=HardwareRef(cards=(CardRef(gpu="a"), CardRef(gpu="b")), tensor_split=(1.0, 2.0)))
    doc = doc.model_copy(update={"inference": doc.inference.model_copy(update={"backend": "vulkan"})})
    again = loads_plan(dumps_plan(doc))
    assert again.inference.backend == "vulkan" and again.hardware.tensor_split == (1.0, 2.0)
