"""install.sh removes only what its manifest says it made, never replaces a link or a
folder it did not make, and takes --exec only as an executable regular file whose path
a desktop entry can carry."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "packaging" / "install.sh"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _home(tmp: Path) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir(parents=True)
    return dict(os.environ, HOME=str(home), XDG_DATA_HOME=str(home / ".local/share"),
                XDG_CONFIG_HOME=str(home / ".config"), PYTHONPATH=str(ROOT))


def _install(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(INSTALL), *args], env=env, capture_output=True,
                          text=True, cwd=ROOT)


def _program(where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    program = where / "gpuwatch"
    program.write_text("#!/bin/sh\necho a gpuwatch\n")
    program.chmod(0o755)
    return program


def _bundle(tmp: Path) -> Path:
    from gpuwatch.commands.completion import write_all

    bundle = tmp / "dist" / "gpuwatch"
    _program(bundle)
    write_all(bundle / "completions")
    return bundle


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) + ("/" if p.is_dir() else "") for p in root.rglob("*")}


def test_uninstall_leaves_exactly_what_was_there_before(tmp_path):
    """Folders and files of the user's own stay; every folder the install made goes."""
    env = _home(tmp_path)
    home = Path(env["HOME"])
    (home / ".local/share/applications").mkdir(parents=True)
    (home / ".local/share/applications/mine.desktop").write_text("[Desktop Entry]\n")
    (home / ".config/fish").mkdir(parents=True)
    before = _tree(home)
    assert _install(env, "--bundle", str(_bundle(tmp_path))).returncode == 0
    assert (home / ".local/lib/gpuwatch/gpuwatch").is_file()
    run = _install(env, "--uninstall")
    assert run.returncode == 0, run.stderr
    assert _tree(home) - {".local/share/applications/mimeinfo.cache"} == before


def test_a_folder_of_the_users_with_the_bundles_name_is_never_removed_or_replaced(tmp_path):
    env = _home(tmp_path)
    home = Path(env["HOME"])
    own = home / ".local/lib/gpuwatch"
    own.mkdir(parents=True)
    (own / "notes.txt").write_text("mine")
    run = _install(env, "--bundle", str(_bundle(tmp_path)))
    assert run.returncode == 2 and "was not made by this installer" in run.stderr
    assert _install(env, "--exec", str(_program(tmp_path / "bin"))).returncode == 0
    assert _install(env, "--uninstall").returncode == 0
    assert (own / "notes.txt").read_text() == "mine"


def test_a_link_another_installer_made_is_never_replaced_or_removed(tmp_path):
    env = _home(tmp_path)
    home = Path(env["HOME"])
    pipx = _program(home / ".local/pipx/venvs/gpuwatch/bin")
    link = home / ".local/bin/gpuwatch"
    link.parent.mkdir(parents=True)
    link.symlink_to(pipx)
    run = _install(env, "--bundle", str(_bundle(tmp_path)))
    assert run.returncode == 0, run.stderr
    assert "was not made by this installer" in run.stderr
    assert os.readlink(link) == str(pipx)
    assert _install(env, "--uninstall").returncode == 0
    assert os.readlink(link) == str(pipx) and pipx.is_file()
    assert not (home / ".local/lib/gpuwatch").exists()


def test_its_own_link_is_updated_and_removed(tmp_path):
    env = _home(tmp_path)
    link = Path(env["HOME"]) / ".local/bin/gpuwatch"
    bundle = _bundle(tmp_path)
    assert _install(env, "--bundle", str(bundle)).returncode == 0
    assert _install(env, "--bundle", str(bundle)).returncode == 0        # again: fine
    assert link.is_symlink()
    assert _install(env, "--uninstall").returncode == 0
    assert not link.exists() and not link.is_symlink()
    again = _install(env, "--uninstall")
    assert again.returncode == 1 and "no install manifest" in again.stderr


@pytest.mark.parametrize("kind", ["folder", "not-executable", "fifo", "missing"])
def test_exec_must_be_an_executable_regular_file(tmp_path, kind):
    env = _home(tmp_path)
    target = tmp_path / "x" / "gpuwatch"
    target.parent.mkdir()
    if kind == "folder":
        target.mkdir()
        target.chmod(0o755)
    elif kind == "not-executable":
        target.write_text("#!/bin/sh\n")
    elif kind == "fifo":
        os.mkfifo(target)
    run = _install(env, "--exec", str(target))
    assert run.returncode == 2 and "is not an executable program" in run.stderr
    assert not (Path(env["XDG_DATA_HOME"]) / "applications").exists()


names = st.text(st.characters(min_codepoint=1, max_codepoint=0x2FF,
                              blacklist_characters="/"), min_size=1, max_size=12)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(folder=names)
def test_the_desktop_entry_carries_the_exec_path_or_it_is_refused(tmp_path_factory, folder):
    """Any folder name: either the entry's Exec names the program exactly (as a desktop
    launcher splits it), or the install is refused with nothing written."""
    tmp = tmp_path_factory.mktemp("exec")
    env = _home(tmp)
    try:
        program = _program(tmp / folder)
    except (OSError, ValueError):
        return                      # a name this file system does not take
    run = _install(env, "--exec", str(program))
    desktop = Path(env["XDG_DATA_HOME"]) / "applications" / "gpuwatch.desktop"
    if run.returncode == 2:
        assert "cannot go in a desktop entry" in run.stderr
        assert not desktop.exists()
        return
    assert run.returncode == 0, run.stderr
    lines = desktop.read_text().splitlines()
    exec_line = next(x for x in lines if x.startswith("Exec="))
    assert shlex.split(exec_line[5:])[0] == str(program)
    if shutil.which("desktop-file-validate"):
        check = subprocess.run(["desktop-file-validate", str(desktop)], capture_output=True,
                               text=True)
        assert check.returncode == 0 and not check.stdout.strip(), check.stdout
