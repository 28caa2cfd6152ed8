"""The checked-in JSON Schema must match the pydantic model (CI fails when it is stale)."""

import json

from llmplan.plan.planfile import plan_schema_text
from llmplan.resources_path import resources_dir


def test_checked_in_schema_is_current():
    shipped = (resources_dir() / "plan.schema.json").read_text(encoding="utf-8")
    assert shipped == plan_schema_text(), (
        "resources/plan.schema.json is stale; regenerate it with: "
        ".venv/bin/llmplan-cli schema > resources/plan.schema.json"
    )


def test_schema_describes_the_contract_fields():
    schema = json.loads(plan_schema_text())
    assert {"format", "schema_version", "model", "hardware", "parallelism", "training"} <= set(schema["properties"])
    assert schema["required"] == ["model"]
