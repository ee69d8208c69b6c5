"""`gpuwatch serve` as a process: it stops cleanly on SIGTERM, says so when its port is
taken or prometheus-client is missing, and the Prometheus source, pointed at an exporter
instead of a Prometheus server, says that too. No Prometheus server needed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from prometheus_support import REPO, start_exporter

ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def _gpuwatch(*argv: str, code: str | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", code, *argv] if code else \
        [sys.executable, "-m", "gpuwatch", *argv]
    return subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=120)


def test_serve_stops_cleanly_and_a_taken_port_is_named() -> None:
    exporter = start_exporter("node-x", "workstation")
    try:
        taken = _gpuwatch("serve", "--demo", "--listen", f"127.0.0.1:{exporter.port}")
        assert taken.returncode == 1
        assert f"cannot listen on 127.0.0.1:{exporter.port}" in taken.stderr
        assert "Traceback" not in taken.stderr
        # the source refuses an exporter's address: it is not a Prometheus server
        wrong = _gpuwatch("snapshot", "--prometheus", f"http://127.0.0.1:{exporter.port}")
        assert wrong.returncode == 1
        # (an exporter answers 404 on newer prometheus-client releases, 200 and its
        # metrics text on older ones: both say why, and what to check)
        assert "as a Prometheus server does" in wrong.stderr
        assert "rather than an exporter's?" in wrong.stderr
        assert "Traceback" not in wrong.stderr
    finally:
        exporter.process.send_signal(signal.SIGTERM)
        assert exporter.process.wait(20) == 0
        assert b"Traceback" not in exporter.process.stderr.read()


def test_serve_without_prometheus_client_says_how_to_install_it() -> None:
    blocked = ("import sys; sys.modules['prometheus_client'] = None; "
               "from gpuwatch.cli import main; sys.exit(main(sys.argv[1:]))")
    result = _gpuwatch("serve", "--demo", "--listen", "127.0.0.1:1", code=blocked)
    assert result.returncode == 1
    assert "pip install 'gpuwatch[prometheus]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_speaks_openmetrics_when_asked() -> None:
    import urllib.request

    exporter = start_exporter("node-y", "workstation")
    try:
        request = urllib.request.Request(
            exporter.url, headers={"Accept": "application/openmetrics-text; version=1.0.0"})
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read().decode()
            assert response.headers["Content-Type"].startswith("application/openmetrics-text")
        assert body.rstrip().endswith("# EOF")
        assert 'DCGM_FI_DEV_FB_USED{' in body
    finally:
        exporter.stop()


def test_serve_names_the_host_as_dcgm_exporter_does() -> None:
    exporter = start_exporter(None, "workstation", env={"NODE_NAME": "k8s-node-7"})
    try:
        assert 'hostname="k8s-node-7"' in exporter.metrics()
    finally:
        exporter.stop()
