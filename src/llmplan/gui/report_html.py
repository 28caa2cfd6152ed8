"""The estimate as an HTML report (Qt-free): header, verdict, every figure with how it was
computed, and the charts as PNG pictures.

One page a colleague can open in any browser and print. The saved file embeds the charts
as ``data:image/png;base64`` URIs so it is a single file; the PDF path (``gui.export``)
renders the same HTML with Qt's ``QTextDocument``, whose simple HTML subset this page keeps
to (tables, headings, inline styles, no scripts or external CSS), with the pictures passed
as named document resources instead.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence

from llmplan.core.present import MemoryUnit
from llmplan.core.result import Estimate
from llmplan.core.system import Evaluation
from llmplan.fit.tiers import PlanVerdict
from llmplan.gui.report import off_gpu_lines, rows, verdict

STYLE = ("body { font-family: sans-serif; font-size: 10pt; } h1 { font-size: 16pt; } h2 { font-size: 12pt; "
         "margin-top: 14px; } table { border-collapse: collapse; } td, th { padding: 2px 8px; "
         "border-bottom: 1px solid #ddd; text-align: left; vertical-align: top; } .how { color: #555; "
         "font-size: 8pt; } .verdict { font-size: 12pt; font-weight: bold; }")


def image_name(i: int) -> str:
    """The resource name of the i-th chart (the PDF path registers the pictures under these names)."""
    return f"chart-{i + 1}.png"


def as_html(est: Estimate | Evaluation, unit: MemoryUnit, title: str, head: Sequence[tuple[str, str]],
            charts: Sequence[tuple[str, bytes]] = (), notes: str = "", embed: bool = True,
            tier: PlanVerdict | None = None) -> str:
    """The report page. ``charts`` are (title, PNG bytes); with ``embed`` they are data URIs (a
    self-contained .html file), without it ``image_name(i)`` references for ``QTextDocument``."""
    e = html.escape
    out = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>", f"<title>{e(title or 'llmplan report')}</title>",
           f"<style>{STYLE}</style></head><body>", f"<h1>{e(title or 'llmplan report')}</h1>", "<table>"]
    out += [f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in head]
    out += ["</table>", f"<p class='verdict'>{e(verdict(est, unit, tier))}</p>"]
    if tier is not None and tier.cost:
        out.append(f"<p>{e(tier.cost)}</p>")
    out += [f"<p>{e(text)}</p>" for text, _l, _b in off_gpu_lines(est, tier, unit)]
    if notes:
        out.append(f"<p>{e(notes)}</p>")
    section = ""
    for r in rows(est):
        if r.section != section:
            if section:
                out.append("</table>")
            section = r.section
            out += [f"<h2>{e(section)}</h2>", "<table><tr><th>Figure</th><th>Value</th><th>How</th></tr>"]
        how = r.figure.formula if r.figure is not None else ""
        out.append(f"<tr><td>{e(r.label)}</td><td>{e(r.shown(unit))}</td><td class='how'>{e(how)}</td></tr>")
    if section:
        out.append("</table>")
    if charts:
        out.append("<h2>Charts</h2>")
    for i, (name, png) in enumerate(charts):
        src = f"data:image/png;base64,{base64.b64encode(png).decode('ascii')}" if embed else image_name(i)
        # no caption: each picture carries its title, and a caption can be split from it by a page break
        out.append(f"<p><img src='{src}' width='600' alt='{e(name)}' title='{e(name)}'></p>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
