"""What a newcomer reads: every help screen, its examples, and counts said in good English."""

from __future__ import annotations

import argparse
import re
import shlex

import pytest
from cli_support import run

from gpuwatch.cli import build_parser
from gpuwatch.commands import COMMANDS
from gpuwatch.commands.parsing import LazyParser
from gpuwatch.core.wording import plural

NAMES = [name for name, _, _ in COMMANDS]


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def subcommand(name: str) -> argparse.ArgumentParser:
    parser = subparsers(build_parser())[name]
    assert isinstance(parser, LazyParser)
    return parser.declared()


def help_of(capsys, *argv: str) -> str:
    code, out, err = run(capsys, *argv, "--help")
    assert code == 0 and not err
    return out


@pytest.mark.parametrize(("n", "text"), [(0, "0 hints"), (1, "1 hint"), (2, "2 hints"),
                                         (21, "21 hints")])
def test_plural(n, text):
    assert plural(n, "hint") == text


@pytest.mark.parametrize(("n", "text"), [(0, "0 processes"), (1, "1 process"),
                                         (2, "2 processes")])
def test_plural_irregular(n, text):
    assert plural(n, "process", "processes") == text


def test_the_top_level_help_lists_every_command_with_examples(capsys):
    out = help_of(capsys)
    for name, summary, _ in COMMANDS:
        assert re.search(rf"^    {name} +{re.escape(summary)}$", out, re.M), name
    assert "\nexamples:\n  gpuwatch " in out


@pytest.mark.parametrize("name", NAMES)
def test_every_subcommand_has_a_description_and_examples(capsys, name):
    parser = subcommand(name)
    assert parser.description and len(parser.description) > 40
    out = help_of(capsys, name)
    assert parser.description.split()[0] in out.split("\n\n")[1]  # right under the usage
    examples = out.split("\nexamples:\n")[1].splitlines()
    assert out.rstrip().endswith(examples[-1].rstrip())           # the examples end it
    assert 1 <= len(examples) <= 3
    assert all(line.startswith("  gpuwatch") for line in examples)


@pytest.mark.parametrize("name", NAMES)
def test_every_example_parses(name):
    parser = build_parser()
    for line in subcommand(name).epilog.splitlines()[1:]:
        words = shlex.split(line.split("|")[0], comments=True)
        assert words[0] == "gpuwatch"
        argv = words[1:] or ["gui"]
        args = parser.parse_args(argv)      # exits 2 on a bad example
        assert args.command in NAMES


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]


def _is_switch(action: argparse.Action) -> bool:
    return action.nargs == 0       # store_true, --x/--no-x, --version: nothing to default


@pytest.mark.parametrize("name", NAMES)
def test_every_option_says_its_default_unless_it_is_a_switch(name):
    for action in _options(subcommand(name)):
        what = "/".join(action.option_strings) or action.dest
        assert action.help and len(action.help) > 15, f"{name} {what} has no help"
        if action.option_strings and not _is_switch(action):
            assert "default" in action.help.lower(), f"{name} {what}: {action.help}"


def test_times_and_sizes_say_their_units():
    for name in NAMES:
        for action in _options(subcommand(name)):
            if action.metavar in ("S", "DAYS"):
                assert re.search(r"seconds|days", action.help), action.option_strings
            if action.metavar == "SIZE":
                assert re.search(r"\d(GiB|MiB|GB|MB)", action.help), action.option_strings


def test_help_is_wrapped_to_the_terminal(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    for name in NAMES:
        out = help_of(capsys, name)
        prose = out.split("\nexamples:\n")[0]
        long = [line for line in prose.splitlines() if len(line) > 80 and " " in line.strip()]
        assert not long, (name, long)


def test_the_sessions_folder_is_shown_in_help(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("GPUWATCH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    assert str(tmp_path / "sessions") in help_of(capsys, "sessions")
    assert str(tmp_path / "sessions") in help_of(capsys, "record")
    assert "{sessions_dir}" not in help_of(capsys, "record")


# --- counts in what the commands print --------------------------------------------------

def _agree(text: str, noun: str) -> None:
    """Every "<n> <noun>" in ``text`` is singular exactly when n is 1."""
    found = re.findall(rf"\b(\d+) {noun}(s?)\b", text)
    assert found, f"no {noun} count in {text!r}"
    for n, s in found:
        assert (s == "") == (n == "1"), f"{n} {noun}{s}"


def test_scenarios_count_gpus_in_good_english(capsys):
    code, out, _ = run(capsys, "scenarios")
    assert code == 0
    _agree(out, "GPU")
    assert re.search(r"\b1 GPU\b", out) and re.search(r"\b2 GPUs\b", out)


def test_record_counts_samples_and_hints_in_good_english(capsys):
    code, out, _ = run(capsys, "record", "--demo", "--time-scale", "max", "--duration", "0.5",
                       "--no-save")
    assert code == 0 and "Recorded 1 sample over" in out
    code, out, _ = run(capsys, "record", "--demo", "underused", "--time-scale", "max",
                       "--no-save")
    summary = out.splitlines()[-1]
    assert code == 0 and "samples over" in summary and summary.endswith(". 1 info hint.")
    code, out, _ = run(capsys, "record", "--demo", "fragmentation", "--time-scale", "max",
                       "--no-save")
    assert code == 0 and out.splitlines()[-1].endswith(". 2 warning hints.")


def test_the_session_list_counts_gpus_and_hints_in_good_english(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("GPUWATCH_DATA_DIR", str(tmp_path))
    for scenario, duration in (("underused", "1800"), ("multi-gpu-ddp", "1"),
                               ("oom-ramp", "600")):
        code, _, _ = run(capsys, "record", "--demo", scenario, "--time-scale", "max",
                         "--duration", duration)
        assert code == 0
    code, out, _ = run(capsys, "sessions")
    assert code == 0 and len(out.splitlines()) == 3
    _agree(out, "GPU")
    _agree(out, "hint")
    assert re.search(r"\b1 GPU\b.*\b1 hint\b", out)            # underused
    assert re.search(r"\b8 GPUs\b.*\b0 hints\b", out)          # multi-gpu-ddp, one second
    assert re.search(r"\b1 GPU\b.*\b2 hints\b", out)           # oom-ramp
    code, out, _ = run(capsys, "sessions", "--prune-days", "0")
    assert code == 0 and out.startswith("Removed 3 sessions, freed ")
