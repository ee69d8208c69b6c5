"""GPM: what the GPU's performance monitor measures (Hopper and later), one pair a tick.

NVML's GPM metrics are worked out over two samples of the GPU's counters: the driver
fills an opaque sample (``nvmlGpmSampleGet``), and ``nvmlGpmMetricsGet`` turns a pair
into averages over the time between them. Each tick takes one new sample and pairs it
with the last tick's, so the figures cover the whole interval between two ticks (not a
moment) and cost one sample and one metrics call per GPU and tick, on the sampler's
thread. The first tick after a GPU is attached has no pair and no figures.

The metrics read (ids from nvml.h, as ``nvidia-ml-py`` names them):

- ``NVML_GPM_METRIC_DRAM_BW_UTIL`` (10): DRAM bandwidth used, % of the theoretical
  peak: DCGM's ``DCGM_FI_PROF_DRAM_ACTIVE`` (there a ratio 0-1);
- ``NVML_GPM_METRIC_GRAPHICS_UTIL`` (1): % of time any compute or graphics work ran
  (``DCGM_FI_PROF_GR_ENGINE_ACTIVE``);
- ``NVML_GPM_METRIC_SM_UTIL`` (2): % of SMs busy (``DCGM_FI_PROF_SM_ACTIVE``);
- ``NVML_GPM_METRIC_ANY_TENSOR_UTIL`` (5): % of time any tensor pipe was active
  (``DCGM_FI_PROF_PIPE_TENSOR_ACTIVE``).

A GPU without GPM (before Hopper, or a driver or binding without the calls) gets no
reader: its figures stay ``None`` and the bandwidth is the estimate alone.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import struct
from collections.abc import Callable
from typing import Any, NamedTuple

import pynvml

from gpuwatch.telemetry.nvml import codes
from gpuwatch.telemetry.nvml.translate import LOST_CODES

# nvml.h's metric ids; the installed binding's where it defines them
DRAM_BW_UTIL = getattr(pynvml, "NVML_GPM_METRIC_DRAM_BW_UTIL", 10)
GRAPHICS_UTIL = getattr(pynvml, "NVML_GPM_METRIC_GRAPHICS_UTIL", 1)
SM_UTIL = getattr(pynvml, "NVML_GPM_METRIC_SM_UTIL", 2)
ANY_TENSOR_UTIL = getattr(pynvml, "NVML_GPM_METRIC_ANY_TENSOR_UTIL", 5)
METRIC_IDS = (DRAM_BW_UTIL, GRAPHICS_UTIL, SM_UTIL, ANY_TENSOR_UTIL)
METRICS_GET_VERSION = getattr(pynvml, "NVML_GPM_METRICS_GET_VERSION", 1)
# Answers that mean "this GPU, driver or binding has no GPM": stop asking.
_NO_GPM = frozenset({codes.NOT_SUPPORTED, codes.FUNCTION_NOT_FOUND})


class GpmFigures(NamedTuple):
    """Percentages over the interval between two samples; None where a metric failed."""

    dram_active_percent: float | None
    graphics_active_percent: float | None
    sm_active_percent: float | None
    tensor_active_percent: float | None


NO_FIGURES = GpmFigures(None, None, None, None)


class GpmReader:
    """The GPM samples and metrics request of one attached GPU."""

    def __init__(self, lib: Any, handle: Any, samples: list[Any]):
        self._lib = lib
        self._handle = handle
        self._samples = samples          # two, filled alternately
        self._next = 0                   # the one the next tick fills
        self._paired = False             # the other one holds the last tick's sample
        self.disabled: str | None = None  # why GPM stopped answering on this GPU
        request = lib.c_nvmlGpmMetricsGet_t()
        request.version = METRICS_GET_VERSION
        request.numMetrics = len(METRIC_IDS)
        for i, metric in enumerate(METRIC_IDS):
            request.metrics[i].metricId = metric
        self._request = request          # reused every tick: the binding's is ~19 KiB
        self._answers = _answers(request)

    @classmethod
    def open(cls, lib: Any, handle: Any) -> GpmReader | None:
        """A reader where the GPU supports GPM, else None. Raises NVMLError only when
        NVML says the GPU is lost (the caller words it)."""
        try:
            support = lib.nvmlGpmQueryDeviceSupport(handle)
            if not support.isSupportedDevice:
                return None
            samples = [lib.nvmlGpmSampleAlloc(), lib.nvmlGpmSampleAlloc()]
        except pynvml.NVMLError as exc:
            if exc.value in LOST_CODES:
                raise
            return None
        except (AttributeError, *codes.LIBRARY_MISMATCH):  # a binding without GPM
            return None
        return cls(lib, handle, samples)

    def read(self) -> GpmFigures:
        """Take this tick's sample and the figures since the last one. Raises NVMLError
        only when NVML says the GPU is lost."""
        if self.disabled is not None:
            return NO_FIGURES
        lib = self._lib
        sample = self._samples[self._next]
        try:
            lib.nvmlGpmSampleGet(self._handle, sample)
        except pynvml.NVMLError as exc:
            self._paired = False          # a pair needs two good samples in a row
            if exc.value in LOST_CODES:
                raise
            if exc.value in _NO_GPM:
                self.disabled = str(exc)
            return NO_FIGURES
        previous = self._samples[1 - self._next]
        self._next = 1 - self._next
        if not self._paired:
            self._paired = True
            return NO_FIGURES
        request = self._request
        request.sample1, request.sample2 = previous, sample
        try:
            lib.nvmlGpmMetricsGet(request)
        except pynvml.NVMLError as exc:
            if exc.value in LOST_CODES:
                raise
            if exc.value in _NO_GPM:
                self.disabled = str(exc)
            return NO_FIGURES
        return GpmFigures(*(_percent(value) if code == _OK and metric == wanted else None
                            for (metric, code, value), wanted
                            in zip(self._answers(), METRIC_IDS, strict=True)))

    def close(self) -> None:
        """Free the samples (the GPU is detached or NVML shuts down)."""
        samples, self._samples = self._samples, []
        self.disabled = "closed"
        for sample in samples:
            with contextlib.suppress(pynvml.NVMLError):
                self._lib.nvmlGpmSampleFree(sample)


_OK = pynvml.NVML_SUCCESS


def _answers(request: Any) -> Callable[[], list[tuple[int, int, float]]]:
    """Reads (metric id, return code, value) of the request's first metrics in one pass
    over its memory: the binding's structures answer each field through Python (~1 µs a
    field), and these are read every tick for every GPU."""
    metric_type = type(request.metrics[0])
    size = ctypes.sizeof(metric_type)
    fields = {name: getattr(metric_type, name).offset
              for name in ("metricId", "nvmlReturn", "value")}
    if (fields["metricId"], fields["nvmlReturn"]) != (0, 4) or fields["value"] < 8:
        metrics = request.metrics                # not laid out as nvml.h: field by field

        def slow() -> list[tuple[int, int, float]]:
            return [(metrics[i].metricId, metrics[i].nvmlReturn, metrics[i].value)
                    for i in range(len(METRIC_IDS))]
        return slow
    layout = struct.Struct(f"=Ii{fields['value'] - 8}xd{size - fields['value'] - 8}x")
    where = ctypes.addressof(request) + type(request).metrics.offset
    length = size * len(METRIC_IDS)
    string_at, unpack = ctypes.string_at, layout.iter_unpack

    def fast() -> list[tuple[int, int, float]]:
        return list(unpack(string_at(where, length)))
    return fast


def _percent(value: float) -> float | None:
    """A percentage from the driver, or None where it cannot be one."""
    if not math.isfinite(value) or not -0.5 <= value <= 100.5:
        return None
    return min(100.0, max(0.0, float(value)))
