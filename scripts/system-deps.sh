#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages gpuwatch needs that this machine lacks.
#   scripts/system-deps.sh          what the app needs (Qt's libraries)
#   scripts/system-deps.sh test     plus what the tests need (Xvfb, D-Bus, poppler, gcc, openbox)
# Already-installed packages are skipped, so a second run costs only a dpkg query.
# When another apt or dpkg holds the package lock (an unattended upgrade, say), it waits
# for it, saying so, instead of failing.
set -euo pipefail

runtime=(python3-venv libegl1 libgl1 libx11-6 libdbus-1-3 libfontconfig1 libfreetype6
         libglib2.0-0 libxkbcommon0 libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4
         libxcb-image0 libxcb-keysyms1 libxcb-render-util0 libxcb-render0 libxcb-shape0
         libxcb-util1 libxcb-xkb1 libxcb-randr0 libxcb-xfixes0 libxcb-sync1 libxcb-xinerama0
         fonts-dejavu-core)
testing=(xvfb xauth dbus dbus-x11 poppler-utils gcc libc6-dev prometheus
         desktop-file-utils appstream libglib2.0-bin zsh fish openbox xdotool x11-utils)

why_runtime="Qt's window-system, OpenGL, D-Bus and font libraries, which the PySide6 wheel does not ship"
why_testing="Xvfb for real windows, a private D-Bus for the tray tests, poppler to read the PDF reports, gcc to build the stand-in NVIDIA driver library the telemetry tests run on, a Prometheus server for the exporter tests, the desktop-file and AppStream validators, GLib's gio to launch the installed desktop entry, zsh and fish to check the completion scripts, and openbox, xdotool and x11-utils for a window managed as on a desktop"

LOCK_WAIT_TRIES=${LOCK_WAIT_TRIES:-20}     # 20 × 30 s: ten minutes at the most
LOCK_WAIT_S=${LOCK_WAIT_S:-30}

wanted=("${runtime[@]}")
[ "${1:-}" = "test" ] && wanted+=("${testing[@]}")

command -v dpkg-query >/dev/null || { echo "system-deps: not a Debian system; install Qt's X11/EGL libraries yourself." >&2; exit 0; }

missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "system-deps: installing ${missing[*]}"
echo "system-deps:   the app needs $why_runtime."
[ "${1:-}" = "test" ] && echo "system-deps:   the tests also need $why_testing."
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive

# apt-get with the package lock awaited: apt's own timeout for the dpkg lock, and a retry
# loop for the lists lock of `update`, which that timeout does not cover.
apt_get() {
  local try=1 out
  while true; do
    if out=$($sudo apt-get -o DPkg::Lock::Timeout="$LOCK_WAIT_S" "$@" 2>&1); then
      return 0
    fi
    if [ "$try" -lt "$LOCK_WAIT_TRIES" ] \
        && grep -qiE "could not get lock|unable to acquire|is another process using it" <<<"$out"; then
      echo "system-deps: another apt or dpkg is running and holds the package lock;" \
           "waiting for it to finish (try $try of $LOCK_WAIT_TRIES, ${LOCK_WAIT_S} s apart)"
      try=$((try + 1))
      sleep "$LOCK_WAIT_S"
      continue
    fi
    echo "$out" >&2
    echo "system-deps: 'apt-get $*' failed (above)." >&2
    return 1
  done
}

apt_get update -qq
apt_get install -y -qq --no-install-recommends "${missing[@]}"
