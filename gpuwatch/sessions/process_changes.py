"""A process's memory per sample, rebuilt from the rows where it changed (schema 2).

A ``process_change`` row says: from the ``sample``-th row of the process's GPU on, the
process is listed with ``used_bytes`` (``listed`` 1) or is missing from the listing
(``listed`` 0), until its next row; after its last row, to the GPU's latest sample. The
writer adds a row when a process appears, when its memory changes and when a listing
lacks it, all in the transaction that adds the GPU rows, so a file cut short by a crash
reads right up to its last commit.

Positions, not times, tie the rows to the GPU's samples, so the rebuilt series is the
one a version-1 file held row by row even when the clock stepped back or two samples
share a time: those are returned in time order, ties in the order they were written,
as ``ORDER BY t_s, rowid`` gives them from a version-1 file.
"""

from __future__ import annotations

import numpy as np


def expand(base_t: np.ndarray, sample: np.ndarray, used: np.ndarray,
           listed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(times, bytes) of one process at each of its GPU's samples that listed it.

    ``base_t``: the GPU's sample times in the order written. ``sample``, ``used``,
    ``listed``: the process's rows ordered by sample then as written (bytes as floats,
    NaN where unknown). Rows at or past ``len(base_t)`` (written after the GPU's
    samples were read, in a file being recorded) are left for the next read."""
    n = len(base_t)
    if sample.size:
        last = np.ones(sample.size, dtype=bool)      # of rows at one sample, the last holds
        last[:-1] = sample[1:] != sample[:-1]
        inside = last & (sample < n)
        sample, used, listed = sample[inside], used[inside], listed[inside]
    if not sample.size:
        return np.empty(0), np.empty(0)
    ends = np.empty_like(sample)
    ends[:-1], ends[-1] = sample[1:], n
    starts, lengths, values = sample[listed], (ends - sample)[listed], used[listed]
    total = int(lengths.sum())
    # the runs' positions end to end: each run's start, then counting up
    before = np.cumsum(lengths) - lengths
    positions = np.repeat(starts - before, lengths) + np.arange(total)
    t, out = base_t[positions], np.repeat(values, lengths)
    if t.size > 1 and bool(np.any(t[1:] < t[:-1])):    # the clock stepped back
        order = np.argsort(t, kind="stable")
        t, out = t[order], out[order]
    return t, out.astype(np.float64, copy=False)
