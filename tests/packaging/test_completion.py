"""Shell completion: the generated scripts parse, and bash completes what the CLI takes
(the lazily declared subcommand options included)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpuwatch.commands import completion

BASH = shutil.which("bash")


@pytest.fixture(scope="module")
def scripts(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("completions")
    paths = completion.write_all(folder)
    return {shell: path for shell, path in zip(completion.SHELLS, paths, strict=True)}


def test_every_subcommand_and_its_options_are_described() -> None:
    commands = {c.name: c for c in completion.describe_cli()}
    assert {"gui", "snapshot", "record", "report", "estimate"} <= set(commands)
    gui_flags = {f for o in commands["gui"].options for f in o.flags}
    assert {"--demo", "--theme", "--tray", "--verbose", "--screenshot"} <= gui_flags
    theme = next(o for o in commands["gui"].options if "--theme" in o.flags)
    assert theme.values == ("system", "light", "dark")
    demo = next(o for o in commands["gui"].options if "--demo" in o.flags)
    assert "oom-ramp" in demo.values
    assert commands["report"].positional_file


@pytest.mark.parametrize("shell", completion.SHELLS)
def test_each_script_names_every_option(shell: str, scripts) -> None:
    text = scripts[shell].read_text()
    for command in completion.describe_cli():
        assert command.name in text
        for option in command.options:
            long = next((f for f in option.flags if f.startswith("--")), option.flags[0])
            needle = f"-l {long[2:]}" if shell == "fish" else long
            assert needle in text, (shell, command.name, long)


@pytest.mark.parametrize("shell", completion.SHELLS)
def test_each_script_parses(shell: str, scripts) -> None:
    exe = shutil.which(shell)
    if exe is None:
        pytest.skip(f"{shell} is not installed")
    run = subprocess.run([exe, "-n", str(scripts[shell])], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def _complete(script: Path, words: list[str]) -> list[str]:
    """What bash offers for the last of ``words`` (the real completion function)."""
    line = " ".join(f"'{w}'" for w in words)
    program = (f"source '{script}'\nCOMP_WORDS=({line})\nCOMP_CWORD={len(words) - 1}\n"
               '_gpuwatch\nprintf "%s\\n" "${COMPREPLY[@]}"\n')
    run = subprocess.run([BASH, "--norc", "-c", program], capture_output=True, text=True,
                         check=True)
    return run.stdout.split()


@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_bash_completes_subcommands_options_and_their_values(scripts, tmp_path) -> None:
    script = scripts["bash"]
    assert _complete(script, ["gpuwatch", "sn"]) == ["snapshot"]
    assert _complete(script, ["gpuwatch", "gui", "--the"]) == ["--theme"]
    assert _complete(script, ["gpuwatch", "gui", "--theme", ""]) == ["system", "light", "dark"]
    assert "oom-ramp" in _complete(script, ["gpuwatch", "record", "--demo", "oo"])
    assert _complete(script, ["gpuwatch", "report", "--format", "p"]) == ["pdf"]
    assert _complete(script, ["gpuwatch", "estimate", "--batch", ""]) == []   # a number
    assert "--verbose" in _complete(script, ["gpuwatch", "--ver"])   # bare gpuwatch: gui's
    (tmp_path / "run.gpuwatch.sqlite").touch()
    found = _complete(script, ["gpuwatch", "report", str(tmp_path / "run.")])
    assert found == [str(tmp_path / "run.gpuwatch.sqlite")]


def test_the_module_prints_one_script_or_writes_all(tmp_path: Path, capsys) -> None:
    assert completion.main(["fish"]) == 0
    assert capsys.readouterr().out.startswith("# fish completion for gpuwatch")
    assert completion.main(["--all", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_gpuwatch", "gpuwatch.bash",
                                                          "gpuwatch.fish"]
    with pytest.raises(SystemExit) as exit_info:
        completion.main([])
    assert exit_info.value.code == 2


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completes_subcommands_options_and_their_values(scripts) -> None:
    def complete(line: str) -> list[str]:
        run = subprocess.run(["fish", "--no-config", "-c",
                              f"source '{scripts['fish']}'; complete -C '{line}'"],
                             capture_output=True, text=True, check=True)
        return [row.split("\t")[0] for row in run.stdout.splitlines()]

    assert complete("gpuwatch sn") == ["snapshot"]
    assert complete("gpuwatch gui --the") == ["--theme"]
    assert complete("gpuwatch gui --theme ") == ["dark", "light", "system"]
    assert complete("gpuwatch record --demo oo") == ["oom-ramp"]
    assert complete("gpuwatch report --format p") == ["pdf"]
