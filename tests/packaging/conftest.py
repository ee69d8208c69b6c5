"""An X server of the tests' own, for what only a real display answers (icon themes,
desktop-entry launchers)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def x_display() -> Iterator[dict[str, str]]:
    """``{"DISPLAY": ":N"}`` for an Xvfb started for these tests (skips without Xvfb)."""
    if shutil.which("Xvfb") is None:
        pytest.skip("needs Xvfb (apt install xvfb)")
    read_fd, write_fd = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-nolisten", "tcp",
                             "-screen", "0", "1280x800x24"], pass_fds=(write_fd,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_fd)
    try:
        with os.fdopen(read_fd) as pipe:
            display = pipe.readline().strip()
        if not display:
            pytest.skip("Xvfb did not start")
        yield {"DISPLAY": f":{display}", "QT_QPA_PLATFORM": "xcb"}
    finally:
        xvfb.terminate()
        xvfb.wait(30)
