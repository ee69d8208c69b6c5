"""PCIe throughput on its own thread: each NVML PCIe read blocks ~20 ms while it samples.

Eight GPUs x (TX + RX) would stall a memory reading by ~320 ms if read inline, so a
background poller reads them in turn and the sampler takes the latest values.
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
        self._thread = threading.Thread(target=self._run, name="gpuwatch-pcie", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def latest(self, index: int) -> PcieReading | None:
        return self._latest.get(index)

    def _run(self) -> None:
        while not self._stop.is_set():
            for index in self._gpu_indices():
                if self._stop.is_set():
                    return
                reading = self._read(index)
                if reading is None:
                    self._latest.pop(index, None)
                else:
                    self._latest[index] = reading
            self._stop.wait(self._interval_s)
