"""Any command line, however hostile its values: exit 0 or 2, never a traceback, never a
hang, the inputs unchanged, and nothing written but what was asked for.

Hypothesis builds command lines from every subcommand's flags with values drawn from a
pool of troublemakers (NaN, infinities, overflowing numbers, unitless sizes, empty and
control-character strings, folders, FIFOs, device nodes, dangling and looping symlinks,
damaged session files). Each example runs in-process under an alarm that turns a hang
into a failure. `pytest --hypothesis-profile=long tests/cli` hunts longer.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import run_captured
from hypothesis import given
from hypothesis import strategies as st
from session_support import record_scenario

HANG_LIMIT_S = 60        # a guard against hangs, far above any healthy run here

NUMBERS = ["0", "-0", "1", "-1", "-3", "0.5", "7", "1e3", "1e18", "1e300", "1e400", "-1e400",
           "nan", "NaN", "inf", "-inf", "Infinity", "1_000", "0x10", "", " ", "1,5", "٣",
           "9" * 40, "2e-308", "1e-320"]
SIZES = ["0", "24", "24GiB", "24 gib", "1.5GB", "-1GiB", "1e300TiB", "nanGiB", "infB", "1e18EB",
         "80GB", "GiB", "12 parsecs", "", "9" * 40 + "B"]
STRINGS = ["", " ", "-", "--", "latest", "workstation", "oom-ramp", "nope", "\x1b]0;x\x07",
           "a\nb", "\u202e", "../../x", "x" * 300]
FORMATS = ["html", "pdf", "csv", "json", "HTML", "xml", ""]


class Hang(Exception):
    pass


@contextlib.contextmanager
def _alarm(seconds: int) -> Iterator[None]:
    def ring(signum, frame):
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _digest(path: Path) -> str | None:
    if path.is_symlink() or not path.is_file():
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tree(root: Path) -> dict[str, tuple]:
    """Every entry under root: kind, size, mtime and content hash of regular files."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st_ = p.lstat()
            out[str(p.relative_to(root))] = (st_.st_mode, st_.st_size, st_.st_mtime_ns,
                                             _digest(p))
    return out


@pytest.fixture(scope="module")
def arena(tmp_path_factory) -> Path:
    """Inputs of every awkward kind, shared by the examples (and checked unchanged)."""
    root = tmp_path_factory.mktemp("arena")
    inputs = root / "in"
    inputs.mkdir()
    record_scenario(inputs / "good.gpuwatch.sqlite", "oom-ramp", until_s=20)
    damaged = bytearray((inputs / "good.gpuwatch.sqlite").read_bytes())
    for at in range(200, len(damaged), 997):
        damaged[at] ^= 0x5A
    (inputs / "damaged.gpuwatch.sqlite").write_bytes(bytes(damaged))
    (inputs / "empty.gpuwatch.sqlite").write_bytes(b"")
    (inputs / "text.toml").write_text("this is not toml [", encoding="utf-8")
    (inputs / "latin1.json").write_bytes('{"hidden_size": "\xe9"}'.encode("latin-1"))
    (inputs / "deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    (inputs / "config.json").write_text(
        '{"hidden_size": 0, "num_attention_heads": 0, "num_hidden_layers": NaN}',
        encoding="utf-8")
    os.mkfifo(inputs / "fifo")
    (inputs / "dangling").symlink_to(inputs / "nowhere")
    (inputs / "loop").symlink_to(inputs / "loop")
    (inputs / "folder").mkdir()
    return root


def _paths(arena: Path) -> list[str]:
    i = arena / "in"
    return [str(i / n) for n in ("good.gpuwatch.sqlite", "damaged.gpuwatch.sqlite",
                                 "empty.gpuwatch.sqlite", "text.toml", "latin1.json",
                                 "deep.json", "config.json", "fifo", "dangling", "loop",
                                 "folder", "missing.toml")] + ["/dev/zero", "/dev/null"]


def _outputs(arena: Path) -> list[str]:
    """Output paths, all inside the arena's out/ folder: existing files, links, a FIFO,
    a folder (with and without a trailing slash), a missing parent."""
    o = arena / "out"
    return [str(o / "r.html"), str(o / "r.pdf"), str(o / "r.zip"), str(o / "r.json"),
            str(o / "r.txt"), str(o / "existing.html"), str(o / "link"), str(o / "fifo"),
            str(o / "dir"), str(o / "dir") + "/", str(o / "nodir") + "/",
            str(o / "missing" / "r.html"), str(o / "s.gpuwatch.sqlite"), "-"]


def _reset_outputs(arena: Path) -> None:
    o = arena / "out"
    shutil.rmtree(o, ignore_errors=True)
    o.mkdir()
    (o / "existing.html").write_text("keep me?", encoding="utf-8")
    (o / "target.txt").write_text("the link's target", encoding="utf-8")
    (o / "link").symlink_to(o / "target.txt")
    os.mkfifo(o / "fifo")
    (o / "dir").mkdir()


@st.composite
def command_lines(draw, arena: Path) -> list[str]:
    number = st.sampled_from(NUMBERS)
    path = st.sampled_from(_paths(arena))
    out = st.sampled_from(_outputs(arena))
    demo = st.one_of(st.sampled_from(STRINGS), path)
    command = draw(st.sampled_from(["snapshot", "record", "report", "sessions", "estimate",
                                    "scenarios"]))
    argv = [command]

    def maybe(flag: str, values) -> None:
        if draw(st.booleans()):
            argv.extend([flag, draw(values)])

    if command == "snapshot":
        argv += ["--demo", draw(demo)]
        maybe("--at", number)
        if draw(st.booleans()):
            argv.append("--json")
    elif command == "record":
        argv += ["--demo", draw(demo), "--time-scale", "max",
                 "--duration", draw(st.sampled_from(["3", "0", "-1", "nan", "1e400", "x"]))]
        maybe("--interval", number)
        argv += draw(st.sampled_from([["--no-save"], ["--out", draw(out)], []]))
    elif command == "report":
        argv.append(draw(st.one_of(path, st.sampled_from(STRINGS))))
        maybe("--format", st.sampled_from(FORMATS))
        maybe("-o", out)
    elif command == "sessions":
        maybe("--prune-days", number)
        maybe("--prune-size", st.sampled_from(SIZES))
    elif command == "estimate":
        argv += draw(st.sampled_from([["--model", "gpt2"], ["--params", draw(number)],
                                      ["--config", draw(path)],
                                      ["--model", draw(st.sampled_from(STRINGS))]]))
        for flag in ("--batch", "--seq", "--tp", "--pp", "--dp", "--zero", "--grad-accum",
                     "--lora", "--sparsity", "--context", "--vocab"):
            maybe(flag, number)
        maybe("--mode", st.sampled_from(["train", "infer", "", "x"]))
        maybe("--image", st.sampled_from(["224x224", "1x1", "0x0", "x", "1e9x1e9", "-3x4"]))
        maybe("--capacity", st.sampled_from(SIZES))
        maybe("--gpu", st.sampled_from([*STRINGS, "H100 80GB"]))
        if draw(st.booleans()):
            argv.append("--json")
    return argv


def _run(argv: list[str]) -> tuple[int, str, str]:
    with _alarm(HANG_LIMIT_S):
        return run_captured(argv)


@pytest.fixture(scope="module")
def strategy(arena):
    return command_lines(arena)


def test_any_command_line_exits_cleanly(arena, strategy):
    inputs = arena / "in"
    data_dir = Path(os.environ["GPUWATCH_DATA_DIR"])

    @given(strategy)
    def check(argv: list[str]) -> None:
        _reset_outputs(arena)
        before = _tree(inputs)
        outputs_before = _tree(arena / "out")
        code, _out, err = _run(argv)
        assert code in (0, 1, 2), (argv, code, err)
        if code == 1:        # runtime failure: only "no NVIDIA driver" is expected here
            assert "--demo" in err, (argv, err)
        assert "Traceback" not in err, (argv, err)
        if code == 2:
            assert err.strip(), f"{argv!r} exited 2 without saying why"
        after = _tree(inputs)
        touched = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
        if argv[0] == "report" and "-o" not in argv:   # the default: a report beside it
            default = {k for k in set(after) - set(before) if "-report." in k}
            touched -= default
            for k in default:
                (inputs / k).unlink()
        assert not touched, f"{argv!r} changed inputs: {touched}"
        changed = {name for name, entry in _tree(arena / "out").items()
                   if outputs_before.get(name) != entry}
        changed |= set(outputs_before) - set(_tree(arena / "out"))
        requested = {os.path.relpath(a.rstrip("/"), arena / "out") for a in argv
                     if a.startswith(str(arena / "out"))}
        if "link" in requested:            # writing through a link changes its target
            requested.add("target.txt")
        stray = {c for c in changed
                 if not any(c == r or c.startswith(r + "/") for r in requested)}
        assert not stray, f"{argv!r} touched {stray} (asked for {requested})"
        assert not (arena / "out" / "nodir").exists()
        assert not (arena / "out" / "missing").exists()
        if (data_dir / "sessions").is_dir():       # what record saved by default
            for p in (data_dir / "sessions").iterdir():
                p.unlink()

    check()
