"""Test-wide setup: Qt offscreen before any QApplication exists (TOOLCHAIN.md gotcha 1), and a
private llmplan data folder, so no test reads (or writes) the developer's own user catalog,
calibration or settings. Tests that need a particular folder still set LLMPLAN_DATA_DIR themselves."""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYTEST_QT_API", "pyside6")
# No test reaches the real Hugging Face Hub: an ORG/NAME that is not a catalog id (a fuzzed argument, a
# typo) is looked up on the Hub, so the whole suite runs offline; the fake_hub fixture lifts it.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
if "LLMPLAN_DATA_DIR" not in os.environ:
    _data_dir = tempfile.mkdtemp(prefix="llmplan-test-data-")
    os.environ["LLMPLAN_DATA_DIR"] = _data_dir
    atexit.register(shutil.rmtree, _data_dir, True)

import gc

import pytest

from tests.fake_hub import fake_hub  # noqa: F401  (fixture: a local fake Hugging Face Hub, tests/fake_hub.py)


@pytest.fixture(autouse=True)
def _garbage_collected_on_the_main_thread():
    """Once a window has switched Python's automatic collection off (llmplan.gui.main_thread_gc: a
    collection in a worker thread would destroy widgets there), tests without an event loop for its
    timer still get the collections that are due, on this, the main thread."""
    yield
    if not gc.isenabled():
        from llmplan.gui.main_thread_gc import collect_due

        collect_due()
