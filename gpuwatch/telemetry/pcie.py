"""PCIe throughput on its own thread: each NVML PCIe read blocks ~20 ms while it samples.

Eight GPUs x (TX + RX) would stall a memory reading by ~320 ms if read inline, so a
background poller reads them in turn and the sampler takes the latest values. On a real
driver each read also costs 0.5-0.9 ms of CPU (an H200, driver 580): at a round a second
that is up to 0.2 % of a core per GPU, more than the rest of a sample. While nobody
looks at the rates the poller rests (:meth:`PciePoller.set_interval`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PcieReading:
    tx_bytes_per_s: float | None
    rx_bytes_per_s: float | None


ReadPcie = Callable[[int], PcieReading | None]   # GPU index -> reading (None: GPU unusable)


class PciePoller:
    def __init__(self, read: ReadPcie, gpu_indices: Callable[[], list[int]],
                 interval_s: float = 1.0):
        self._read = read
        self._gpu_indices = gpu_indices
        self._interval_s = interval_s
        self._latest: dict[int, PcieReading] = {}
        self._stop = threading.Event()
        self._wake = threading.Event()       # set: start the next round now
        self._thread = threading.Thread(target=self._run, name="gpuwatch-pcie", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def set_interval(self, interval_s: float) -> None:
        """Seconds between two rounds from now on; a shorter pace starts a round at once."""
        sooner = interval_s < self._interval_s
        self._interval_s = interval_s
        if sooner:
            self._wake.set()

    @property
    def interval_s(self) -> float:
        return self._interval_s

    def stop(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def latest(self, index: int) -> PcieReading | None:
        return self._latest.get(index)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()      # a pace changed during the round: no second round at once
            for index in self._gpu_indices():
                if self._stop.is_set():
                    return
                reading = self._read(index)
                if reading is None:
                    self._latest.pop(index, None)
                else:
                    self._latest[index] = reading
            self._wake.wait(self._interval_s)
