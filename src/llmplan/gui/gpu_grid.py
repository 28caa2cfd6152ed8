"""The drawing of the cluster: every GPU in its node, coloured by pipeline stage
(hue) and tensor rank (shade), GPUs the layout leaves idle in grey. A GPU whose tensor- or
context-parallel group leaves its node gets a thick outline (red: TP, orange: CP), because
those groups' collectives then run over the network (``core.training.placement``).

Ranks follow Megatron-LM's default order (tensor fastest, then context, then data,
then pipeline): rank = tp_i + tp·(cp_i + cp·(dp_i + dp·pp_i)). Clusters of more than
``DETAIL_LIMIT`` GPUs are drawn one box per node (coloured by the stage most of its
GPUs hold), so a 4,096-GPU plan stays readable and cheap to paint.

The drawing asks for the height of its rows of tiles at its width (``needed_height``), at most
``HINT_HEIGHT``: one row of 84-px tiles asks for 96 px, not 160, so the layout editor of a training plan
fits its pane at 1,024 × 700 (a fixed 160-px hint made it scroll there).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from llmplan.core.training.placement import crosses_nodes
from llmplan.core.workload import ParallelLayout
from llmplan.gui.theme import stage_colour

DETAIL_LIMIT = 256
MAX_BOX = 84.0  # pixels: the largest GPU tile
HINT_HEIGHT = 160  # pixels: the most the drawing asks for (rows beyond it shrink their tiles instead)
CROSS_COLOURS = {"tp": "#d32f2f", "cp": "#f57c00"}  # outline of GPUs whose group spans nodes


def crossing_groups(layout: ParallelLayout, gpus_per_node: int) -> tuple[str, ...]:
    """The latency-critical groups ("tp", "cp") that span more than one node in rank order."""
    out = []
    if crosses_nodes(layout.tp, 1, gpus_per_node):
        out.append("tp")
    if crosses_nodes(layout.cp, layout.tp, gpus_per_node):
        out.append("cp")
    return tuple(out)


@dataclass(frozen=True, slots=True)
class GpuRanks:
    rank: int
    tp: int
    cp: int
    dp: int
    pp: int


def ranks_of(rank: int, layout: ParallelLayout) -> GpuRanks | None:
    """The parallel coordinates of a global rank; None when the layout leaves it idle."""
    if rank >= layout.gpus:
        return None
    tp_i = rank % layout.tp
    rest = rank // layout.tp
    cp_i = rest % layout.cp
    rest //= layout.cp
    dp_i = rest % layout.dp
    pp_i = rest // layout.dp
    return GpuRanks(rank, tp_i, cp_i, dp_i, pp_i)


class GpuGrid(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.layout_ = ParallelLayout()
        self.gpus_per_node = 1
        self.nodes = 1
        self.memory_text = ""  # the worst-loaded GPU's memory, when per-stage figures are not known
        self._stage_texts: tuple[str, ...] = ()  # per pipeline stage (training): what each GPU holds
        self._stage_source: Callable[[], tuple[str, ...]] | None = None  # works them out when first needed
        self.setMouseTracking(True)
        self.setMinimumHeight(90)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setAccessibleName("GPU layout drawing")
        self._boxes: list[tuple[QRectF, int, int]] = []  # rect, node, gpu index in node (-1: whole node)
        self._heights: dict[tuple[int, int, int], int] = {}  # (width, nodes, GPUs per node) -> needed_height

    @property
    def stage_memory_text(self) -> tuple[str, ...]:
        """What a GPU of each pipeline stage holds (training), for the hover text."""
        if self._stage_source is not None:
            self._stage_texts, self._stage_source = tuple(self._stage_source()), None
        return self._stage_texts

    @stage_memory_text.setter
    def stage_memory_text(self, texts: tuple[str, ...]) -> None:
        self._stage_texts, self._stage_source = tuple(texts), None

    def set_stage_memory(self, source: Callable[[], tuple[str, ...]]) -> None:
        """The per-stage texts, worked out by ``source`` when a hover first needs them: each stage is a
        memory plan of its own, too much to redo on every knob change for a tooltip (issue 18: knob →
        verdict ≤ 10 ms)."""
        self._stage_texts, self._stage_source = (), source

    def _tiles(self, w: float, h: float) -> tuple[int, int, int, int, float]:
        """(node columns, node rows, GPU columns, GPU rows in a node, tile size) of the detailed drawing in w×h:
        nodes and their GPUs in near-square grids, a tile at most ``MAX_BOX`` (a lone GPU is a tile, not a wall)."""
        node_cols, node_rows = self._grid(self.nodes, w, h)
        nw, nh = w / node_cols, h / node_rows
        g_cols, g_rows = self._grid(self.gpus_per_node, nw - 8, nh - 8)
        return node_cols, node_rows, g_cols, g_rows, min((nw - 8) / g_cols, (nh - 8) / g_rows, MAX_BOX)

    def needed_height(self, width: int) -> int:
        """The height whose tiles are as large as ``HINT_HEIGHT`` px would make them at ``width``: the rows of
        tiles, 4 px round each node's tiles and 2 px round the drawing. Large clusters (one box per node) fill
        ``HINT_HEIGHT``. A bisection: the tile size never shrinks as the height grows."""
        if self.aggregated:
            return HINT_HEIGHT
        key = (width, self.nodes, self.gpus_per_node)
        if key not in self._heights:
            w = max(width - 4, 16)
            best = self._tiles(w, HINT_HEIGHT - 4)[4]
            low, high = self.minimumHeight(), HINT_HEIGHT
            while low < high:
                mid = (low + high) // 2
                if self._tiles(w, mid - 4)[4] >= best - 1e-9:
                    high = mid
                else:
                    low = mid + 1
            _nc, node_rows, _gc, g_rows, box = self._tiles(w, low - 4)
            self._heights[key] = max(self.minimumHeight(), min(low, math.ceil(node_rows * (g_rows * box + 8) + 4)))
        return self._heights[key]

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self.needed_height(width)

    def sizeHint(self) -> QSize:
        """360 px wide (before it is laid out) and the height of its rows at its width (``needed_height``)."""
        width = self.width() if self.testAttribute(Qt.WidgetAttribute.WA_Resized) else 360
        return QSize(360, self.needed_height(width))

    def resizeEvent(self, event) -> None:
        if self.needed_height(event.size().width()) != self.needed_height(event.oldSize().width()):
            self.updateGeometry()  # more or fewer rows at the new width
        super().resizeEvent(event)

    def set_cluster(self, layout: ParallelLayout, gpus_per_node: int, nodes: int, memory_text: str = "") -> None:
        self.layout_, self.gpus_per_node, self.nodes = layout, gpus_per_node, nodes
        self.memory_text = memory_text
        if self._heights and next(iter(self._heights))[1:] != (nodes, gpus_per_node):
            self._heights.clear()
            self.updateGeometry()  # another cluster: other rows
        self.setAccessibleDescription(
            f"{nodes} node(s) × {gpus_per_node} GPU(s); TP {layout.tp}, PP {layout.pp}, DP {layout.dp}, "
            f"CP {layout.cp}, EP {layout.ep}; {layout.gpus} GPU(s) used")
        self.update()

    @property
    def aggregated(self) -> bool:
        return self.gpus_per_node * self.nodes > DETAIL_LIMIT

    def _grid(self, count: int, w: float, h: float) -> tuple[int, int]:
        """Columns and rows that fit ``count`` boxes into w×h with boxes near square."""
        best = (count, 1)
        best_size = 0.0
        for cols in range(1, count + 1):
            rows = math.ceil(count / cols)
            size = min(w / cols, h / rows)
            if size > best_size:
                best, best_size = (cols, rows), size
        return best

    def paintEvent(self, event) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        self._boxes = []
        text_colour = self.palette().windowText().color()
        w, h = self.width() - 4, self.height() - 4
        if self.aggregated:
            self._paint_nodes_aggregated(p, w, h)
            return
        crossing = crossing_groups(self.layout_, self.gpus_per_node)
        node_cols, _node_rows, g_cols, g_rows, box = self._tiles(w, h)
        nw, nh = g_cols * box + 8, g_rows * box + 8
        for n in range(self.nodes):
            nx, ny = 2 + (n % node_cols) * nw, 2 + (n // node_cols) * nh
            p.setPen(QPen(text_colour, 1))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRoundedRect(QRectF(nx + 1, ny + 1, nw - 2, nh - 2), 4, 4)
            gw, gh = (nw - 8) / g_cols, (nh - 8) / g_rows
            for g in range(self.gpus_per_node):
                rect = QRectF(nx + 4 + (g % g_cols) * gw + 1, ny + 4 + (g // g_cols) * gh + 1, gw - 2, gh - 2)
                r = ranks_of(n * self.gpus_per_node + g, self.layout_)
                colour = QColor("#9e9e9e") if r is None else stage_colour(r.pp, r.tp, self.layout_.tp)
                p.fillRect(rect, colour)
                if r is not None and crossing:
                    p.setPen(QPen(QColor(CROSS_COLOURS[crossing[0]]), 3))
                    p.setBrush(Qt.BrushStyle.NoBrush)
                    p.drawRect(rect.adjusted(1.5, 1.5, -1.5, -1.5))
                self._boxes.append((rect, n, g))
                if r is not None and rect.width() > 26 and rect.height() > 14:
                    p.setPen(QColor("#000000"))
                    p.drawText(rect, Qt.AlignmentFlag.AlignCenter, f"{r.rank}")

    def _paint_nodes_aggregated(self, p: QPainter, w: float, h: float) -> None:
        cols, rows = self._grid(self.nodes, w, h)
        bw, bh = w / cols, h / rows
        for n in range(self.nodes):
            rect = QRectF(2 + (n % cols) * bw, 2 + (n // cols) * bh, max(bw - 1, 1), max(bh - 1, 1))
            r = ranks_of(n * self.gpus_per_node, self.layout_)
            p.fillRect(rect, QColor("#9e9e9e") if r is None else stage_colour(r.pp))
            self._boxes.append((rect, n, -1))

    def describe_at(self, node: int, gpu: int) -> str:
        if gpu < 0:
            first = node * self.gpus_per_node
            r = ranks_of(first, self.layout_)
            where = "idle" if r is None else f"pipeline stage {r.pp}"
            return f"node {node}: GPUs {first}–{first + self.gpus_per_node - 1} ({where})"
        rank = node * self.gpus_per_node + gpu
        r = ranks_of(rank, self.layout_)
        if r is None:
            return f"node {node}, GPU {gpu} (rank {rank}): idle, the layout uses {self.layout_.gpus} GPUs"
        ep = self.layout_.ep
        text = (f"node {node}, GPU {gpu}: rank {rank}\n"
                f"tensor {r.tp}/{self.layout_.tp} · context {r.cp}/{self.layout_.cp} · "
                f"data {r.dp}/{self.layout_.dp}" + (f" · expert {r.dp % ep}/{ep}" if ep > 1 else "")
                + f" · pipeline stage {r.pp}/{self.layout_.pp}")
        for kind in crossing_groups(self.layout_, self.gpus_per_node):
            size = self.layout_.tp if kind == "tp" else self.layout_.cp
            text += (f"\n{kind.upper()} group of {size} spans nodes: its collectives run over the network, "
                     "not NVLink")
        if r.pp < len(self.stage_memory_text):
            return text + f"\nmemory: {self.stage_memory_text[r.pp]} (this GPU's pipeline stage)"
        return text + (f"\nmemory: {self.memory_text}" if self.memory_text else "")

    def mouseMoveEvent(self, event) -> None:
        pos = event.position()
        for rect, node, gpu in self._boxes:
            if rect.contains(pos):
                QToolTip.showText(event.globalPosition().toPoint(), self.describe_at(node, gpu), self)
                return
        QToolTip.hideText()
