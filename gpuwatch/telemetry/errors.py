"""Typed errors that leave the telemetry layer (no NVML types escape it)."""

from __future__ import annotations


class TelemetryError(Exception):
    """Base class of the errors the CLI and UI turn into plain sentences."""


class NvmlUnavailableError(TelemetryError):
    """NVML cannot be used at all: no library, no driver, a version mismatch, no permission.

    ``reason`` is one sentence for a person; ``code`` is the NVML return code when there
    was one (12 for a missing library, 9 for a driver that is not loaded, ...).
    """

    def __init__(self, reason: str, code: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.code = code


class ScenarioError(TelemetryError):
    """A scenario file that cannot be used; the message names the file, field and reason."""

    def __init__(self, source: str, field: str | None, reason: str):
        where = f"{source}: {field}: " if field else f"{source}: "
        super().__init__(where + reason)
        self.source = source
        self.field = field
        self.reason = reason
