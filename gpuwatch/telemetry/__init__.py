"""Live telemetry: NVML (real or simulated) and host process details, sampled off the GUI thread.

Everything above this package sees only :mod:`gpuwatch.core.snapshot` records and the
typed errors of :mod:`gpuwatch.telemetry.errors`; never an ``NVMLError``.
"""
