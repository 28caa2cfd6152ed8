"""Labels of a chart's lines (the GPU capacity, where offload starts) put where no curve runs.

pyqtgraph's own line label (``InfiniteLine(label=…)``) sits at one fixed spot along its line. On the memory
charts the curves run close to the capacity line (a plan that offloads fills its GPUs), so "capacity" lay on
the GPU curve at 1,024 × 700 and touched the offload curve at 1,280 × 800. ``place_labels`` tries spots beside
each line in pixels of the current view and takes the first pair that no curve segment enters and where the
two labels keep apart; ``crosses`` is the exact segment-box test it scores them with.
"""

from __future__ import annotations

import itertools
import math

import pyqtgraph as pg

LABEL_GAP = 3  # px between a line's label and its line, and the least room kept between the label and a curve


def crosses(seg: tuple[float, float, float, float], rect: tuple[float, float, float, float]) -> bool:
    """Whether the segment (x0, y0, x1, y1) enters the box (left, bottom, right, top): Liang-Barsky clipping."""
    x0, y0, x1, y1 = seg
    left, bottom, right, top = rect
    lo, hi = 0.0, 1.0
    for p, q in ((x0 - x1, x0 - left), (x1 - x0, right - x0), (y0 - y1, y0 - bottom), (y1 - y0, top - y0)):
        if p == 0:
            if q < 0:
                return False  # parallel to this edge and outside it
            continue
        t = q / p
        if p < 0:
            lo = max(lo, t)
        else:
            hi = min(hi, t)
        if lo > hi:
            return False
    return True


class LineLabel:
    """The label of a horizontal or vertical line (the capacity, where offload starts), put beside its line
    where no curve runs (``place_labels``). pyqtgraph's own line label sits at one fixed spot along the line:
    on a small chart (1,024 × 700) "capacity" lay on the GPU curve that runs just under it, and at 1,280 × 800
    it touched the offload curve."""

    def __init__(self, plot: pg.PlotWidget, text: str, colour: str, horizontal: bool) -> None:
        self.vb = plot.getViewBox()
        self.horizontal = horizontal
        self.item = pg.TextItem(text, color=colour, anchor=(0, 0))
        self.item.setVisible(False)
        plot.addItem(self.item, ignoreBounds=True)
        self.at: float | None = None  # the line's value in view coordinates (log10 on a log axis)
        self.segments: list[tuple[float, float, float, float]] = []  # the curves, in view coordinates

    def keep_off(self, at: float | None, curves: list[list[tuple[float, float]]]) -> None:
        """Label the line at ``at`` (None: no label), keeping off ``curves`` (each a list of points in view
        coordinates, NaN for a gap; a lone point counts as a segment of no length). ``place_labels`` puts it."""
        self.at = at
        ok = [[p if not any(map(math.isnan, p)) else None for p in curve] for curve in curves]
        self.segments = [(*a, *b) for curve in ok for a, b in itertools.pairwise(curve) if a and b]
        self.segments += [(*p, *p) for curve in ok for p in curve if p]
        if at is None:
            self.item.setVisible(False)

    def candidates(self) -> list[tuple[float, float, float, float]]:
        """(left, bottom, right, top) of the label at each spot, in view coordinates, in order of preference:
        a vertical line's several heights, either side; a horizontal line's start, end, middle, quarters and
        eighths, either side, then the same one, two and three label heights further off."""
        (x0, x1), (y0, y1) = self.vb.viewRange()
        px, py = self.vb.viewPixelSize()
        box = self.item.boundingRect()
        w, h, gx, gy = box.width() * px, box.height() * py, LABEL_GAP * px, LABEL_GAP * py
        out = []
        if not self.horizontal:
            for along in (0.5, 0.65, 0.35, 0.8, 0.2, 0.95, 0.05):
                bottom = y0 + gy + along * max(y1 - y0 - h - 2 * gy, 0)
                out += [(self.at + gx, bottom, self.at + gx + w, bottom + h),
                        (self.at - gx - w, bottom, self.at - gx, bottom + h)]
            return out
        for shift in (0, 1, 2, 3):
            for along in (0.0, 1.0, 0.5, 0.25, 0.75, 0.125, 0.375, 0.625, 0.875):
                left = x0 + gx + along * max(x1 - x0 - w - 2 * gx, 0)
                up, down = self.at + gy + shift * h, self.at - gy - h - shift * h
                out += [(left, up, left + w, up + h), (left, down, left + w, down + h)]
        return out

    def covered(self, rect: tuple[float, float, float, float]) -> int:
        """How many curve segments enter ``rect`` grown by the gap; many when it leaves the view."""
        (x0, x1), (y0, y1) = self.vb.viewRange()
        left, bottom, right, top = rect
        if left < x0 or right > x1 or bottom < y0 or top > y1:
            return 10_000
        px, py = self.vb.viewPixelSize()
        grown = (left - LABEL_GAP * px, bottom - LABEL_GAP * py, right + LABEL_GAP * px, top + LABEL_GAP * py)
        return sum(crosses(seg, grown) for seg in self.segments)

    def put(self, rect: tuple[float, float, float, float]) -> None:
        self.item.setPos(rect[0], rect[3])  # the text's top left
        self.item.setVisible(True)

    def rect(self) -> tuple[float, float, float, float] | None:
        """Where the label is, (left, bottom, right, top) in view coordinates; None while hidden."""
        if not self.item.isVisible():
            return None
        px, py = self.vb.viewPixelSize()
        box, pos = self.item.boundingRect(), self.item.pos()
        return pos.x(), pos.y() - box.height() * py, pos.x() + box.width() * px, pos.y()


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place_labels(labels: tuple[LineLabel, ...]) -> None:
    """Put the shown labels together: the pair of spots (one per label, each from its ``candidates``) that the
    fewest curve segments enter and where the labels keep off each other, the earliest such pair in the
    labels' order of preference. Placed one at a time, the capacity's label took the free corner the
    offload's marker needed, which then sat on a curve. Measured in the current view: called again whenever
    the view's range or size changes."""
    shown = [label for label in labels if label.at is not None and label.vb.width() > 0]
    if not shown:
        return
    options = []
    for label in shown:
        spots = label.candidates()
        options.append(sorted(zip((label.covered(r) for r in spots), range(len(spots)), spots, strict=True)))
    best, best_key = None, None
    for first in options[0]:
        for second in options[1] if len(options) > 1 else [(0, 0, None)]:
            clash = second[2] is not None and _overlap(first[2], second[2])
            key = (first[0] + second[0] + 100 * clash, first[1] + second[1])
            if best_key is None or key < best_key:
                best, best_key = (first[2], second[2]), key
            if first[0] + second[0] > best_key[0]:
                break  # sorted by cover: nothing further along beats the best
    for label, rect in zip(shown, best, strict=False):
        label.put(rect)
