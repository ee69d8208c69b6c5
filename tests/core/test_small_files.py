"""A user-named input file is read only if it is a regular file, and never past its cap."""

from __future__ import annotations

import os

import pytest

from gpuwatch.core.small_files import SmallFileError, path_text, read_small_file


def test_a_regular_file_is_read_whole(tmp_path):
    path = tmp_path / "ok.toml"
    path.write_bytes(b"x" * 100)
    assert read_small_file(path, 100) == b"x" * 100


@pytest.mark.parametrize(("make", "kind"), [
    (lambda p: os.mkfifo(p), "special"),      # a FIFO without a writer must not block
    (lambda p: p.mkdir(), "folder"),
    (lambda p: None, "missing"),
    (lambda p: p.write_bytes(b"x" * 101), "too-big"),
    (lambda p: p.symlink_to("/dev/zero"), "special"),
])
def test_anything_else_is_refused_before_it_is_read(tmp_path, make, kind):
    path = tmp_path / "input"
    make(path)
    with pytest.raises(SmallFileError) as info:
        read_small_file(path, 100)
    assert info.value.kind == kind


def test_names_no_file_can_have_are_refused_not_raised():
    with pytest.raises(SmallFileError):
        read_small_file("bad\0name", 100)
    with pytest.raises(SmallFileError):
        read_small_file("x" * 5000, 100)


def test_paths_in_messages_are_one_short_line():
    assert path_text("/tmp/a.toml") == "/tmp/a.toml"
    shown = path_text("/tmp/a\n\x1b[2Jb" + "x" * 500)
    assert "\n" not in shown and "\x1b" not in shown and len(shown) <= 200
