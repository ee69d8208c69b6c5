"""Shell completion (argcomplete): what completes is what the CLI takes, the lazily
declared subcommand options included, and the generated scripts work in real bash, zsh
and fish, each of which runs a real ``gpuwatch`` to ask."""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import argcomplete.finders
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwatch.cli import build_parser
from gpuwatch.commands import completion

REPO = Path(__file__).resolve().parents[2]
ZSH_DRIVER = """
autoload -Uz is-at-least
# the completion system's widget, reduced to printing the candidates it is handed
_describe() { local name=$2; print -l -- ${(P)name}; }
compdef() { : }
source "$1"
BUFFER="$2"; CURSOR=${#BUFFER}; words=(${(z)BUFFER}); [[ $BUFFER == *' ' ]] && words+=('')
_python_argcomplete
"""


class _Done(Exception):
    pass


def _raise_done(code: int = 0) -> None:
    raise _Done


def offered(line: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What ``gpuwatch`` answers on TAB at the end of ``line``, in this process."""
    monkeypatch.setenv("_ARGCOMPLETE", "1")
    monkeypatch.setenv("_ARGCOMPLETE_SHELL", "bash")
    monkeypatch.setenv("COMP_LINE", line)
    monkeypatch.setenv("COMP_POINT", str(len(line)))
    monkeypatch.delenv("_ARGCOMPLETE_IFS", raising=False)
    # argcomplete writes its debug output to fd 9, which is pytest's own here
    monkeypatch.setattr(argcomplete.finders.CompletionFinder, "_init_debug_stream",
                        lambda self: None)
    out = io.StringIO()
    with pytest.raises(_Done):
        completion.complete(build_parser(), output_stream=out, exit_method=_raise_done)
    return [w.rstrip() for w in out.getvalue().split("\v") if w]


def _options() -> list[tuple[str, str]]:
    parsers = completion.subparsers(build_parser())
    return [(name, flag) for name, p in parsers.items() for a in p._actions
            for flag in a.option_strings if flag.startswith("--")]


OPTIONS = _options()


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(OPTIONS), st.integers(min_value=2, max_value=40))
def test_every_option_of_every_subcommand_completes_from_any_prefix(option, cut) -> None:
    command, flag = option
    with pytest.MonkeyPatch.context() as mp:
        assert flag in offered(f"gpuwatch {command} {flag[:cut]}", mp)


def test_named_values_belong_to_real_options() -> None:
    dests = {a.dest for p in completion.subparsers(build_parser()).values() for a in p._actions}
    assert set(completion.NAMED_VALUES) <= dests


def test_values_numbers_and_files(monkeypatch, tmp_path) -> None:
    assert offered("gpuwatch gui --theme ", monkeypatch) == ["system", "light", "dark"]
    assert "llama-3.1-8b" in offered("gpuwatch estimate --model llama", monkeypatch)
    assert "H100-80GB" in offered("gpuwatch estimate --gpu H", monkeypatch)
    assert offered("gpuwatch plan --sort ", monkeypatch) == ["time", "cost", "memory"]
    assert offered("gpuwatch plan --preset ", monkeypatch)
    assert offered("gpuwatch estimate --batch ", monkeypatch) == []      # a number
    assert offered("gpuwatch record --interval ", monkeypatch) == []
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.gpuwatch.sqlite").touch()
    (tmp_path / "notes.txt").touch()
    (tmp_path / "mine.toml").touch()
    (tmp_path / "sub").mkdir()
    assert offered("gpuwatch report ", monkeypatch)[:1] == ["latest"]
    assert set(offered("gpuwatch report r", monkeypatch)) == {"run.gpuwatch.sqlite"}
    assert "sub/" in offered("gpuwatch report s", monkeypatch)
    assert offered("gpuwatch snapshot --demo mi", monkeypatch)[-1] == "mine.toml"
    assert "notes.txt" not in offered("gpuwatch snapshot --demo ", monkeypatch)


def test_bare_gpuwatch_completes_the_windows_options(monkeypatch) -> None:
    # `gpuwatch --demo oom-ramp <TAB>` is `gpuwatch gui --demo oom-ramp <TAB>`: options,
    # never the scenario taken for a subcommand
    after = offered("gpuwatch --demo oom-ramp --t", monkeypatch)
    assert sorted(after) == ["--theme", "--time-scale", "--tray"]
    assert "oom-ramp" in offered("gpuwatch --demo oo", monkeypatch)
    assert offered("gpuwatch sn", monkeypatch) == ["snapshot"]
    assert "--version" in offered("gpuwatch --vers", monkeypatch)


@pytest.fixture(scope="module")
def shell_env(tmp_path_factory) -> tuple[dict[str, Path], dict[str, str]]:
    """The three scripts, and an environment whose PATH has a `gpuwatch` running this
    checkout."""
    folder = tmp_path_factory.mktemp("completions")
    scripts = dict(zip(completion.SHELLS, completion.write_all(folder), strict=True))
    bin_dir = tmp_path_factory.mktemp("bin")
    exe = bin_dir / "gpuwatch"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gpuwatch "$@"\n')
    exe.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                      os.environ.get("PYTHONPATH")]))}
    return scripts, env


def _run(argv: list[str], env: dict[str, str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, env=env, check=True,
                          timeout=60).stdout


def in_bash(line: str, shell_env) -> list[str]:
    scripts, env = shell_env
    words = line.split(" ")
    program = (f"source '{scripts['bash']}'\nCOMP_LINE='{line}'\nCOMP_POINT=${{#COMP_LINE}}\n"
               f"COMP_WORDS=({' '.join(repr(w) for w in words)})\n"
               f"COMP_CWORD={len(words) - 1}\n_python_argcomplete gpuwatch\n"
               'printf "%s\\n" "${COMPREPLY[@]}"\n')
    return [w.rstrip() for w in _run(["bash", "--norc", "-c", program], env).splitlines() if w]


def in_zsh(line: str, shell_env) -> list[str]:
    scripts, env = shell_env
    out = _run(["zsh", "-f", "-c", ZSH_DRIVER, "zsh", str(scripts["zsh"]), line], env)
    return [row.split(":")[0] for row in out.splitlines() if row]


def in_fish(line: str, shell_env) -> list[str]:
    scripts, env = shell_env
    out = _run(["fish", "--no-config", "-c",
                f"source '{scripts['fish']}'; complete -C '{line}'"], env)
    return [row.split("\t")[0] for row in out.splitlines()]


SHELL_RUNS = {"bash": in_bash, "zsh": in_zsh, "fish": in_fish}


@pytest.mark.parametrize("shell", completion.SHELLS)
def test_each_real_shell_completes_through_gpuwatch(shell: str, shell_env) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed (scripts/system-deps.sh test installs it)")
    run = SHELL_RUNS[shell]
    assert run("gpuwatch sn", shell_env) == ["snapshot"]
    assert sorted(run("gpuwatch gui --theme ", shell_env)) == ["dark", "light", "system"]
    assert run("gpuwatch record --demo oo", shell_env) == ["oom-ramp"]
    assert run("gpuwatch report --format p", shell_env) == ["pdf"]
    assert "--theme" in run("gpuwatch --demo oom-ramp --th", shell_env)
    assert "llama-3.1-8b" in run("gpuwatch estimate --model llama-3", shell_env)


@pytest.mark.parametrize("shell", completion.SHELLS)
def test_each_script_parses(shell: str, shell_env) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    scripts, env = shell_env
    subprocess.run([shell, "-n", str(scripts[shell])], check=True, env=env)


def test_the_module_prints_one_script_or_writes_all(tmp_path: Path, capsys) -> None:
    assert completion.main(["fish"]) == 0
    assert capsys.readouterr().out.startswith("# fish completion for gpuwatch")
    assert completion.main(["zsh"]) == 0
    assert capsys.readouterr().out.startswith("#compdef gpuwatch\n")
    assert completion.main(["--all", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_gpuwatch", "gpuwatch.bash",
                                                          "gpuwatch.fish"]
    with pytest.raises(SystemExit) as exit_info:
        completion.main([])
    assert exit_info.value.code == 2


def test_parsers_stay_argparse_parsers() -> None:
    assert all(isinstance(p, argparse.ArgumentParser)
               for p in completion.subparsers(build_parser()).values())
