"""The curves of a time plot, kept as images that scroll with time.

A live plot moves by a few pixel columns a second; redrawing every curve of the window
for that (eight GPUs' dashed, antialiased lines of thousands of points, plus their
decimation from up to a day of samples) cost more than the rest of the plot. Here the
plot area is cut into tiles of :data:`TILE` pixel columns fixed in time, each an image
rendered once; a new sample re-renders only the tiles it reaches, and a paint is a
row of image blits.

What makes a scrolled image equal to a fresh one: columns are fixed in time (column
``c`` starts ``c * dt`` seconds after the epoch), samples are decimated into buckets
fixed in time (``decimate.bucket_minmax``), and a tile is always rendered from the
same samples (its columns, :data:`MARGIN` either side, whole buckets beyond), so the
pixels of a tile do not depend on when it was drawn; tiles are blitted at whole device
pixels. A change of anything else (size, y range, pens, which curves) starts over from
empty tiles. A live window moves by whole columns (:func:`aligned_range`), so its
curves sit exactly on the time axis; a view dragged by whole pixels keeps its tiles too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyqtgraph as pg
import pyqtgraph.functions as fn
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QImage, QPainter, QPen

from gpuwatch.core.history import Ring
from gpuwatch.ui.widgets.tile_points import layers_points

TILE = 64      # pixel columns per tile
MARGIN = 3     # columns a tile reads either side: lines into it, a wide pen's spill


@dataclass(eq=False)
class Layer:
    """One thing drawn: a line through ``ring``'s ``column`` (divided by ``scale``), or
    with ``brush`` its min/max band; ``mean``: the line through each bucket's mean, two
    columns a bucket (bandwidth over long windows). ``style`` names the look (colour,
    width, dash) for change detection: pens are compared by it, not by value."""

    ring: Ring
    column: str
    scale: float
    style: tuple
    pen: QPen | None = None
    brush: QBrush | None = None
    mean: bool = False
    key: tuple = field(init=False)
    dash: tuple[float, float] | None = field(init=False)   # (period, pen width) if dashed

    def __post_init__(self) -> None:
        self.key = (id(self.ring), self.column, self.scale, self.mean,
                    self.brush is not None, self.style)
        pen = self.pen
        self.dash = None
        if pen is not None and pen.style() == Qt.PenStyle.CustomDashLine:
            width = max(1.0, pen.widthF())
            self.dash = (sum(pen.dashPattern()) * width, width)

    @property
    def bucket_columns(self) -> int:
        return 2 if self.mean or self.brush is not None else 1


@dataclass(frozen=True)
class Grid:
    """How data map to a view's device pixels: column ``c`` is the time from ``c * dt``
    seconds since the epoch (columns fixed in time, so tiles outlive a scroll); a value
    ``v`` falls ``(y_top - v) / y_per_px + frac_y`` rows below the image's top."""

    dt: float
    rows: int
    y_top: float
    y_per_px: float
    frac_y: float       # where the view's top edge falls inside the first image row
    dpr: float

    def same_tiles(self, other: Grid | None) -> bool:
        """Tiles rendered for ``other`` are valid here."""
        if other is None:
            return False
        close = math.isclose
        return (close(self.dt, other.dt, rel_tol=1e-7) and self.rows == other.rows
                and close(self.y_top, other.y_top, rel_tol=1e-9, abs_tol=1e-12)
                and close(self.y_per_px, other.y_per_px, rel_tol=1e-9)
                and abs(self.frac_y - other.frac_y) < 1e-3 and self.dpr == other.dpr)


def plot_columns(plot: pg.PlotWidget) -> int:
    """The device pixel columns of a plot's view (what a live range is aligned to)."""
    width = plot.getViewBox().width() * plot.devicePixelRatioF()
    return max(1, round(width)) if width > 0 else 800


def aligned_range(now: float, window_s: float, columns: int) -> tuple[float, float]:
    """A live window ending at ``now`` (or within one column after it) whose edges fall
    on whole columns of ``window_s / columns`` seconds since the epoch: from one sample
    to the next it moves by whole columns, which an image can scroll by."""
    dt = window_s / columns
    right = math.ceil(now / dt - 1e-9) * dt
    return right - window_s, right


class CurveCanvas(pg.GraphicsObject):
    """Paints :attr:`layers` from cached tiles; added to a plot with ``ignoreBounds``."""

    def __init__(self) -> None:
        super().__init__()
        self.layers: list[Layer] = []
        self._keys: tuple = ()
        self._grid: Grid | None = None
        self._tiles: dict[int, QImage] = {}
        self._seen: list[tuple[float | None, float | None, int]] = []
        self.tiles_rendered = 0     # a running count, for tests and benchmarks

    # what to draw --------------------------------------------------------------------
    def set_layers(self, layers: list[Layer]) -> None:
        keys = tuple(layer.key for layer in layers)
        self.layers = layers
        if keys != self._keys:
            self._keys = keys
            self.invalidate()
        self.update()

    def invalidate(self) -> None:
        """Draw every tile anew at the next paint."""
        self._tiles.clear()
        self._seen = []
        self.update()

    def _dirty_times(self) -> list[tuple[float, float]] | None:
        """The time spans whose samples changed since the tiles were drawn (rows added,
        the oldest dropped); None when everything must be drawn again."""
        seen = [(ring.first("timestamp_s"), ring.last("timestamp_s"), len(ring))
                for ring in (layer.ring for layer in self.layers)]
        before, self._seen = self._seen, seen
        if len(before) != len(seen):
            return None
        spans = []
        for (first0, last0, n0), (first1, last1, n1) in zip(before, seen, strict=True):
            if (first0, last0, n0) == (first1, last1, n1):
                continue
            if None in (first0, last0, first1, last1) or n1 < min(n0, 2) \
                    or last1 < last0 or first1 < first0:           # type: ignore[operator]
                return None
            if last1 != last0:
                spans.append((last0, last1))
            if first1 != first0:
                spans.append((first0, first1))
            if last1 == last0 and first1 == first0:   # same ends, other rows: start over
                return None
        return spans

    # geometry ------------------------------------------------------------------------
    def viewRangeChanged(self) -> None:
        self.prepareGeometryChange()

    def boundingRect(self) -> QRectF:
        vb = self.getViewBox()
        return QRectF() if vb is None else vb.viewRect()

    def _grid_for(self, p: QPainter) -> tuple[Grid, float, float, QRectF] | None:
        """(the grid, the view's left edge in columns, the device x of column 0 less
        that, the view's device rectangle) for a paint through ``p``."""
        vb = self.getViewBox()
        if vb is None:
            return None
        view = vb.viewRect()
        device = p.transform().mapRect(view)
        dpr = p.device().devicePixelRatioF() if p.device() is not None else 1.0
        width_px = device.width() * dpr
        if width_px < 1 or device.height() <= 0 or view.width() <= 0 or view.height() <= 0:
            return None
        top = math.floor(device.top() * dpr) / dpr
        frac_y = (device.top() - top) * dpr
        rows = math.ceil(device.height() * dpr + frac_y) + 1
        grid = Grid(view.width() / width_px, rows, view.bottom(),
                    view.height() / (device.height() * dpr), frac_y, dpr)
        if grid.same_tiles(self._grid):
            grid = self._grid      # keep its column width: the view's has rounding noise
        left = view.left() / grid.dt
        return grid, left, device.left() * dpr, QRectF(device.left(), top, device.width(),
                                                       device.bottom() - top)

    # painting ------------------------------------------------------------------------
    def paint(self, p: QPainter, *_: Any) -> None:
        if not self.layers:
            return
        found = self._grid_for(p)
        if found is None:
            return
        grid, left, left_px, target = found
        dirty = self._dirty_times()
        if dirty is None or grid is not self._grid:
            self._tiles.clear()
        else:
            for t0, t1 in dirty:
                if t1 / grid.dt < left - MARGIN - 1:    # rows dropped left of the view
                    continue
                first = math.floor(t0 / grid.dt) - MARGIN - 1
                last = math.floor(t1 / grid.dt) + MARGIN + 1
                for tile in range(first // TILE, last // TILE + 1):
                    self._tiles.pop(tile, None)
        self._grid = grid
        first_column = math.floor(left)
        shown = range(first_column // TILE,
                      math.ceil(left + target.width() * grid.dpr) // TILE + 1)
        for tile in [t for t in self._tiles if t not in shown]:
            del self._tiles[tile]
        missing = [t for t in shown if t not in self._tiles]
        for run in _runs(missing):         # the newest tiles, the oldest: read apart
            self._tiles.update(self._render(grid, run))
        # every tile lands on the same whole device pixel offset: no seams
        base = round(left_px - (left - first_column)) - first_column
        p.save()
        p.resetTransform()
        p.setClipRect(target)
        for tile in shown:
            p.drawImage(QPointF((base + tile * TILE) / grid.dpr, target.top()),
                        self._tiles[tile])
        p.restore()

    def _render(self, grid: Grid, tiles: list[int]) -> dict[int, QImage]:
        """Images of ``tiles``: each layer's samples read and decimated once for all of
        them, then each tile drawn from its own part."""
        images = {}
        for tile in tiles:
            image = QImage(TILE, grid.rows, QImage.Format.Format_ARGB32_Premultiplied)
            image.setDevicePixelRatio(grid.dpr)
            image.fill(Qt.GlobalColor.transparent)
            images[tile] = image
        painters = {tile: _tile_painter(images[tile]) for tile in tiles}
        c0, c1 = min(tiles) * TILE - MARGIN, (max(tiles) + 1) * TILE + MARGIN
        spans: dict[tuple[int, int], tuple[int, int, np.ndarray]] = {}
        try:
            for layer, points in zip(self.layers, layers_points(self.layers, grid, c0, c1),
                                     strict=True):
                if points is None:
                    continue
                x = points[0]      # shared by the layers read together: cut once a tile
                for tile in tiles:
                    span = spans.get((id(x), tile))
                    if span is None:
                        span = spans[(id(x), tile)] = _tile_span(x, tile * TILE)
                    _draw_part(painters[tile], layer, points, span)
        finally:
            for painter in painters.values():
                painter.end()
        self.tiles_rendered += len(tiles)
        return images


class PlotCanvases:
    """A plot's three canvases: under (bands), lines, over (a highlighted line), so
    that a hover redraws one or two layers, not every line."""

    def __init__(self, plot: pg.PlotWidget) -> None:
        self.signature: tuple | None = None     # of what the layers were made from
        self.under, self.lines, self.over = CurveCanvas(), CurveCanvas(), CurveCanvas()
        for z, canvas in zip((-10, 0, 10), self.all, strict=True):
            canvas.setZValue(z)
            plot.addItem(canvas, ignoreBounds=True)

    @property
    def all(self) -> tuple[CurveCanvas, CurveCanvas, CurveCanvas]:
        return self.under, self.lines, self.over

    @property
    def layers(self) -> list[Layer]:
        return [layer for canvas in self.all for layer in canvas.layers]

    @property
    def tiles_rendered(self) -> int:
        return sum(canvas.tiles_rendered for canvas in self.all)

    def set_layers(self, stacked: tuple[list[Layer], list[Layer], list[Layer]]) -> None:
        for canvas, layers in zip(self.all, stacked, strict=True):
            canvas.set_layers(layers)

    def invalidate(self) -> None:
        for canvas in self.all:
            canvas.invalidate()

    def update(self) -> None:
        for canvas in self.all:
            canvas.update()


def _runs(tiles: list[int]) -> list[list[int]]:
    """Sorted tile numbers in runs of neighbours."""
    runs: list[list[int]] = []
    for tile in tiles:
        if runs and runs[-1][-1] == tile - 1:
            runs[-1].append(tile)
        else:
            runs.append([tile])
    return runs


def _tile_painter(image: QImage) -> QPainter:
    p = QPainter(image)
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    p.scale(1 / image.devicePixelRatio(), 1 / image.devicePixelRatio())  # device pixels
    p.setBrush(Qt.BrushStyle.NoBrush)      # lines are not filled (a band sets its own)
    return p


def _tile_span(x: np.ndarray, start: int) -> tuple[int, int, np.ndarray]:
    """(first, end, their x from the tile's left edge) of the points that reach columns
    ``start`` to ``start + TILE`` (with the margin, and one point either side)."""
    i = max(0, int(x.searchsorted(start - MARGIN, side="left")) - 1)
    j = min(len(x), int(x.searchsorted(start + TILE + MARGIN, side="right")) + 1)
    return i, j, x[i:j] - start


def _draw_part(p: QPainter, layer: Layer, points: tuple[np.ndarray, ...],
               span: tuple[int, int, np.ndarray]) -> None:
    """Draw the layer's points of ``span`` (see ``_tile_span``) into the tile painted by
    ``p``."""
    i, j, xs = span
    if j - i < 1:
        return
    if layer.brush is not None:
        _draw_band(p, layer.brush, xs, points[1][i:j], points[2][i:j])
        return
    ys = points[1][i:j]
    pen = layer.pen
    if pen is None:
        return
    if layer.dash is not None:   # the dash phase follows the absolute column: tiles join up
        period, width = layer.dash
        pen = QPen(pen)
        pen.setDashOffset((float(points[0][i]) % period) / width)
    p.setPen(pen)
    if j - i == 1:
        if math.isfinite(ys[0]):
            p.drawPoint(QPointF(float(xs[0]), float(ys[0])))
        return
    # a polyline per run of finite points (a lone point between gaps draws nothing, as
    # in pyqtgraph's connect="finite"): cheaper than building a QPainterPath
    if np.isfinite(np.add.reduce(ys)):
        p.drawPolyline(_polygon(xs, ys))
        return
    for a, b in _finite_runs(np.isfinite(ys)):
        if b - a >= 2:
            p.drawPolyline(_polygon(xs[a:b], ys[a:b]))


def _finite_runs(ok: np.ndarray) -> list[tuple[int, int]]:
    edges = np.flatnonzero(np.diff(np.concatenate(([0], ok.astype(np.int8), [0]))))
    return list(zip(edges[0::2].tolist(), edges[1::2].tolist(), strict=True))


def _polygon(x: np.ndarray, y: np.ndarray) -> Any:
    poly = fn.create_qpolygonf(len(x))          # filled in place, no QPointF each
    points = fn.ndarray_from_qpolygonf(poly)
    points[:, 0] = x
    points[:, 1] = y
    return poly


def _draw_band(p: QPainter, brush: QBrush, x: np.ndarray, low: np.ndarray,
               high: np.ndarray) -> None:
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(brush)
    for a, b in _finite_runs(np.isfinite(low) & np.isfinite(high)):
        if b - a < 2:
            continue
        n = b - a
        poly = fn.create_qpolygonf(2 * n)
        pts = fn.ndarray_from_qpolygonf(poly)
        pts[:n, 0] = x[a:b]
        pts[:n, 1] = high[a:b]
        pts[n:, 0] = x[a:b][::-1]
        pts[n:, 1] = low[a:b][::-1]
        p.drawPolygon(poly)
