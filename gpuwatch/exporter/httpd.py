"""The exporter's HTTP/1.1 server: one thread, non-blocking sockets, every cost bounded.

Why not a thread per connection (prometheus-client's ``start_http_server``, wsgiref):
its listen backlog of 5 drops connections under a burst (200 scrapes at once took up
to 27 s, retried by TCP), each slow or idle client holds a thread, and a client that
resets its connection prints a traceback. Here (measured in
``benchmarks/exporter_load.py``, figures in docs/cluster.md):

- one thread waits on every socket with :mod:`selectors` (epoll); the listen backlog
  is 1,024; answers come from the application, which caches the rendered scrape;
- a request's header must arrive whole within :data:`REQUEST_S` of the first byte
  (slowloris is cut), an answer must be taken within :data:`WRITE_S`, a kept-alive
  connection may idle :data:`IDLE_S`; headers are capped at :data:`MAX_HEADER_BYTES`
  and a request body (never needed) at 64 KiB, read and dropped (the header is
  parsed in :mod:`gpuwatch.exporter.http_request`);
- at most ``max_connections`` are open: a new one pushes out the longest-waiting
  connection that is not being answered, so a flood cannot lock Prometheus out;
- resets, bad requests, slow and pushed-out clients are counted, and said on stderr
  at most once per kind per minute (:mod:`gpuwatch.exporter.complaints`), never
  with a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import socket
import time
from collections.abc import Callable

from gpuwatch.exporter.complaints import Complaints
from gpuwatch.exporter.http_request import Refusal, body_length, parse_head

try:
    import resource
except ImportError:            # not on every platform; the limit is then left as it is
    resource = None  # type: ignore[assignment]

REQUEST_S = 10.0               # from a request's first byte to the end of its header
IDLE_S = 75.0                  # a kept-alive connection between requests
WRITE_S = 30.0                 # to take a whole answer
MAX_HEADER_BYTES = 16 << 10
MAX_CONNECTIONS = 1024
BACKLOG = 1024
SWEEP_EVERY_S = 0.25

# (status, headers, body): what the application answers to (method, path, headers)
Answer = tuple[int, list[tuple[str, str]], bytes]
App = Callable[[str, str, dict[str, str]], Answer]

REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           408: "Request Timeout", 413: "Content Too Large",
           431: "Request Header Fields Too Large", 500: "Internal Server Error",
           501: "Not Implemented", 505: "HTTP Version Not Supported"}


class _Conn:
    __slots__ = ("close_after", "deadline", "discard", "inbuf", "out", "sock", "waiting")

    def __init__(self, sock: socket.socket, now: float):
        self.sock = sock
        self.inbuf = bytearray()
        self.out: memoryview | None = None
        self.deadline = now + REQUEST_S
        self.close_after = False
        self.discard = 0              # request body bytes still to read and drop
        self.waiting = now            # since when it waits for a request (eviction order)


def _raise_fd_limit(wanted: int) -> int:
    """Room for ``wanted`` sockets: raise the soft open-files limit up to the hard one."""
    if resource is None:
        return wanted
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = wanted + 64
    if soft != resource.RLIM_INFINITY and soft < need:
        new = need if hard == resource.RLIM_INFINITY else min(need, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return wanted if soft == resource.RLIM_INFINITY else max(16, min(wanted, soft - 64))


class HttpServer:
    """Serves ``app`` on ``host:port`` until :meth:`shutdown`; :meth:`serve_forever`
    runs on the caller's thread."""

    def __init__(self, host: str, port: int, app: App, complaints: Complaints,
                 max_connections: int = MAX_CONNECTIONS):
        family, _, _, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        self.listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.listener.bind(address)
            self.listener.listen(BACKLOG)
        except OSError:
            self.listener.close()
            raise
        self.listener.setblocking(False)
        self.server_address = self.listener.getsockname()
        self.app = app
        self.complaints = complaints
        self.max_connections = _raise_fd_limit(max_connections)
        self._conns: dict[socket.socket, _Conn] = {}
        self._sel = selectors.DefaultSelector()
        self._sel.register(self.listener, selectors.EVENT_READ, None)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._stopping = False
        self._stopped = False

    # --- the loop ---------------------------------------------------------------------

    def serve_forever(self) -> None:
        next_sweep = time.monotonic() + SWEEP_EVERY_S
        try:
            while not self._stopping:
                for key, mask in self._sel.select(SWEEP_EVERY_S):
                    if key.data is None:
                        self._accept()
                    elif key.data == "wake":
                        with contextlib.suppress(OSError):
                            self._wake_r.recv(64)
                    else:
                        self._ready(key.data, mask)
                now = time.monotonic()
                if now >= next_sweep:
                    self._sweep(now)
                    self.complaints.flush()
                    next_sweep = now + SWEEP_EVERY_S
        finally:
            self._stopped = True

    def shutdown(self) -> None:
        """Stop the loop (from another thread) and wait for it to end."""
        self._stopping = True
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        end = time.monotonic() + 5
        while not self._stopped and time.monotonic() < end:
            time.sleep(0.01)

    def server_close(self) -> None:
        for conn in list(self._conns.values()):
            self._close(conn)
        for s in (self.listener, self._wake_r, self._wake_w):
            with contextlib.suppress(KeyError, ValueError, OSError):
                self._sel.unregister(s)
            s.close()
        self._sel.close()

    @property
    def open_connections(self) -> int:
        return len(self._conns)

    def _accept(self) -> None:
        for _ in range(256):                       # then let the others have a turn
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                self.complaints.note("reset", "reset before it was accepted")
                continue
            except OSError as exc:                 # EMFILE: out of descriptors
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self._evict(time.monotonic(), force=True)
                    self.complaints.note("overload", os.strerror(exc.errno))
                return
            now = time.monotonic()
            if len(self._conns) >= self.max_connections and not self._evict(now):
                sock.close()
                self.complaints.note("overload", "every connection is being answered")
                continue
            sock.setblocking(False)
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Conn(sock, now)
            self._conns[sock] = conn
            self._sel.register(sock, selectors.EVENT_READ, conn)

    def _evict(self, now: float, force: bool = False) -> bool:
        """Close the connection that has waited longest for a request; False if every
        connection is being answered."""
        waiting = [c for c in self._conns.values() if c.out is None]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c.waiting)
        self._close(oldest)
        if not force:
            self.complaints.note("overload", f"at {self.max_connections} connections")
        return True

    def _sweep(self, now: float) -> None:
        for conn in [c for c in self._conns.values() if c.deadline <= now]:
            if conn.out is not None:
                self.complaints.note("slow", "an answer not taken in time")
            elif conn.inbuf or conn.discard:
                self.complaints.note("slow", "a request not finished in time")
            self._close(conn)

    def _ready(self, conn: _Conn, mask: int) -> None:
        try:
            if mask & selectors.EVENT_WRITE and conn.out is not None:
                self._pump(conn)
            elif mask & selectors.EVENT_READ:
                self._read(conn)
        except (ConnectionResetError, BrokenPipeError, ConnectionAbortedError) as exc:
            self.complaints.note("reset", exc.strerror or type(exc).__name__)
            self._close(conn)
        except OSError:
            self._close(conn)
        except Exception as exc:        # a bug here must not end the endpoint
            self.complaints.note("error", f"{type(exc).__name__}: {exc}"[:200])
            self._close(conn)

    # --- one connection ---------------------------------------------------------------

    def _read(self, conn: _Conn) -> None:
        try:
            data = conn.sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        if not data:
            if conn.inbuf or conn.discard:
                self.complaints.note("reset", "closed in the middle of a request")
            self._close(conn)
            return
        if not conn.inbuf and not conn.discard:       # a request starts: it has REQUEST_S
            conn.deadline = min(conn.deadline, time.monotonic() + REQUEST_S)
        conn.inbuf += data
        self._pump(conn)

    def _pump(self, conn: _Conn) -> None:
        """Write what is pending, then answer the requests already read, one after the
        other (pipelining), until the socket's buffer is full or no request is whole."""
        while conn.sock in self._conns:
            if conn.out is not None:
                if not self._write(conn):
                    return                       # the rest when the socket can take it
            elif not conn.inbuf or not self._next_request(conn):
                return

    def _next_request(self, conn: _Conn) -> bool:
        """Answer the request at the head of the buffer; False if it is not whole yet."""
        if conn.discard:
            dropped = min(conn.discard, len(conn.inbuf))
            del conn.inbuf[:dropped]
            conn.discard -= dropped
            if conn.discard or not conn.inbuf:
                return False
        end = conn.inbuf.find(b"\r\n\r\n")
        if end < 0:
            if len(conn.inbuf) > MAX_HEADER_BYTES:
                self._refuse(conn, Refusal(431, "a request header over 16 KiB"))
                return True
            return False
        head = bytes(conn.inbuf[:end])
        del conn.inbuf[:end + 4]
        try:
            method, path, headers, keep = parse_head(head)
            length = body_length(headers)
        except Refusal as refusal:
            self._refuse(conn, refusal)
            return True
        conn.discard = length
        if conn.discard:
            dropped = min(conn.discard, len(conn.inbuf))
            del conn.inbuf[:dropped]
            conn.discard -= dropped
        try:
            status, extra, body = self.app(method, path, headers)
        except Exception as exc:
            self.complaints.note("error", f"{type(exc).__name__}: {exc}"[:200])
            status, extra, body, keep = 500, [], b"the exporter failed to answer\n", False
        self._answer(conn, status, extra, b"" if method == "HEAD" else body, keep,
                     len(body))
        return True

    def _refuse(self, conn: _Conn, refusal: Refusal) -> None:
        self.complaints.note("bad-request", str(refusal))
        conn.inbuf.clear()
        conn.discard = 0
        body = f"{refusal.status} {REASONS.get(refusal.status, '')}: {refusal}\n".encode()
        self._answer(conn, refusal.status, [("Content-Type", "text/plain")], body, False,
                     len(body))

    def _answer(self, conn: _Conn, status: int, headers: list[tuple[str, str]],
                body: bytes, keep: bool, length: int) -> None:
        lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Unknown')}",
                 *(f"{k}: {v}" for k, v in headers), f"Content-Length: {length}",
                 f"Connection: {'keep-alive' if keep else 'close'}"]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        conn.out = memoryview(head + body)
        conn.close_after = not keep
        conn.deadline = time.monotonic() + WRITE_S

    def _write(self, conn: _Conn) -> bool:
        """Send what the socket takes; True when the answer is all sent."""
        assert conn.out is not None
        try:
            sent = conn.sock.send(conn.out)
        except (BlockingIOError, InterruptedError):
            sent = 0
        conn.out = conn.out[sent:]
        if conn.out.nbytes:
            self._watch(conn, selectors.EVENT_WRITE)
            return False
        conn.out = None
        if conn.close_after:
            self._close(conn)
            return True
        now = time.monotonic()
        conn.waiting = now
        conn.deadline = now + (REQUEST_S if conn.inbuf else IDLE_S)
        self._watch(conn, selectors.EVENT_READ)
        return True

    def _watch(self, conn: _Conn, events: int) -> None:
        if self._sel.get_key(conn.sock).events != events:
            self._sel.modify(conn.sock, events, conn)

    def _close(self, conn: _Conn) -> None:
        if self._conns.pop(conn.sock, None) is None:
            return
        with contextlib.suppress(KeyError, ValueError, OSError):
            self._sel.unregister(conn.sock)
        conn.sock.close()
