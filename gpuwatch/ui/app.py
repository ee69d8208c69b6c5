"""Starting the window: pick the telemetry source, run the sampler, wire it to the GUI.

Without ``--demo`` the real NVML is tried first; when it is unavailable the window opens
on the simulated ``workstation`` scenario with a banner that says why.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import tempfile
from dataclasses import dataclass

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QApplication

from gpuwatch.core import logs
from gpuwatch.core.gpu_selection import GpuSelection
from gpuwatch.core.snapshot import BackendKind
from gpuwatch.telemetry.errors import NvmlUnavailableError
from gpuwatch.telemetry.nvml import NvmlBackend
from gpuwatch.telemetry.sampler import Sampler
from gpuwatch.telemetry.source import SourceOptions, open_backend
from gpuwatch.ui import autostart
from gpuwatch.ui.app_icon import app_icon
from gpuwatch.ui.live.bridge import SnapshotBridge
from gpuwatch.ui.live.main_window import MainWindow
from gpuwatch.ui.qt_log import route_qt_messages
from gpuwatch.ui.sessions.recording import RecordingController
from gpuwatch.ui.settings import Preferences, Settings
from gpuwatch.ui.single_instance import SingleInstance, server_name
from gpuwatch.ui.system_theme import SystemThemeFollower
from gpuwatch.ui.tray import TrayController
from gpuwatch.ui.unix_signals import SignalQuit

FALLBACK_SCENARIO = "workstation"
log = logging.getLogger(__name__)


@dataclass
class LaunchOptions:
    demo: str | None = None              # None: real NVML (falling back to the demo)
    interval_s: float | None = None      # None: the saved preference
    time_scale: float | str = 1.0
    screenshot: str | None = None        # render to this PNG and exit
    screenshot_after_s: float | None = None
    theme: str | None = None             # overrides the saved theme for this run
    settings_path: str | None = None     # an ini file instead of the user's settings
    tray: bool = False                   # start in the tray (minimised where there is none)
    single_instance: bool = True         # hand over to a window already running
    prometheus: str | None = None        # read the GPUs of many hosts from this server
    match: tuple = ()                    # with prometheus: the label matchers (--match)
    gpus: GpuSelection | None = None     # only these GPUs (-i/--id); not with prometheus


def open_source(opts: LaunchOptions) -> tuple[NvmlBackend, str | None, bool]:
    """(backend, banner text, fell back?) — raises ScenarioError for a bad --demo."""
    if opts.prometheus is not None:
        from gpuwatch.ui.live.host_headers import cluster_banner

        backend = open_backend(SourceOptions(prometheus=opts.prometheus, match=opts.match))
        return backend, cluster_banner(opts.prometheus, backend.hosts), False
    if opts.demo is None:
        try:
            return open_backend(SourceOptions(gpus=opts.gpus)), None, False
        except NvmlUnavailableError as exc:
            backend = open_backend(SourceOptions(demo=FALLBACK_SCENARIO, loop=True,
                                                 time_scale=opts.time_scale, gpus=opts.gpus))
            from html import escape

            from gpuwatch.telemetry.nvml.translate import INIT_FAILURES

            # one sentence: "no NVIDIA driver found: the NVML library … is not installed"
            reason = (INIT_FAILURES.get(exc.code) or exc.reason).strip().rstrip(".")
            if reason[1:2].islower():        # "The driver…" -> "the driver…"; "NVML…" stays
                reason = reason[0].lower() + reason[1:]
            return backend, (f"<b>Simulated GPUs</b> — {escape(reason, quote=False)}. This is "
                             f"the '{FALLBACK_SCENARIO}' demo, not your hardware."), True
    backend = open_backend(SourceOptions(demo=opts.demo, loop=True, time_scale=opts.time_scale,
                                         gpus=opts.gpus))
    return backend, (f"<b>Simulated GPUs</b> — scenario '{backend.info.scenario}' "
                     "(demo mode), not real hardware."), False


# Out of sight, the GUI thread is woken for the samples of about this many seconds at
# once (two at the usual 1 s; one, i.e. every sample, from a 1.5 s interval up)
REST_WAKE_S = 2.0


class SamplingSession(QObject):
    """Owns the sampler thread; restarts it when the interval changes, stops it on close."""

    def __init__(self, backend: NvmlBackend, window: MainWindow, interval_s: float):
        super().__init__(window)
        self.backend = backend
        self.window = window
        self.interval_s = interval_s
        self.bridge = SnapshotBridge(self)
        self.bridge.snapshots.connect(window.on_snapshots, Qt.ConnectionType.QueuedConnection)
        self.bridge.failed.connect(self._failed, Qt.ConnectionType.QueuedConnection)
        self.bridge.finished.connect(self._finished, Qt.ConnectionType.QueuedConnection)
        window.preferences_changed.connect(self._preferences)
        window.closing.connect(self.stop)
        window.sight_changed.connect(backend.set_host_detail)
        window.sight_changed.connect(self._sight)
        self.sampler: Sampler | None = None
        self._stopping = False
        self._seen = True

    def start(self) -> None:
        self._stopping = False
        self.sampler = Sampler(self.backend, self.interval_s, self.bridge.push,
                               self.bridge.error, on_finished=self.bridge.done).start()
        self.window.set_sampling_state("● Sampling")

    def stop(self) -> None:
        self._stopping = True
        if self.sampler is not None:
            self.bridge.close()          # a sampler waiting for the window must not block
            self.sampler.stop()
            self.bridge.reopen()
            self.sampler = None

    def _preferences(self, prefs: Preferences) -> None:
        if abs(prefs.interval_s - self.interval_s) > 1e-9:
            self.interval_s = prefs.interval_s
            self.stop()
            self._sight(self._seen)
            self.start()

    def _sight(self, seen: bool) -> None:
        """Out of sight, the window takes its samples about every ``REST_WAKE_S``."""
        self._seen = seen
        self.bridge.set_batch(1 if seen else round(REST_WAKE_S / self.interval_s))
        pace = self.window.pace
        drawn = f"calmly, every {pace.calm_s:g} s while nothing moves" if pace.calm \
            else "every sample"
        log.info("window %s", f"in sight: drawn {drawn}" if seen else
                 "out of sight: resting, nothing drawn")

    def _failed(self, message: str) -> None:
        self.window.statusBar().showMessage(f"A sample failed: {message}", 5000)

    def _finished(self) -> None:
        if not self._stopping:
            self.window.set_sampling_state("Sampling stopped")


def _ensure_platform(screenshot: bool) -> None:
    no_display = not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    if screenshot and no_display:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def application() -> QApplication:
    app = QApplication.instance()
    if isinstance(app, QApplication):
        return app
    app = QApplication(sys.argv[:1])
    app.setApplicationName("gpuwatch")
    app.setOrganizationName("gpuwatch")
    app.setDesktopFileName("gpuwatch")          # packaging/gpuwatch.desktop
    app.setWindowIcon(app_icon())
    return app


def freeze_startup_heap() -> None:
    """Collect once, then move every object alive now into the collector's permanent
    generation.

    After start-up the interpreter holds ~150,000 tracked objects (Qt wrappers,
    pyqtgraph, numpy, the window) that live as long as the app. A full collection walks
    all of them: ~70 ms on the GUI thread, a visible stall that came every few minutes
    while sampling. Frozen, they are never walked again; a full collection then takes
    well under a millisecond. Frozen objects still die by reference counting; only a
    reference cycle among them would outlive its use."""
    gc.collect()
    gc.freeze()


def launch(opts: LaunchOptions) -> int:
    _ensure_platform(bool(opts.screenshot))
    if opts.screenshot:
        from gpuwatch.ui.screenshot import take_screenshot

        return take_screenshot(opts)
    backend, banner, fallback = open_source(opts)
    if logs.current().file is not None:       # the window's run keeps a log file
        route_qt_messages()
    app = application()
    settings = Settings(opts.settings_path)
    instance = SingleInstance(server_name(settings.path))
    token = os.environ.get("XDG_ACTIVATION_TOKEN", "")   # Wayland: the launcher's token
    if opts.single_instance and not instance.claim("tray" if opts.tray else "show", token):
        backend.close()
        if not opts.tray:
            print("gpuwatch is already running: its window was brought forward.")
        return 0
    if opts.theme:
        prefs = settings.preferences()
        prefs.theme = opts.theme
        settings.set_preferences(prefs)
    window = MainWindow(settings, banner, fallback)
    window.rest_when_hidden = True      # no drawing while in the tray or minimised
    window.pace.set_calm(not window.prefs.redraw_every_sample)
    interval = opts.interval_s or window.prefs.interval_s
    if opts.interval_s:
        window.prefs.interval_s = opts.interval_s
    window._update_status()
    session = SamplingSession(backend, window, interval)
    recording = RecordingController(window, interval)
    session.bridge.snapshots.connect(recording.on_snapshots)
    if opts.prometheus is not None:      # the banner counts the hosts that do not answer
        from gpuwatch.ui.live.host_headers import ClusterBanner

        cluster = ClusterBanner(window.banner_label, opts.prometheus)
        session.bridge.snapshots.connect(cluster.on_snapshots)
    session.start()
    tray = TrayController(window)
    instance.activated.connect(lambda message, token: _second_launch(message, token, tray))
    window.preferences_changed.connect(lambda prefs: _apply_start_at_login(prefs, window))
    window.preferences_changed.connect(
        lambda prefs: window.pace.set_calm(not prefs.redraw_every_sample))
    SystemThemeFollower(window)
    if not opts.tray:
        window.show()
    elif not tray.available:
        window.showMinimized()         # no tray to live in: minimised, never invisible
    QTimer.singleShot(0, freeze_startup_heap)     # once the window is up

    def quit_on_signal(signum: int) -> None:
        window.quit()          # saves the window's state, as closing it does
        app.quit()             # and ends the loop even where the tray kept it alive

    signals = SignalQuit(quit_on_signal, parent=window)
    try:
        return app.exec()
    finally:
        signals.restore()
        instance.close()
        session.stop()
        recording.close()
        backend.close()


def _second_launch(message: str, token: str, tray: TrayController) -> None:
    """A second ``gpuwatch`` was started: bring this window forward (a login autostart,
    "tray", asks for nothing). On Wayland, Qt activates with the launcher's token."""
    if message == "show":
        if token:
            os.environ["XDG_ACTIVATION_TOKEN"] = token
        tray.show_window()


def _apply_start_at_login(prefs: Preferences, window: MainWindow) -> None:
    try:
        autostart.set_enabled(prefs.start_at_login)
    except OSError as exc:
        window.statusBar().showMessage(
            f"Start at login: cannot write {autostart.autostart_path()}: "
            f"{exc.strerror or exc}", 8000)
    else:
        log.info("start at login %s", "on" if prefs.start_at_login else "off")


def scratch_settings() -> Settings:
    """Settings in a fresh temporary file: screenshots and tests never see the user's."""
    handle, path = tempfile.mkstemp(prefix="gpuwatch-", suffix=".ini")
    os.close(handle)
    os.unlink(path)
    return Settings(path)


def is_simulated(backend: NvmlBackend) -> bool:
    return backend.info.kind is BackendKind.SIMULATED
