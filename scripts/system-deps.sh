#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages gpuwatch needs that this machine lacks.
#   scripts/system-deps.sh          what the app needs (Qt's libraries)
#   scripts/system-deps.sh test     plus Xvfb, D-Bus and poppler for the tests
# Already-installed packages are skipped, so a second run costs only a dpkg query.
set -euo pipefail

runtime=(python3-venv libegl1 libgl1 libx11-6 libdbus-1-3 libfontconfig1 libfreetype6
         libglib2.0-0 libxkbcommon0 libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4
         libxcb-image0 libxcb-keysyms1 libxcb-render-util0 libxcb-render0 libxcb-shape0
         libxcb-util1 libxcb-xkb1 libxcb-randr0 libxcb-xfixes0 libxcb-sync1 libxcb-xinerama0
         fonts-dejavu-core)
testing=(xvfb xauth dbus dbus-x11 poppler-utils)

wanted=("${runtime[@]}")
[ "${1:-}" = "test" ] && wanted+=("${testing[@]}")

command -v dpkg-query >/dev/null || { echo "system-deps: not a Debian system; install Qt's X11/EGL libraries yourself." >&2; exit 0; }

missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "system-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
