"""``llmplan-cli schema``: print the plan file's JSON Schema (what resources/plan.schema.json holds)."""

from __future__ import annotations

import argparse

from llmplan.plan.planfile import plan_schema_text


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of .llmplan files")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    print(plan_schema_text(), end="")
    return 0
