"""scripts/system-deps.sh: says what it installs and why, and waits out a held apt lock."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "system-deps.sh"


@pytest.fixture
def fake_apt(tmp_path):
    """dpkg-query that finds nothing installed, and an apt-get that fails with a held
    lock for its first ``LOCKED`` calls; every call is logged."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls"
    (bin_dir / "dpkg-query").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "apt-get").write_text(f"""#!/bin/sh
echo "$*" >> {log}
n=$(wc -l < {log})
if [ "$n" -le "${{LOCKED:-0}}" ]; then
  echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 42 (apt-get)" >&2
  exit 100
fi
exit 0
""")
    (bin_dir / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return bin_dir, log


def _run(bin_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
                               "LOCK_WAIT_S": "0", **env}, timeout=60)


def test_it_says_what_it_installs_and_why(fake_apt):
    bin_dir, log = fake_apt
    result = _run(bin_dir, "test")
    assert result.returncode == 0, result.stderr
    assert "installing" in result.stdout and "xvfb" in result.stdout and "gcc" in result.stdout
    assert "the app needs Qt's" in result.stdout and "the tests also need" in result.stdout
    calls = log.read_text().splitlines()
    assert calls[0].endswith("update -qq") and "install" in calls[1]
    assert all("DPkg::Lock::Timeout=0" in c for c in calls)


def test_a_held_lock_is_waited_for(fake_apt):
    bin_dir, log = fake_apt
    result = _run(bin_dir, LOCKED="2")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("holds the package lock; waiting") == 2
    assert len(log.read_text().splitlines()) == 4       # two refusals, update, install


def test_a_lock_that_is_never_released_fails_with_apts_words(fake_apt):
    bin_dir, _ = fake_apt
    result = _run(bin_dir, LOCKED="99", LOCK_WAIT_TRIES="3")
    assert result.returncode != 0
    assert "Could not get lock" in result.stderr and "failed" in result.stderr
