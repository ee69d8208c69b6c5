"""Two demo hosts behind a real Prometheus, for `live_screenshots.py --cluster`.

Starts `gpuwatch serve --demo` twice on loopback ports (hosts ``node-h100-07`` with the
8-GPU DDP scenario and ``node-a6000-02`` with the workstation), and Prometheus scraping
both every second; the window is pointed at that Prometheus. Halfway to the grab the
second exporter is stopped, so the window shows a host going down. The exporters run
the same gpuwatch as the window (the PYTHONPATH given), so a "before" tree is shown
against its own exporter.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

HOSTS = (("node-h100-07", "multi-gpu-ddp"), ("node-a6000-02", "workstation"))
SCRAPE_S = 1


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(url: str, deadline_s: float = 30.0, has: bytes = b"") -> None:
    """Until ``url`` answers 200 with ``has`` in its body."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200 and has in answer.read():
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"{url} did not answer within {deadline_s:g} s")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def two_hosts() -> Iterator[tuple[list[str], Callable[[], None]]]:
    """(`gpuwatch gui` arguments, a call that takes the second host down)."""
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        raise SystemExit("prometheus is needed for --cluster: apt install prometheus")
    with ExitStack() as stack, tempfile.TemporaryDirectory() as folder:
        exporters = []
        for host, scenario in HOSTS:
            port = _port()
            process = subprocess.Popen(
                [sys.executable, "-m", "gpuwatch", "serve", "--demo", scenario, "--listen",
                 f"127.0.0.1:{port}", "--hostname", host], cwd=folder, env=os.environ,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            stack.callback(_stop, process)
            exporters.append((process, port))
        for _, port in exporters:
            _wait(f"http://127.0.0.1:{port}/metrics")
        port = _port()
        targets = ", ".join(f'"127.0.0.1:{p}"' for _, p in exporters)
        config = Path(folder) / "prometheus.yml"
        config.write_text(f"global:\n  scrape_interval: {SCRAPE_S}s\n"
                          f"  scrape_timeout: {SCRAPE_S}s\nscrape_configs:\n"
                          f"  - job_name: gpuwatch\n    static_configs:\n"
                          f"      - targets: [{targets}]\n")
        server = subprocess.Popen(
            [prometheus, f"--config.file={config}", f"--storage.tsdb.path={folder}/data",
             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stack.callback(_stop, server)
        for host, _ in HOSTS:            # every host's GPUs have their series
            _wait(f"http://127.0.0.1:{port}/api/v1/query?query=DCGM_FI_DEV_FB_USED",
                  has=f'"{host}"'.encode())
        yield ["--prometheus", f"http://127.0.0.1:{port}"], lambda: _stop(exporters[1][0])
