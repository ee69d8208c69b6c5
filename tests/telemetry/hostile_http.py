"""A hostile HTTP server for tests: it listens on loopback only, answers each
connection with one chosen misbehaviour (a slow drip, no status line, hundreds of
headers, a huge body, a redirect, a reset, an answer with odd labels), serves a
bounded number of connections and stops by itself after ``lifetime_s``."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

Behaviour = Callable[[socket.socket], None]


def _read_request(conn: socket.socket, limit: int = 1 << 16) -> bytes:
    """Read until the end of the request's headers and its body (as Content-Length says)."""
    data = b""
    conn.settimeout(5)
    while b"\r\n\r\n" not in data and len(data) < limit:
        chunk = conn.recv(4096)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(4096)
        if not chunk:
            break
        body += chunk
    return data


def answer(status: str, body: bytes, headers: tuple[str, ...] = (),
           content_type: str = "application/json") -> bytes:
    head = [f"HTTP/1.1 {status}", f"Content-Type: {content_type}",
            f"Content-Length: {len(body)}", "Connection: close", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1", "replace") + body


def vector(series: list[tuple[dict[str, str], str]]) -> bytes:
    """A Prometheus instant-vector answer with these (labels, value) series."""
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": labels, "value": [1000.0, value]} for labels, value in series]}}).encode()


# --- misbehaviours ------------------------------------------------------------------

def sends(data: bytes) -> Behaviour:
    def run(conn: socket.socket) -> None:
        _read_request(conn)
        conn.sendall(data)
    return run


def answers_each(body_of: Callable[[int], bytes]) -> Behaviour:
    """A 200 JSON answer whose body depends on how many connections came before."""
    count = [0]

    def run(conn: socket.socket) -> None:
        _read_request(conn)
        count[0] += 1
        conn.sendall(answer("200 OK", body_of(count[0] - 1)))
    return run


def drips(data: bytes, every_s: float) -> Behaviour:
    """One byte every ``every_s`` seconds: each read succeeds, the answer never ends."""
    def run(conn: socket.socket) -> None:
        _read_request(conn)
        for i in range(len(data)):
            conn.sendall(data[i:i + 1])
            time.sleep(every_s)
    return run


def endless_body(chunk: bytes = b"0" * 65536) -> Behaviour:
    """A 200 with a chunked body that never ends (until the client hangs up)."""
    def run(conn: socket.socket) -> None:
        _read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
        while True:
            conn.sendall(frame)
    return run


def resets(after_request: bool = True) -> Behaviour:
    """Close with a TCP reset (SO_LINGER 0), before or after reading the request."""
    def run(conn: socket.socket) -> None:
        if after_request:
            _read_request(conn)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return run


def silent() -> Behaviour:
    """Accepts, reads the request, says nothing for ever."""
    def run(conn: socket.socket) -> None:
        _read_request(conn)
        conn.settimeout(None)
        conn.recv(1)          # until the client hangs up or the server stops
    return run


class HostileServer:
    """Serves ``behaviour`` to each connection, at most ``max_connections`` of them,
    on 127.0.0.1; gone after ``lifetime_s`` whatever happens."""

    def __init__(self, behaviour: Behaviour, lifetime_s: float = 30.0,
                 max_connections: int = 16):
        self.behaviour = behaviour
        self.lifetime_s = lifetime_s
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.connections = 0
        self.max_connections = max_connections
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        end = time.monotonic() + self.lifetime_s
        while not self._stop.is_set() and time.monotonic() < end \
                and self.connections < self.max_connections:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            self.connections += 1
            self._conns.append(conn)
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()
        self.sock.close()

    def _one(self, conn: socket.socket) -> None:
        try:
            self.behaviour(conn)
        except OSError:
            pass
        finally:
            conn.close()

    def stop(self) -> None:
        self._stop.set()
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)

    def __enter__(self) -> HostileServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
