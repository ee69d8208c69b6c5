"""The PDF report: the HTML report laid out by Qt's text engine onto real A4 pages.

Qt's rich text has no inline SVG, so each chart holds its place in the document as an
empty image of its size, and is drawn there afterwards with QtSvg, as vector graphics
with real text (sharp at any zoom, and its labels can be searched and copied). Works
offscreen (no display needed).

The pages are cut here rather than by ``QTextDocument.print_`` so that:

- the text has the page's width inside 15 mm margins;
- nothing is parted from what it belongs with: a block carrying the anchor
  ``KEEP_WITH_NEXT`` (a heading, a hint's title) starts a new page rather than end
  one alone, and so does a chart whose caption (``KEEP_WITH_PREVIOUS``) would not
  fit under it, and a command line (``KEEP_WHOLE``) that a page would split (a
  process and its command line are kept together by Qt itself: see
  :mod:`gpuwatch.sessions.report_html`);
- the footer is printed at the foot of the last page, in room kept for it on every
  page, so it is never a page of its own; each page ends with the session and its
  page number.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from PySide6.QtCore import QByteArray, QMarginsF, QRectF, QSizeF, Qt, QUrl
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QColor,
    QFont,
    QFontMetricsF,
    QGuiApplication,
    QImage,
    QPageLayout,
    QPageSize,
    QPainter,
    QPdfWriter,
    QTextBlock,
    QTextCursor,
    QTextDocument,
    QTextFormat,
)
from PySide6.QtSvg import QSvgRenderer

from gpuwatch.sessions.report_html import (
    KEEP_WHOLE,
    KEEP_WITH_NEXT,
    KEEP_WITH_PREVIOUS,
    Paged,
    footer_html,
    render_html,
)
from gpuwatch.sessions.report_model import Report

_CHART = "chart:"   # the resource name of a chart's place in the document
_MARGIN_MM = 15
_FOOT_GAP_PX = 10   # between the text and the foot of the page
_CELL_SIDES_PX = 18 + 6 + 4   # a command cell's padding, and a little to spare
_MAX_MOVES = 400    # blocks moved to a new page: a bound, far above any real report


def _ensure_app() -> None:
    """Fonts and images need a Qt application. A widgets one, so that a window opened
    later in the same process (the GUI's export) still finds what it needs."""
    if QGuiApplication.instance() is None:
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from PySide6.QtWidgets import QApplication

        _ensure_app.app = QApplication([])   # type: ignore[attr-defined]  # kept alive


def _blank() -> QImage:
    image = QImage(1, 1, QImage.Format.Format_ARGB32)
    image.fill(0)                       # transparent: the chart is drawn over it
    return image


def _charts(doc: QTextDocument, scale: float) -> list[tuple[str, QRectF]]:
    """Each chart's name and where the document put its place (device pixels; the
    markup's pixels are ``scale`` of them)."""
    out = []
    for block in _blocks(doc):
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            fmt = fragment.charFormat()
            if fmt.isImageFormat() and fmt.toImageFormat().name().startswith(_CHART):
                image = fmt.toImageFormat()
                layout = block.layout()
                line = layout.lineForTextPosition(fragment.position() - block.position())
                rect = doc.documentLayout().blockBoundingRect(block)
                x = line.cursorToX(fragment.position() - block.position())
                x = x[0] if isinstance(x, tuple) else x
                height, width = image.height() * scale, image.width() * scale
                top = rect.top() + line.y() + line.ascent() - height
                out.append((image.name().removeprefix(_CHART),
                            QRectF(rect.left() + x, top, width, height)))
            it += 1
    return out



def _writer(path: Path, title: str) -> QPdfWriter:
    """A4 pages at 96 dots per inch, so CSS pixels and points keep their usual sizes."""
    writer = QPdfWriter(str(path))
    writer.setResolution(96)
    writer.setTitle(title)
    writer.setCreator("gpuwatch")
    m = _MARGIN_MM
    writer.setPageLayout(QPageLayout(QPageSize(QPageSize.PageSizeId.A4),
                                     QPageLayout.Orientation.Portrait,
                                     QMarginsF(m, m, m, m), QPageLayout.Unit.Millimeter))
    return writer


def _font(family: str, points: float, monospace: bool = False) -> QFont:
    font = QFont(family)
    font.setPointSizeF(points)
    if monospace:
        font.setStyleHint(QFont.StyleHint.Monospace)
    return font


def code_columns(width_px: float, device: QPdfWriter) -> int:
    """How many characters of the report's monospace font fit in a full-width cell."""
    metrics = QFontMetricsF(_font("DejaVu Sans Mono", 8.5, monospace=True), device)
    advance = metrics.horizontalAdvance("0" * 100) / 100
    return max(20, int((width_px - _CELL_SIDES_PX) / advance) - 1)


def _html_px(device: QPdfWriter) -> float:
    """Device pixels per pixel of an image's ``width`` in Qt's rich text (which scales
    them by the device's resolution against the platform's default one)."""
    probe = QTextDocument()
    probe.documentLayout().setPaintDevice(device)
    probe.setDocumentMargin(0)
    probe.addResource(QTextDocument.ResourceType.ImageResource, QUrl("probe:1"),
                      QImage(4, 4, QImage.Format.Format_RGB32))
    probe.setHtml("<img src='probe:1' width='100'>")
    width = probe.documentLayout().blockBoundingRect(probe.begin()).width()
    return width / 100 if width > 0 else 1.0


def _anchors(block: QTextBlock) -> set[str]:
    names: set[str] = set()
    it = block.begin()
    while not it.atEnd():
        names.update(it.fragment().charFormat().anchorNames())
        it += 1
    return names


def _blocks(doc: QTextDocument) -> list[QTextBlock]:
    out = []
    block = doc.begin()
    while block.isValid():
        out.append(block)
        block = block.next()
    return out


def _extent(doc: QTextDocument, block: QTextBlock) -> tuple[float, float]:
    """Where ``block``'s lines are (top, bottom) in the document: a line that Qt moved
    to the next page lies below the block's own top."""
    rect = doc.documentLayout().blockBoundingRect(block)
    lines = block.layout()
    if lines is None or lines.lineCount() == 0:
        return rect.top(), rect.bottom()
    first, last = lines.lineAt(0), lines.lineAt(lines.lineCount() - 1)
    return rect.top() + first.y(), rect.top() + last.y() + last.height()


def _start_page_at(block: QTextBlock) -> bool:
    """Make ``block`` (or the table it is in) begin a page; False if it already does."""
    cursor = QTextCursor(block)
    table = cursor.currentTable()
    policy = QTextFormat.PageBreakFlag.PageBreak_AlwaysBefore
    if table is not None:
        fmt = table.format()
        if fmt.pageBreakPolicy() & policy:
            return False
        fmt.setPageBreakPolicy(policy)
        table.setFormat(fmt)
        return True
    fmt = block.blockFormat()
    if fmt.pageBreakPolicy() & policy:
        return False
    fmt.setPageBreakPolicy(policy)
    cursor.setBlockFormat(fmt)
    return True


def keep_together(doc: QTextDocument, page_height: float) -> None:
    """Move to a new page each block that would end a page while it must stay with the
    next block (``KEEP_WITH_NEXT``), or that would part from the previous one
    (``KEEP_WITH_PREVIOUS``): with the chain of such blocks before it. A block that a
    page would split (``KEEP_WHOLE``) goes to the next page, with its table."""
    def page(block: QTextBlock) -> int:
        return int(_extent(doc, block)[0] // page_height)

    def split(block: QTextBlock) -> bool:
        top, bottom = _extent(doc, block)
        return bottom - top < page_height and \
            int(top // page_height) != int((bottom - 1) // page_height)

    for _ in range(_MAX_MOVES):
        doc.pageCount()                       # lays the document out again
        blocks = _blocks(doc)
        keeps = [_anchors(b) for b in blocks]
        moved = False
        for n in range(len(blocks)):
            if KEEP_WHOLE in keeps[n] and split(blocks[n]) and n > 0:
                if _start_page_at(blocks[n]):
                    moved = True
                    break
                continue
            if KEEP_WITH_NEXT in keeps[n] and n + 1 < len(blocks):
                first, second = n, n + 1
            elif KEEP_WITH_PREVIOUS in keeps[n] and n > 0:
                first, second = n - 1, n
            else:
                continue
            if page(blocks[second]) <= page(blocks[first]):
                continue
            start = first                      # the whole chain goes, on its page
            while start > 0 and page(blocks[start - 1]) == page(blocks[start]) and (
                    KEEP_WITH_NEXT in keeps[start - 1] or KEEP_WITH_PREVIOUS in keeps[start]):
                start -= 1
            if start == 0 or page(blocks[start - 1]) < page(blocks[start]):
                continue                       # already at the top of a page: cannot help
            if _start_page_at(blocks[start]):
                moved = True
                break
        if not moved:
            return


def _page_count(doc: QTextDocument, page_height: float) -> int:
    """Pages up to the last block with something on it (a trailing empty block after a
    table must not make a blank page)."""
    bottom = 0.0
    for block in _blocks(doc):
        if block.text().strip() or block.length() > 1:
            bottom = max(bottom, _extent(doc, block)[1])
    return max(1, int(max(bottom - 1, 0) // page_height) + 1)


def render_pdf(report: Report) -> bytes:
    _ensure_app()
    with tempfile.TemporaryDirectory(prefix="gpuwatch-pdf-") as tmp:
        path = Path(tmp) / "report.pdf"
        writer = _writer(path, f"gpuwatch session {report.info.uuid}")
        page = writer.pageLayout().paintRectPixels(writer.resolution())
        width, height = float(page.width()), float(page.height())

        foot = QTextDocument()                # the footer: at the foot of the last page
        foot.documentLayout().setPaintDevice(writer)
        foot.setDocumentMargin(0)
        foot.setDefaultFont(_font("DejaVu Sans", 7.5))
        foot.setTextWidth(width)
        foot.setHtml(f"<p style='color: #666666'>{footer_html()}</p>")
        small = _font("DejaVu Sans", 7.5)
        line_h = QFontMetricsF(small, writer).height()
        body_h = height - foot.size().height() - line_h - 2 * _FOOT_GAP_PX

        doc = QTextDocument()
        doc.documentLayout().setPaintDevice(writer)
        doc.setDocumentMargin(0)
        doc.setPageSize(QSizeF(width, body_h))
        charts: dict[str, QSvgRenderer] = {}
        scale = _html_px(writer)

        def place(svg: str, name: str) -> str:
            charts[name] = renderer = QSvgRenderer(QByteArray(svg.encode("utf-8")))
            size = renderer.defaultSize()
            shown = min(width, size.width()) / scale          # in the markup's pixels
            tall = shown * size.height() / max(size.width(), 1)
            return f'<p><img src="{_CHART}{name}" width="{shown:.2f}" height="{tall:.2f}"></p>'

        html = render_html(report, place, Paged(width, code_columns(width, writer), scale))
        blank = _blank()
        for name in charts:
            doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl(_CHART + name),
                            blank)
        doc.setHtml(html)
        keep_together(doc, body_h)
        pages = _page_count(doc, body_h)
        places = _charts(doc, scale)

        painter = QPainter(writer)
        context = QAbstractTextDocumentLayout.PaintContext()
        where = f"gpuwatch session {report.info.uuid[:8]}"
        if report.info.host:
            where += f" on {report.info.host}"
        for n in range(pages):
            if n:
                writer.newPage()
            painter.save()
            painter.setClipRect(QRectF(0, 0, width, body_h))
            painter.translate(0, -n * body_h)
            # a hair inside the page: a line that starts where the next page does (or
            # ends where this one starts) is not drawn here, where its text, though
            # clipped away, would still be found by a search
            context.clip = QRectF(0, n * body_h + 0.5, width, body_h - 1)
            doc.documentLayout().draw(painter, context)
            for name, rect in places:
                if n * body_h <= rect.center().y() < (n + 1) * body_h:
                    charts[name].render(painter, rect)
            painter.restore()
            if n == pages - 1:
                painter.save()
                painter.translate(0, height - line_h - _FOOT_GAP_PX - foot.size().height())
                foot.drawContents(painter)
                painter.restore()
            painter.setFont(small)
            painter.setPen(QColor("#6b7280"))
            line = QRectF(0, height - line_h, width, line_h)
            painter.drawText(line, int(Qt.AlignmentFlag.AlignLeft), where)
            painter.drawText(line, int(Qt.AlignmentFlag.AlignRight), f"page {n + 1} of {pages}")
        painter.end()
        del writer               # closes the file
        return path.read_bytes()
