"""``python -m llmplan.gui`` starts the desktop app."""

from llmplan.gui.app import main

raise SystemExit(main())
