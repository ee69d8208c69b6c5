"""``--listen``: where the exporter accepts scrapes, and whether that is loopback only.

``HOST:PORT``, ``[IPv6]:PORT`` or a bare ``PORT`` (on 127.0.0.1). Anything that is not
a loopback address (127.0.0.0/8, ::1, ``localhost``) reaches other machines: the
exporter has no authentication, so it asks for ``--allow-remote`` before binding there.
"""

from __future__ import annotations

import ipaddress
from typing import NamedTuple

DEFAULT_PORT = 9400          # dcgm-exporter's port, so existing scrape configs fit
DEFAULT_LISTEN = f"127.0.0.1:{DEFAULT_PORT}"


class ListenError(ValueError):
    """A ``--listen`` value that is not an address to bind; says why."""


class ListenAddress(NamedTuple):
    host: str
    port: int

    @property
    def loopback(self) -> bool:
        if self.host.lower() in ("localhost", "localhost."):
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False            # a host name: it may resolve to anything

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def _port(text: str) -> int:
    if not (text.isascii() and text.isdigit() and len(text) <= 5) \
            or not 1 <= int(text) <= 65535:          # "²".isdigit() is True
        raise ListenError(f"the port must be a number from 1 to 65535, got {text!r}")
    return int(text)


def parse_listen(text: str) -> ListenAddress:
    raw = text.strip()
    if not raw:
        raise ListenError("the address is empty")
    if raw.isascii() and raw.isdigit():
        return ListenAddress("127.0.0.1", _port(raw))
    if raw.startswith("["):
        host, sep, rest = raw[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise ListenError("an IPv6 address is written [ADDRESS]:PORT")
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ListenError(f"{host!r} is not an IPv6 address") from None
        return ListenAddress(host, _port(rest[1:]))
    host, sep, port = raw.rpartition(":")
    if not sep:
        raise ListenError("write HOST:PORT (e.g. 127.0.0.1:9400) or a port alone")
    if not host:
        raise ListenError("give the host to bind (0.0.0.0 for every interface, with "
                          "--allow-remote)")
    if ":" in host:
        raise ListenError("an IPv6 address is written [ADDRESS]:PORT")
    if len(host) > 253 or not all(ch.isalnum() or ch in ".-_" for ch in host):
        raise ListenError(f"{host!r} is not a host name or address")
    return ListenAddress(host, _port(port))
