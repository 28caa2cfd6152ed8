"""How long loading the whole model catalog takes (target: well under 0.5 s).

Prints cold load (read + validate every JSON file + build every ModelSpec), the cached
second call, and counting the parameters of every model.
Run: .venv/bin/python benchmarks/bench_catalog_models.py
"""

from __future__ import annotations

import time

from llmplan.catalog.models import load_model_catalog
from llmplan.core.params import count_params


def main() -> None:
    t0 = time.perf_counter()
    catalog = load_model_catalog(refresh=True)
    t1 = time.perf_counter()
    load_model_catalog()
    t2 = time.perf_counter()
    for e in catalog.entries:
        count_params(e.spec)
    t3 = time.perf_counter()
    print(f"models: {len(catalog)}  problems: {len(catalog.problems)}")
    print(f"cold load (parse + validate + build specs): {(t1 - t0) * 1e3:.1f} ms")
    print(f"cached load:                                {(t2 - t1) * 1e6:.1f} us")
    print(f"count_params for every model:               {(t3 - t2) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
