"""``--match``: label matchers that pick which series a Prometheus source reads.

Accepted as PromQL writes them, ``{cluster="a", node=~"gpu-.*"}`` (the braces may be
left out): a label name, one of ``=``, ``!=``, ``=~``, ``!~``, and a quoted string
(double quotes, single quotes or backticks, with PromQL's escapes). The matchers are
parsed here, not pasted into a query, so a value cannot end the selector early and
smuggle in more PromQL; :func:`render` writes them back in one canonical form.
"""

from __future__ import annotations

import re
from typing import NamedTuple

MAX_SELECTOR_CHARS = 4096
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPS = ("=~", "!~", "!=", "=")     # longest first
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
            "\\": "\\", '"': '"', "'": "'"}


class SelectorError(ValueError):
    """A ``--match`` value that is not a list of label matchers; says where and why."""


class Matcher(NamedTuple):
    label: str
    op: str
    value: str


def _string(text: str, i: int) -> tuple[str, int]:
    """The quoted string starting at ``text[i]`` and the index after it."""
    quote = text[i]
    if quote not in "\"'`":
        raise SelectorError(f"expected a quoted value at character {i + 1}")
    out: list[str] = []
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch == quote:
            return "".join(out), j + 1
        if ch == "\\" and quote != "`":
            j += 1
            if j >= len(text):
                break
            esc = text[j]
            if esc in _ESCAPES:
                out.append(_ESCAPES[esc])
            elif esc in "xuU":
                width = {"x": 2, "u": 4, "U": 8}[esc]
                digits = text[j + 1:j + 1 + width]
                if len(digits) != width or not all(c in "0123456789abcdefABCDEF"
                                                   for c in digits):
                    raise SelectorError(f"bad \\{esc} escape at character {j}")
                code = int(digits, 16)
                if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                    raise SelectorError(f"bad \\{esc} escape at character {j}")
                out.append(chr(code))
                j += width
            else:
                raise SelectorError(f"unknown escape \\{esc} at character {j}")
        elif ch == "\n" and quote != "`":
            raise SelectorError(f"a line break inside a quoted value at character {j + 1}")
        else:
            out.append(ch)
        j += 1
    raise SelectorError(f"the value opened at character {i + 1} is not closed")


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def parse_selector(text: str) -> tuple[Matcher, ...]:
    """The matchers in ``text``. Raises SelectorError naming the problem."""
    if len(text) > MAX_SELECTOR_CHARS:
        raise SelectorError(f"longer than {MAX_SELECTOR_CHARS} characters")
    body = text.strip()
    if body.startswith("{"):
        if not body.endswith("}"):
            raise SelectorError("an opening { without its closing }")
        body = body[1:-1]
    elif body.endswith("}"):
        raise SelectorError("a closing } without its opening {")
    matchers: list[Matcher] = []
    i = _skip(body, 0)
    while i < len(body):
        name = _NAME.match(body, i)
        if name is None:
            raise SelectorError(f"expected a label name at {body[i:i + 12]!r}")
        label = name.group()
        if label == "__name__":
            raise SelectorError("__name__ cannot be matched: gpuwatch picks the metrics")
        i = _skip(body, name.end())
        op = next((o for o in _OPS if body.startswith(o, i)), None)
        if op is None:
            raise SelectorError(f"expected =, !=, =~ or !~ after {label!r}")
        i = _skip(body, i + len(op))
        if i >= len(body):
            raise SelectorError(f"no value after {label}{op}")
        value, i = _string(body, i)
        matchers.append(Matcher(label, op, value))
        i = _skip(body, i)
        if i < len(body):
            if body[i] != ",":
                raise SelectorError(f"expected a comma or the end at {body[i:i + 12]!r}")
            i = _skip(body, i + 1)
    return tuple(matchers)


def quote(value: str) -> str:
    """``value`` as a double-quoted PromQL string."""
    out = []
    for ch in value:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def render(matchers: tuple[Matcher, ...]) -> str:
    """The matchers as PromQL, without braces: ``cluster="a",node=~"gpu-.*"``."""
    return ",".join(f"{m.label}{m.op}{quote(m.value)}" for m in matchers)
