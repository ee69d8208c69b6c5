"""Instant queries against a Prometheus server's HTTP API, with urllib only."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request

from gpuwatch.telemetry.prometheus.response import (
    MAX_RESPONSE_BYTES,
    QueryRefused,
    ResponseError,
    Series,
    parse_response,
)

# What an answer that is not Prometheus's usually means (an exporter's /metrics port)
NOT_PROMETHEUS = "(is it Prometheus's address, usually port 9090, rather than an exporter's?)"


class QueryFailed(Exception):
    """The server could not be asked or did not answer; ``reason`` is one sentence."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class PrometheusClient:
    def __init__(self, base_url: str, timeout_s: float = 5.0):
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.queries = 0
        self.bytes_read = 0

    def query(self, expr: str) -> list[Series]:
        """The instant vector of ``expr`` now. Raises QueryFailed (the server is not
        there, or answered with an HTTP error that is not Prometheus's) or QueryRefused
        (Prometheus rejected the query, e.g. a bad --match regex)."""
        data = urllib.parse.urlencode({"query": expr}).encode()
        request = urllib.request.Request(
            f"{self.base_url}/api/v1/query", data=data, method="POST",
            headers={"Content-Type": "application/x-www-form-urlencoded",
                     "Accept": "application/json", "User-Agent": "gpuwatch"})
        self.queries += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                body = response.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            # Prometheus answers 400/422/503 with its JSON error document
            body = exc.read(MAX_RESPONSE_BYTES + 1)
            exc.close()
            try:
                parse_response(body)
            except QueryRefused:
                raise
            except ResponseError:
                pass
            raise QueryFailed(f"{self.base_url} answered HTTP {exc.code} {exc.reason}, not as "
                              f"a Prometheus server does {NOT_PROMETHEUS}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise QueryFailed(f"Prometheus at {self.base_url} cannot be reached: "
                              f"{reason}") from None
        self.bytes_read += len(body)
        try:
            return parse_response(body)
        except ResponseError as exc:
            raise QueryFailed(f"{self.base_url} did not answer as a Prometheus server "
                              f"does ({exc}) {NOT_PROMETHEUS}") from None
