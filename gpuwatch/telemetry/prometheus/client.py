"""Instant queries against a Prometheus server's HTTP API, with the standard library only.

The server is someone else's, and whatever answers at its address is attacker input.
So every query is bounded as a whole, not per read:

- **time**: one deadline for connecting, sending, the status line, the headers and
  the body together (a server that drips one byte a second never trips a per-read
  timeout; here each read waits at most until the deadline);
- **size**: at most :data:`MAX_RESPONSE_BYTES` of body, refused up front when the
  ``Content-Length`` says more; http.client caps header lines and their count;
- **redirects** are not followed: a redirect names where the server really is, and
  the user should point ``--prometheus`` there (following one would send the query
  to a host the user never named);
- **every failure** of urllib and http.client (no status line, hundreds of headers, a
  reset, a bad chunk, TLS) becomes :class:`QueryFailed` with one sentence "… cannot be
  reached: why", and text chosen by the server (its reason phrase, an error field, a
  ``Location``) is shown with control characters escaped and clipped.

Proxies (``http_proxy``, ``https_proxy``, ``no_proxy``) are honoured as urllib does.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from gpuwatch.core.safe_text import clip
from gpuwatch.telemetry.prometheus.response import (
    MAX_RESPONSE_BYTES,
    QueryRefused,
    ResponseError,
    Series,
    parse_response,
)

# What an answer that is not Prometheus's usually means (an exporter's /metrics port)
NOT_PROMETHEUS = "(is it Prometheus's address, usually port 9090, rather than an exporter's?)"
SERVER_TEXT_CHARS = 200        # the most of a server's own words a message repeats
_READ_CHUNK = 1 << 16


class QueryFailed(Exception):
    """The server could not be asked or did not answer; ``reason`` is one sentence."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class DeadlineExceeded(TimeoutError):
    """The whole request ran past its deadline."""


def server_text(text: object, limit: int = SERVER_TEXT_CHARS) -> str:
    """Words a server chose, made safe to print: controls escaped, clipped."""
    return clip(str(text), limit)


class _Deadline:
    """The moment a request must be over; each socket wait is cut to what is left."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        left = self.at - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded(f"no complete answer within {self.seconds:g} s")
        return left


class _DeadlineSocket(socket.socket):
    """A socket whose every read waits at most until the request's deadline."""

    deadline: _Deadline

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        self.settimeout(self.deadline.left())
        return super().recv_into(buffer, nbytes, flags)

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        self.settimeout(self.deadline.left())
        return super().recv(bufsize, flags)


class _DeadlineSSLSocket(ssl.SSLSocket):
    """The same over TLS (the handshake is bounded by the timeout set at connect)."""

    deadline: _Deadline | None = None

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        if self.deadline is not None:
            self.settimeout(self.deadline.left())
        return super().recv_into(buffer, nbytes, flags)

    def recv(self, buflen: int = 1024, flags: int = 0) -> bytes:
        if self.deadline is not None:
            self.settimeout(self.deadline.left())
        return super().recv(buflen, flags)


def _connector(deadline: _Deadline) -> Callable[..., socket.socket]:
    def connect(address: tuple[str, int], timeout: float | None = None,
                source_address: Any = None) -> socket.socket:
        plain = socket.create_connection(address, min(deadline.left(), timeout or 1e9),
                                         source_address)
        sock = _DeadlineSocket(plain.family, plain.type, plain.proto, fileno=plain.detach())
        sock.deadline = deadline
        sock.settimeout(deadline.left())
        return sock
    return connect


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, host: str, deadline: _Deadline, **kw: Any):
        super().__init__(host, **kw)
        self._create_connection = _connector(deadline)


class _HTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, deadline: _Deadline, **kw: Any):
        context = ssl.create_default_context()
        context.sslsocket_class = _DeadlineSSLSocket
        super().__init__(host, context=context, **kw)
        self._create_connection = _connector(deadline)
        self._deadline = deadline

    def connect(self) -> None:
        super().connect()
        self.sock.deadline = self._deadline          # the TLS socket wraps the plain one


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPConnection, req, deadline=req.deadline)  # type: ignore[attr-defined]


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPSConnection, req, deadline=req.deadline)  # type: ignore[attr-defined]


def _opener() -> urllib.request.OpenerDirector:
    """urllib without its redirect handler: a 3xx is an answer to report, not follow."""
    opener = urllib.request.OpenerDirector()
    for handler in (urllib.request.ProxyHandler(), urllib.request.UnknownHandler(),
                    _DeadlineHTTPHandler(), _DeadlineHTTPSHandler(),
                    urllib.request.HTTPDefaultErrorHandler(),
                    urllib.request.HTTPErrorProcessor()):
        opener.add_handler(handler)
    return opener


def _read_capped(response: Any, what: str) -> bytes:
    length = response.headers.get("Content-Length", "")
    if length.isascii() and length.isdigit() and len(length) < 20 \
            and int(length) > MAX_RESPONSE_BYTES:
        raise ResponseError(f"{what} would be {int(length) >> 20} MiB, more than the "
                            f"{MAX_RESPONSE_BYTES >> 20} MiB an answer may hold")
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_RESPONSE_BYTES:
        chunk = response.read(min(_READ_CHUNK, MAX_RESPONSE_BYTES + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > MAX_RESPONSE_BYTES:
        raise ResponseError(f"{what} is larger than {MAX_RESPONSE_BYTES >> 20} MiB")
    missing = getattr(getattr(response, "fp", None), "length", None) \
        if isinstance(response, urllib.error.HTTPError) else getattr(response, "length", None)
    if missing:          # http.client returns a body cut short by a close as if whole
        raise http.client.IncompleteRead(b"".join(chunks), missing)
    return b"".join(chunks)


def _why(exc: BaseException, timeout_s: float) -> str:
    """One clause for a failure of the socket, TLS, http.client or urllib."""
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        inner = exc.reason
        return (_why(inner, timeout_s) if isinstance(inner, BaseException)
                else server_text(inner))
    if isinstance(exc, TimeoutError):          # the deadline, or the last wait before it
        return f"no complete answer within {timeout_s:g} s"
    if isinstance(exc, http.client.RemoteDisconnected):
        return "the server closed the connection without answering"
    if isinstance(exc, http.client.IncompleteRead):
        return f"the answer was cut short after {len(exc.partial)} bytes"
    if isinstance(exc, http.client.LineTooLong):
        return "the answer has a header line that is too long"
    if isinstance(exc, http.client.BadStatusLine):
        return "the answer has no HTTP status line"
    if isinstance(exc, http.client.HTTPException):
        return f"the answer is not valid HTTP ({server_text(exc, 80) or type(exc).__name__})"
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed ({server_text(exc.reason or exc, 120)})"
    if isinstance(exc, ConnectionResetError | BrokenPipeError):
        return "the server reset the connection"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return f"the host name does not resolve ({server_text(exc.strerror or exc, 80)})"
    if isinstance(exc, OSError):
        return server_text(exc.strerror or exc or type(exc).__name__, 120)
    return server_text(exc or type(exc).__name__, 120)


class PrometheusClient:
    def __init__(self, base_url: str, timeout_s: float = 5.0):
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.queries = 0
        self.bytes_read = 0
        self.problems: list[str] = []     # the last answer's values out of range
        self._opener = _opener()

    def query(self, expr: str) -> list[Series]:
        """The instant vector of ``expr`` now. Raises QueryFailed (the server is not
        there, too slow, or answered with something that is not Prometheus's) or
        QueryRefused (Prometheus rejected the query, e.g. a bad --match regex)."""
        data = urllib.parse.urlencode({"query": expr}).encode()
        request = urllib.request.Request(
            f"{self.base_url}/api/v1/query", data=data, method="POST",
            headers={"Content-Type": "application/x-www-form-urlencoded",
                     "Accept": "application/json", "User-Agent": "gpuwatch"})
        request.deadline = _Deadline(self.timeout_s)           # type: ignore[attr-defined]
        self.queries += 1
        where = f"Prometheus at {self.base_url}"
        try:
            try:
                with self._opener.open(request, timeout=self.timeout_s) as response:
                    body = _read_capped(response, "the answer")
            except urllib.error.HTTPError as exc:
                self._refused_or_failed(exc)
        except (QueryFailed, QueryRefused):
            raise
        except ResponseError as exc:
            raise QueryFailed(f"{where} cannot be used: {exc}") from None
        except Exception as exc:        # socket, TLS, http.client, urllib: all of them
            raise QueryFailed(f"{where} cannot be reached: {_why(exc, self.timeout_s)}") from None
        self.bytes_read += len(body)
        self.problems = []
        try:
            return parse_response(body, self.problems)
        except ResponseError as exc:
            raise QueryFailed(f"{self.base_url} did not answer as a Prometheus server "
                              f"does ({exc}) {NOT_PROMETHEUS}") from None

    def _refused_or_failed(self, exc: urllib.error.HTTPError) -> None:
        """An HTTP error status: Prometheus's JSON refusal (400, 422, 503), a redirect,
        or a server that is not Prometheus."""
        try:
            status = f"HTTP {exc.code} {server_text(exc.reason, 60)}".rstrip()
            if 300 <= exc.code < 400:
                location = exc.headers.get("Location") if exc.headers else None
                to = f" to {server_text(location)}" if location else ""
                raise QueryFailed(
                    f"Prometheus at {self.base_url} cannot be reached: it redirects{to} "
                    f"({status}); give that address to --prometheus") from None
            body = _read_capped(exc, "the error answer") if exc.fp is not None else b""
        finally:
            exc.close()
        try:
            parse_response(body)
        except QueryRefused:
            raise                     # its words are escaped and clipped already
        except ResponseError:
            pass
        raise QueryFailed(f"{self.base_url} answered {status}, not as a Prometheus "
                          f"server does {NOT_PROMETHEUS}")
