"""The segments of a card's memory bar: one per process, in a stable order and colour.

A process keeps its place (first seen, first in the bar) and its colour while it stays,
so segments don't jump. Each segment is a tuple made from its pid's remembered colour
and name: a card makes up to 64 every sample. A process that runs the probe has its
segment split into allocated / cached free / outside PyTorch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from gpuwatch.core.probe_format import ProbeReport
from gpuwatch.core.snapshot import ProcessSample
from gpuwatch.core.units import UnitSystem
from gpuwatch.ui.live.card_texts import proc_name
from gpuwatch.ui.live.memory_bar import Segment
from gpuwatch.ui.live.probe_view import probe_split, split_segments
from gpuwatch.ui.widgets import theme


class BarSegments:
    def __init__(self, gpu_index: int):
        self.gpu_index = gpu_index
        self._order: dict[int, int] = {}      # pid -> first-seen rank, so segments don't jump
        self._placed: tuple[int, ...] = ()    # the pids the bar's colours were handed out for
        # pid -> (name, tooltip head, colour) of its bar segment
        self._segment_names: dict[int, tuple[str | None, str, QColor]] = {}
        self.splits: dict[int, list[Segment]] = {}   # pid -> its split's segments

    def in_order(self, processes: Iterable[ProcessSample]) -> list[ProcessSample]:
        """The processes in bar order, their colours handed out for this GPU."""
        processes = list(processes)
        order = self._order
        if len(order) > 1024 + 4 * len(processes):   # processes come and go: forget the gone
            live = {p.pid for p in processes}
            self._order = order = {pid: r for pid, r in order.items() if pid in live}
            self._segment_names = {k: v for k, v in self._segment_names.items() if k in live}
        procs = sorted(processes, key=lambda p: order.setdefault(p.pid, len(order)))
        pids = tuple(p.pid for p in procs)
        if pids != self._placed:    # someone came or went: colours by place in the bar
            self._placed = pids
            for pid in theme.place_processes(self.gpu_index, pids):
                self._segment_names.pop(pid, None)
        return procs

    def build(self, procs: list[ProcessSample], probes: Mapping[int, ProbeReport],
              overlay_pid: int | None, units: UnitSystem
              ) -> tuple[list[Segment], float, float]:
        """(the segments, bytes they hold, where the overlaid process's one starts)."""
        self.splits = {}
        if probes:
            return self._probed(procs, probes, overlay_pid, units)
        return self._plain(procs, overlay_pid, units)

    def _plain(self, procs: list[ProcessSample], overlay_pid: int | None,
               units: UnitSystem) -> tuple[list[Segment], float, float]:
        known = self._segment_names
        make, solid = tuple.__new__, Qt.BrushStyle.SolidPattern
        segments = []
        listed = 0
        overlay_start = 0.0
        for p in procs:
            size = p.used_bytes or 0
            if p.pid == overlay_pid:
                overlay_start = float(listed)
            listed += size
            named = known.get(p.pid)
            if named is None or named[0] != p.name:
                named = known[p.pid] = (p.name, f"{proc_name(p)} (pid {p.pid})",
                                        theme.process_color(p.pid))
            segments.append(make(Segment, (size, named[2], named[1], solid, "", None, units)))
        return segments, listed, overlay_start

    def _probed(self, procs: list[ProcessSample], probes: Mapping[int, ProbeReport],
                overlay_pid: int | None, units: UnitSystem
                ) -> tuple[list[Segment], float, float]:
        segments: list[Segment] = []
        listed = 0
        overlay_start = 0.0
        for p in procs:
            if p.pid == overlay_pid:
                overlay_start = float(listed)
            listed += p.used_bytes or 0
            report = probes.get(p.pid)
            split = None if report is None else probe_split(p.used_bytes, report)
            if split is None:
                segments += self._plain([p], None, units)[0]
            else:
                parts = self.splits[p.pid] = split_segments(proc_name(p), p.pid, split, units)
                segments += parts
        return segments, listed, overlay_start
