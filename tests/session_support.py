"""Recording real scenarios through the real backend into real session files."""

from __future__ import annotations

from pathlib import Path

from gpuwatch.advisor import Advisor
from gpuwatch.core.history import History
from gpuwatch.sessions.recorder import Recorder
from gpuwatch.telemetry.source import SourceOptions, open_backend


def record_scenario(path: Path, scenario: str, until_s: float | None = None,
                    step_s: float = 1.0, advisor: bool = False) -> Path:
    """Sample ``scenario`` on a stepped clock into a session file at ``path``; with
    ``advisor``, the advisor runs too and its hint events are stored, as in `gpuwatch
    record`."""
    backend = open_backend(SourceOptions(demo=scenario, time_scale="max"))
    end = until_s if until_s is not None else backend.scenario_duration_s
    recorder = Recorder(path, step_s)
    history, rules = History(), Advisor() if advisor else None
    t = 0.0
    try:
        while t <= end:
            backend.clock.set_elapsed(t)
            snap = backend.sample()
            recorder.add_snapshot(snap)
            if rules is not None:
                history.append(snap)
                for event in rules.update(history):
                    recorder.add_hint_event(event)
            t += step_s
    finally:
        backend.close()
        recorder.close(backend.clock.now_s())
    assert recorder.error is None
    return path
