#!/usr/bin/env bash
# `make dist-check` after `make dist`: installs the desktop tools the check asks (where apt-get
# exists and they are missing), then runs scripts/dist_check.py on the packed bundle.
# Extra arguments go to dist_check.py, e.g. --chroot /path/to/bare-debian-root.
set -euo pipefail
cd "$(dirname "$0")/.."
need=""
for pair in update-mime-database:shared-mime-info desktop-file-validate:desktop-file-utils \
            appstreamcli:appstream xdg-mime:xdg-utils gio:libglib2.0-bin xvfb-run:xvfb xauth:xauth; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || need="$need ${pair#*:}"
done
if [ -n "$need" ] && command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "dist-check: installing$need"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends $need >/dev/null
fi
exec .venv/bin/python scripts/dist_check.py "$@"
