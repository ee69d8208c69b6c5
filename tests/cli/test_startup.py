"""Start-up: what the command line imports before it does any work.

Each check runs in a fresh interpreter and reads its ``sys.modules``: the parser (every
subcommand's options included), ``--version`` and ``--help`` load none of the heavy
modules, and a command loads only what its work needs. Speed itself is measured in
``benchmarks/startup.py``, not asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("numpy", "PySide6", "pyqtgraph", "pynvml", "psutil", "sqlite3")

# Runs a few lines in a new interpreter and prints the gpuwatch and heavy modules loaded.
PROBE = """
import contextlib, io, json, sys
{body}
print(json.dumps(sorted(m for m in sys.modules
                        if m.split(".")[0] in {heavy!r} or m.startswith("gpuwatch"))))
"""

RUN_MAIN = """
from gpuwatch.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main({argv!r})
    except SystemExit:
        pass
"""


def loaded(body: str, tmp_path) -> set[str]:
    env = dict(os.environ, GPUWATCH_DATA_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", PROBE.format(body=body, heavy=HEAVY)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def heavy_in(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in HEAVY}


def test_building_the_whole_parser_imports_nothing_heavy(tmp_path):
    # every subcommand's options declared, as `gpuwatch COMMAND --help` would
    modules = loaded("import argparse\n"
                     "from gpuwatch.cli import build_parser\n"
                     "from gpuwatch.commands.parsing import LazyParser\n"
                     "parser = build_parser()\n"
                     "sub = next(a for a in parser._actions\n"
                     "           if isinstance(a, argparse._SubParsersAction))\n"
                     "for p in sub.choices.values():\n"
                     "    assert isinstance(p, LazyParser)\n"
                     "    p.declared()\n", tmp_path)
    assert heavy_in(modules) == set()
    for engine in ("gpuwatch.budget.estimator", "gpuwatch.advisor", "gpuwatch.sessions",
                   "gpuwatch.telemetry", "gpuwatch.ui"):
        assert not {m for m in modules if m == engine or m.startswith(engine + ".")}, engine


@pytest.mark.parametrize("argv", [["--version"], ["--help"]], ids=["version", "help"])
def test_version_and_help_import_only_the_parser(tmp_path, argv):
    modules = loaded(RUN_MAIN.format(argv=argv), tmp_path)
    # no subcommand's options are declared, let alone its code imported
    assert modules == {"gpuwatch", "gpuwatch.cli", "gpuwatch.commands",
                       "gpuwatch.commands.parsing"}


@pytest.mark.parametrize("command", ["gui", "snapshot", "scenarios", "report", "estimate"])
def test_a_subcommands_help_imports_nothing_heavy(tmp_path, command):
    # (`record --help` and `sessions --help` show the sessions folder: finding it loads
    # the sessions package)
    assert heavy_in(loaded(RUN_MAIN.format(argv=[command, "--help"]), tmp_path)) == set()


def test_snapshot_needs_no_numpy_advisor_sessions_or_qt(tmp_path):
    modules = loaded(RUN_MAIN.format(argv=["snapshot", "--demo", "--json"]), tmp_path)
    assert "pynvml" in modules              # the simulated NVML stands in for it
    assert not heavy_in(modules) - {"pynvml"}
    assert not {m for m in modules if m.startswith(("gpuwatch.advisor", "gpuwatch.sessions",
                                                   "gpuwatch.budget", "gpuwatch.ui"))}


def test_estimate_needs_no_telemetry_sessions_or_qt(tmp_path):
    modules = loaded(RUN_MAIN.format(argv=["estimate", "--model", "gpt2"]), tmp_path)
    assert "gpuwatch.budget.estimator" in modules
    assert not heavy_in(modules) - {"numpy"}
    assert not {m for m in modules if m.startswith(("gpuwatch.telemetry", "gpuwatch.sessions",
                                                   "gpuwatch.advisor", "gpuwatch.ui"))}


def test_a_command_runs_after_its_lazy_import(capsys):
    from cli_support import run

    code, out, _ = run(capsys, "estimate", "--model", "gpt2", "--json")
    assert code == 0 and json.loads(out)["schema"] == "gpuwatch.estimate/1"


def test_copied_limits_match_their_sources():
    """The parser declares these without importing their modules; they must agree."""
    from gpuwatch.commands import options, session_args
    from gpuwatch.sessions import export
    from gpuwatch.telemetry import sampler, source

    assert options.MIN_INTERVAL_S == sampler.MIN_INTERVAL_S
    assert options.MAX_SPEED == source.MAX_SPEED
    assert session_args.FORMATS == export.FORMATS
    assert session_args.FORMAT_OF_EXTENSION == export.FORMAT_OF_EXTENSION


def test_the_lazy_budget_package_still_exports_every_name(tmp_path):
    modules = loaded("import gpuwatch.budget.catalog", tmp_path)
    assert "numpy" not in modules and "gpuwatch.budget.estimator" not in modules

    import gpuwatch.budget
    from gpuwatch.budget import estimator

    for name in gpuwatch.budget.__all__:
        assert getattr(gpuwatch.budget, name) is not None, name
        assert name in dir(gpuwatch.budget)
    assert gpuwatch.budget.estimate is estimator.estimate
    with pytest.raises(AttributeError):
        gpuwatch.budget.no_such_name  # noqa: B018
