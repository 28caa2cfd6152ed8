"""Every catalog model, served by the local fake Hub as its config.json plus a safetensors header with one
tensor per tensor group, comes back through the Hub path with exactly the catalog's parameter count."""

import json

import pytest

from llmplan.catalog.models import load_model_catalog
from llmplan.core.params import count_params
from llmplan.formats.hub import fetch_hub_model
from llmplan.formats.hub_ref import HubRef
from llmplan.plan.hub_plan import spec_from_hub
from tests.fake_hub import safetensors_file

pytest.importorskip("huggingface_hub")


def test_every_catalog_model_counts_the_same_through_the_hub(fake_hub):
    entries = [e for e in load_model_catalog().entries if not e.user]
    assert len(entries) >= 90
    for e in entries:
        groups = count_params(e.spec).groups
        tensors = {f"{g.name}.{i}": ("BF16", [g.count, *g.shape]) for i, g in enumerate(groups)}
        fake_hub.add(e.id, {"config.json": json.dumps(e.config).encode(), "model.safetensors": safetensors_file(tensors)})
    for e in entries:
        m = fetch_hub_model(HubRef(e.id))
        expected = count_params(e.spec).total
        assert count_params(spec_from_hub(m)).total == expected, e.id
        assert m.safetensors.params == expected and m.safetensors.stored_bytes == 2 * expected, e.id
