"""Reading an HTTP/1.x request header, from a client that may send anything.

The header is parsed strictly (one request line, ``name: value`` lines, no smuggled
line breaks) and bounded (:data:`MAX_HEADER_LINES`, a body of at most
:data:`MAX_BODY_BYTES`); anything else is a :class:`Refusal` with the status to answer.
"""

from __future__ import annotations

MAX_HEADER_LINES = 100
MAX_BODY_BYTES = 64 << 10


class Refusal(Exception):
    """A request refused with ``status``; the message says why."""

    def __init__(self, status: int, why: str):
        super().__init__(why)
        self.status = status


def parse_head(head: bytes) -> tuple[str, str, dict[str, str], bool]:
    """(method, path, lower-cased headers, keep the connection) of a request header."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[1].startswith(("/", "*")):
        raise Refusal(400, "not an HTTP request line")
    method, path, version = parts
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise Refusal(505, "only HTTP/1.0 and 1.1 are spoken")
    if len(lines) - 1 > MAX_HEADER_LINES:
        raise Refusal(431, f"more than {MAX_HEADER_LINES} header lines")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip() \
                or "\n" in line or "\r" in line or "\0" in line:    # no smuggled lines
            raise Refusal(400, "a malformed header line")
        headers[name.lower()] = value.strip()
    connection = headers.get("connection", "").lower()
    keep = "keep-alive" in connection if version == "HTTP/1.0" else "close" not in connection
    return method, path, headers, keep


def body_length(headers: dict[str, str]) -> int:
    if "transfer-encoding" in headers:
        raise Refusal(501, "a request body in chunks is not read")
    text = headers.get("content-length", "0")
    if not (text.isascii() and text.isdigit() and len(text) <= 12):
        raise Refusal(400, "a malformed Content-Length")
    if int(text) > MAX_BODY_BYTES:
        raise Refusal(413, "a request body over 64 KiB")
    return int(text)
