"""Render the application icon's hicolor PNGs from its SVG with Qt's SVG renderer.

    .venv/bin/python scripts/render_icons.py          # writes resources/icons/hicolor/NxN
    .venv/bin/python scripts/render_icons.py --check  # exit 1 if a PNG is missing or misfit

Qt is what draws the icon in the app, so rendering with it (rather than a second SVG
library) gives the PNGs the same look as the scalable icon. No display is needed.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

HICOLOR = Path(__file__).resolve().parents[1] / "resources" / "icons" / "hicolor"
SVG = HICOLOR / "scalable" / "apps" / "gpuwatch.svg"
SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)


def png_path(size: int) -> Path:
    return HICOLOR / f"{size}x{size}" / "apps" / "gpuwatch.png"


def render(size: int) -> QImage:
    renderer = QSvgRenderer(str(SVG))
    if not renderer.isValid():
        raise SystemExit(f"render_icons: {SVG} is not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter, QRectF(0, 0, size, size))
    painter.end()
    return image


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="only check that every PNG exists and has its size")
    args = parser.parse_args()
    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    stale = []
    for size in SIZES:
        path = png_path(size)
        if args.check:
            image = QImage(str(path))
            if image.isNull() or image.width() != size or image.height() != size:
                stale.append(f"{path} (missing or not {size}x{size})")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if not render(size).save(str(path), "PNG"):
            raise SystemExit(f"render_icons: could not write {path}")
        print(f"render_icons: {path.relative_to(HICOLOR.parents[2])}")
    for line in stale:
        print(f"render_icons: {line}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
