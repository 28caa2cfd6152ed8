"""The fit tests reuse the hardware recordings and fakes of tests/hw (``hw_fixtures``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hw"))
