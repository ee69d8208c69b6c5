"""Recording real scenarios through the real backend into real session files."""

from __future__ import annotations

from pathlib import Path

from gpuwatch.sessions.recorder import Recorder
from gpuwatch.telemetry.source import SourceOptions, open_backend


def record_scenario(path: Path, scenario: str, until_s: float | None = None,
                    step_s: float = 1.0) -> Path:
    """Sample ``scenario`` on a stepped clock into a session file at ``path``."""
    backend = open_backend(SourceOptions(demo=scenario, time_scale="max"))
    end = until_s if until_s is not None else backend.scenario_duration_s
    recorder = Recorder(path, step_s)
    t = 0.0
    try:
        while t <= end:
            backend.clock.set_elapsed(t)
            recorder.add_snapshot(backend.sample())
            t += step_s
    finally:
        backend.close()
        recorder.close(backend.clock.now_s())
    assert recorder.error is None
    return path
