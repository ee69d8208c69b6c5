"""On a full disk `record` says exactly what the file holds: the samples a reader finds
in it, or none, and exits 1 (real processes; the disk fills at a file-size limit)."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.reader import SessionReader

ROOT = Path(__file__).resolve().parents[2]


def _record_with_limit(out: Path, limit: int) -> subprocess.CompletedProcess:
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))   # EFBIG past it

    return subprocess.run([sys.executable, "-m", "gpuwatch", "record", "--demo", "leak",
                           "--time-scale", "max", "--duration", "7200", "--out", str(out)],
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), preexec_fn=limited,
                          capture_output=True, text=True, timeout=300)


def _samples(path: Path) -> int:
    try:
        with SessionReader(path) as r:
            return r.info().samples
    except SessionFileError:
        return 0


@pytest.mark.parametrize("limit", [60_000, 150_000, 400_000])
def test_a_full_disk_ending_says_what_the_file_holds(tmp_path, limit):
    out = tmp_path / "full.gpuwatch.sqlite"
    done = _record_with_limit(out, limit)
    assert "Traceback" not in done.stderr
    assert "Session saved to" not in done.stdout + done.stderr
    if not out.exists():           # the disk was full before the file could be made
        assert done.returncode in (1, 2) and "cannot be" in done.stderr
        assert not list(tmp_path.iterdir())          # nothing half-made is left
        return
    assert done.returncode == 1, done.stderr
    held = _samples(out)
    said = re.search(r"the recording failed; ([\d,]+) of the ([\d,]+) samples taken are "
                     r"saved in", done.stderr)
    if said is None:
        assert "no samples were saved" in done.stderr, done.stderr
        assert held == 0
    else:
        assert int(said.group(1).replace(",", "")) == held > 0
        assert int(said.group(2).replace(",", "")) >= held
