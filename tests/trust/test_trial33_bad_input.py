"""trial33 (hardening round): values a user or a hand-edited plan can give that were taken without a word and
gave a nonsense figure. Each is now a field error naming the field, the value and what to give instead."""

from __future__ import annotations

import json

import pytest

from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.errors import PlanFileError
from llmplan.plan.planfile import loads_plan
from llmplan.plan.resolve import resolve
from tests.trust._issue17 import example_plan

H100 = "nvidia-h100-sxm-80gb"


def _with_gpu_spec(**changes) -> str:
    """The shipped example plan with an inline H100 spec (as a saved plan has it), some fields changed."""
    plan = example_plan()
    spec = load_hardware_catalog().gpu(H100).spec.model_dump(mode="json")
    plan["hardware"]["gpu_spec"] = {**spec, **changes}
    return json.dumps(plan)


def test_a_driver_reserve_larger_than_the_memory_is_a_field_error():
    """driver_reserved_bytes = 1 TB on an 80 GB card read "DOES NOT FIT: 58.64 GiB of 0 B per GPU" and an estimate
    that offloaded everything; NVML reports ~480 MiB reserved on an H100 SXM (the field's description)."""
    with pytest.raises(PlanFileError) as err:
        loads_plan(_with_gpu_spec(driver_reserved_bytes=10**12))
    text = str(err.value)
    assert "hardware.gpu_spec" in text and "driver_reserved_bytes = 1,000,000,000,000 leaves nothing" in text
    resolve(loads_plan(_with_gpu_spec(driver_reserved_bytes=480 * 2**20)))  # the real reserve still loads


def test_a_rule_over_the_whole_plan_is_said_without_a_placeholder_field():
    """A pre-training plan with QLoRA read "plan: (the document): pre-training trains every weight: ..." in the CLI
    and in the app's banner; the rule's own sentence names the field."""
    plan = json.loads(_with_gpu_spec())
    plan["workload"], plan["training"] = "pretrain", {"method": "qlora"}
    with pytest.raises(PlanFileError) as err:
        resolve(loads_plan(json.dumps(plan)))
    assert str(err.value) == "plan: pre-training trains every weight: set training.method to 'full'"
