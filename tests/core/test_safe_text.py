"""Strings from other users' processes cannot act on the terminal they are printed to."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from gpuwatch.core.safe_text import _pieces, clip, visible

ACTIVE = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"}
hostile = st.text(st.one_of(
    st.sampled_from("\x1b\x07\x00\r\n\t\x9b\x7f\u202e\u2066\u200b\u2028\\[];0"),
    st.characters(exclude_categories=())), max_size=60)    # lone surrogates included


def test_escape_sequences_are_shown_not_obeyed():
    title = "\x1b]0;owned\x07python\rtrain.py\nfake line\x00"
    shown = visible(title)
    assert "\x1b" not in shown and "\x07" not in shown and "\r" not in shown
    assert shown == "\\x1b]0;owned\\x07python\\rtrain.py\\nfake line\\x00"
    assert visible("a\u202eevil") == "a\\u202eevil"     # a right-to-left override
    assert visible("plain name") == "plain name"
    assert visible(None) == ""


def test_a_backslash_cannot_pass_for_an_escape():
    assert visible("\\x1b") == "\\\\x1b"
    assert visible("\x1b") != visible("\\x1b")


def test_clipping_never_cuts_an_escape():
    assert clip("ab\x1bcd", 4) == "ab…"          # "\x1b" (4 characters) does not fit whole
    assert clip("ab\x1bcd", 7) == "ab\\x1b…"
    assert clip("short", 10) == "short"


@given(hostile)
def test_visible_output_has_nothing_a_terminal_acts_on(text):
    shown = visible(text)
    assert not any(unicodedata.category(ch) in ACTIVE for ch in shown)
    shown.encode("utf-8")     # no lone surrogates left to fail the terminal's encoder


@given(hostile, st.integers(min_value=0, max_value=80))
def test_clip_fits_and_ends_on_a_piece_boundary(text, width):
    out = clip(text, width)
    full = visible(text)
    if len(full) <= width:
        assert out == full
        return
    assert len(out) <= max(width, 1)
    kept = out.removesuffix("…")
    assert full.startswith(kept)
    boundaries = {0}
    at = 0
    for piece in _pieces(text):
        at += len(piece)
        boundaries.add(at)
    assert len(kept) in boundaries
