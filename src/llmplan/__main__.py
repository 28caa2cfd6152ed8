"""``python -m llmplan`` is the command-line interface (same as ``llmplan-cli``)."""

from llmplan.cli import main

raise SystemExit(main())
