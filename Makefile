# The two commands a person needs: `make run` starts the app, `make test` runs every check.
# Both set up the machine first (system libraries, .venv, pinned packages) via scripts/bootstrap.sh.
PY := .venv/bin/python
export PYTHONFAULTHANDLER := 1

.PHONY: run test setup lint bench clean readme dist dist-check install-desktop fuzz

# Development set-up (make test, lint, bench, ...): also the desktop-file validators the packaging tests run.
setup:
	XCB=$${XCB:-0} TEST_TOOLS=1 ./scripts/bootstrap.sh

# With no display, the window is drawn offscreen so `make run` never aborts on a headless box.
run:
	XCB=1 ./scripts/bootstrap.sh
	@if [ -z "$${DISPLAY:-}$${WAYLAND_DISPLAY:-}" ] && [ -z "$${QT_QPA_PLATFORM:-}" ]; then \
	  echo "make run: no display found; starting offscreen (set DISPLAY to see the window)"; \
	  QT_QPA_PLATFORM=offscreen $(PY) -m llmplan.gui $(ARGS); \
	else $(PY) -m llmplan.gui $(ARGS); fi

lint: setup
	.venv/bin/lint-imports
	.venv/bin/ruff check src tests benchmarks

# pytest exits 5 when it collected nothing: that is a failure here, never a silent pass.
test: lint
	@export QT_QPA_PLATFORM=$${QT_QPA_PLATFORM:-offscreen} PYTEST_QT_API=pyside6; \
	export XDG_RUNTIME_DIR=$${XDG_RUNTIME_DIR:-$$(mktemp -d)}; chmod 700 "$$XDG_RUNTIME_DIR"; \
	timeout 3000 $(PY) -m pytest -q --timeout=120 --timeout-method=thread $(ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "ERROR: pytest collected no tests" >&2; exit 1; fi; exit $$rc

bench: setup
	$(PY) benchmarks/run.py

# Issue 17's hostile-input families, >= 10,000 inputs each through every parser they apply to (about 25 min
# on 2 cores; ARGS="--n 1000" for a quicker look), then 100 SIGKILLs during autosaves. Exits non-zero on any
# traceback, broken rule, input over 10 s or family over 1 GiB RSS. `make test` runs a few of each.
fuzz: setup
	QT_QPA_PLATFORM=$${QT_QPA_PLATFORM:-offscreen} $(PY) scripts/fuzz.py $(ARGS)
	QT_QPA_PLATFORM=$${QT_QPA_PLATFORM:-offscreen} PYTEST_QT_API=pyside6 LLMPLAN_AUTOSAVE_KILLS=100 \
	  $(PY) -m pytest -q -s -p no:cacheprovider --timeout=1800 tests/trust/test_autosave_kills.py

# The desktop bundle (PyInstaller, about a minute): dist/llmplan/ and dist/llmplan-VERSION-linux-ARCH.tar.gz.
# XCB=1: the X11 libraries Qt's xcb plugin links must be on the build machine to be copied into the bundle.
dist:
	XCB=1 ./scripts/bootstrap.sh
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-dist.txt
	./packaging/build.sh

# Builds the bundle, then starts it from the packed tarball in a clean environment and checks what a
# user sees (verdicts, screenshot, catalog, desktop entry). Too slow for `make test`: run it before a release.
dist-check: dist
	./scripts/dist_check.sh $(ARGS)

# Registers llmplan for this user: menu entry, icon, and *.llmplan files open in it on double-click.
# Uses the bundle if `make dist` ran, else the .venv's llmplan; EXE=/path/to/llmplan picks another.
install-desktop:
	@if [ ! -x dist/llmplan/llmplan ] && [ -z "$(EXE)" ]; then XCB=1 ./scripts/bootstrap.sh; fi
	./packaging/linux/install-desktop.sh $(EXE)

clean:
	rm -rf .venv build dist .ruff_cache

# Re-run the CLI sessions shown in README.md and docs/*.md (their output is pasted between markers).
readme: setup
	$(PY) scripts/readme_sessions.py $(if $(BENCH),--bench,)

# docs/accuracy.md: every published figure the tests reproduce, generated (never typed) from tests/reference_figures.py.
.PHONY: accuracy
accuracy: setup
	$(PY) scripts/accuracy_report.py --out docs/accuracy.md

# The PNGs in docs/screenshots (README, docs/gui.md): the window at 1,024×700, 1,440×900 and 2,560×1,440 in
# light and dark, then each tab, pane and chart. Drawn by the real xcb platform under Xvfb when it is there,
# else by Qt's offscreen platform (the same widgets and fonts; no window-manager frame in either).
.PHONY: screenshots
screenshots:
	XCB=1 XVFB=1 ./scripts/bootstrap.sh
	@if command -v xvfb-run >/dev/null; then \
	  QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 2560x1440x24" $(PY) scripts/screenshots.py; \
	else echo "make screenshots: no xvfb-run; drawing offscreen"; QT_QPA_PLATFORM=offscreen $(PY) scripts/screenshots.py; fi
