"""What both frozen executables run; the executable's own name picks the front end.

One Analysis serves both (halving the build time), so the choice is made at run time:
``llmplan-cli`` (a console program on Windows) runs the command-line interface, anything else
the desktop app. Both import paths are visible to PyInstaller's analysis from here.
"""

import sys
from pathlib import Path

if Path(sys.executable).stem.lower() == "llmplan-cli":
    from llmplan.cli import main
else:
    from llmplan.gui.app import main

raise SystemExit(main())
