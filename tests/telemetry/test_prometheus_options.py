"""--prometheus and --match on the commands: refused combinations and values exit 2 with
the option named; a server that is not there exits 1 with the reason, no traceback."""

from __future__ import annotations

import pytest
from cli_support import run


@pytest.mark.parametrize("command", ["snapshot", "record", "gui"])
def test_match_needs_prometheus(capsys, command: str) -> None:
    code, _, err = run(capsys, command, "--match", '{a="b"}')
    assert code == 2 and "--match applies to --prometheus only" in err


@pytest.mark.parametrize("command", ["snapshot", "record", "gui"])
def test_prometheus_and_demo_are_two_sources(capsys, command: str) -> None:
    code, _, err = run(capsys, command, "--demo", "--prometheus", "http://127.0.0.1:1")
    assert code == 2 and "give one" in err


@pytest.mark.parametrize("argv, named", [
    (["--prometheus", "gopher://x"], "--prometheus"),
    (["--prometheus", "http://x", "--match", "{a=}"], "--match"),
    (["--prometheus", "http://x", "--match", '{__name__="up"}'], "__name__"),
])
def test_bad_values_name_the_option(capsys, argv: list[str], named: str) -> None:
    code, _, err = run(capsys, "snapshot", *argv)
    assert code == 2 and named in err and "Traceback" not in err


def test_time_scale_is_for_simulated_gpus(capsys) -> None:
    code, _, err = run(capsys, "record", "--prometheus", "http://127.0.0.1:1",
                       "--time-scale", "10")
    assert code == 2 and "--time-scale applies to simulated GPUs only" in err


def test_a_server_that_is_not_there_is_a_runtime_failure(capsys) -> None:
    import socket

    with socket.socket() as s:            # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, out, err = run(capsys, "snapshot", "--prometheus", f"127.0.0.1:{port}")
    assert code == 1 and out == ""
    assert f"Prometheus at http://127.0.0.1:{port} cannot be reached" in err
