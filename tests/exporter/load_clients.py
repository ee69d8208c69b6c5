"""Many scrapes at once from one thread: a non-blocking client (selectors) that opens
N connections to an exporter, sends each a scrape and times each whole answer. Shared
by the load test and ``benchmarks/exporter_load.py``; loopback only, bounded in count
(the caller's N) and time (``deadline_s``)."""

from __future__ import annotations

import selectors
import socket
import time
from dataclasses import dataclass, field

REQUEST = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\nConnection: close\r\n\r\n"


@dataclass
class Scrape:
    sock: socket.socket
    started: float
    to_send: bytes
    got: bytearray = field(default_factory=bytearray)
    done: float | None = None
    ok: bool = False


def burst(port: int, n: int, deadline_s: float = 60.0) -> list[float | None]:
    """Open ``n`` scrapes at once; each one's seconds to a whole answer (None: none)."""
    sel = selectors.DefaultSelector()
    scrapes: list[Scrape] = []
    t0 = time.monotonic()
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        sc = Scrape(s, t0, REQUEST)
        scrapes.append(sc)
        sel.register(s, selectors.EVENT_WRITE, sc)
    open_ = n
    while open_ and time.monotonic() - t0 < deadline_s:
        for key, mask in sel.select(0.5):
            sc = key.data
            try:
                if mask & selectors.EVENT_WRITE and sc.to_send:
                    sent = sc.sock.send(sc.to_send)
                    sc.to_send = sc.to_send[sent:]
                    if not sc.to_send:
                        sel.modify(sc.sock, selectors.EVENT_READ, sc)
                    continue
                chunk = sc.sock.recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                chunk = b""
            if chunk:
                sc.got += chunk
                continue
            sc.done = time.monotonic()
            sc.ok = sc.got.startswith(b"HTTP/1.") and b" 200 " in sc.got[:16] \
                and b"DCGM_FI_DEV_FB_USED{" in sc.got
            sel.unregister(sc.sock)
            sc.sock.close()
            open_ -= 1
    for sc in scrapes:
        if sc.done is None:
            sel.unregister(sc.sock)
            sc.sock.close()
    sel.close()
    return [sc.done - sc.started if sc.ok and sc.done else None for sc in scrapes]
