"""A window shown but not exposed rests like one in the tray: its real path on X11.

A window manager unmaps the windows of the other workspaces; Qt then marks the window
not exposed although it is neither hidden nor minimised. ``gpuwatch gui`` runs as a
child on Xvfb with the xcb platform; the test unmaps its window and maps it again
through Xlib, as a window manager switching workspaces would, and reads the app's log:
out of sight it rests (nothing drawn), exposed again it is in sight at once. Skips where
Xvfb or dbus-daemon is missing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import shutil
import time

import pytest
from desktop_support import Child, logged_gpuwatch

pytestmark = [
    pytest.mark.xvfb,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="needs Xvfb (apt install xvfb)"),
    pytest.mark.skipif(shutil.which("dbus-daemon") is None,
                       reason="needs dbus-daemon (apt install dbus)"),
    pytest.mark.skipif(ctypes.util.find_library("X11") is None, reason="needs libX11"),
]

APP_ARGS = ["gui", "--demo", "workstation", "--interval", "0.5"]
IN_SIGHT = "gpuwatch.ui.app: window in sight"
OUT_OF_SIGHT = "gpuwatch.ui.app: window out of sight"


class WindowAttributes(ctypes.Structure):
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int), ("width", ctypes.c_int),
                ("height", ctypes.c_int), ("border_width", ctypes.c_int),
                ("depth", ctypes.c_int), ("visual", ctypes.c_void_p),
                ("root", ctypes.c_ulong), ("class_", ctypes.c_int),
                ("bit_gravity", ctypes.c_int), ("win_gravity", ctypes.c_int),
                ("backing_store", ctypes.c_int), ("backing_planes", ctypes.c_ulong),
                ("backing_pixel", ctypes.c_ulong), ("save_under", ctypes.c_int),
                ("colormap", ctypes.c_ulong), ("map_installed", ctypes.c_int),
                ("map_state", ctypes.c_int), ("all_event_masks", ctypes.c_long),
                ("your_event_mask", ctypes.c_long), ("do_not_propagate_mask", ctypes.c_long),
                ("override_redirect", ctypes.c_int), ("screen", ctypes.c_void_p)]


class Xlib:
    """The few Xlib calls a window manager makes to hide a window and show it again."""

    def __init__(self, display: str):
        lib = ctypes.cdll.LoadLibrary(ctypes.util.find_library("X11"))
        lib.XOpenDisplay.restype = ctypes.c_void_p
        lib.XOpenDisplay.argtypes = [ctypes.c_char_p]
        lib.XDefaultRootWindow.restype = ctypes.c_ulong
        lib.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
        lib.XQueryTree.argtypes = [ctypes.c_void_p, ctypes.c_ulong,
                                   ctypes.POINTER(ctypes.c_ulong),
                                   ctypes.POINTER(ctypes.c_ulong),
                                   ctypes.POINTER(ctypes.POINTER(ctypes.c_ulong)),
                                   ctypes.POINTER(ctypes.c_uint)]
        lib.XFetchName.argtypes = [ctypes.c_void_p, ctypes.c_ulong,
                                   ctypes.POINTER(ctypes.c_char_p)]
        lib.XGetWindowAttributes.argtypes = [ctypes.c_void_p, ctypes.c_ulong,
                                             ctypes.POINTER(WindowAttributes)]
        for name in ("XMapWindow", "XUnmapWindow"):
            getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_ulong]
        lib.XFlush.argtypes = lib.XCloseDisplay.argtypes = [ctypes.c_void_p]
        lib.XFree.argtypes = [ctypes.c_void_p]
        self.lib = lib
        self.dpy = lib.XOpenDisplay(display.encode())
        assert self.dpy, f"cannot open display {display}"

    def top_level_named(self, title: str) -> int | None:
        """The largest top-level window named ``title`` (no window manager: the root's
        children are the top-level windows; Qt's 1 x 1 client leader has the app's name
        too)."""
        lib, root = self.lib, self.lib.XDefaultRootWindow(self.dpy)
        root_ret, parent = ctypes.c_ulong(), ctypes.c_ulong()
        children, count = ctypes.POINTER(ctypes.c_ulong)(), ctypes.c_uint()
        lib.XQueryTree(self.dpy, root, ctypes.byref(root_ret), ctypes.byref(parent),
                       ctypes.byref(children), ctypes.byref(count))
        found, largest = None, 0
        for i in range(count.value):
            name = ctypes.c_char_p()
            if lib.XFetchName(self.dpy, children[i], ctypes.byref(name)) and name.value:
                attributes = WindowAttributes()
                if name.value.decode(errors="replace") == title and lib.XGetWindowAttributes(
                        self.dpy, children[i], ctypes.byref(attributes)):
                    area = attributes.width * attributes.height
                    if area > largest:
                        found, largest = children[i], area
                lib.XFree(name)
        if children:
            lib.XFree(children)
        return found

    def unmap(self, window: int) -> None:
        self.lib.XUnmapWindow(self.dpy, window)
        self.lib.XFlush(self.dpy)

    def map(self, window: int) -> None:
        self.lib.XMapWindow(self.dpy, window)
        self.lib.XFlush(self.dpy)

    def close(self) -> None:
        self.lib.XCloseDisplay(self.dpy)


def test_a_window_on_another_workspace_rests_and_catches_up_when_back(desktop) -> None:
    app = Child(logged_gpuwatch(*APP_ARGS), {**desktop, "QT_QPA_PLATFORM": "xcb"},
                merge=True)
    x = Xlib(desktop["DISPLAY"])
    try:
        seen = app.wait_for(lambda line: line.startswith(IN_SIGHT), 20, "the window in sight")
        assert "calmly" in seen              # the default pace of a window in sight
        window = None
        deadline = time.monotonic() + 10
        while window is None and time.monotonic() < deadline:
            window = x.top_level_named("gpuwatch")
            time.sleep(0.1)
        assert window is not None, "no top-level window named gpuwatch"
        for _ in range(2):                     # another workspace, and back, twice
            x.unmap(window)
            app.wait_for(lambda line: line.startswith(OUT_OF_SIGHT), 10,
                         "the window resting once unmapped")
            x.map(window)
            app.wait_for(lambda line: line.startswith(IN_SIGHT), 10,
                         "the window in sight once mapped again")
        assert app.proc.poll() is None, "the app ended"
    finally:
        x.close()
        app.stop()
