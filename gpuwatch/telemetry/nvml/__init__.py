"""The NVML backend: every NVML call gpuwatch makes, and the one place NVML errors end.

It runs unchanged on the real ``pynvml`` module and on
:class:`gpuwatch.telemetry.sim.library.SimulatedNvml`. Errors are translated here:
an unsupported reading becomes ``None``; a lost GPU becomes a ``lost`` sample while the
others keep updating (and is re-attached when it answers again); a missing library or
driver becomes :class:`NvmlUnavailableError`. Nothing above this package sees NVMLError.

- :mod:`.translate`: NVML error codes -> None, "lost", or a typed error
- :mod:`.readings`: one GPU's memory, NVLink, PCIe and process lists
- :mod:`.backend`: :class:`NvmlBackend`, life cycle and whole samples
"""

from gpuwatch.telemetry.nvml.backend import NvmlBackend

__all__ = ["NvmlBackend"]
