"""Fixtures for the real NVML path: the fake driver library and real child processes.

``fake_driver`` builds ``tests/fakenvml/fakenvml.c`` once per session and runs gpuwatch
(or a reference reader) in a child process whose ``LD_LIBRARY_PATH`` points at it:
``pynvml`` loads ``libnvidia-ml.so.1`` at ``nvmlInit``, and the loader reads that
variable only when a process starts, so a child keeps this test process clean.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent


def _load_build_helper() -> Any:
    spec = importlib.util.spec_from_file_location("fakenvml_build",
                                                  TESTS / "fakenvml" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Prints what the driver itself says, straight through pynvml: the figures gpuwatch's
# JSON must carry, translated (mW -> W, KiB/s -> B/s, …).
REFERENCE_READER = r"""
import json, pynvml
pynvml.nvmlInit()
gpus = []
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    m = pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
    u = pynvml.nvmlDeviceGetUtilizationRates(h)
    procs = {}
    for kind, fn in (("compute", pynvml.nvmlDeviceGetComputeRunningProcesses),
                     ("graphics", pynvml.nvmlDeviceGetGraphicsRunningProcesses)):
        procs[kind] = [[p.pid, p.usedGpuMemory] for p in fn(h)]
    gpus.append({
        "name": pynvml.nvmlDeviceGetName(h), "uuid": pynvml.nvmlDeviceGetUUID(h),
        "total": m.total, "used": m.used, "free": m.free, "reserved": m.reserved,
        "util_gpu": u.gpu, "util_memory": u.memory,
        "bus_width_bits": pynvml.nvmlDeviceGetMemoryBusWidth(h),
        "max_memory_clock_mhz": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM),
        "temperature_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
        "power_mw": pynvml.nvmlDeviceGetPowerUsage(h),
        "power_limit_mw": pynvml.nvmlDeviceGetEnforcedPowerLimit(h),
        "graphics_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_GRAPHICS),
        "memory_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
        "pcie_tx_kib": pynvml.nvmlDeviceGetPcieThroughput(h, pynvml.NVML_PCIE_UTIL_TX_BYTES),
        "pcie_rx_kib": pynvml.nvmlDeviceGetPcieThroughput(h, pynvml.NVML_PCIE_UTIL_RX_BYTES),
        "mig": pynvml.nvmlDeviceGetMigMode(h)[0],
        "pci_bus_id": pynvml.nvmlDeviceGetPciInfo(h).busId,
        "processes": procs,
    })
print(json.dumps({"driver": pynvml.nvmlSystemGetDriverVersion(),
                  "nvml": pynvml.nvmlSystemGetNVMLVersion(),
                  "cuda": pynvml.nvmlSystemGetCudaDriverVersion(), "gpus": gpus}))
pynvml.nvmlShutdown()
"""


@dataclass
class FakeDriver:
    """Runs commands on the fake driver library in ``folder``."""

    folder: Path
    probe_dir: Path

    def env(self, pids: Sequence[int] = (), **fake: Any) -> dict[str, str]:
        """The environment of a child: the library first on the loader's path and the
        ``FAKENVML_<NAME>`` settings given as ``name=value`` (nothing inherited)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("FAKENVML_")}
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (str(self.folder), env.get("LD_LIBRARY_PATH")) if p)
        env["GPUWATCH_PROBE_DIR"] = str(self.probe_dir)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        if pids:
            env["FAKENVML_PIDS"] = ",".join(str(p) for p in pids)
        for name, value in fake.items():
            env[f"FAKENVML_{name.upper()}"] = str(value)
        return env

    def run(self, args: Sequence[str], pids: Sequence[int] = (), **fake: Any,
            ) -> subprocess.CompletedProcess[str]:
        """``python -m gpuwatch ARGS`` on the fake driver."""
        return subprocess.run([sys.executable, "-m", "gpuwatch", *args], cwd=REPO,
                              env=self.env(pids, **fake), capture_output=True, text=True,
                              check=False)

    def snapshot(self, pids: Sequence[int] = (), **fake: Any) -> dict[str, Any]:
        """The ``gpuwatch snapshot --json`` document."""
        done = self.run(["snapshot", "--json"], pids, **fake)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        return json.loads(done.stdout)

    def reference(self, pids: Sequence[int] = (), **fake: Any) -> dict[str, Any]:
        """What the driver says through the bare binding, for the same settings."""
        done = subprocess.run([sys.executable, "-c", REFERENCE_READER], cwd=REPO,
                              env=self.env(pids, **fake), capture_output=True, text=True,
                              check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture(scope="session")
def fake_driver_library(tmp_path_factory) -> Path:
    helper = _load_build_helper()
    if helper.compiler() is None:
        pytest.skip("no C compiler (gcc or cc): the real-NVML tests build the fake driver "
                    "library from tests/fakenvml/fakenvml.c (apt install gcc libc6-dev)")
    return helper.build(tmp_path_factory.mktemp("fakenvml"))


@pytest.fixture
def fake_driver(fake_driver_library, tmp_path) -> FakeDriver:
    probe_dir = tmp_path / "probes"
    probe_dir.mkdir(mode=0o700)
    return FakeDriver(fake_driver_library, probe_dir)


@pytest.fixture
def spawn() -> Iterator:
    """spawn(argv, **popen_kwargs) -> a running child (its exec finished), killed and
    reaped after the test."""
    children: list[subprocess.Popen] = []

    def start(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        child = subprocess.Popen(list(argv), **kwargs)
        children.append(child)
        # Popen returns once exec has begun; the new command line shows a moment later.
        for _ in range(1000):
            try:
                with open(f"/proc/{child.pid}/cmdline", "rb") as f:
                    if f.read() or child.poll() is not None:
                        break
            except OSError:
                break
            time.sleep(0.01)
        return child

    yield start
    for child in children:
        if child.poll() is None:
            child.kill()
        child.wait()


@pytest.fixture
def children(spawn) -> Callable[[int], list[subprocess.Popen]]:
    """children(n) -> n running ``sleep 1000`` processes (their exec finished), killed and
    reaped after the test."""
    return lambda n: [spawn(["sleep", "1000"]) for _ in range(n)]


@pytest.fixture
def sleeper(spawn) -> int:
    """The pid of a running ``sleep 1000`` (its exec finished), killed after the test."""
    return spawn(["sleep", "1000"]).pid
