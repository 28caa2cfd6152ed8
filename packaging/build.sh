#!/usr/bin/env bash
# Builds the desktop bundle with PyInstaller (called by `make dist`; expects .venv with
# requirements-dev.txt and requirements-dist.txt installed):
#   dist/llmplan/                               the one-folder app: llmplan, llmplan-cli, _internal/, desktop/
#   dist/llmplan-VERSION-linux-ARCH.tar.gz      the same folder, packed as llmplan-VERSION/ (Linux only)
#   dist/llmplan-VERSION-py3-none-any.whl       the wheel, for `pip install 'llmplan-....whl[gui]'`
# On macOS and Windows run `pyinstaller --noconfirm packaging/llmplan.spec` instead (see docs/install.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
version="$($PY packaging/bundle_meta.py)"
arch="$(uname -m)"
t0=$(date +%s.%N)
rm -rf dist/llmplan
"$PY" -m PyInstaller --noconfirm --log-level WARN --distpath dist --workpath build/pyinstaller packaging/llmplan.spec
t1=$(date +%s.%N)

# Desktop integration travels with the bundle: llmplan/desktop/install-desktop.sh installs it.
mkdir -p dist/llmplan/desktop
cp packaging/linux/install-desktop.sh packaging/linux/io.github.llmplan.LLMPlan.desktop.in \
   packaging/linux/io.github.llmplan.LLMPlan.mime.xml packaging/linux/io.github.llmplan.LLMPlan.metainfo.xml \
   dist/llmplan/desktop/

tarball="dist/llmplan-$version-linux-$arch.tar.gz"
rm -f "$tarball"
tar -C dist --transform "s,^llmplan,llmplan-$version," -czf "$tarball" llmplan
t2=$(date +%s.%N)
rm -f dist/llmplan-*.whl
"$PY" -m pip wheel -q --disable-pip-version-check --no-deps -w dist . 2>&1 | grep -v "^WARNING: Location" || true
ls dist/llmplan-"$version"-py3-none-any.whl >/dev/null
printf 'built dist/llmplan (%s) in %.1f s; packed %s (%s) in %.1f s\n' \
  "$(du -sh dist/llmplan | cut -f1)" "$(awk "BEGIN{print $t1 - $t0}")" "$tarball" "$(du -h "$tarball" | cut -f1)" "$(awk "BEGIN{print $t2 - $t1}")"
echo "built $(ls dist/llmplan-"$version"-py3-none-any.whl) ($(du -h dist/llmplan-"$version"-py3-none-any.whl | cut -f1))"
