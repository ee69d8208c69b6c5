"""A session keeps the measured bandwidth (GPM) beside the estimate, by name, in the file
and in the report's CSV; files written before the column existed read it as unknown."""

from __future__ import annotations

import math
import shutil
import sqlite3

import numpy as np
from session_support import record_scenario

from gpuwatch.sessions.reader import GPU_DETAIL_COLUMNS, SessionReader


def test_measured_and_estimated_bandwidth_are_kept_apart(tmp_path):
    path = record_scenario(tmp_path / "ddp.gpuwatch.sqlite", "multi-gpu-ddp", until_s=20)
    with SessionReader(path) as reader:
        series = reader.gpu_series(0, ("t_s", "estimated_bandwidth_bytes_per_s",
                                       "measured_bandwidth_bytes_per_s"))
        detail = reader.gpu_series(0, GPU_DETAIL_COLUMNS)
    measured, estimated = series["measured_bandwidth_bytes_per_s"], \
        series["estimated_bandwidth_bytes_per_s"]
    assert math.isnan(measured[0])                  # GPM needs a pair: not on the first
    assert np.all(measured[1:] <= estimated[1:]) and np.all(measured[1:] >= 0)
    assert np.any(measured[1:] > 0) and not np.array_equal(measured[1:], estimated[1:])
    assert np.array_equal(detail["measured_bandwidth_bytes_per_s"], measured,
                          equal_nan=True)


def test_a_file_without_the_column_reads_it_as_unknown(tmp_path):
    path = record_scenario(tmp_path / "ddp.gpuwatch.sqlite", "multi-gpu-ddp", until_s=5)
    old = tmp_path / "old.gpuwatch.sqlite"
    shutil.copy(path, old)
    with sqlite3.connect(old) as conn:
        conn.execute("ALTER TABLE gpu_sample DROP COLUMN measured_bandwidth_bytes_per_s")
    conn.close()
    with SessionReader(old) as reader:
        series, states = reader.gpu_samples(0)
        before = SessionReader(path).gpu_samples(0)[0]
    assert np.all(np.isnan(series["measured_bandwidth_bytes_per_s"]))
    assert set(states) == {"ok"}
    for name, values in series.items():          # everything else as in the newer file
        if name != "measured_bandwidth_bytes_per_s":
            assert np.array_equal(values, before[name], equal_nan=True), name
