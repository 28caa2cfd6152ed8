#!/usr/bin/env bash
# Installs llmplan's desktop entry, *.llmplan MIME type and icons for the current user, so that
# double-clicking a .llmplan file opens it in the app.   Usage: install-desktop.sh [EXECUTABLE]
# EXECUTABLE defaults to the PyInstaller bundle (dist/llmplan/llmplan) if built, else .venv/bin/llmplan.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
appid=io.github.llmplan.LLMPlan
exe="${1:-}"
if [ -z "$exe" ]; then
  if [ -x "$root/dist/llmplan/llmplan" ]; then exe="$root/dist/llmplan/llmplan"; else exe="$root/.venv/bin/llmplan"; fi
fi
[ -x "$exe" ] || { echo "install-desktop: $exe is not an executable; run 'make dist' or 'make setup' first" >&2; exit 1; }
data="${XDG_DATA_HOME:-$HOME/.local/share}"
mkdir -p "$data/applications" "$data/mime/packages" "$data/metainfo"
sed "s|@EXEC@|\"$exe\"|" "$here/$appid.desktop.in" > "$data/applications/$appid.desktop"
cp "$here/$appid.mime.xml" "$data/mime/packages/$appid.xml"
cp "$here/$appid.metainfo.xml" "$data/metainfo/$appid.metainfo.xml"
for size in 16 24 32 48 64 128 256 512; do
  for kind in apps mimetypes; do
    mkdir -p "$data/icons/hicolor/${size}x${size}/$kind"
  done
  cp "$root/resources/appicon/llmplan-$size.png" "$data/icons/hicolor/${size}x${size}/apps/$appid.png"
  cp "$root/resources/appicon/llmplan-$size.png" "$data/icons/hicolor/${size}x${size}/mimetypes/application-x-llmplan.png"
done
mkdir -p "$data/icons/hicolor/scalable/apps"
cp "$root/resources/appicon/llmplan.svg" "$data/icons/hicolor/scalable/apps/$appid.svg"
command -v update-mime-database >/dev/null && update-mime-database "$data/mime" || echo "note: update-mime-database not found (package shared-mime-info)"
command -v update-desktop-database >/dev/null && update-desktop-database "$data/applications" || true
command -v gtk-update-icon-cache >/dev/null && gtk-update-icon-cache -q -t "$data/icons/hicolor" || true
command -v xdg-mime >/dev/null && xdg-mime default "$appid.desktop" application/x-llmplan || true
echo "installed $appid for $(id -un): Exec=$exe"
