"""The completion writer's output folder: a bad one is exit 2 with one sentence, never a
traceback, and no missing parent folder is ever created."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _write_all(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuwatch.commands.completion", "--all",
                           str(folder)], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True)


@pytest.mark.parametrize("kind", ["missing-parents", "a-file", "a-fifo", "under-a-file"])
def test_a_bad_output_folder_is_refused_in_one_sentence(tmp_path, kind):
    target = {"missing-parents": tmp_path / "no" / "such" / "dir",
              "a-file": tmp_path / "file", "a-fifo": tmp_path / "fifo",
              "under-a-file": tmp_path / "file" / "dir"}[kind]
    (tmp_path / "file").write_text("mine")
    os.mkfifo(tmp_path / "fifo")
    before = sorted(p.name for p in tmp_path.iterdir())
    done = _write_all(target)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "cannot write the completions into" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "file").read_text() == "mine"


def test_a_new_folder_inside_an_existing_one_is_made(tmp_path):
    done = _write_all(tmp_path / "completions")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "completions").iterdir()) == \
        ["_gpuwatch", "gpuwatch.bash", "gpuwatch.fish"]
