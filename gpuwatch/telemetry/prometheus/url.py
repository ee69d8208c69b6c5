"""``--prometheus URL``: the address of a Prometheus server's HTTP API, checked."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


class ServerUrlError(ValueError):
    """A ``--prometheus`` value that is not an http(s) URL of a server."""


def parse_server_url(text: str) -> str:
    """The base URL, without a trailing slash: ``http://host:9090`` or
    ``https://host/prometheus``. A bare ``host:port`` gets ``http://``."""
    raw = text.strip()
    if not raw:
        raise ServerUrlError("the URL is empty")
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in raw):
        raise ServerUrlError("a URL cannot hold spaces or control characters")
    if "://" not in raw:
        raw = "http://" + raw
    try:
        parts = urlsplit(raw)
        port = parts.port            # raises for a port that is not a number 0-65535
    except ValueError as exc:
        raise ServerUrlError(str(exc)) from None
    if parts.scheme not in ("http", "https"):
        raise ServerUrlError(f"the scheme must be http or https, not {parts.scheme!r}")
    if not parts.hostname:
        raise ServerUrlError("no host name")
    if port == 0:
        raise ServerUrlError("port 0 is not a server's port")
    if parts.query or parts.fragment:
        raise ServerUrlError("give the server's base URL, without ?query or #fragment")
    if parts.username or parts.password:
        raise ServerUrlError("credentials in the URL would show in the process list; "
                             "put the server behind a proxy that adds them")
    path = parts.path.rstrip("/")
    if path.endswith("/api/v1/query"):
        path = path[:-len("/api/v1/query")]
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))
