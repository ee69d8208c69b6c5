"""The headless paths run where the window's packages are absent (a GPU server, a CUDA
container): `record`, `report`, `estimate`, `plan`, `snapshot`, `serve` and the probe
import and work with PySide6 and pyqtgraph made unimportable, and platformdirs too
(a source-tree run on a box without it: sessions go to the XDG data folder).

Each command runs in a fresh interpreter whose import system refuses those packages,
so an import anywhere on the path, however deep or late, fails the test.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BLOCKED = ("PySide6", "pyqtgraph", "shiboken6", "platformdirs")

# Refuses the blocked packages, then runs the command line as `python -m gpuwatch` would.
RUNNER = """
import sys
BLOCKED = {blocked!r}

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{{name}} is not installed here (blocked by the test)")
        return None

sys.meta_path.insert(0, Refuse())
for name in list(sys.modules):
    if name.split(".")[0] in BLOCKED:
        del sys.modules[name]
if sys.argv[1] == "-c":
    exec(sys.argv[2])
else:
    from gpuwatch.cli import main
    code = main(sys.argv[1:])
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    assert not leaked, leaked
    sys.exit(code)
"""


def run(tmp_path: Path, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GPUWATCH_DATA_DIR"}
    env.update(PYTHONPATH=str(REPO), XDG_DATA_HOME=str(tmp_path / "xdg-data"),
               HOME=str(tmp_path / "home"))
    env.pop("QT_QPA_PLATFORM", None)
    return subprocess.run([sys.executable, "-c", RUNNER.format(blocked=BLOCKED), *argv],
                          capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=tmp_path)


def test_the_runner_does_block_qt(tmp_path):
    done = run(tmp_path, "-c", "import PySide6")
    assert done.returncode != 0 and "blocked by the test" in done.stderr


def test_record_then_report_without_qt(tmp_path):
    session = tmp_path / "oom.gpuwatch.sqlite"
    done = run(tmp_path, "record", "--demo", "oom-ramp", "--time-scale", "max",
               "--out", str(session))
    assert done.returncode == 0, done.stderr
    report = run(tmp_path, "report", str(session), "--format", "json", "-o",
                 str(tmp_path / "r.json"))
    assert report.returncode == 0, report.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["oom_exits"] and doc["oom_exits"][0]["warned_before_s"] > 60


def test_record_without_out_uses_the_xdg_data_folder(tmp_path):
    done = run(tmp_path, "record", "--demo", "leak", "--time-scale", "max",
               "--duration", "30")
    assert done.returncode == 0, done.stderr
    saved = list((tmp_path / "xdg-data" / "gpuwatch" / "sessions").glob("*.gpuwatch.sqlite"))
    assert len(saved) == 1


@pytest.mark.parametrize("argv", [
    ("estimate", "--model", "llama-3.1-8b", "--json"),
    ("estimate", "--model", "resnet-50", "--batch", "64", "--json"),
    ("plan", "--model", "llama-3.1-8b", "--json"),
    ("snapshot", "--demo", "--json"),
])
def test_json_commands_without_qt(tmp_path, argv):
    done = run(tmp_path, *argv)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["schema"].startswith("gpuwatch.")


def test_probe_and_batch_tools_import_without_qt(tmp_path):
    done = run(tmp_path, "-c", (
        "from gpuwatch import probe\n"
        "found = probe.find_max_batch(lambda b: None if b <= 12 else "
        "(_ for _ in ()).throw(RuntimeError('CUDA out of memory')))\n"
        "assert found.batch_size == 12, found\n"
        "assert not any(m.split('.')[0] in BLOCKED for m in sys.modules)\n"))
    assert done.returncode == 0, done.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_without_qt(tmp_path):
    pytest.importorskip("prometheus_client")
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", RUNNER.format(blocked=BLOCKED), "serve",
                             "--demo", "--listen", f"127.0.0.1:{port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=tmp_path)
    try:
        body = ""
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                            timeout=2) as r:
                    body = r.read().decode()
                if "DCGM_FI_DEV_FB_USED" in body:
                    break
            except OSError:
                pass
            if proc.poll() is not None:
                break
            time.sleep(0.2)
        assert "DCGM_FI_DEV_FB_USED" in body, proc.stderr.read() if proc.poll() else body
    finally:
        proc.terminate()
        proc.wait(10)
