"""What the host knows about a GPU process, and the interface both host sources share.

The real source is :mod:`gpuwatch.telemetry.host` (psutil and /proc); simulated GPUs
use :mod:`gpuwatch.telemetry.sim.host`, which answers from the scenario.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class HostProcess:
    name: str | None
    cmdline: tuple[str, ...]
    user: str | None
    container: str | None
    cpu_percent: float | None      # None until a second reading gives a rate
    rss_bytes: int | None
    started_at_s: float | None     # Unix time


class HostInfo(Protocol):
    def lookup(self, pids: Iterable[int]) -> dict[int, HostProcess]:
        """Details for each pid that still runs and can be seen; others (exited, zombies,
        hidden) are left out, and the caller says why. A pid that runs but may not be
        read is given with what could be read, None for the rest."""
        ...

    def pid_namespace_isolated(self) -> bool:
        """True when gpuwatch runs in a PID namespace that may hide host processes."""
        ...


# Container runtimes leave their 64-hex id in the cgroup path of every process they run:
#   docker (cgroup v1):       12:memory:/docker/<id>
#   docker (systemd, v2):     0::/system.slice/docker-<id>.scope
#   containerd / CRI:         0::/system.slice/cri-containerd-<id>.scope, /containerd/<id>
#   Kubernetes pods:          /kubepods/burstable/pod<uid>/<id>, kubepods-…-pod<uid>.slice/cri-…
#   podman / libpod:          /machine.slice/libpod-<id>.scope
_CONTAINER_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("k8s", re.compile(r"kubepods.*?(?:[/-])(?:cri-containerd-|crio-|docker-)?([0-9a-f]{64})")),
    ("docker", re.compile(r"(?:/docker/|docker-)([0-9a-f]{64})")),
    ("containerd", re.compile(r"(?:cri-containerd-|/containerd/)([0-9a-f]{64})")),
    ("crio", re.compile(r"crio-([0-9a-f]{64})")),
    ("podman", re.compile(r"libpod-([0-9a-f]{64})")),
)


def container_from_cgroup(text: str) -> str | None:
    """``"docker:3f2a1b9c4d5e"`` from the text of ``/proc/<pid>/cgroup``, or None on the host."""
    for runtime, pattern in _CONTAINER_PATTERNS:
        match = pattern.search(text)
        if match:
            return f"{runtime}:{match.group(1)[:12]}"
    return None
