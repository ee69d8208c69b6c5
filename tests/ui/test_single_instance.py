"""One window per user: a second real `gpuwatch` hands over to the first over a real
local socket, and a socket left by a crash is taken over."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PySide6.QtNetwork import QLocalSocket

from gpuwatch.ui.single_instance import (
    SingleInstance,
    parse_request,
    server_name,
    valid_token,
)

ROOT = Path(__file__).resolve().parents[2]


def _wait_for(predicate, what: str, limit_s: float = 90.0) -> None:
    """Polls until ``predicate()``; the limit only stops a broken run from hanging."""
    end = time.monotonic() + limit_s
    while not predicate():
        if time.monotonic() > end:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.1)


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT),
               XDG_RUNTIME_DIR=str(tmp_path / "run"), XDG_CONFIG_HOME=str(tmp_path / "config"),
               XDG_STATE_HOME=str(tmp_path / "state"), GPUWATCH_DATA_DIR=str(tmp_path / "data"))
    (tmp_path / "run").mkdir(mode=0o700)
    return env


def _gpuwatch(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "gpuwatch", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)


def test_a_second_launch_raises_the_first_window_and_starts_nothing(tmp_path: Path) -> None:
    env = _env(tmp_path)
    log = tmp_path / "state" / "gpuwatch" / "gpuwatch.log"
    sessions = tmp_path / "data" / "sessions"
    args = ("gui", "--demo", "oom-ramp", "--interval", "0.2")
    first = _gpuwatch(env, *args)
    try:
        _wait_for(lambda: log.is_file() and "listening on" in log.read_text(),
                  "the first window to listen")
        _wait_for(lambda: len(list(sessions.glob("*.gpuwatch.sqlite"))) == 1,
                  "the first window's session")
        # launched from a Wayland desktop's menu: with the launcher's activation token
        second = subprocess.run([sys.executable, "-m", "gpuwatch", *args],
                                env=dict(env, XDG_ACTIVATION_TOKEN="kwin-4711_TIME123"),
                                capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert second.returncode == 0, second.stderr
        assert "already running: its window was brought forward" in second.stdout
        _wait_for(lambda: "a second launch asked for 'show' with an activation token"
                  in log.read_text(), "the first window to hear the second launch")
        assert first.poll() is None                      # the first window runs on
        assert len(list(sessions.glob("*.gpuwatch.sqlite"))) == 1   # no second session
        # a login autostart (--tray) finds it running too, quietly
        tray = subprocess.run([sys.executable, "-m", "gpuwatch", "gui", "--tray"], env=env,
                              capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert tray.returncode == 0 and tray.stdout == "", tray.stderr
        _wait_for(lambda: "asked for 'tray'" in log.read_text(), "the tray request")
    finally:
        first.send_signal(signal.SIGTERM)
        _out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert not list((tmp_path / "run").glob("*.sock"))   # the socket goes with the window


def test_after_a_crash_the_next_launch_opens_the_window(tmp_path: Path) -> None:
    env = _env(tmp_path)
    log = tmp_path / "state" / "gpuwatch" / "gpuwatch.log"
    args = ("gui", "--demo", "workstation", "--interval", "0.5")
    crashed = _gpuwatch(env, *args)
    try:
        sessions = tmp_path / "data" / "sessions"
        _wait_for(lambda: log.is_file() and "listening on" in log.read_text(),
                  "the first window to listen")
        _wait_for(lambda: len(list(sessions.glob("*.gpuwatch.sqlite"))) == 1,
                  "the first window's session")
        crashed.kill()                       # SIGKILL: the socket file stays behind
        crashed.wait(60)
        assert list((tmp_path / "run").glob("*.sock"))
        again = _gpuwatch(env, *args)
        try:
            _wait_for(lambda: log.read_text().count("listening on") == 2,
                      "the next window to take the socket over")
            _wait_for(lambda: len(list(sessions.glob("*.gpuwatch.sqlite"))) == 2,
                      "the next window's own session")
            assert again.poll() is None      # it runs: it did not hand over to a corpse
        finally:
            again.send_signal(signal.SIGTERM)
            _out, err = again.communicate(timeout=120)
        assert again.returncode == 0, err
    finally:
        crashed.kill()


def test_a_window_on_other_settings_is_another_instance(tmp_path: Path) -> None:
    assert server_name(str(tmp_path / "a.ini")) != server_name(str(tmp_path / "b.ini"))
    assert server_name(str(tmp_path / "a.ini")) == server_name(str(tmp_path / "a.ini"))


def test_a_socket_left_by_a_crash_is_taken_over(qapp, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    name = server_name(str(tmp_path / "settings.ini"))
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(name)                 # a socket file nobody listens on, as a crash leaves
    stale.close()
    assert Path(name).exists()
    instance = SingleInstance(name)
    try:
        assert instance.claim() is True
        assert instance.server is not None and instance.server.isListening()
        probe = QLocalSocket()
        probe.connectToServer(name)
        assert probe.waitForConnected(5000)
        probe.disconnectFromServer()
    finally:
        instance.close()
    assert not Path(name).exists()


def test_the_running_instance_answers_a_second_one(qtbot, tmp_path: Path) -> None:
    name = str(tmp_path / "gpuwatch-test.sock")
    first = SingleInstance(name)
    assert first.claim()
    try:
        client = QLocalSocket()
        client.connectToServer(name)
        assert client.waitForConnected(5000)
        with qtbot.waitSignal(first.activated, timeout=10000) as heard:
            client.write(b"show token-42\n")
            client.flush()
        assert heard.args == ["show", "token-42"]
        qtbot.waitUntil(lambda: client.bytesAvailable() > 0 or client.waitForReadyRead(10),
                        timeout=10000)
        assert bytes(client.readAll().data()) == b"ok\n"
        # something that is not one of ours is dropped without a signal
        other = QLocalSocket()
        other.connectToServer(name)
        assert other.waitForConnected(5000)
        with qtbot.assertNotEmitted(first.activated, wait=300):
            other.write(b"rm -rf /\n")
            other.flush()
            qtbot.wait(300)
    finally:
        first.close()


def test_the_token_reaches_the_running_instance_and_a_bad_one_is_dropped(tmp_path: Path,
                                                                          qapp) -> None:
    """Two real processes: a child holds the instance and prints what it hears."""
    name = str(tmp_path / "gpuwatch-test.sock")
    child = subprocess.Popen(
        [sys.executable, "-c",
         "import sys\nfrom PySide6.QtCore import QCoreApplication, QTimer\n"
         "from gpuwatch.ui.single_instance import SingleInstance\n"
         "app = QCoreApplication([])\n"
         f"instance = SingleInstance({name!r})\nassert instance.claim()\n"
         "print('ready', flush=True)\n"
         "heard = []\n"
         "def got(message, token):\n"
         "    print(message, repr(token), flush=True)\n"
         "    heard.append(message)\n"
         "    if len(heard) == 2: QTimer.singleShot(0, app.quit)\n"
         "instance.activated.connect(got)\napp.exec()\n"],
        env=dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT)),
        stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        assert SingleInstance(name).claim("show", "good-token") is False
        assert SingleInstance(name).claim("tray", "bad token\nwith lines") is False
        out, _ = child.communicate(timeout=60)
    finally:
        child.kill()
    assert out.splitlines() == ["show 'good-token'", "tray ''"]


def test_an_unknown_message_is_a_programming_error(tmp_path: Path, qapp) -> None:
    with pytest.raises(ValueError, match="unknown single-instance message"):
        SingleInstance(str(tmp_path / "x.sock")).claim("quit")


@given(st.text(max_size=80))
def test_any_request_line_is_understood_or_refused(line: str) -> None:
    request = parse_request(line)
    if request is not None:
        message, token = request
        assert message in ("show", "tray") and valid_token(token)
        assert line.strip() == f"{message} {token}".strip()


@given(st.sampled_from(["show", "tray"]),
       st.text(st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_what_a_second_launch_sends_reads_back(message: str, token: str) -> None:
    sent = f"{message} {token if valid_token(token) else ''}".strip()
    assert parse_request(sent + "\n") == (message, token if valid_token(token) else "")
