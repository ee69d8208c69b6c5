"""Command-line options shared by the subcommands, with readable errors for bad values.

Imported whenever a subcommand's options are declared, `--help` included, so it imports
no telemetry: the two limits below are copies of ``telemetry.sampler.MIN_INTERVAL_S`` and
``telemetry.source.MAX_SPEED`` (a test keeps them equal), and the telemetry source is
imported in :func:`source_options`.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from gpuwatch.telemetry.source import SourceOptions

MIN_INTERVAL_S = 0.1       # = gpuwatch.telemetry.sampler.MIN_INTERVAL_S
MAX_SPEED = "max"          # = gpuwatch.telemetry.source.MAX_SPEED
MAX_INTERVAL_S = 3600

T = TypeVar("T")


def parsed(text: str, parse: Callable[[str], T], error: type[Exception],
           what: str | None = None) -> T:
    """``parse(text)``, its ``error`` turned into argparse's: "'TEXT' is not WHAT: why"
    (the error's own sentence alone without ``what``)."""
    try:
        return parse(text)
    except error as exc:
        reason = str(exc) if what is None else f"{text!r} is not {what}: {exc}"
        raise argparse.ArgumentTypeError(reason) from None


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{what} must be a finite number, got {text!r}")
    return value


def interval(text: str) -> float:
    value = _number(text, "the interval")
    if not MIN_INTERVAL_S <= value <= MAX_INTERVAL_S:
        raise argparse.ArgumentTypeError(
            f"the interval must be between {MIN_INTERVAL_S} and {MAX_INTERVAL_S} seconds, "
            f"got {text}")
    return value


MAX_SECONDS = 366 * 86400          # a year: longer than any run people record
MIN_TIME_SCALE, MAX_TIME_SCALE = 1e-3, 1e6


def seconds(text: str) -> float:
    value = _number(text, "the time")
    if not 0 <= value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"the time must be between 0 and {MAX_SECONDS:,} seconds (366 days), got {text}")
    return value


def positive_seconds(text: str) -> float:
    value = seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError("the duration must be more than 0 seconds")
    return value


def time_scale(text: str) -> float | str:
    if text.strip().lower() == MAX_SPEED:
        return MAX_SPEED
    value = _number(text, "the time scale")
    if not MIN_TIME_SCALE <= value <= MAX_TIME_SCALE:
        raise argparse.ArgumentTypeError(
            f"the time scale must be between {MIN_TIME_SCALE:g} and {MAX_TIME_SCALE:g} "
            f"virtual seconds per second (or 'max'), got {text}")
    return value


def add_demo(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--demo", nargs="?", const="", default=None, metavar="SCENARIO",
        help="use simulated GPUs running SCENARIO: a built-in name (see `gpuwatch "
             "scenarios`) or a .toml file; SCENARIO defaults to workstation. Default "
             "without --demo: the real GPUs, through NVML")


def add_sampling(parser: argparse.ArgumentParser, default_interval: float | None = 1.0,
                 default_text: str | None = None) -> None:
    """``--interval`` and ``--time-scale``. ``default_text`` says what a ``None`` default
    interval means."""
    default = f"default: {default_text}" if default_text else f"default {default_interval:g}"
    parser.add_argument("--interval", type=interval, default=default_interval, metavar="S",
                        help=f"seconds between samples, {MIN_INTERVAL_S:g} to "
                             f"{MAX_INTERVAL_S:,} ({default})")
    parser.add_argument("--time-scale", type=time_scale, default=1.0, metavar="X|max",
                        help="simulated GPUs only: virtual seconds per real second, "
                             f"{MIN_TIME_SCALE:g} to {MAX_TIME_SCALE:,.0f}, or 'max' to run "
                             "without waiting (default 1: real time)")


def prometheus_url(text: str) -> str:
    from gpuwatch.telemetry.prometheus.url import ServerUrlError, parse_server_url

    return parsed(text, parse_server_url, ServerUrlError, "a Prometheus server URL")


def match_selector(text: str) -> tuple:
    from gpuwatch.telemetry.prometheus.selector import SelectorError, parse_selector

    return parsed(text, parse_selector, SelectorError, "a list of label matchers")


def add_prometheus(parser: argparse.ArgumentParser) -> None:
    """``--prometheus URL`` and ``--match SELECTOR``: GPUs read from a Prometheus server."""
    parser.add_argument(
        "--prometheus", type=prometheus_url, metavar="URL",
        help="read the GPUs of many hosts from the Prometheus server at URL (e.g. "
             "http://prometheus:9090), as gpuwatch's exporters (`gpuwatch serve`) or "
             "NVIDIA's dcgm-exporters report them, instead of this machine's NVML "
             "(default: this machine's GPUs)")
    parser.add_argument(
        "--match", type=match_selector, metavar="SELECTOR",
        help="with --prometheus: read only the series these label matchers select, "
             "e.g. '{cluster=\"a\", hostname=~\"gpu-.*\"}' (default: every GPU series)")


def gpu_ids(text: str) -> object:
    from gpuwatch.core.gpu_selection import GpuSelection, GpuSelectionError

    return parsed(text, GpuSelection.parse, GpuSelectionError)


def add_gpu_ids(parser: argparse.ArgumentParser) -> None:
    """``-i/--id``: only these GPUs, by index or UUID (as ``nvidia-smi -i`` takes them)."""
    parser.add_argument(
        "-i", "--id", dest="gpus", type=gpu_ids, metavar="IDS",
        help="only these GPUs: indices or UUIDs separated by commas, as nvidia-smi -i "
             "takes them, e.g. 0,2 or GPU-5d3c (a UUID's first characters are enough when "
             "only one GPU starts so; default: every GPU)")


def add_format(parser: argparse.ArgumentParser, formats: tuple[str, ...], help: str) -> None:
    """``--format``, the first of ``formats`` by default; ``--json`` stays its alias."""
    parser.add_argument("--format", choices=formats, default=None,
                        help=f"the output: {help} (default {formats[0]})")
    parser.set_defaults(default_format=formats[0])


def output_format(args: argparse.Namespace) -> str:
    """The format asked for, with ``--json`` and ``--format`` agreeing."""
    if args.json:
        if args.format not in (None, "json"):
            raise UsageError(f"--json and --format {args.format} ask for two formats; "
                             "give one")
        return "json"
    return args.format or args.default_format


class UsageError(Exception):
    """A combination of options that makes no sense; the CLI exits with code 2."""


def source_options(args: argparse.Namespace, *, loop: bool = False,
                   pcie_inline: bool = False) -> SourceOptions:
    from gpuwatch.telemetry.source import SourceOptions

    prometheus = getattr(args, "prometheus", None)
    if getattr(args, "match", None) is not None and prometheus is None:
        raise UsageError("--match applies to --prometheus only; add --prometheus URL")
    if prometheus is not None and args.demo is not None:
        raise UsageError("--prometheus and --demo are two different sources; give one")
    if prometheus is not None and getattr(args, "gpus", None) is not None:
        raise UsageError("-i/--id chooses among this machine's GPUs; with --prometheus, "
                         "choose GPUs with --match, e.g. --match '{gpu=\"0\"}'")
    if args.demo is None:
        if getattr(args, "time_scale", 1.0) != 1.0:
            raise UsageError("--time-scale applies to simulated GPUs only; add --demo")
        if getattr(args, "at", 0.0):
            raise UsageError("--at applies to simulated GPUs only; add --demo")
    return SourceOptions(
        demo=args.demo,
        time_scale=getattr(args, "time_scale", 1.0),
        loop=loop,
        start_at_s=getattr(args, "at", 0.0) or 0.0,
        pcie_inline=pcie_inline,
        prometheus=prometheus,
        match=getattr(args, "match", None) or (),
        gpus=getattr(args, "gpus", None),
    )
