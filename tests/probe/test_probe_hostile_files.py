"""Probe documents from a hostile (or broken) training process: nesting tens of
thousands deep under the size cap, byte counts of thousands of digits. Each is ignored
with a reason; sampling goes on, and what is kept stays within bounds."""

from __future__ import annotations

import json
import os
import time

import pytest

from gpuwatch.core.probe_format import MAX_PROBE_BYTES, PROBE_SCHEMA
from gpuwatch.telemetry.probes import ProbeDirectory


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "probes"
    path.mkdir(mode=0o700)
    return path


def _doc(**extra) -> dict:
    return {"schema": PROBE_SCHEMA, "pid": os.getpid(), "published_at_s": time.time(),
            **extra}


@pytest.mark.parametrize("depth", [2_000, 50_000, 120_000])
def test_deep_nesting_is_ignored_and_sampling_goes_on(folder, depth):
    body = b'{"schema":"gpuwatch.probe/1","x":' + b"[" * depth + b"]" * depth + b"}"
    assert len(body) <= MAX_PROBE_BYTES
    (folder / f"{os.getpid()}.json").write_bytes(body)
    reader = ProbeDirectory(folder)
    assert reader.read([os.getpid()]) == {}
    assert "unreadable" in reader.rejected[os.getpid()]
    # the next good document is read as usual
    (folder / f"{os.getpid()}.json").write_text(json.dumps(_doc()))
    assert os.getpid() in reader.read([os.getpid()])


@pytest.mark.parametrize("digits", [19, 300, 4000])
def test_byte_counts_of_many_digits_are_refused(folder, digits):
    text = json.dumps(_doc(allocator={"reserved_bytes": 0}))
    text = text.replace('"reserved_bytes": 0', '"reserved_bytes": ' + "9" * digits)
    (folder / f"{os.getpid()}.json").write_text(text)
    reader = ProbeDirectory(folder)
    assert reader.read([os.getpid()]) == {}
    why = reader.rejected[os.getpid()]
    assert "allocator.reserved_bytes must be a whole number from 0 to 2**60" in why
    assert len(why) < 200
