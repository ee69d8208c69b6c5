"""scripts/window_fill.py: a maximised screenshot waits until the window has the screen's
size, and its parsers take whatever xprop and xwininfo print."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import window_fill

SCREEN = (800, 600)
# a window that, like one still being placed as it opens, undoes the first resize it is
# given: one `xdotool windowsize` leaves it at its own size
STUBBORN = """
import sys
from PySide6.QtWidgets import QApplication, QWidget
app = QApplication(sys.argv)
class Stubborn(QWidget):
    undone = False
    def resizeEvent(self, event):
        super().resizeEvent(event)
        if self.isVisible() and not Stubborn.undone and event.size().width() > 500:
            Stubborn.undone = True
            self.resize(400, 300)
w = Stubborn()
w.setWindowTitle("gpuwatch")
w.resize(400, 300)
w.show()
print("shown", flush=True)
app.exec()
"""


@given(st.text(max_size=300))
@settings(max_examples=200)
def test_the_parsers_take_any_output(text: str) -> None:
    extents = window_fill.parse_frame_extents(text)
    assert extents is None or (len(extents) == 4 and all(v >= 0 for v in extents))
    assert all(isinstance(v, int) for v in window_fill.parse_geometry(text).values())


@given(st.lists(st.integers(0, 99_999), min_size=4, max_size=4),
       st.sampled_from(["", "\n", "WM_NAME = x\n"]))
def test_frame_extents_and_geometry_are_read_back(values: list[int], before: str) -> None:
    line = "_NET_FRAME_EXTENTS(CARDINAL) = " + ", ".join(map(str, values))
    assert window_fill.parse_frame_extents(before + line + "\n") == tuple(values)
    info = (f"xwininfo: Window id: 0x400012 \"gpuwatch\"\n\n  Absolute upper-left X:  "
            f"{values[0]}\n  Absolute upper-left Y:  -{values[1]}\n  Relative upper-left X:  "
            f"7\n  Width: {values[2]}\n  Height: {values[3]}\n  Depth: 24\n")
    assert window_fill.parse_geometry(before + info) == {
        "x": values[0], "y": -values[1], "width": values[2], "height": values[3]}
    assert window_fill.parse_frame_extents("_NET_FRAME_EXTENTS:  not found.") is None


@pytest.fixture
def openbox_screen(tmp_path: Path):
    """An 800×600 X server with openbox; yields the environment that reaches it."""
    tools = ("Xvfb", "openbox", "xdotool", "xprop", "xwininfo")
    if any(shutil.which(t) is None for t in tools):
        pytest.skip("needs " + ", ".join(tools))
    read_fd, write_fd = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-nolisten", "tcp",
                             "-screen", "0", f"{SCREEN[0]}x{SCREEN[1]}x24"],
                            pass_fds=(write_fd,), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        display = pipe.readline().strip()
    children = [xvfb]
    try:
        if not display:
            pytest.skip("Xvfb did not start")
        env = dict(os.environ, DISPLAY=f":{display}", QT_QPA_PLATFORM="xcb",
                   XDG_CONFIG_HOME=str(tmp_path), XDG_RUNTIME_DIR=str(tmp_path))
        children.append(subprocess.Popen(["openbox"], env=env, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL))
        time.sleep(0.5)
        yield env
    finally:
        for child in reversed(children):
            child.terminate()
            child.wait(10)


def test_a_window_that_undoes_the_first_resize_still_fills_the_screen(openbox_screen,
                                                                      tmp_path) -> None:
    env = openbox_screen
    script = tmp_path / "stubborn.py"
    script.write_text(STUBBORN)
    app = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
    try:
        assert app.stdout is not None and app.stdout.readline().strip() == "shown"
        window = window_fill.fill_screen(env, SCREEN, timeout_s=30)
        x, y, width, height = window_fill.target_size(env, window, SCREEN)
        assert y > 0 and height < SCREEN[1]       # openbox's title bar is above it
        assert window_fill.geometry(env, window) == (x, y, width, height)
        assert window_fill.is_filled(env, window, SCREEN)
        subprocess.run(["xdotool", "windowsize", window, "300", "200"], env=env, check=True)
        time.sleep(0.3)                           # shrunk before the grab: filled again
        window_fill.wait_filled(env, window, SCREEN, settle_s=0)
        assert window_fill.is_filled(env, window, SCREEN)
    finally:
        app.terminate()
        app.wait(10)
