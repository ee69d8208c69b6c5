"""Qt fixtures: a window on throwaway settings, fed by simulated GPUs on a stepped clock;
an X server and session bus of our own for the end-to-end tests."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from desktop_support import start_display_and_bus, stop_children

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from gpuwatch.core.snapshot import Snapshot
from gpuwatch.telemetry.nvml import NvmlBackend
from gpuwatch.telemetry.source import SourceOptions, open_backend
from gpuwatch.ui.live.main_window import MainWindow
from gpuwatch.ui.settings import Settings


@pytest.fixture
def settings_path(tmp_path: Path) -> str:
    return str(tmp_path / "gpuwatch.ini")


@pytest.fixture
def make_window(qtbot, settings_path: str) -> Callable[..., MainWindow]:
    def factory(path: str | None = None, banner: str | None = None) -> MainWindow:
        window = MainWindow(Settings(path or settings_path), banner)
        qtbot.addWidget(window)
        return window

    return factory


@pytest.fixture
def scenario() -> Iterator[Callable[[str], NvmlBackend]]:
    """scenario(name) -> an opened simulated backend on a stepped clock."""
    opened: list[NvmlBackend] = []

    def factory(name: str, at_s: float = 0.0) -> NvmlBackend:
        backend = open_backend(SourceOptions(demo=name, time_scale="max", start_at_s=at_s,
                                             loop=True))
        opened.append(backend)
        return backend

    yield factory
    for b in opened:
        b.close()


def sample_at(backend: NvmlBackend, t: float) -> Snapshot:
    backend.clock.set_elapsed(t)  # type: ignore[attr-defined]
    return backend.sample()


def feed(window: MainWindow, backend: NvmlBackend, times) -> Snapshot:
    snap = None
    for t in times:
        snap = sample_at(backend, t)
        window.on_snapshot(snap)
    assert snap is not None
    return snap


def drawn_samples(window: MainWindow, monkeypatch) -> list[int]:
    """The sample counts at which ``window`` redraws from now on (its plots' refresh)."""
    calls: list[int] = []
    original = window.plots.refresh

    def spy(*args, **kwargs):
        calls.append(window.samples)
        return original(*args, **kwargs)

    monkeypatch.setattr(window.plots, "refresh", spy)
    return calls


@pytest.fixture
def assistive_tool(qapp, monkeypatch) -> None:
    """As when a screen reader listens: cards keep their accessible descriptions."""
    from gpuwatch.ui.live import gpu_card

    monkeypatch.setattr(gpu_card, "assistive_tool_listens", lambda: True)


def count_events(kind, *watched):
    """A live count of the ``kind`` events each watched object receives:
    ``counter.counts[obj]``."""
    from PySide6.QtCore import QObject

    class Counter(QObject):
        def __init__(self) -> None:
            super().__init__()
            self.counts = dict.fromkeys(watched, 0)
            for w in watched:
                w.installEventFilter(self)

        def eventFilter(self, obj, event) -> bool:
            if event.type() == kind:
                self.counts[obj] += 1
            return False

    return Counter()


@pytest.fixture
def desktop(tmp_path: Path) -> Iterator[dict[str, str]]:
    """An X server and a session bus of our own; yields the environment that reaches them."""
    children: list[subprocess.Popen] = []
    try:
        started = start_display_and_bus(children)
        if started is None:
            pytest.skip("Xvfb or dbus-daemon did not start")
        display, address = started
        runtime = tmp_path / "runtime"
        runtime.mkdir(mode=0o700)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("QT_", "DBUS_", "WAYLAND_", "XDG_"))}
        env.update(DISPLAY=f":{display}", DBUS_SESSION_BUS_ADDRESS=address,
                   XDG_RUNTIME_DIR=str(runtime), XDG_CONFIG_HOME=str(tmp_path / "config"),
                   XDG_STATE_HOME=str(tmp_path / "state"),
                   GPUWATCH_DATA_DIR=str(tmp_path / "data"), PYTHONUNBUFFERED="1")
        yield env
    finally:
        stop_children(children)
