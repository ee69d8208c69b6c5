"""The systemd unit runs a command line gpuwatch accepts, on loopback, hardened."""

from __future__ import annotations

import configparser
import shlex
from pathlib import Path

from gpuwatch.cli import build_parser

UNIT = Path(__file__).resolve().parents[2] / "packaging" / "gpuwatch-exporter.service"


def _unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str           # keys are case-sensitive in systemd
    parser.read_string(UNIT.read_text(encoding="utf-8"))
    return parser


def test_the_unit_runs_serve_on_loopback() -> None:
    argv = shlex.split(_unit()["Service"]["ExecStart"])
    assert argv[0].endswith("/gpuwatch") and argv[1] == "serve"
    args = build_parser().parse_args(argv[1:])
    assert args.listen.loopback and not args.allow_remote


def test_the_unit_runs_unprivileged() -> None:
    service = _unit()["Service"]
    assert service["DynamicUser"] == "yes" and service["NoNewPrivileges"] == "yes"
    assert service["CapabilityBoundingSet"] == ""
    assert service["ProtectSystem"] == "strict"
    assert "PrivateDevices" not in service          # the GPUs are devices
