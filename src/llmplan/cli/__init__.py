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
        cmd_hub,
        cmd_params,
        cmd_schema,
        cmd_search,
        cmd_serve,
        cmd_watch,
    )

    return [cmd_params, cmd_estimate, cmd_search, cmd_serve, cmd_catalog, cmd_detect, cmd_hub, cmd_watch, cmd_schema]


def one_line(text: str) -> str:
    """Control characters (a newline in a file name ...) escaped, so an error stays on one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class _Parser(argparse.ArgumentParser):
    """argparse quotes bad arguments as typed; escape them so its error line stays one line."""

    def error(self, message: str):  # type: ignore[override]
        super().error(one_line(message))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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
        print(f"llmplan-cli: error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a path the system refuses outright (name too long, ...): the user's input
        name = str(exc.filename or "")
        shown = f" ({name[:60]}{'...' if len(name) > 60 else ''})" if name else ""
        print(f"llmplan-cli: error: {one_line((exc.strerror or str(exc)) + shown)}", file=sys.stderr)
        return EXIT_BAD_INPUT
