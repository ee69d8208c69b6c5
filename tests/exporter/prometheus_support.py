"""A real Prometheus server scraping real `gpuwatch serve` processes, for tests and the
benchmark: free loopback ports, a generated config with a 1 s scrape interval, a
temporary data folder, and polling with generous deadlines."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
SCRAPE_INTERVAL_S = 1.0
REPO = Path(__file__).resolve().parents[2]


def have_prometheus() -> bool:
    return os.access(PROMETHEUS, os.X_OK)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(process: subprocess.Popen, wait_s: float) -> None:
    """SIGTERM, then SIGKILL if the process still runs after ``wait_s``; reaped."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(wait_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_for(what: str, check: Callable[[], T | None], deadline_s: float = 30.0,
             every_s: float = 0.2) -> T:
    """Poll ``check`` until it returns something truthy; fail naming ``what``."""
    end = time.monotonic() + deadline_s
    last: Any = None
    while time.monotonic() < end:
        try:
            last = check()
        except Exception as exc:         # not up yet: connection refused, 503, …
            last = exc
        else:
            if last:
                return last
        time.sleep(every_s)
    raise AssertionError(f"gave up waiting {deadline_s:g} s for {what} (last: {last!r})")


def http_get(url: str, timeout_s: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return response.read()


@dataclass
class Exporter:
    host: str | None
    port: int
    process: subprocess.Popen
    started_at_s: float                     # wall time before it was started
    serving_at_s: float = 0.0               # wall time its endpoint first answered

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/metrics"

    def metrics(self) -> str:
        return http_get(self.url).decode()

    def stop(self) -> None:
        stop_process(self.process, wait_s=10)


def start_exporter(host: str | None, demo: str, *extra: str, interval_s: float = 0.5,
                   env: dict[str, str] | None = None) -> Exporter:
    """`gpuwatch serve --demo DEMO` on a free loopback port, labelled ``host`` (None: the
    exporter's own choice), once it answers with GPU series."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    started = time.time()
    named = ["--hostname", host] if host is not None else []
    process = subprocess.Popen(
        [sys.executable, "-m", "gpuwatch", "serve", "--demo", demo, "--listen",
         f"127.0.0.1:{port}", *named, "--interval", str(interval_s), *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    exporter = Exporter(host, port, process, started)

    def serving() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"gpuwatch serve exited: {process.stderr.read().decode()}")
        return "DCGM_FI_DEV_FB_USED{" in exporter.metrics()

    wait_for(f"the exporter of {host}", serving)
    exporter.serving_at_s = time.time()
    return exporter


@dataclass
class PrometheusServer:
    port: int
    process: subprocess.Popen
    data: Path
    targets: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def query(self, expr: str) -> list[dict]:
        body = http_get(f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        return json.loads(body)["data"]["result"]

    def stop(self) -> None:
        stop_process(self.process, wait_s=15)


class StaticTarget:
    """An HTTP server answering fixed text to any GET or POST: a scrape target that is not
    gpuwatch's exporter, or a server whose every query gets the same answer."""

    def __init__(self, text: str, content_type: str = "text/plain; version=0.0.4"):
        body = text.encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.do_GET()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_prometheus(folder: Path, targets: list[str],
                     other_jobs: dict[str, list[str]] | None = None) -> PrometheusServer:
    """Prometheus scraping ``targets`` as job gpuwatch (label cluster=test), and each of
    ``other_jobs`` (job name -> targets, label cluster=other)."""
    port = free_port()
    config = folder / "prometheus.yml"
    jobs = [("gpuwatch", targets, "test"),
            *((name, listed, "other") for name, listed in (other_jobs or {}).items())]
    text = ("global:\n"
            f"  scrape_interval: {SCRAPE_INTERVAL_S:g}s\n"
            f"  scrape_timeout: {SCRAPE_INTERVAL_S:g}s\n"
            "scrape_configs:\n")
    for name, listed, cluster in jobs:
        quoted = ", ".join(f'"{t}"' for t in listed)
        text += (f"  - job_name: {name}\n"
                 "    static_configs:\n"
                 f"      - targets: [{quoted}]\n"
                 f"        labels: {{cluster: {cluster}}}\n")
    config.write_text(text)
    data = folder / "data"
    log = (folder / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={data}",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
        stdout=log, stderr=subprocess.STDOUT)
    server = PrometheusServer(port, process, data, targets)

    def ready() -> bool:
        if process.poll() is not None:
            raise AssertionError((folder / "prometheus.log").read_text())
        return http_get(f"{server.url}/-/ready").startswith(b"Prometheus")

    wait_for("Prometheus to be ready", ready)
    return server


@contextlib.contextmanager
def stopping(*things: Any):
    try:
        yield
    finally:
        for thing in things:
            thing.stop()

