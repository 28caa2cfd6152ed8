"""llmplan: what hardware a large language model needs, and whether it fits.

Layers, bottom to top (docs/architecture.md; import-linter enforces them): ``core`` (the
Qt-free, I/O-free engine), ``formats`` (config.json/GGUF/safetensors readers), ``catalog``,
``hw`` (detection, calibration), ``plan`` (plan files, resolve, evaluate), ``fit`` (does a
plan fit this machine), and the two front ends ``cli`` and ``gui``.
"""

__version__ = "0.1.0"
