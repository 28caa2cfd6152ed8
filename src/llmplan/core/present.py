"""Numbers as people read them: one set of rules for the command line, the app and exports.

The core computes in SI base units (bytes, seconds, FLOP, W, kWh, kg, USD; DESIGN.md §2);
this module is the only place that turns them into text, so a figure reads the same in
``llmplan-cli estimate``, in the app's panels and in a Markdown/CSV export (issue 16: the
CLI printed 5,000 s as "1.4 h" while the app said "83.3 min"). Pure and Qt-free.

Memory follows the user's unit preference (``MemoryUnit``: GiB, binary, by default; GB,
decimal, on request); every other quantity has one fixed unit family. Non-finite values
print as "—" (an estimate whose run never finishes must not print "inf days").
"""

from __future__ import annotations

import math

from llmplan.core.explain import Figure

__all__ = [
    "GB", "GIB", "MemoryUnit", "axis_ticks", "count", "duration", "energy", "figure", "gpu_hours", "integer", "load",
    "mass_co2", "money", "one_line", "params", "percent", "quantity", "rate", "si", "tokens_per_s",
]

GIB = 1024**3
GB = 1e9
_YEAR_S = 365.25 * 86400
NOT_A_NUMBER = "—"


def _g(x: float, digits: int = 3) -> str:
    """``digits`` significant figures with thousands separators, never an exponent ('1e+03' -> '1,000')."""
    text = f"{x:,.{digits}g}"
    return f"{x:,.0f}" if "e" in text else text


class MemoryUnit:
    """The user's memory unit preference: 'GiB' (binary) or 'GB' (decimal); anything else means GiB."""

    def __init__(self, name: str = "GiB") -> None:
        self.name = name if name in ("GiB", "GB") else "GiB"

    @classmethod
    def decimal(cls, yes: bool) -> MemoryUnit:
        """The CLI's ``--decimal`` flag as a unit."""
        return cls("GB" if yes else "GiB")

    @property
    def divisor(self) -> float:
        return GIB if self.name == "GiB" else GB

    def value(self, n_bytes: float) -> float:
        return n_bytes / self.divisor

    def fmt(self, n_bytes: float, digits: int = 1) -> str:
        """'42.2 GiB' (digits=1, headlines and bars), '42.17 GiB' (digits=2, tables)."""
        if not math.isfinite(n_bytes):
            return NOT_A_NUMBER
        return f"{self.value(n_bytes):,.{digits}f} {self.name}"

    def fmt_any(self, n_bytes: float) -> str:
        """Sizes of every scale in this unit family, in the largest unit that reaches 1: '37.46 GiB',
        '160 MiB', '128 KiB', '512 B', '0 B' (a KV cache per token in GiB would read '0.00')."""
        if not math.isfinite(n_bytes):
            return NOT_A_NUMBER
        if n_bytes == 0:
            return "0 B"
        if abs(n_bytes) >= self.divisor:
            return self.fmt(n_bytes, 2)
        step = 1024 if self.name == "GiB" else 1000
        for power, name in ((2, "MiB" if step == 1024 else "MB"), (1, "KiB" if step == 1024 else "kB")):
            if abs(n_bytes) >= step**power:
                return f"{_g(n_bytes / step**power)} {name}"
        return f"{n_bytes:,.0f} B"


def si(value: float, unit: str, digits: int = 3) -> str:
    """1.23e15 FLOP/s -> '1.23 PFLOP/s'."""
    if not math.isfinite(value):
        return NOT_A_NUMBER
    for factor, prefix in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{_g(value / factor, digits)} {prefix}{unit}"
    return f"{_g(value, digits)} {unit}"


def duration(seconds: float) -> str:
    """Seconds in the largest sensible unit: '350 ms', '83.3 min', '4.2 h', '12.5 days', '2.2 years'.

    Minutes up to two hours and hours up to three days (a person plans a 90-minute job in minutes and a
    40-hour one in hours); days up to two years; years beyond."""
    if not math.isfinite(seconds):
        return NOT_A_NUMBER
    s = abs(seconds)
    if s == 0:
        return "0 s"
    if s < 1e-3:
        return f"{_g(seconds * 1e6)} µs"
    if s < 1:
        return f"{_g(seconds * 1e3)} ms"
    if s < 120:
        return f"{_g(seconds)} s"
    if s < 7200:
        return f"{_g(seconds / 60)} min"
    if s < 3 * 86400:
        return f"{_g(seconds / 3600)} h"
    if s < 2 * _YEAR_S:
        return f"{seconds / 86400:,.1f} days"
    return f"{seconds / _YEAR_S:,.1f} years"


def percent(fraction: float, digits: int = 1) -> str:
    """0.412 -> '41.2 %' (a share of something; see ``load`` for shares that may exceed 100 %)."""
    if not math.isfinite(fraction):
        return NOT_A_NUMBER
    return f"{fraction * 100:,.{digits}f} %"


def load(fraction: float) -> str:
    """A share of a capacity, which may exceed 100 %: '85.0 %', '1,250 %'."""
    if not math.isfinite(fraction):
        return NOT_A_NUMBER
    return percent(fraction) if fraction < 10 else percent(fraction, 0)


def count(value: float) -> str:
    """A count of things that may be fractional (expected interruptions): '0.33', '3.3', '1,234'."""
    if not math.isfinite(value):
        return NOT_A_NUMBER
    return f"{_g(value, 2)}" if value < 1 else (f"{value:,.1f}" if value < 1000 else f"{value:,.0f}")


def integer(value: float) -> str:
    """A whole count (sequences that fit, tokens): '0', '1', '1,511' (never '100.0 %' or '1.51e+03')."""
    if not math.isfinite(value):
        return NOT_A_NUMBER
    return f"{round(value):,}"


def context_fit(tokens: int, batch: int = 1, every_layer: bool = False, experts: str = "") -> str:
    """The longest context that fits, saying what it assumes (the CLI's table and the app's results say it
    alike): per sequence when several run at once (a batch of 64 leaves each a 64th of the cache); with
    ``every_layer`` (llama.cpp, Ollama: engines that can keep layers in host RAM) every layer on the GPU, so
    a plan that runs with layers in host RAM reads "none", not a bare "0"; ``experts``: the llama.cpp flag that
    keeps routed experts in host RAM for it ("--n-cpu-moe 30", "--cpu-moe"; ``context_fit.longest_context``)."""
    each = f" per sequence, {batch:,} at once" if batch > 1 else ""
    if experts:
        moved = "every routed expert" if experts == "--cpu-moe" else "those layers' routed experts"
        if tokens == 0:
            return f"none, even with {experts} (the weights left on the GPU do not fit)"
        return f"{tokens:,} tokens{each} with {experts} ({moved} in host RAM, the rest on the GPU)"
    if not every_layer:
        return f"{tokens:,} tokens{each}"
    if tokens == 0:
        return "none with every layer on the GPU (the weights alone do not fit)"
    return f"{tokens:,} tokens{each} (every layer on the GPU)"


def experts_in_host(first_layers: int, moe_in_host: int, moe_layers: int, flag: str) -> str:
    """Where llama.cpp keeps an MoE model's routed experts (the CLI's table and the app's results say it alike):
    "experts of 24 layers in host RAM (--n-cpu-moe 24)", "every layer's experts in host RAM (--cpu-moe)", or
    "all on the GPUs"."""
    if not moe_in_host:
        return "all on the GPUs"
    if moe_in_host >= moe_layers:
        return f"every layer's experts in host RAM ({flag})"
    return f"experts of {first_layers:,} layers in host RAM ({flag})"


def experts_figure(f) -> str:
    """``experts_in_host`` from an estimate's ``cpu_moe_layers`` figure (``core.inference``)."""
    n = f.inputs
    return experts_in_host(int(f.value), int(n["moe_layers_in_host"]), int(n["moe_layers"]), str(n["flag"]))


def unified_share(usable: str, total: str, apple: bool) -> str:
    """Why a unified-memory GPU's capacity is less than its RAM (the CLI's table and the app's results say it
    alike): the GPU wires a share of the memory by default (macOS: 2/3 up to 32 GiB, 3/4 above: docs/fit.md),
    which ``sysctl iogpu.wired_limit_mb`` raises on a Mac. ``usable``, ``total``: already formatted."""
    how = " (raise it with sudo sysctl iogpu.wired_limit_mb)" if apple else ""
    return f"the GPU may use {usable} of the {total} by default{how}"


def gpu_hours(hours: float) -> str:
    """GPU-hours as people budget them: '950 GPU-hours', '12.3 k GPU-hours', '11.9 M GPU-hours'."""
    if not math.isfinite(hours):
        return NOT_A_NUMBER
    for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(hours) >= factor:
            return f"{_g(hours / factor)} {prefix} GPU-hours"
    return f"{_g(hours)} GPU-hours"


def axis_ticks(values: list[float], spacing: float) -> list[str]:
    """Tick labels for a linear chart axis: thousands separators and as many decimals as the tick
    spacing needs ('300,000', '2.5', '0.05'), never '300000' or '3e+05'."""
    places = 0 if spacing <= 0 or spacing >= 1 else min(6, math.ceil(-math.log10(spacing) - 1e-9))
    out = []
    for v in values:
        if not math.isfinite(v):
            out.append("")
            continue
        text = f"{v:,.{places}f}"
        out.append("0" if text.lstrip("-").strip("0.,") == "" else text)
    return out


def rate(bytes_per_s: float) -> str:
    """A data rate: '12.5 GB/s' (decimal, as links and drives are sold), '523 MB/s', '1.5 kB/s'."""
    if not math.isfinite(bytes_per_s):
        return NOT_A_NUMBER
    return f"{bytes_per_s / 1e9:,.1f} GB/s" if bytes_per_s >= 1e9 else si(bytes_per_s, "B/s")


def tokens_per_s(value: float) -> str:
    """'12,345 tokens/s' from 100 up, '42.5 tokens/s' below."""
    if not math.isfinite(value):
        return NOT_A_NUMBER
    return f"{value:,.0f} tokens/s" if value >= 100 else f"{_g(value)} tokens/s"


def money(usd: float) -> str:
    """US dollars: whole dollars from $100 ('$1,234,568'), cents below ('$12.34')."""
    if not math.isfinite(usd):
        return NOT_A_NUMBER
    return f"${usd:,.0f}" if abs(usd) >= 100 else f"${usd:,.2f}"


def energy(kwh: float) -> str:
    """kWh in the unit a person reads at a glance: '1.66 kWh', '25 MWh', '47.7 GWh', '1,200 GWh'."""
    if not math.isfinite(kwh):
        return NOT_A_NUMBER
    for factor, unit in ((1e6, "GWh"), (1e3, "MWh")):
        if abs(kwh) >= factor:
            return f"{_g(kwh / factor)} {unit}" if abs(kwh) < 1000 * factor else f"{kwh / factor:,.0f} {unit}"
    return f"{_g(kwh)} kWh"


def mass_co2(kg: float) -> str:
    """'0.647 kg CO₂', '9.77 t CO₂', '18,614 t CO₂'."""
    if not math.isfinite(kg):
        return NOT_A_NUMBER
    if abs(kg) >= 1000:
        t = kg / 1000
        return f"{_g(t)} t CO₂" if t < 1000 else f"{t:,.0f} t CO₂"
    return f"{_g(kg)} kg CO₂"


def params(n: float) -> str:
    """8030261248 -> '8.03 B' (model sizes as people say them)."""
    if n >= 1e12:
        return f"{_g(n / 1e12)} T"
    if n >= 1e9:
        return f"{_g(n / 1e9)} B"
    return f"{_g(n / 1e6)} M"


def figure(fig: Figure, mem: MemoryUnit, style: str = "") -> str:
    """A ``Figure`` in the unit a person expects for its kind. ``style`` overrides the unit's default
    for figures whose unit does not say how to read them: "count" (3.3 interruptions), "int" (1,511
    sequences), "load" (a share of a capacity, may exceed 100 %), "gpu_hours" (11.9 M GPU-hours)."""
    v, u = fig.value, fig.unit
    if style == "count":
        return count(v)
    if style == "int":
        return integer(v)
    if style == "gpu_hours":
        return gpu_hours(v)
    if style == "load":
        return load(v)
    if u == "B":
        return mem.fmt_any(v)
    if u == "d":
        return duration(v * 86400)
    if u == "s":
        return duration(v)
    if u == "B/s":
        return rate(v)
    if u == "W":
        return si(v, "W")
    if u == "J":
        return energy(v / 3.6e6)
    if u == "kWh":
        return energy(v)
    if u == "kg":
        return mass_co2(v)
    if u == "1":
        return percent(v) if 0 <= v <= 1.5 else f"{_g(v)}"
    if u == "USD":
        return money(v)
    if u in ("FLOP", "FLOP/s"):
        return si(v, u)
    if u == "params":
        return si(v, "", 4).strip()
    if u == "tokens/s":
        return tokens_per_s(v)
    if not math.isfinite(v):
        return NOT_A_NUMBER
    return (f"{v:,.4g} {u}" if abs(v) < 10_000 else f"{v:,.0f} {u}").strip()  # never '2.5e+04'


def quantity(value: float, unit: str, mem: MemoryUnit | None = None) -> str:
    """One input of a figure's explanation in its unit (``core.input_units``), at a readable scale: bytes in
    GiB/MiB (or the user's GB), rates in GB/s, FLOP/s with a prefix ("989 TFLOP/s"), times as "12.3 ms",
    counts with separators; an unknown unit ("") a plain number. Never an exponent ("2.57572e+10")."""
    if not math.isfinite(value):
        return NOT_A_NUMBER
    if unit == "B":
        return (mem or MemoryUnit()).fmt_any(value)
    if unit == "B/s":
        return rate(value) if value >= 1e6 else f"{_g(value)} B/s"
    if unit in ("FLOP", "FLOP/s", "W"):
        return si(value, unit)
    if unit == "s":
        return duration(value)
    if unit == "days":
        return duration(value * 86400)
    if unit == "tokens/s":
        return tokens_per_s(value)
    if unit == "tokens":
        return f"{integer(value)} tokens" if value == int(value) else f"{_g(value)} tokens"
    if unit == "count":
        return integer(value) if value == int(value) else _g(value, 4)
    if unit == "share":
        return percent(value)
    if unit == "factor":
        return f"{_g(value)}×"
    if unit == "params":
        return params(value) if value >= 1e6 else integer(value)
    if unit == "GPU-hours":
        return gpu_hours(value)
    if unit == "USD":
        return money(value)
    if unit in ("USD/h", "USD/kWh"):
        return f"{money(value)}/{unit.split('/')[1]}"
    if unit == "J":
        return energy(value / 3.6e6)
    if unit == "kWh":
        return energy(value)
    number = integer(value) if value == int(value) and abs(value) < 1e15 else _g(value, 4)
    return f"{number} {unit}" if unit else number


def one_line(text: object, limit: int | None = None) -> str:
    """Text from a file, a driver or a user (a plan, model or GPU name) made safe for one line of a terminal
    or a single-line label: every character that is not printable becomes a visible Python-style escape
    (ESC of a terminal colour code -> ``\\x1b``, CR/LF -> ``\\r``/``\\n``, NUL, C1 controls, bidi overrides
    -> ``\\u202e``, U+2028, lone surrogates), so the name can neither recolour or retitle a terminal nor split or
    reverse a label (issue 17). ``limit`` caps the length of the result ("…" marks a cut)."""
    s = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
    return s if limit is None or len(s) <= limit else s[: max(limit - 1, 0)] + "…"
