"""Tooltip text wrapped to a readable width (Qt-free).

Qt shows a plain-text tooltip as one line per line of its text: it wraps only rich text. A figure's
explanation (``Figure.describe()``: its formula, its inputs with units, its assumptions and source) came out
as lines of 100 to 750 characters, wider than a 1,024-px screen (seen in the results table, the verdict
banner and the memory and step bars). ``wrap_tip`` breaks each long line between words at ``TIP_WIDTH``
characters and indents the continuation, and never inside a token of a formula or an input: the spaces of
"capacity = 24.00 GiB" (around "=", between a number and its unit) hold, so a line ends after a whole
"name = value unit". A word longer than the width (a URL) stays whole on its own line.

Every tooltip that shows an explanation goes through it: the results table's cells (``report.Row.tooltip``),
the verdict banner, the memory bar's and the step bar's segments, the weight-format list
(``backend.weight_format_tips``) and the layout editor's and training tabs' knobs (``bind``). It returns a
text whose lines fit already unchanged (and fast: the table sets about forty tooltips per estimate).
"""

from __future__ import annotations

import re
from functools import lru_cache

TIP_WIDTH = 80  # characters per line: about 560 px in the default 9-10 pt UI font, a third of a small screen
GLUE = "\ue000"  # a private-use character: stands for a space that must not break while a line is packed
# " = " between an input's name and its value; the space between a number and its unit ("24.00 GiB", "2 B")
_GLUED = re.compile(r"(?<=\S) (?==\s)|(?<= =) (?=\S)|(?<=\d) (?=[^\W\d_]|[%$µ°])")


@lru_cache(maxsize=4096)
def wrap_line(line: str, width: int = TIP_WIDTH) -> tuple[str, ...]:
    """``line`` as lines of at most ``width`` characters (a longer word keeps its own line); continuation
    lines are indented two spaces past the line's own indent. Cached: a figure's formula, assumptions and
    source lines come back unchanged on every estimate, only its inputs line changes with the knobs."""
    if len(line) <= width:
        return (line,)
    body = line.lstrip(" ")
    indent = line[: len(line) - len(body)]
    words = _GLUED.sub(GLUE, body).split()
    if not words:
        return (line,)
    out: list[str] = []
    current = indent + words[0]
    for word in words[1:]:
        if len(current) + 1 + len(word) > width:
            out.append(current)
            current = indent + "  " + word
        else:
            current += " " + word
    out.append(current)
    return tuple(part.replace(GLUE, " ") for part in out)


def wrap_tip(text: str, width: int = TIP_WIDTH) -> str:
    """``text`` with every line longer than ``width`` wrapped (``wrap_line``); its own line breaks kept."""
    lines = text.splitlines()
    if all(len(line) <= width for line in lines):
        return text
    return "\n".join(part for line in lines for part in wrap_line(line, width))
