"""A window's plots painted in its one paint pass per sample, not in a pass each.

A graphics scene marks its view dirty from a queued call, and that call then *sends*
the window's pending update request at once (Qt's ``_q_processDirtyItems`` ends by
dispatching its views' pending update requests). When one sample changes several
plots, the first scene's call paints the window with only its own plot marked, and
every other scene's call paints a pass of its own: three plots, three or four passes a
second, each syncing and flushing the window. Delivering every plot scene's queued
calls as a pass starts marks their views before the pass paints, so they join it.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QCoreApplication, QEvent, QObject
from PySide6.QtWidgets import QGraphicsView, QWidget


class PlotsJoinThePass(QObject):
    """Installed on ``window``: each of its paint passes first delivers the queued calls
    of the scenes of ``views``."""

    def __init__(self, window: QWidget, views: Sequence[QGraphicsView]):
        super().__init__(window)
        self._views = tuple(views)
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.UpdateRequest:
            for view in self._views:
                scene = view.scene()
                if scene is not None:
                    QCoreApplication.sendPostedEvents(scene, QEvent.Type.MetaCall)
        return False
