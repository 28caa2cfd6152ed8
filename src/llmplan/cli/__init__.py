"""``llmplan-cli``: the engine from a terminal, for scripting and for testing without the GUI.

Each subcommand lives in its own module with ``register(subparsers)``; the module's
handler returns an exit code. Every ``LlmplanError`` becomes one line on stderr and a
non-zero exit, never a traceback (DESIGN.md §3).
"""

from __future__ import annotations

import contextlib
import signal
import sys


@contextlib.contextmanager
def _ctrl_c_deferred():
    """Hold Ctrl-C back while modules load: an interrupt inside an extension's import (pydantic-core's
    import of ``datetime``) surfaces as that library's panic, not as KeyboardInterrupt. A Ctrl-C that
    came meanwhile is delivered on leaving, as a KeyboardInterrupt the caller turns into exit 130."""
    mask = getattr(signal, "pthread_sigmask", None)
    if mask is None:  # Windows: no signal masks
        yield
        return
    mask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        mask(signal.SIG_UNBLOCK, {signal.SIGINT})


try:  # Ctrl-C while these load (a slow or busy machine): exit 130 quietly, as main() does later
    with _ctrl_c_deferred():
        import argparse
        from collections.abc import Sequence

        from llmplan import __version__
        from llmplan.errors import LlmplanError
except KeyboardInterrupt:
    raise SystemExit(130) from None

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


def positive_int(text: str) -> int:
    """An argparse type for counts (``--top``): 0 or a negative number was taken and showed nothing, or one row."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def one_line(text: str) -> str:
    """Control characters (a newline in a file name ...) escaped, so an error stays on one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class _EscapeTable(dict):
    """``str.translate`` table: every character that is not printable, except newline and tab, becomes a
    ``\\uXXXX`` escape (valid inside JSON strings too); filled lazily, one entry per character seen."""

    def __missing__(self, code: int) -> str:
        c = chr(code)
        if c.isprintable() or c in "\n\t":
            value = c
        elif code < 0x10000:
            value = f"\\u{code:04x}"
        else:  # a surrogate pair, as JSON writes it
            v = code - 0x10000
            value = f"\\u{0xD800 + (v >> 10):04x}\\u{0xDC00 + (v & 0x3FF):04x}"
        self[code] = value
        return value


_ESCAPES = _EscapeTable()


class EscapingWriter:
    """Wraps stdout/stderr for the duration of a command: a model name, a GPU name reported by a driver
    or a file name holding terminal escape codes (``\\x1b]...``) or a carriage return is printed escaped,
    never acted on by the terminal. JSON output stays valid: its strings hold only ``\\uXXXX`` escapes."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(text.translate(_ESCAPES))

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


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
    """The console entry point: output escaped, Ctrl-C at any moment (also while the subcommands
    are imported, the first ~0.4 s) ends with exit code 130 and no traceback."""
    out, err = sys.stdout, sys.stderr
    try:
        sys.stdout, sys.stderr = EscapingWriter(out), EscapingWriter(err)
        return _main(argv)
    except KeyboardInterrupt:
        return 130
    finally:
        sys.stdout, sys.stderr = out, err


def _main(argv: Sequence[str] | None) -> int:
    with _ctrl_c_deferred():  # the subcommands import the engine (pydantic, ...)
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
