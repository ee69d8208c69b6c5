"""A guard against a reference-count bug in PySide6 6.12 on Python 3.11.

Every ``SignalInstance.emit()`` called from Python drops one reference to ``True``
it never took, and some virtual calls do the same to ``None`` (measured: 100 emits
lower ``sys.getrefcount(True)`` by 100). pyqtgraph emits dozens of signals per plot
update, so after a few thousand samples CPython aborts with "bool_dealloc: deallocating
True or False". Python 3.12+ makes these singletons immortal, which hides the bug;
on 3.11 we give them a reference count no session can exhaust (2**40), which is what
immortality amounts to. Nothing else is touched.
"""

from __future__ import annotations

import ctypes
import sys

_PINNED = 1 << 40
_done = False


def install() -> None:
    global _done
    if _done or sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return
    for obj in (True, False, None):
        ctypes.c_ssize_t.from_address(id(obj)).value += _PINNED   # ob_refcnt is at offset 0
    _done = True
