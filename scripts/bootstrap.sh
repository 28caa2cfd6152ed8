#!/usr/bin/env bash
# Sets up everything llmplan needs on a fresh Debian/Ubuntu machine, idempotently:
# the system libraries Qt loads (offscreen and, with XCB=1, a real X display), a
# virtual environment in .venv with the pinned tools, and llmplan itself (editable).
# Called by `make run` / `make test`; safe to run again (it only installs what is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive

# Libraries PySide6 dlopens even offscreen (see ../shared/TOOLCHAIN.md).
APT_PKGS="libgl1 libegl1 libxkbcommon0 libfontconfig1 fonts-dejavu-core libglib2.0-0 libdbus-1-3"
if [ "${XCB:-0}" = 1 ]; then
  APT_PKGS="$APT_PKGS libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-render-util0"
  APT_PKGS="$APT_PKGS libxcb-shape0 libxcb-xkb1 libxkbcommon-x11-0"
fi
if [ "${XVFB:-0}" = 1 ]; then
  APT_PKGS="$APT_PKGS xvfb xauth"
fi
# The validators the packaging tests run on the desktop entry and the AppStream metainfo (make test).
if [ "${TEST_TOOLS:-0}" = 1 ]; then
  APT_PKGS="$APT_PKGS desktop-file-utils appstream"
fi

missing=""
if command -v dpkg-query >/dev/null 2>&1; then
  for p in $APT_PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
fi
if ! python3 -c "import ensurepip" >/dev/null 2>&1; then missing="$missing python3-venv"; fi
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  if command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: installing system packages:$missing"
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
  else
    echo "bootstrap: not a Debian/Ubuntu system; please install the equivalents of:$missing" >&2
  fi
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.llmplan-installed
if [ ! -f "$stamp" ] || [ requirements-dev.txt -nt "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements-dev.txt
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -e .
  touch "$stamp"
fi

# llmplan's own bytecode, as pip gives an installed app: where PYTHONDONTWRITEBYTECODE is set (the development
# VMs) every start would otherwise compile every module again, about a fifth of the start-up's CPU time.
# Only changed modules are compiled again; the .pyc files stay in the ignored __pycache__ folders.
.venv/bin/python -m compileall -q src/llmplan
