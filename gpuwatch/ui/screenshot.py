"""`gpuwatch gui --screenshot PNG`: render the window after some sampling, save it, exit.

On real GPUs it samples for ``--screenshot-after`` wall seconds (default 3). On simulated
GPUs it steps the scenario's virtual clock instead, so the picture shows a representative
stretch at once: ``--screenshot-after`` virtual seconds (default 10 min) of 1 Hz history
ending at a moment chosen per scenario (below), and any process whose command line
names a catalog model (``--model gpt2-medium --batch 8 …``) is linked to that budget.
Settings come from a throwaway file, so the picture does not depend on the user's.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from PySide6.QtCore import (
    QMessageLogContext,
    QTimer,
    QtMsgType,
    qFormatLogMessage,
    qInstallMessageHandler,
)

from gpuwatch.core.output_paths import still_safe_to_replace
from gpuwatch.core.snapshot import BackendKind
from gpuwatch.sessions.protected import overwrite_problem
from gpuwatch.telemetry.source import SourceOptions, open_backend
from gpuwatch.ui import app as app_module
from gpuwatch.ui.live.budget_adapter import predict, request_from_cmdline
from gpuwatch.ui.live.main_window import MainWindow
from gpuwatch.ui.live.process_model import MEMORY

# scenario -> the virtual second a screenshot shows (something is happening then)
SCREENSHOT_AT_S = {
    "workstation": 1800,     # the notebook on GPU 1 just stepped up; training on GPU 0
    "multi-gpu-ddp": 1200,
    "faults": 85,            # GPU 1 off the bus, GPU 0 failing its temperature reads
    "fragmentation": 900,
    "oom-ramp": 500,
    "leak": 1500,
    "churn": 300,
}
SCREENSHOT_WINDOW_S = {"faults": 60}   # plot window when the story is short
DEFAULT_SIM_SPAN_S = 600.0
DEFAULT_REAL_WAIT_S = 3.0
WINDOW_SIZE = (1600, 1000)


# Qt's offscreen platform says this each time a shown window's minimum size changes (its
# layout settling): noise about a feature it lacks, not about the picture.
OFFSCREEN_NOISE = "This plugin does not support propagateSizeHints()"


@contextmanager
def quiet_offscreen_noise() -> Iterator[None]:
    """Drop exactly :data:`OFFSCREEN_NOISE` from Qt's messages while this runs; every other
    message goes where it went before (the previous handler, or stderr as Qt writes it)."""
    previous = None

    def handler(mode: QtMsgType, context: QMessageLogContext, message: str) -> None:
        if message == OFFSCREEN_NOISE:
            return
        if previous is not None:
            previous(mode, context, message)
        else:
            sys.stderr.write(qFormatLogMessage(mode, context, message) + "\n")

    previous = qInstallMessageHandler(handler)
    try:
        yield
    finally:
        qInstallMessageHandler(previous)


def _image_format(out: Path) -> str:
    """The image format ``out``'s extension names, if Qt can write it; else exit 2
    before anything is rendered or written."""
    from PySide6.QtGui import QImageWriter

    suffix = out.suffix.lower().lstrip(".")
    known = sorted(bytes(f.data()).decode("ascii", "replace").lower()
                   for f in QImageWriter.supportedImageFormats())
    if suffix not in known:
        kind = f"images of type .{suffix}" if suffix else "an image without an extension"
        print(f"gpuwatch: {out}: cannot write {kind}; end the screenshot's name in one "
              f"of .{', .'.join(known)} (nothing was written)", file=sys.stderr)
        raise SystemExit(2)
    return suffix


def _check_target(out: Path, inputs: tuple[str, ...]) -> str:
    """The image format, once ``out`` is known to be writable and neither an input
    nor a session; else exit 2."""
    fmt = _image_format(out)
    problem = overwrite_problem(out, "screenshot", [i for i in inputs if i])
    if problem is not None:
        print(f"gpuwatch: {problem}", file=sys.stderr)
        raise SystemExit(2)
    return fmt


def take_screenshot(opts: app_module.LaunchOptions) -> int:
    with quiet_offscreen_noise():
        return _take_screenshot(opts)


def _take_screenshot(opts: app_module.LaunchOptions) -> int:
    assert opts.screenshot
    _check_target(Path(opts.screenshot), (opts.demo or "",))    # before any sampling
    backend, banner, fallback = app_module.open_source(opts)
    app = app_module.application()
    settings = app_module.scratch_settings()
    prefs = settings.preferences()
    prefs.theme = opts.theme or "system"
    if opts.interval_s:
        prefs.interval_s = opts.interval_s
    settings.set_preferences(prefs)
    window = MainWindow(settings, banner, fallback)
    window.resize(*WINDOW_SIZE)
    out = Path(opts.screenshot)

    if backend.info.kind is BackendKind.SIMULATED:
        demo = app_module.FALLBACK_SCENARIO if fallback else opts.demo
        name = backend.info.scenario or ""
        backend.close()
        _prefill(window, demo or "", name, prefs.interval_s, opts.screenshot_after_s)
        window.set_sampling_state("● Sampling")
        window.show()
        _finish(window, out, (opts.demo or "",))
        return 0

    session = app_module.SamplingSession(backend, window, prefs.interval_s)
    session.start()
    window.show()
    wait = DEFAULT_REAL_WAIT_S if opts.screenshot_after_s is None else opts.screenshot_after_s
    QTimer.singleShot(int(wait * 1000), app.quit)
    app.exec()
    session.stop()
    backend.close()
    _finish(window, out, (opts.demo or "",))
    return 0


def _prefill(window: MainWindow, demo: str, name: str, interval_s: float,
             span_s: float | None) -> None:
    probe = open_backend(SourceOptions(demo=demo, time_scale="max"))
    duration = probe.scenario_duration_s
    probe.close()
    end = min(SCREENSHOT_AT_S.get(name, 600), duration)
    span = DEFAULT_SIM_SPAN_S if span_s is None else span_s
    start = max(0.0, end - span)
    backend = open_backend(SourceOptions(demo=demo, time_scale="max", start_at_s=start,
                                         loop=True))
    try:
        clock = backend.clock
        steps = int((end - start) / interval_s)
        snaps = []
        for i in range(steps + 1):
            clock.set_elapsed(start + i * interval_s)  # type: ignore[attr-defined]
            snaps.append(backend.sample())
    finally:
        backend.close()
    window.plots.set_window(SCREENSHOT_WINDOW_S.get(name, window.prefs.plot_window_s))
    window.on_snapshots(snaps[:-1])
    linked = None
    for p in snaps[-1].processes:
        request = request_from_cmdline(p.cmdline, gpus=len(snaps[-1].gpus))
        gpu = snaps[-1].gpu(p.gpu_index)
        capacity = gpu.memory.total_bytes if gpu is not None else None
        prediction = None if request is None else predict(request)
        # only a budget that fits the GPU makes a meaningful overlay for the picture
        if request is not None and prediction is not None and capacity and \
                prediction.total_bytes <= capacity:
            window.links.link(p.cmdline, request)
            linked = linked or (p.gpu_index, p.pid)
    window.on_snapshots(snaps[-1:])
    window.processes.table.sortByColumn(MEMORY, window.processes.model._sort_order)
    if linked is not None:
        window.processes.select(linked)
        window.refresh()


def _finish(window: MainWindow, out: Path, inputs: tuple[str, ...] = ()) -> None:
    """Render the window into ``out``. Nothing at ``out`` is touched until the image
    is whole: the format is checked first (an extension Qt cannot encode is refused,
    exit 2), the image goes to a temporary file beside ``out`` and is renamed over it,
    and an input or a session is never the target (exit 2)."""
    fmt = _check_target(out, inputs)
    app = app_module.application()
    for _ in range(3):
        app.processEvents()
    window.fit_cards()
    app.processEvents()
    window.plots.refresh(force=True)
    window.processes.refresh()
    app.processEvents()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    except OSError as exc:
        print(f"gpuwatch: could not write {out} ({exc.strerror or exc})", file=sys.stderr)
        raise SystemExit(1) from None
    os.close(fd)
    try:
        if not window.grab().save(tmp, fmt):
            raise OSError(f"Qt could not encode the image as {fmt}")
        os.chmod(tmp, 0o644)
        if not still_safe_to_replace(out) or \
                overwrite_problem(out, "screenshot", [i for i in inputs if i]):
            raise OSError("something else was put there meanwhile")
        os.replace(tmp, out)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        print(f"gpuwatch: could not write {out} ({exc.strerror or exc})", file=sys.stderr)
        raise SystemExit(1) from None
    window.hide()
    window.deleteLater()
