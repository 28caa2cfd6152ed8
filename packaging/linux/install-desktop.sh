#!/usr/bin/env bash
# Installs llmplan's desktop entry, the *.llmplan MIME type, the icons and the AppStream metainfo
# for the current user (under $XDG_DATA_HOME, default ~/.local/share), so that double-clicking a
# .llmplan file in a file manager opens it in llmplan. Nothing outside the home folder is touched.
#
#   install-desktop.sh [EXECUTABLE]      install (or update) for this user
#   install-desktop.sh --uninstall       remove what this script installed
#
# EXECUTABLE defaults to: the bundle this script sits in (llmplan/desktop/install-desktop.sh ->
# llmplan/llmplan); in a source checkout dist/llmplan/llmplan if built, else .venv/bin/llmplan.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
appid=io.github.llmplan.LLMPlan
data="${XDG_DATA_HOME:-$HOME/.local/share}"
sizes="16 24 32 48 64 128 256 512"

refresh_caches() {
  if command -v update-mime-database >/dev/null; then
    update-mime-database "$data/mime"
  else
    echo "note: update-mime-database not found (install shared-mime-info); .llmplan files are not recognised until it runs" >&2
  fi
  if command -v update-desktop-database >/dev/null; then update-desktop-database -q "$data/applications" || true; fi
  # Refresh an icon cache only where one exists: without a cache, GTK reads the folders directly,
  # but a stale cache hides new icons.
  if [ -f "$data/icons/hicolor/icon-theme.cache" ] && command -v gtk-update-icon-cache >/dev/null; then
    gtk-update-icon-cache -q -t -f "$data/icons/hicolor" || true
  fi
}

if [ "${1:-}" = "--uninstall" ]; then
  rm -f "$data/applications/$appid.desktop" "$data/mime/packages/$appid.xml" "$data/metainfo/$appid.metainfo.xml"
  for size in $sizes; do
    rm -f "$data/icons/hicolor/${size}x${size}/apps/$appid.png" \
          "$data/icons/hicolor/${size}x${size}/mimetypes/application-x-llmplan.png"
  done
  rm -f "$data/icons/hicolor/scalable/apps/$appid.svg" "$data/icons/hicolor/scalable/mimetypes/application-x-llmplan.svg"
  [ -d "$data/mime" ] && refresh_caches
  echo "removed $appid for $(id -un)"
  exit 0
fi

# Where the icons are: inside a bundle (desktop/ beside _internal/), or in a source checkout.
if [ -d "$here/../_internal/llmplan/resources/appicon" ]; then
  icons="$here/../_internal/llmplan/resources/appicon"
  default_exe="$here/../llmplan"
else
  root="$(cd "$here/../.." && pwd)"
  icons="$root/resources/appicon"
  if [ -x "$root/dist/llmplan/llmplan" ]; then default_exe="$root/dist/llmplan/llmplan"; else default_exe="$root/.venv/bin/llmplan"; fi
fi
exe="${1:-$default_exe}"
[ -f "$exe" ] && [ -x "$exe" ] || {
  echo "install-desktop: $exe is not an executable file; run 'make dist' (bundle) or 'make setup' (venv) first, or pass the path of llmplan" >&2
  exit 1
}
exe="$(cd "$(dirname "$exe")" && pwd)/$(basename "$exe")"
case "$exe" in *$'\n'*) echo "install-desktop: the path of llmplan contains a line break; move it" >&2; exit 1 ;; esac
[ -f "$icons/llmplan.svg" ] || { echo "install-desktop: icons not found in $icons" >&2; exit 1; }

# Exec quoting (Desktop Entry Specification, "Exec key"): inside double quotes \ " ` $ take a
# backslash, then every backslash is doubled by the string escape rule, and % is written %%.
exec_arg="\"$(printf '%s' "$exe" | sed -e 's/[\\"`$]/\\&/g' -e 's/\\/\\\\/g' -e 's/%/%%/g')\""
mkdir -p "$data/applications" "$data/mime/packages" "$data/metainfo"
# awk, not sed: the replacement holds backslashes and any character a path may have.
awk -v exec_arg="$exec_arg" '{ i = index($0, "@EXEC@"); if (i) $0 = substr($0, 1, i - 1) exec_arg substr($0, i + 6); print }' \
  "$here/$appid.desktop.in" > "$data/applications/$appid.desktop.tmp"
mv "$data/applications/$appid.desktop.tmp" "$data/applications/$appid.desktop"
cp "$here/$appid.mime.xml" "$data/mime/packages/$appid.xml"
cp "$here/$appid.metainfo.xml" "$data/metainfo/$appid.metainfo.xml"
for size in $sizes; do
  mkdir -p "$data/icons/hicolor/${size}x${size}/apps" "$data/icons/hicolor/${size}x${size}/mimetypes"
  cp "$icons/llmplan-$size.png" "$data/icons/hicolor/${size}x${size}/apps/$appid.png"
  cp "$icons/llmplan-$size.png" "$data/icons/hicolor/${size}x${size}/mimetypes/application-x-llmplan.png"
done
mkdir -p "$data/icons/hicolor/scalable/apps" "$data/icons/hicolor/scalable/mimetypes"
cp "$icons/llmplan.svg" "$data/icons/hicolor/scalable/apps/$appid.svg"
cp "$icons/llmplan.svg" "$data/icons/hicolor/scalable/mimetypes/application-x-llmplan.svg"
refresh_caches
# Make llmplan the default for plans (writes $XDG_CONFIG_HOME/mimeapps.list, the user's own choice file).
if command -v xdg-mime >/dev/null; then xdg-mime default "$appid.desktop" application/x-llmplan || true; fi
echo "installed $appid for $(id -un): Exec=$exec_arg %f"
