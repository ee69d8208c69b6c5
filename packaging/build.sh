#!/usr/bin/env bash
# Builds the one-folder bundle dist/gpuwatch/ (run it from anywhere):
#   packaging/build.sh              with .venv/bin/python (PyInstaller installed if missing)
#   PYTHON=/path/python packaging/build.sh
# The bundle also carries the shell completions (completions/) and the desktop files
# (share/), so packaging/install.sh --bundle dist/gpuwatch needs nothing else.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
PYTHON=${PYTHON:-.venv/bin/python}
PYINSTALLER_VERSION=${PYINSTALLER_VERSION:-">=6.10"}

"$PYTHON" -c "import PyInstaller" 2>/dev/null \
  || "$PYTHON" -m pip install -q "pyinstaller$PYINSTALLER_VERSION"

start=$(date +%s)
"$PYTHON" -m PyInstaller --noconfirm --clean --log-level WARN \
  --workpath build/pyinstaller --distpath dist packaging/gpuwatch.spec
bundle=dist/gpuwatch
"$PYTHON" -m gpuwatch.commands.completion --all "$bundle/completions"
mkdir -p "$bundle/share"
cp packaging/gpuwatch.desktop packaging/io.github.gpuwatch.gpuwatch.metainfo.xml "$bundle/share/"
cp -r resources/icons/hicolor "$bundle/share/"
echo "build: $bundle/gpuwatch ($(du -sh "$bundle" | cut -f1)) in $(( $(date +%s) - start )) s"
