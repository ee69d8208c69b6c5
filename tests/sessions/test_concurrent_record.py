"""Two recorders that start in the same second into the default sessions folder each
keep their own session (names are claimed with O_EXCL), with real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from gpuwatch.sessions.reader import SessionReader
from gpuwatch.sessions.writer import SessionWriter, numbered

ROOT = Path(__file__).resolve().parents[2]


def _env(data_dir: Path) -> dict[str, str]:
    env = dict(os.environ, GPUWATCH_DATA_DIR=str(data_dir), PYTHONPATH=str(ROOT))
    env.pop("GPUWATCH_TIME_SCALE", None)
    return env


# each process loads gpuwatch, then waits for the same instant (early in a second) and
# runs `gpuwatch record`: the default name is the second the recording starts
_AT_ONCE = """
import sys, time
from gpuwatch.cli import main
import gpuwatch.commands.record_cmd
at = float(sys.argv[1])
time.sleep(max(0.0, at - time.time()))
sys.exit(main(sys.argv[2:]))
"""


def test_records_started_together_keep_every_session(tmp_path):
    """Four `record`s started in the same second pick the same default name; each
    must still keep its own whole session."""
    runs = 4
    at = float(int(time.time()) + 3) + 0.05
    cmd = [sys.executable, "-c", _AT_ONCE, str(at), "record", "--demo", "leak",
           "--time-scale", "max", "--duration", "120", "--interval", "1"]
    procs = [subprocess.Popen(cmd, env=_env(tmp_path), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(runs)]
    outputs = [p.communicate(timeout=120) for p in procs]
    for p, (_out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err
        assert "Traceback" not in err
    saved = sorted((tmp_path / "sessions").glob("*.gpuwatch.sqlite"))
    assert len(saved) == runs
    said = {line.rsplit(" ", 1)[-1] for out, _ in outputs for line in out.splitlines()
            if "Session saved to" in line}
    assert said == {str(p) for p in saved}           # each run names its own file
    uuids = set()
    for path in saved:
        with SessionReader(path) as r:
            info = r.info()
            assert info.samples == 121 and info.ended_at_s is not None
            uuids.add(info.uuid)
    assert len(uuids) == runs


def test_a_free_name_is_taken_only_by_one_writer(tmp_path):
    base = tmp_path / "session-x.gpuwatch.sqlite"
    first = SessionWriter(base, free_name=True)
    second = SessionWriter(base, free_name=True)
    try:
        assert first.path == base
        assert second.path == numbered(base, 2) == tmp_path / "session-x-2.gpuwatch.sqlite"
    finally:
        first.close(None)
        second.close(None)


def test_a_given_name_is_never_written_over(tmp_path):
    from gpuwatch.sessions.errors import SessionExistsError

    path = tmp_path / "mine.gpuwatch.sqlite"
    path.write_bytes(b"keep me")
    try:
        SessionWriter(path)
    except SessionExistsError as exc:
        assert "already exists" in str(exc)
    else:
        raise AssertionError("an existing file was accepted")
    assert path.read_bytes() == b"keep me"
    assert not Path(f"{path}-live.lock").exists()
