#!/usr/bin/env bash
# The frozen build's smoke test: the bundle runs without Python or the source tree.
#   packaging/smoke.sh [dist/gpuwatch]
# Runs `scenarios`, `snapshot --demo --json` and a `gui --screenshot` without a display,
# from an empty folder with a throwaway home, and checks what each one produces.
set -euo pipefail
bundle="$(cd "${1:-dist/gpuwatch}" && pwd)"
exe="$bundle/gpuwatch"
[ -x "$exe" ] || { echo "smoke: no $exe (build it with packaging/build.sh)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
run() {   # no Python, no checkout, no display, no user folders
  env -i PATH=/usr/bin:/bin HOME="$work/home" LANG=C.UTF-8 QT_QPA_PLATFORM=offscreen \
    XDG_RUNTIME_DIR="$work" GPUWATCH_DATA_DIR="$work/data" "$exe" "$@"
}

start=$(date +%s%N)
run scenarios > scenarios.txt
grep -q "^oom-ramp " scenarios.txt || { echo "smoke: 'scenarios' lists no oom-ramp" >&2; cat scenarios.txt >&2; exit 1; }

run snapshot --demo --json > snapshot.json
grep -q '"schema": "gpuwatch.snapshot/1"' snapshot.json \
  || { echo "smoke: 'snapshot --demo --json' printed no snapshot document" >&2; head -c 500 snapshot.json >&2; exit 1; }
grep -q '"kind": "simulated"' snapshot.json || { echo "smoke: the snapshot is not simulated" >&2; exit 1; }

run gui --demo oom-ramp --screenshot shot.png 2> gui.err
size=$(stat -c %s shot.png 2>/dev/null || echo 0)
[ "$(head -c 8 shot.png | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] && [ "$size" -gt 20000 ] \
  || { echo "smoke: 'gui --screenshot' wrote no window picture ($size bytes)" >&2; cat gui.err >&2; exit 1; }
if grep -Eiq "gtk|glib-gio|traceback" gui.err; then
  echo "smoke: the window printed GTK/GLib warnings or a traceback:" >&2; cat gui.err >&2; exit 1
fi
[ ! -e "$bundle/_internal/PySide6/Qt/plugins/platformthemes/libqgtk3.so" ] \
  || { echo "smoke: the bundle carries the GTK platform theme (see packaging/gpuwatch.spec)" >&2; exit 1; }

echo "smoke: the frozen gpuwatch lists scenarios, prints a snapshot and renders the window" \
     "($(( ($(date +%s%N) - start) / 1000000 )) ms;" \
     "bundle $(du -sh "$bundle" | cut -f1))"
