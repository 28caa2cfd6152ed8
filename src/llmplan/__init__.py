"""llmplan: what hardware a large language model needs, and whether it fits.

The public surface is small on purpose: the Qt-free engine lives in ``llmplan.core``
(pure functions over frozen specs), file and catalog access in ``llmplan.io`` and
``llmplan.catalog``, local hardware detection in ``llmplan.hw``, and the two front
ends in ``llmplan.cli`` and ``llmplan.gui``.
"""

__version__ = "0.1.0"
