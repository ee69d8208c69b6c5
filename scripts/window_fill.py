"""Fill an X screen with a window, as a user maximises it, and make sure it did.

One `xdotool windowsize` is not enough: a window that is still being mapped and placed
by the window manager (openbox), or that sets its own size as it opens, ends up at its
own size again, and a screenshot taken "after maximising" shows a window at 1500×950 in
the middle of a 1920×1080 screen. So :func:`fill_screen` finds the window, reads its
frame from the window manager (``_NET_FRAME_EXTENTS``: title bar and borders), asks for
the place and size that put the frame on the screen's edges, and polls the window's
geometry until it has them, asking again while it has not; :func:`wait_filled` is the same
check, made again just before the grab.

Needs xdotool, xprop and xwininfo (`apt install xdotool x11-utils`).
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Mapping

POLL_S = 0.25         # between two looks at the window's geometry
_EXTENTS = re.compile(r"_NET_FRAME_EXTENTS\(CARDINAL\)\s*=\s*(\d{1,5}),\s*(\d{1,5}),"
                      r"\s*(\d{1,5}),\s*(\d{1,5})\s*$")
_XWININFO = re.compile(r"^(Absolute upper-left X|Absolute upper-left Y|Width|Height):"
                       r"\s*(-?\d{1,10})$")
_FIELDS = {"Absolute upper-left X": "x", "Absolute upper-left Y": "y", "Width": "width",
           "Height": "height"}


def parse_frame_extents(text: str) -> tuple[int, int, int, int] | None:
    """(left, right, top, bottom) px of a window manager's frame, from ``xprop -id W
    _NET_FRAME_EXTENTS``; None where the output holds none (no window manager)."""
    for line in text.splitlines():
        match = _EXTENTS.match(line.strip())
        if match:
            left, right, top, bottom = (int(g) for g in match.groups())
            return left, right, top, bottom
    return None


def parse_geometry(text: str) -> dict[str, int]:
    """``xwininfo -id W``'s place and size lines: x, y (on the screen), width, height
    (xdotool's getwindowgeometry adds the frame's offset to a framed window's place);
    other lines are ignored."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        match = _XWININFO.match(line.strip())
        if match:
            out[_FIELDS[match.group(1)]] = int(match.group(2))
    return out


def _run(args: list[str], env: Mapping[str, str], timeout_s: float = 10.0) -> str:
    done = subprocess.run(args, env=dict(env), capture_output=True, text=True,
                          timeout=timeout_s, check=False)
    return done.stdout if done.returncode == 0 else ""


def find_window(env: Mapping[str, str], name: str, timeout_s: float) -> str:
    """The id of the visible window titled ``name`` (a regular expression), waiting up
    to ``timeout_s`` for it to appear."""
    deadline = time.monotonic() + timeout_s
    while True:
        ids = _run(["xdotool", "search", "--onlyvisible", "--name", name], env).split()
        if ids:
            return ids[0]
        if time.monotonic() > deadline:
            raise TimeoutError(f"no window named {name!r} appeared in {timeout_s:g} s")
        time.sleep(POLL_S)


def target_size(env: Mapping[str, str], window: str, screen: tuple[int, int]
                ) -> tuple[int, int, int, int]:
    """(x, y, width, height) of ``window``'s client area with its frame filling the
    screen."""
    extents = parse_frame_extents(_run(["xprop", "-id", window, "_NET_FRAME_EXTENTS"], env))
    left, right, top, bottom = extents or (0, 0, 0, 0)
    return left, top, screen[0] - left - right, screen[1] - top - bottom


def geometry(env: Mapping[str, str], window: str) -> tuple[int, int, int, int] | None:
    """(x, y, width, height) of ``window``'s client area on the screen, as X has it now."""
    g = parse_geometry(_run(["xwininfo", "-id", window], env))
    try:
        return g["x"], g["y"], g["width"], g["height"]
    except KeyError:
        return None


def is_filled(env: Mapping[str, str], window: str, screen: tuple[int, int]) -> bool:
    """Whether ``window`` has the place and size that fill the screen with its frame."""
    return geometry(env, window) == target_size(env, window, screen)


def _fill(env: Mapping[str, str], window: str, screen: tuple[int, int],
          timeout_s: float) -> bool:
    """Ask ``window`` for the place and size that fill the screen until it has them; True
    when it had to be asked. Where a move lands depends on the window's gravity (a Qt
    window is placed by its client area, others by their frame), so the place asked for
    is corrected by where the window went."""
    deadline = time.monotonic() + timeout_s
    asked = False
    move_x = move_y = 0
    while (now := geometry(env, window)) != (want := target_size(env, window, screen)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"window {window} did not fill the {screen[0]}×{screen[1]} "
                               f"screen in {timeout_s:g} s (it is at {now})")
        if asked and now is not None:
            move_x += want[0] - now[0]
            move_y += want[1] - now[1]
        _run(["xdotool", "windowmove", window, str(move_x), str(move_y), "windowsize", window,
              str(want[2]), str(want[3])], env)
        asked = True
        time.sleep(POLL_S)
    return asked


def fill_screen(env: Mapping[str, str], screen: tuple[int, int], name: str = "^gpuwatch$",
                timeout_s: float = 60.0) -> str:
    """Resize the window titled ``name`` so that it and its frame fill the screen (width,
    height), and return its id once it has that size. Raises TimeoutError when it does
    not within ``timeout_s``."""
    window = find_window(env, name, timeout_s)
    _fill(env, window, screen, timeout_s)
    return window


def wait_filled(env: Mapping[str, str], window: str, screen: tuple[int, int],
                settle_s: float, timeout_s: float = 30.0) -> None:
    """Before a grab: make sure ``window`` still fills the screen; where it had to be
    resized again, give it ``settle_s`` to lay itself out at that size."""
    if _fill(env, window, screen, timeout_s):
        time.sleep(settle_s)
