"""A preallocated ring buffer of samples (numpy), so a day of watching uses the memory of the first minute.

Each ring holds ``capacity`` rows of ``width`` float64 columns plus their timestamps. Appending
overwrites the oldest row once full; nothing is ever allocated after construction except the
copies that `window` hands out to a reader (the GUI, the diagnosis), which the reader owns.
"""

from __future__ import annotations

import numpy as np


class Ring:
    """Fixed-size time series: ``append(t, row)``, ``window(seconds)`` returns (t, values) oldest first."""

    def __init__(self, capacity: int, width: int):
        if capacity < 2 or width < 1:
            raise ValueError("a ring needs at least 2 rows and 1 column")
        self.capacity, self.width = int(capacity), int(width)
        self._t = np.full(self.capacity, np.nan)
        self._v = np.full((self.capacity, self.width), np.nan)
        self._written = 0  # rows ever appended

    def __len__(self) -> int:
        return min(self._written, self.capacity)

    @property
    def nbytes(self) -> int:
        return self._t.nbytes + self._v.nbytes

    def append(self, t: float, row: np.ndarray) -> None:
        i = self._written % self.capacity
        self._t[i] = t
        self._v[i] = row
        self._written += 1

    def last_time(self) -> float:
        return float(self._t[(self._written - 1) % self.capacity]) if self._written else float("nan")

    def latest(self) -> np.ndarray:
        """The newest row (a copy), all NaN when empty."""
        if not self._written:
            return np.full(self.width, np.nan)
        return self._v[(self._written - 1) % self.capacity].copy()

    def _tail_count(self, seconds: float) -> int:
        """How many of the newest rows lie within ``seconds`` of the newest (binary search, no copy)."""
        n, end = len(self), self._written % self.capacity
        threshold = self.last_time() - seconds
        if n < self.capacity:
            return n - int(np.searchsorted(self._t[:n], threshold, side="left"))
        newer, older = self._t[:end], self._t[end:]  # both sorted; older rows precede newer ones
        count = end - int(np.searchsorted(newer, threshold, side="left"))
        if count == end:
            count += len(older) - int(np.searchsorted(older, threshold, side="left"))
        return count

    def window(self, seconds: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the rows within ``seconds`` of the newest (all rows when None), oldest first."""
        n = len(self)
        k = n if seconds is None else min(n, self._tail_count(seconds))
        if k == 0:
            return np.empty(0), np.empty((0, self.width))
        idx = (self._written - k + np.arange(k)) % self.capacity
        return self._t[idx], self._v[idx]
