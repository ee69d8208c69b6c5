"""The advisor's full hint event stream on every shipped scenario (and on a crowded
synthetic one) is pinned: every event's time, kind, code, GPU, pid, severity, title,
evidence and values must match the stream recorded in ``data/hint_streams.json``.

The advisor and the history are tuned for speed (vectorised reads, cheap tests that
skip work which cannot change a result); this check says the tuning changed no hint.
Regenerate the file only for a deliberate change of the advisor's behaviour:
``python tests/advisor/test_advisor_hint_streams.py --write``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gpuwatch.advisor import Advisor
from gpuwatch.budget import Setup, Workload, estimate, lookup_model
from gpuwatch.core.history import History
from gpuwatch.core.resources import resource_path
from gpuwatch.telemetry.source import SourceOptions, open_backend

DATA = Path(__file__).with_name("data") / "hint_streams.json"
LONGEST_S = 3600          # virtual seconds per scenario, at 1 s steps
CROWD = "crowd"           # the synthetic scenario written below
EPOCH_S = 1_750_000_000.0  # the clock's start: times as large as today's, fixed


def _link(advisor: Advisor, gpu: int, pid: int, model: str, batch: int, seq: int,
          **setup: object) -> None:
    spec = lookup_model(model)
    advisor.link(gpu, pid, estimate(spec, Workload(batch=batch, seq=seq),
                                    Setup(**setup)), spec)   # type: ignore[arg-type]


def _links(name: str, advisor: Advisor) -> None:
    """The budget links the scenarios were built with (as in the advisor benchmarks)."""
    if name == "workstation":
        _link(advisor, 0, 48211, "gpt2-medium", 8, 1024, precision="amp-bf16",
              flash_attention=True)
    elif name == "fragmentation":
        _link(advisor, 0, 66120, "gpt2-medium", 8, 1024, precision="amp-bf16")
    elif name == "contention":
        for pid in (5100, 5200):
            _link(advisor, 0, pid, "gpt2-medium", 12, 1024, precision="amp-bf16")
    elif name == "underused":
        _link(advisor, 0, 7300, "gpt2", 4, 1024)
    elif name == CROWD:
        _link(advisor, 1, 2003, "gpt2-medium", 8, 1024, precision="amp-bf16")


def crowd_scenario(path: Path) -> Path:
    """2 GPUs × 24 processes of every shape the rules look at: flat, stepping, leaking,
    sawtooth, late starts, early ends, one that holds half the card."""
    lines = ['schema = "gpuwatch.scenario/1"', f'name = "{CROWD}"',
             'description = "A crowded box."', "duration_s = 3600"]
    for _ in range(2):
        lines += ["[[gpus]]", 'name = "NVIDIA A100-SXM4-40GB"', 'memory_total = "40960MiB"',
                  'memory_base = "300MiB"', 'memory_reserved = "500MiB"']
    shapes = [
        '{ generator = "leak", low = "600MiB", high = "900MiB", period_s = 3, '
        'leak_per_min = "40MiB" }',
        '{ generator = "sawtooth", low = "700MiB", high = "1200MiB", period_s = 4 }',
        '[[0, "100MiB"], [90, "800MiB"], [1500, "800MiB"], [1560, "1300MiB"], '
        '[3600, "1300MiB"]]',
        '[[0, "200MiB"], [3600, "1900MiB"]]',
        '"750MiB"',
    ]
    pid = 2000
    for gpu in range(2):
        for rank in range(24):
            pid += 1
            shape = shapes[rank % len(shapes)]
            start = 0 if rank % 3 else 60 * rank
            lines += ["[[processes]]", f"pid = {pid}", f"gpu = {gpu}", 'name = "python3"',
                      f'cmdline = ["python3", "train.py", "--rank", "{rank}"]',
                      'user = "ann"', f"start_s = {start}", f"memory = {shape}",
                      f"gpu_util_percent = {40 + rank}"]
            if rank % 7 == 6:
                lines.append(f"end_s = {start + 900}")
    lines += ["[[processes]]", "pid = 2200", "gpu = 0", 'name = "python3"',
              "start_s = 1800", 'memory = "3GiB"', "gpu_util_percent = 60",
              "[[processes]]", "pid = 2100", "gpu = 1", 'name = "python3"', "start_s = 300",
              'memory = [[0, "1GiB"], [600, "20GiB"], [3600, "24GiB"]]',
              "gpu_util_percent = 95"]
    path.write_text("\n".join(lines) + "\n")
    return path


def stream(demo: str, name: str, duration_s: float) -> list[list]:
    """Every hint event of a run at 1 s steps: [t, kind, code, gpu, pid, severity, title,
    evidence, values]."""
    backend = open_backend(SourceOptions(demo=demo, time_scale="max"))
    backend.clock.epoch_s = EPOCH_S     # type: ignore[attr-defined]  # same rounding each run
    advisor, history = Advisor(), History()
    _links(name, advisor)
    out: list[list] = []
    try:
        for i in range(int(duration_s) + 1):
            backend.clock.set_elapsed(float(i))   # type: ignore[attr-defined]
            snap = backend.sample()
            history.append(snap)
            t0 = snap.timestamp_s - i       # times in values are the clock's: made relative
            for e in advisor.update(history):
                h = e.hint
                values = [[k, v - t0 if k.endswith("_at_s") and v is not None else v]
                          for k, v in h.values]
                out.append([float(i), e.kind.value, h.code, h.gpu_index, h.pid,
                            h.severity.value, h.title, list(h.evidence), values])
    finally:
        backend.close()
    return out


def _duration(path: Path) -> float:
    for line in path.read_text().splitlines():
        if line.startswith("duration_s"):
            return min(LONGEST_S, float(line.split("=")[1]))
    return LONGEST_S


def cases(tmp: Path) -> dict[str, tuple[str, float]]:
    found = {p.stem: (str(p), _duration(p))
             for p in sorted(resource_path("scenarios").glob("*.toml"))}
    found[CROWD] = (str(crowd_scenario(tmp / f"{CROWD}.toml")), LONGEST_S)
    return found


def _pinned() -> dict[str, list[list]]:
    return json.loads(DATA.read_text())


@pytest.mark.parametrize("name", sorted(
    [p.stem for p in resource_path("scenarios").glob("*.toml")] + [CROWD]))
def test_hint_stream_matches_the_pinned_one(name: str, tmp_path: Path) -> None:
    demo, duration = cases(tmp_path)[name]
    expected = _pinned()[name]
    got = json.loads(json.dumps(stream(demo, name, duration)))   # as the file holds it
    assert got == expected


def test_every_shipped_scenario_is_pinned() -> None:
    shipped = {p.stem for p in resource_path("scenarios").glob("*.toml")}
    assert shipped | {CROWD} == set(_pinned())


def main() -> None:
    import tempfile
    if "--write" not in sys.argv:
        raise SystemExit("usage: test_advisor_hint_streams.py --write")
    with tempfile.TemporaryDirectory() as tmp:
        pinned = {name: stream(demo, name, duration)
                  for name, (demo, duration) in cases(Path(tmp)).items()}
    DATA.parent.mkdir(exist_ok=True)
    DATA.write_text(json.dumps(pinned, indent=0, ensure_ascii=False) + "\n")
    print({k: len(v) for k, v in pinned.items()})


if __name__ == "__main__":
    main()
