"""What the desktop's own libraries find for an installed desktop id: GLib's
GDesktopAppInfo (the lookup GNOME Shell's application list uses) and, where GTK 3 is
installed and a display is set, GTK's icon theme. Prints one JSON object.

    python tests/packaging/xdg_lookup.py gpuwatch.desktop
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import sys


def _lib(name: str, soname: str) -> ctypes.CDLL | None:
    path = ctypes.util.find_library(name) or soname
    try:
        return ctypes.CDLL(path)
    except OSError:
        return None


def lookup(desktop_id: str) -> dict[str, object]:
    gio = _lib("gio-2.0", "libgio-2.0.so.0")
    if gio is None:
        return {"error": "no libgio-2.0"}
    gio.g_desktop_app_info_new.restype = ctypes.c_void_p
    gio.g_desktop_app_info_new.argtypes = [ctypes.c_char_p]
    for fn, res in (("g_app_info_get_name", ctypes.c_char_p),
                    ("g_app_info_get_executable", ctypes.c_char_p),
                    ("g_app_info_get_commandline", ctypes.c_char_p),
                    ("g_desktop_app_info_get_filename", ctypes.c_char_p),
                    ("g_app_info_get_icon", ctypes.c_void_p),
                    ("g_app_info_should_show", ctypes.c_int)):
        getattr(gio, fn).restype = res
        getattr(gio, fn).argtypes = [ctypes.c_void_p]
    gio.g_icon_to_string.restype = ctypes.c_void_p
    gio.g_icon_to_string.argtypes = [ctypes.c_void_p]
    info = gio.g_desktop_app_info_new(desktop_id.encode())
    if not info:
        return {"error": f"GLib finds no {desktop_id}"}
    icon_text = gio.g_icon_to_string(gio.g_app_info_get_icon(info))
    found: dict[str, object] = {
        "file": gio.g_desktop_app_info_get_filename(info).decode(),
        "name": gio.g_app_info_get_name(info).decode(),
        "icon": ctypes.string_at(icon_text).decode() if icon_text else None,
        "commandline": gio.g_app_info_get_commandline(info).decode(),
        "shown_in_menus": bool(gio.g_app_info_should_show(info)),
    }
    gtk = _lib("gtk-3", "libgtk-3.so.0") if os.environ.get("DISPLAY") else None
    if gtk is not None and gtk.gtk_init_check(None, None):
        gtk.gtk_icon_theme_get_default.restype = ctypes.c_void_p
        gtk.gtk_icon_theme_lookup_icon.restype = ctypes.c_void_p
        gtk.gtk_icon_theme_lookup_icon.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                                   ctypes.c_int, ctypes.c_int]
        gtk.gtk_icon_info_get_filename.restype = ctypes.c_char_p
        gtk.gtk_icon_info_get_filename.argtypes = [ctypes.c_void_p]
        theme = gtk.gtk_icon_theme_get_default()
        icons = {}
        for size in (16, 48, 256):
            hit = gtk.gtk_icon_theme_lookup_icon(theme, str(found["icon"]).encode(), size, 0)
            icons[size] = gtk.gtk_icon_info_get_filename(hit).decode() if hit else None
        found["gtk_icon_files"] = icons
    return found


if __name__ == "__main__":
    print(json.dumps(lookup(sys.argv[1])))
