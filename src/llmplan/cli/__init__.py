"""``llmplan-cli``: the engine from a terminal, for scripting and for testing without the GUI.

Each subcommand lives in its own module with ``register(subparsers)``; the module's
handler returns an exit code. Every ``LlmplanError`` becomes one line on stderr and a
non-zero exit, never a traceback (DESIGN.md §3).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from llmplan import __version__
from llmplan.errors import LlmplanError

EXIT_BAD_INPUT = 2


def _subcommand_modules() -> list:
    # Imported here so `llmplan-cli --version` stays fast. Each module: register(subparsers).
    from llmplan.cli import (
        cmd_catalog,
        cmd_detect,
        cmd_estimate,
        cmd_params,
        cmd_schema,
        cmd_search,
        cmd_serve,
    )

    return [cmd_params, cmd_estimate, cmd_search, cmd_serve, cmd_catalog, cmd_detect, cmd_schema]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="llmplan-cli",
        description="Estimate the hardware a large language model needs, and whether it fits.",
    )
    parser.add_argument("--version", action="version", version=f"llmplan {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _subcommand_modules():
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        print("llmplan-cli: error: give a command, e.g. llmplan-cli estimate --help", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return int(args.handler(args) or 0)
    except LlmplanError as exc:  # one line, even when a file name in the message holds a line break
        message = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(exc))
        print(f"llmplan-cli: error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
