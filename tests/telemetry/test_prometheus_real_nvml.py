"""`gpuwatch serve` on the real NVML path: the nvidia-ml-py binding over the fake driver
library (tests/fakenvml), scraped over HTTP; its dcgm-exporter-named figures match what
the driver says through the bare binding, in dcgm-exporter's units."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from conftest import REPO

pytest.importorskip("prometheus_client")
MIB = 1 << 20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _samples(text: str, name: str) -> dict[str, float]:
    """GPU index -> value of metric ``name`` in an exposition."""
    out = {}
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels, value = line.rsplit(" ", 1)
            gpu = labels.split('gpu="', 1)[1].split('"', 1)[0]
            out[gpu] = float(value)
    return out


def test_serve_exports_what_the_driver_says(fake_driver, spawn) -> None:
    sleeper = spawn(["sleep", "60"])
    frozen = {"time": 100}             # the driver's figures hold still between readers
    reference = fake_driver.reference([sleeper.pid], **frozen)
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gpuwatch", "serve", "--listen", f"127.0.0.1:{port}",
         "--hostname", "fake-node", "--interval", "0.5"], cwd=REPO,
        env=fake_driver.env([sleeper.pid], **frozen), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE)
    try:
        text = ""
        end = time.monotonic() + 60
        while "DCGM_FI_DEV_FB_USED{" not in text:
            assert server.poll() is None, server.stderr.read().decode()
            assert time.monotonic() < end, "the exporter never answered"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                            timeout=5) as response:
                    text = response.read().decode()
            except OSError:
                time.sleep(0.2)
        gpus = reference["gpus"]
        used = _samples(text, "DCGM_FI_DEV_FB_USED")
        free = _samples(text, "DCGM_FI_DEV_FB_FREE")
        power = _samples(text, "DCGM_FI_DEV_POWER_USAGE")
        temp = _samples(text, "DCGM_FI_DEV_GPU_TEMP")
        total = _samples(text, "gpuwatch_gpu_memory_total_bytes")
        assert len(used) == len(gpus) >= 1
        for i, g in enumerate(gpus):
            assert used[str(i)] * MIB == pytest.approx(g["used"], abs=1)
            assert free[str(i)] * MIB == pytest.approx(g["free"], abs=1)
            assert total[str(i)] == g["total"]
            assert power[str(i)] == g["power_mw"] / 1000            # mW -> W
            assert temp[str(i)] == g["temperature_c"]
        pids = {line.split('pid="', 1)[1].split('"', 1)[0] for line in text.splitlines()
                if line.startswith("gpuwatch_process_memory_used_bytes{")}
        listed = {str(p) for g in gpus for kind in g["processes"].values() for p, _ in kind}
        assert pids == listed and str(sleeper.pid) in pids
        assert 'hostname="fake-node"' in text
    finally:
        server.terminate()
        assert server.wait(20) == 0
