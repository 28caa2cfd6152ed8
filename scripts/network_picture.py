"""Draw docs/images/network-two-nodes.svg: two DGX H100 nodes, TP=8 inside each, DP=2 across them.

Every number in the picture comes from the model itself (the catalog presets, ``placement.span`` and
``nccl.collective``), so the picture cannot drift from what the estimate does; the test
``tests/trust/test_network_picture.py`` checks the committed file against this script's output.

    .venv/bin/python scripts/network_picture.py [--out docs/images/network-two-nodes.svg] [--png FILE]

``--png`` also renders it with Qt's SVG renderer (for looking at it; PySide6 is a dependency already).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src")]

from llmplan.catalog.hardware import load_hardware_catalog  # noqa: E402
from llmplan.core.training.nccl import collective  # noqa: E402
from llmplan.core.training.placement import span  # noqa: E402

OUT = ROOT / "docs" / "images" / "network-two-nodes.svg"
MiB = 2**20
RAILS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
TP_FILL = ("#dbe9f6", "#e2f3df")


def figures() -> dict[str, str]:
    """The numbers the picture prints, from the model (DGX H100 preset, 2 nodes)."""
    cat = load_hardware_catalog()
    cl = cat.cluster_from(None, nodes=2, node_id="dgx-h100")
    eff = cat.efficiency_for(cl.gpu.id)
    tp, dp, tp16 = span(8, 1, cl, eff), span(2, 8, cl, eff), span(16, 1, cl, eff)
    tp_msg = 4096 * 4096 * 2  # one block's activations: s=4096, b=1, h=4096, bf16
    dp_msg = 40e6 * 4  # one Megatron gradient bucket: 40M fp32 gradients
    c_tp = collective("all-reduce", tp_msg, tp, cl.fabric)
    c_dp = collective("all-reduce", dp_msg, dp, cl.fabric)
    c_16 = collective("all-reduce", tp_msg, tp16, cl.fabric)
    c_small = collective("all-reduce", 4096, tp16, cl.fabric)
    gb = 1e9

    def call(c) -> str:
        bus = c.bus_bandwidth / gb
        return (f"{c.algorithm}/{c.protocol}, {c.seconds * 1e6:,.0f} µs, {bus:,.{0 if bus >= 10 else 2}f} GB/s bus, "
                f"{c.latency_s * 1e6:,.1f} µs latency")

    return {
        "nvlink": f"NVLink 4 via NVSwitch: {cl.intra_bandwidth / gb:,.0f} GB/s per GPU, {tp.nvlink / gb:,.0f} reached "
                  f"(ring), NVLS {tp.nvls / gb:,.0f}",
        "nic": f"8 × NDR 400 Gb/s NICs = {cl.network.node_bandwidth(8) / gb:,.0f} GB/s per node, "
               f"{dp.net * 8 / gb:,.0f} reached",
        "dp_share": f"each DP pair's ring: one NIC's share, {dp.net / gb:,.1f} GB/s",
        "tp": f"TP=8 all-reduce of a 32 MiB block activation (s=4096, h=4096, bf16): {call(c_tp)}",
        "dp": f"DP=2 all-reduce of a 160 MB gradient bucket (40M fp32), 8 pairs at once: {call(c_dp)}",
        "tp16": f"Had TP been 16 (spanning both nodes): the same 32 MiB call: {call(c_16)}",
        "small": f"and a 4 KiB call across both nodes: {call(c_small)}",
    }


def svg(f: dict[str, str]) -> str:
    w, h = 1000, 600
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
           'font-family="DejaVu Sans, Arial, sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>']

    def text(x, y, s, size=12, anchor="start", weight="normal", fill="#222"):
        out.append(f'<text x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}" '
                   f'fill="{fill}">{escape(s)}</text>')

    def rect(x, y, rw, rh, fill, stroke="#555", rx=4, width=1.0):
        out.append(f'<rect x="{x}" y="{y}" width="{rw}" height="{rh}" rx="{rx}" fill="{fill}" stroke="{stroke}" '
                   f'stroke-width="{width}"/>')

    def line(x1, y1, x2, y2, stroke="#555", width=1.0, dash=""):
        d = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{stroke}" stroke-width="{width}"{d}/>')

    text(w / 2, 22, "Two DGX H100 nodes: TP=8 inside each node, DP=2 across them (Megatron rank order)",
         15, "middle", "bold")
    nic_y, leaf_y = 236, 340
    nic_x: dict[tuple[int, int], float] = {}
    for node in range(2):
        x0 = 20 + node * 500
        rect(x0, 40, 460, 256, "#fafafa", "#333", 8, 1.5)
        text(x0 + 10, 58, f"node {node}", 13, weight="bold")
        rect(x0 + 14, 68, 432, 86, TP_FILL[node], "#7a9cc6" if node == 0 else "#6fae6a", 6)
        text(x0 + 230, 84, f"TP group {node}: ranks {8 * node}-{8 * node + 7}", 12, "middle")
        for g in range(8):
            gx = x0 + 22 + g * 53
            rect(gx, 92, 46, 30, "white", "#444")
            text(gx + 23, 111, f"GPU{8 * node + g}", 11, "middle")
            line(gx + 23, 122, gx + 23, 140, "#777", 1.2)
            line(gx + 23, 170, gx + 23, nic_y, RAILS[g], 1.2, "4 3")  # PCIe to its NIC
            rect(gx + 5, nic_y, 36, 18, "white", RAILS[g], 3, 1.5)
            text(gx + 23, nic_y + 13, f"NIC{g}", 10, "middle")
            nic_x[(node, g)] = gx + 23
        rect(x0 + 22, 140, 418, 30, "#eee", "#444", 4)
        text(x0 + 231, 159, "NVSwitch", 12, "middle", "bold")
        rect(x0 + 8, 180, 444, 36, "#fafafa", "none", 0)  # the captions sit above the dashed PCIe paths
        text(x0 + 230, 194, f["nvlink"], 10, "middle")
        text(x0 + 230, 210, "(dashed: each GPU's PCIe path to its NIC)", 10, "middle", fill="#666")

    for g in range(8):
        lx = 90 + g * 110
        rect(lx - 38, leaf_y, 76, 24, "white", RAILS[g], 4, 1.5)
        text(lx, leaf_y + 16, f"leaf {g} (rail {g})", 10, "middle")
        for node in range(2):
            line(nic_x[(node, g)], nic_y + 18, lx, leaf_y, RAILS[g], 1.4)
    for node in range(2):  # the NIC caption above the cables
        x0 = 20 + node * 500
        rect(x0 + 60, 273, 340, 16, "#fafafa", "none", 0)
        text(x0 + 230, 285, f["nic"], 10, "middle")
    text(w / 2, leaf_y + 46, "Rail-optimised: NIC k of every node on leaf k. DP pairs {0,8} {1,9} ... {7,15} "
         "reduce at once, one pair per rail; " + f["dp_share"] + ".", 11, "middle")
    y = 428
    rect(20, y - 18, 960, 170, "#fcfcf4", "#bbb", 6)
    text(32, y, "What the model prices (nccl.collective on placement.span; NCCL's algorithm choice):", 12,
         weight="bold")
    for i, key in enumerate(("tp", "dp", "tp16", "small")):
        text(40, y + 26 + 24 * i, "• " + f[key], 11)
    text(40, y + 26 + 24 * 4, "Across nodes the call takes the slower of its NVLink stage and its network stage, plus "
         "NCCL's latency (tuning.cc).", 11, fill="#444")
    text(40, y + 26 + 24 * 5, "Generated by scripts/network_picture.py from the catalog presets; the numbers are "
         "the model's, not measurements.", 10, fill="#666")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def render_png(svg_text: str, path: Path) -> None:
    from PySide6.QtCore import QByteArray
    from PySide6.QtGui import QColor, QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication(["network_picture", "-platform", "offscreen"])
    r = QSvgRenderer(QByteArray(svg_text.encode()))
    img = QImage(r.defaultSize(), QImage.Format.Format_ARGB32)
    img.fill(QColor("white"))
    p = QPainter(img)
    r.render(p)
    p.end()
    img.save(str(path))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--png", type=Path, default=None)
    args = ap.parse_args(argv)
    text = svg(figures())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    if args.png:
        render_png(text, args.png)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
