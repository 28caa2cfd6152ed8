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

    def fmt_any(self, n_bytes: float) -> str:
        """Sizes of every scale in this unit family: '37.46 GiB', '160 MiB', '128 KiB', '0 B'
        (a KV cache per token in GiB would read '0.00')."""
        if abs(n_bytes) >= 0.1 * self.divisor or n_bytes == 0:
            return self.fmt(n_bytes, 2) if n_bytes else "0 B"
        step = 1024 if self.name == "GiB" else 1000
        for power, name in ((2, "MiB" if step == 1024 else "MB"), (1, "KiB" if step == 1024 else "kB")):
            if abs(n_bytes) >= 0.1 * step**power:
                return f"{n_bytes / step**power:,.3g} {name}"
        return f"{n_bytes:,.0f} B"


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
    if s < 2 * 365.25 * 86400:
        return f"{seconds / 86400:,.1f} days"
    return f"{seconds / (365.25 * 86400):,.1f} years"


def energy(kwh: float) -> str:
    """kWh in the unit a person reads at a glance: '1.66 kWh', '25.0 MWh', '47.7 GWh'."""
    for factor, unit in ((1e6, "GWh"), (1e3, "MWh")):
        if abs(kwh) >= factor:
            return f"{kwh / factor:,.3g} {unit}" if abs(kwh) < 1000 * factor else f"{kwh / factor:,.0f} {unit}"
    return f"{kwh:.3g} kWh"


def mass_co2(kg: float) -> str:
    """'0.647 kg CO2', '9.77 t CO2', '18,614 t CO2'."""
    if abs(kg) >= 1000:
        t = kg / 1000
        return f"{t:,.3g} t CO₂" if t < 1000 else f"{t:,.0f} t CO₂"
    return f"{kg:.3g} kg CO₂"


def fmt_figure(fig: Figure, mem: MemoryUnit, style: str = "") -> str:
    """A Figure in the unit a person expects for its kind. ``style`` overrides the unit's
    default for dimensionless figures: "count" (3.3 interruptions), "load" (a share of a
    capacity, may exceed 100 %)."""
    v, u = fig.value, fig.unit
    if style == "count":
        return f"{v:.2g}" if v < 1 else (f"{v:,.1f}" if v < 1000 else f"{v:,.0f}")
    if style == "load":
        return f"{v * 100:,.1f} %" if v < 10 else f"{v * 100:,.0f} %"
    if u == "B":
        return mem.fmt_any(v)
    if u == "d":
        return duration(v * 86400)
    if u == "s":
        return duration(v)
    if u == "B/s":
        return f"{v / 1e9:,.1f} GB/s" if v >= 1e9 else si(v, "B/s")
    if u == "W":
        return si(v, "W")
    if u == "J":
        return energy(v / 3.6e6)
    if u == "kWh":
        return energy(v)
    if u == "kg":
        return mass_co2(v)
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
    return (f"{v:,.4g} {u}" if abs(v) < 10_000 else f"{v:,.0f} {u}").strip()  # never '2.5e+04'



def params_text(n: int) -> str:
    """8030261248 -> '8.03 B' (model sizes as people say them)."""
    if n >= 1e12:
        return f"{n / 1e12:.3g} T"
    if n >= 1e9:
        return f"{n / 1e9:.3g} B"
    return f"{n / 1e6:.3g} M"
