"""Read a freedesktop.org ``.desktop`` file and turn its Exec line into a command, as a launcher does.

Why here: the packaging tests and ``scripts/dist_check.py`` must prove that double-clicking a
``.llmplan`` file runs the right command, without a desktop session, ``gio`` or ``xdg-open``.
This follows the Desktop Entry Specification 1.5 ("Exec key"): string escapes are undone first,
then the value is split into arguments with double-quote quoting, then field codes expand
(``%f`` is one file, ``%%`` a literal percent). Standard library only.
"""

from __future__ import annotations

from pathlib import Path

_STRING_ESCAPES = {"s": " ", "n": "\n", "t": "\t", "r": "\r", "\\": "\\", ";": ";"}
_QUOTED_ESCAPABLE = '"`$\\'
_DEPRECATED_OR_UNUSED_CODES = set("dDnNvmik")


class DesktopEntryError(ValueError):
    """The file is not a valid desktop entry, or its Exec line cannot be expanded."""


def parse(text: str) -> dict[str, str]:
    """The raw keys of the ``[Desktop Entry]`` group (values still escaped, as in the file)."""
    group = None
    entries: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            group = stripped[1:-1]
            continue
        if "=" not in stripped:
            raise DesktopEntryError(f"line {number}: expected 'Key=Value', got {line!r}")
        if group == "Desktop Entry":
            key, value = stripped.split("=", 1)
            if key.strip() in entries:
                raise DesktopEntryError(f"line {number}: key {key.strip()!r} appears twice")
            entries[key.strip()] = value.strip()
    if "Type" not in entries:
        raise DesktopEntryError("no [Desktop Entry] group with a Type key")
    return entries


def read(path: Path) -> dict[str, str]:
    return parse(path.read_text(encoding="utf-8"))


def unescape_string(value: str) -> str:
    """Undo the general string escapes (``\\s \\n \\t \\r \\\\``)."""
    out, i = [], 0
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value) and value[i + 1] in _STRING_ESCAPES:
            out.append(_STRING_ESCAPES[value[i + 1]])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def split_exec(value: str) -> list[str]:
    """Split an (already string-unescaped) Exec value into arguments, honouring double quotes."""
    args: list[str] = []
    current: list[str] = []
    in_arg = quoted = False
    i = 0
    while i < len(value):
        ch = value[i]
        if quoted:
            if ch == "\\" and i + 1 < len(value) and value[i + 1] in _QUOTED_ESCAPABLE:
                current.append(value[i + 1])
                i += 2
                continue
            if ch == '"':
                quoted = False
            else:
                current.append(ch)
        elif ch == '"':
            quoted = in_arg = True
        elif ch == " ":
            if in_arg:
                args.append("".join(current))
                current, in_arg = [], False
        else:
            current.append(ch)
            in_arg = True
        i += 1
    if quoted:
        raise DesktopEntryError(f"Exec has an unterminated quote: {value!r}")
    if in_arg:
        args.append("".join(current))
    return args


def command_for(entry: dict[str, str], files: list[str]) -> list[str]:
    """The argv a launcher runs when ``files`` are opened with this entry (``%f``: the first file)."""
    if "Exec" not in entry:
        raise DesktopEntryError("the entry has no Exec key")
    argv: list[str] = []
    for arg in split_exec(unescape_string(entry["Exec"])):
        if arg in ("%f", "%u"):
            argv.extend(files[:1])
        elif arg in ("%F", "%U"):
            argv.extend(files)
        elif len(arg) == 2 and arg[0] == "%" and arg[1] in _DEPRECATED_OR_UNUSED_CODES:
            continue
        else:
            argv.append(arg.replace("%%", "%"))
    return argv


def quote_exec_arg(arg: str) -> str:
    """How to write one argument into an Exec value so that :func:`command_for` gives it back.

    The quoting rule escapes ``" ` $ \\`` with a backslash inside double quotes, then the string
    rule doubles every backslash, and a literal percent sign is written ``%%``.
    """
    if "\n" in arg or "\r" in arg:
        raise DesktopEntryError(f"an Exec argument cannot contain a line break: {arg!r}")
    quoted = "".join("\\" + ch if ch in _QUOTED_ESCAPABLE else ch for ch in arg)
    return '"' + quoted.replace("\\", "\\\\").replace("%", "%%") + '"'
