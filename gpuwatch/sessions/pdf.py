"""The PDF report: the HTML report laid out by Qt's text engine onto real A4 pages.

Qt's rich text has no inline SVG, so each chart is rendered to an image with QtSvg and
handed to the document as a resource. Works offscreen (no display needed).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from PySide6.QtCore import QByteArray, QMarginsF, QUrl
from PySide6.QtGui import (
    QGuiApplication,
    QImage,
    QPageLayout,
    QPageSize,
    QPainter,
    QPdfWriter,
    QTextDocument,
)
from PySide6.QtSvg import QSvgRenderer

from gpuwatch.sessions.report_html import render_html
from gpuwatch.sessions.report_model import Report

_SCALE = 2          # charts are drawn at twice their size, for print


def _ensure_app() -> None:
    """Fonts and images need a Qt application. A widgets one, so that a window opened
    later in the same process (the GUI's export) still finds what it needs."""
    if QGuiApplication.instance() is None:
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from PySide6.QtWidgets import QApplication

        _ensure_app.app = QApplication([])   # type: ignore[attr-defined]  # kept alive


def _svg_to_image(svg: str) -> QImage:
    renderer = QSvgRenderer(QByteArray(svg.encode("utf-8")))
    size = renderer.defaultSize()
    image = QImage(size.width() * _SCALE, size.height() * _SCALE, QImage.Format.Format_RGB32)
    image.fill(0xFFFFFF)
    painter = QPainter(image)
    renderer.render(painter)
    painter.end()
    return image


def _writer(path: Path, title: str) -> QPdfWriter:
    """A4 pages at 96 dots per inch, so CSS pixels and points keep their usual sizes."""
    writer = QPdfWriter(str(path))
    writer.setResolution(96)
    writer.setTitle(title)
    writer.setCreator("gpuwatch")
    writer.setPageLayout(QPageLayout(QPageSize(QPageSize.PageSizeId.A4),
                                     QPageLayout.Orientation.Portrait,
                                     QMarginsF(15, 15, 15, 15), QPageLayout.Unit.Millimeter))
    return writer


def render_pdf(report: Report) -> bytes:
    _ensure_app()
    with tempfile.TemporaryDirectory(prefix="gpuwatch-pdf-") as tmp:
        path = Path(tmp) / "report.pdf"
        writer = _writer(path, f"gpuwatch session {report.info.uuid}")
        doc = QTextDocument()
        # print_() lays the document out in points: charts get the text width.
        text_width = writer.pageLayout().paintRect(QPageLayout.Unit.Point).width()
        images: dict[str, QImage] = {}

        def place(svg: str, name: str) -> str:
            images[name] = _svg_to_image(svg)
            width = int(min(0.9 * text_width, images[name].width() / _SCALE))   # body margins
            return f'<p><img src="chart:{name}" width="{width}"></p>'

        html = render_html(report, place)
        for name, image in images.items():
            doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl(f"chart:{name}"),
                            image)
        doc.setHtml(html)
        doc.print_(writer)
        del writer               # closes the file
        return path.read_bytes()
