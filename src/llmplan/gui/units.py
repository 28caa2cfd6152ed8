"""How numbers are shown to people (DESIGN.md §2): the core works in SI base units,
the GUI labels everything. Memory in GiB by default (GB on request), bandwidth in
GB/s, FLOP/s with SI prefixes. One place, so every panel formats alike.
"""

from __future__ import annotations

from llmplan.core.explain import Figure

GIB = 1024**3
GB = 1e9


class MemoryUnit:
    """The user's memory unit preference: 'GiB' (binary) or 'GB' (decimal)."""

    def __init__(self, name: str = "GiB") -> None:
        self.name = name if name in ("GiB", "GB") else "GiB"

    @property
    def divisor(self) -> float:
        return GIB if self.name == "GiB" else GB

    def value(self, n_bytes: float) -> float:
        return n_bytes / self.divisor

    def fmt(self, n_bytes: float, digits: int = 1) -> str:
        return f"{self.value(n_bytes):,.{digits}f} {self.name}"


def si(value: float, unit: str, digits: int = 3) -> str:
    """1.23e15 FLOP/s -> '1.23 PFLOP/s'."""
    for factor, prefix in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"


def duration(seconds: float) -> str:
    """Seconds in the largest sensible unit: '350 ms', '4.2 h', '12.5 days'."""
    s = abs(seconds)
    if s < 1e-3:
        return f"{seconds * 1e6:.3g} µs"
    if s < 1:
        return f"{seconds * 1e3:.3g} ms"
    if s < 120:
        return f"{seconds:.3g} s"
    if s < 7200:
        return f"{seconds / 60:.3g} min"
    if s < 3 * 86400:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 86400:,.1f} days"


def fmt_figure(fig: Figure, mem: MemoryUnit) -> str:
    """A Figure in the unit a person expects for its kind."""
    v, u = fig.value, fig.unit
    if u == "B":
        return mem.fmt(v, 2)
    if u == "s":
        return duration(v)
    if u == "B/s":
        return f"{v / 1e9:,.1f} GB/s"
    if u == "1":
        return f"{v * 100:.1f} %" if 0 <= v <= 1.5 else f"{v:.3g}"
    if u == "USD":
        return f"${v:,.2f}"
    if u in ("FLOP", "FLOP/s"):
        return si(v, u)
    if u == "params":
        return si(v, "", 4).strip()
    if u == "tokens/s":
        return f"{v:,.0f} tokens/s" if v >= 100 else f"{v:.3g} tokens/s"
    return f"{v:,.4g} {u}".strip()


def params_text(n: int) -> str:
    """8030261248 -> '8.03 B' (model sizes as people say them)."""
    if n >= 1e12:
        return f"{n / 1e12:.3g} T"
    if n >= 1e9:
        return f"{n / 1e9:.3g} B"
    return f"{n / 1e6:.3g} M"
