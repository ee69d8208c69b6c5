"""Text from other users' processes, made safe to print on a terminal.

Process names, command lines, user and container names come from ``/proc`` and the
driver: any local user controls them. Printed raw, an ESC or OSC sequence can retitle
the terminal, move the cursor or hide text; CR, NUL and newlines can fake or hide lines;
bidirectional overrides can reorder what is shown. :func:`visible` renders every such
character as a visible escape (``\\x1b``, ``\\r``, ``\\u202e``), and :func:`clip` shortens
a string without ever cutting one of those escapes in half.
"""

from __future__ import annotations

import unicodedata

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def _escape(ch: str) -> str | None:
    """The visible form of a character a terminal would act on, or None if it is plain."""
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if code < 0x20 or code == 0x7F or 0x80 <= code <= 0x9F:   # C0, DEL, C1 controls
        return f"\\x{code:02x}"
    category = unicodedata.category(ch)
    # Cf: format characters (bidi overrides, zero-width joiners); Zl/Zp: line and
    # paragraph separators; Cs: lone surrogates from undecodable bytes; Co/Cn: private
    # and unassigned code points a terminal may draw as anything.
    if category in ("Cf", "Zl", "Zp", "Cs", "Co", "Cn"):
        return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    return None


def _pieces(text: str) -> list[str]:
    """The text as display units: one character, or one whole escape."""
    return [_escape(ch) or ch for ch in text]


def visible(text: str | None) -> str:
    """``text`` with every control, format or separator character shown as an escape.

    A backslash is doubled, so a name that *looks* like an escape cannot pass for one.
    """
    if not text:
        return text or ""
    if text.isprintable() and "\\" not in text:
        return text       # the common case: nothing to escape
    return "".join(_pieces(text))


def clip(text: str | None, width: int, ellipsis: str = "…") -> str:
    """:func:`visible` text cut to at most ``width`` characters, at an escape's edge."""
    pieces = _pieces(text or "")
    total = sum(len(p) for p in pieces)
    if total <= width:
        return "".join(pieces)
    room = max(0, width - len(ellipsis))
    out: list[str] = []
    used = 0
    for piece in pieces:
        if used + len(piece) > room:
            break
        out.append(piece)
        used += len(piece)
    return "".join(out) + ellipsis
