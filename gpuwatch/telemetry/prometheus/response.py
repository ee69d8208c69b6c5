"""The answer of Prometheus's ``/api/v1/query`` (an instant vector), parsed strictly.

```json
{"status": "success",
 "data": {"resultType": "vector",
          "result": [{"metric": {"__name__": "DCGM_FI_DEV_FB_USED", "gpu": "0", …},
                      "value": [1764700000.123, "31744"]}]}}
```

A value is a string: a number, ``"NaN"`` or ``"±Inf"``; NaN and infinities become
``None`` (not reported), never 0. Anything else malformed is refused with a reason.
"""

from __future__ import annotations

import json
import math
from typing import Any, NamedTuple

MAX_RESPONSE_BYTES = 64 << 20
MAX_LABEL_CHARS = 4096


class ResponseError(ValueError):
    """An answer that is not a Prometheus instant vector; says what is wrong."""


class QueryRefused(ValueError):
    """Prometheus answered ``"status": "error"``: ``kind`` is its errorType."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}" if kind else message)
        self.kind = kind


class Series(NamedTuple):
    labels: dict[str, str]
    timestamp_s: float
    value: float | None          # None: NaN or infinite


def _value(pair: Any) -> tuple[float, float | None]:
    if type(pair) is not list or len(pair) != 2:
        raise ResponseError("a sample must be [timestamp, \"value\"]")
    stamp, text = pair
    if type(stamp) not in (int, float) or not math.isfinite(stamp):
        raise ResponseError("a sample's timestamp must be a number")
    if type(text) is not str or len(text) > 64:
        raise ResponseError("a sample's value must be a short string")
    try:
        value = float(text)
    except ValueError:
        raise ResponseError(f"a sample's value is not a number: {text[:20]!r}") from None
    return float(stamp), value if math.isfinite(value) else None


def _labels(metric: Any) -> dict[str, str]:
    if type(metric) is not dict:
        raise ResponseError("a series' metric must be an object of labels")
    for key, value in metric.items():
        if type(value) is not str or len(key) > MAX_LABEL_CHARS \
                or len(value) > MAX_LABEL_CHARS:
            raise ResponseError("labels must be short strings")
    return metric


def parse_response(body: bytes | str) -> list[Series]:
    """The series of an instant-vector answer. Raises QueryRefused for an error answer,
    ResponseError for anything that is not a Prometheus answer."""
    if len(body) > MAX_RESPONSE_BYTES:
        raise ResponseError(f"the answer is larger than {MAX_RESPONSE_BYTES >> 20} MiB")
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        raise ResponseError("the answer is not JSON") from None
    if not isinstance(doc, dict) or doc.get("status") not in ("success", "error"):
        raise ResponseError("the answer is not from a Prometheus HTTP API "
                            "(no \"status\": \"success\" or \"error\")")
    if doc["status"] == "error":
        kind, message = doc.get("errorType"), doc.get("error")
        raise QueryRefused(kind if isinstance(kind, str) else "",
                           message[:500] if isinstance(message, str) else "no reason given")
    data = doc.get("data")
    if not isinstance(data, dict):
        raise ResponseError("the answer has no data object")
    if data.get("resultType") != "vector":
        raise ResponseError(f"expected an instant vector, got {data.get('resultType')!r}")
    result = data.get("result")
    if not isinstance(result, list):
        raise ResponseError("the answer's result is not a list")
    series = []
    for item in result:
        if type(item) is not dict:
            raise ResponseError("a series must be an object")
        stamp, value = _value(item.get("value"))
        series.append(Series(_labels(item.get("metric", {})), stamp, value))
    return series
