"""The answer of Prometheus's ``/api/v1/query`` (an instant vector), parsed strictly.

```json
{"status": "success",
 "data": {"resultType": "vector",
          "result": [{"metric": {"__name__": "DCGM_FI_DEV_FB_USED", "gpu": "0", …},
                      "value": [1764700000.123, "31744"]}]}}
```

A value is a string: a number, ``"NaN"`` or ``"±Inf"``; NaN and infinities become
``None`` (not reported), never 0. A number is read only in the form Prometheus writes
(ASCII digits, an optional fraction and exponent: no ``1_000``, no other scripts'
digits, no spaces); a finite value beyond ±:data:`MAX_VALUE` (1e308 MiB, say) is not a
reading either: it becomes ``None`` and the series is named in ``problems``. Anything
else malformed is refused with a reason. Text the server chose (an error's type and
message) is kept with control characters escaped and clipped.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, NamedTuple

from gpuwatch.core.safe_text import clip

MAX_RESPONSE_BYTES = 16 << 20
MAX_LABEL_CHARS = 4096
# Larger than any reading a GPU exporter writes (1 EiB, in bytes), small enough that a
# reading in MiB times 2**20 stays a finite float
MAX_VALUE = float(2**60)
MAX_VALUE_CHARS = 400           # Prometheus writes 5e-324 with 327 characters
_NUMBER = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?|inf(?:inity)?)|nan",
                     re.ASCII | re.IGNORECASE)


class ResponseError(ValueError):
    """An answer that is not a Prometheus instant vector; says what is wrong."""


class ValueOutOfRange(ResponseError):
    """A finite value too large to be a reading."""


class QueryRefused(ValueError):
    """Prometheus answered ``"status": "error"``: ``kind`` is its errorType."""

    def __init__(self, kind: str, message: str):
        kind, message = clip(kind[:80], 40), clip(message[:1000], 500)
        super().__init__(f"{kind}: {message}" if kind else message)
        self.kind = kind
        self.message = message


class Series(NamedTuple):
    labels: dict[str, str]
    timestamp_s: float
    value: float | None          # None: NaN or infinite


def parse_value(text: Any) -> float | None:
    """A sample's value as Prometheus writes it: a finite number within ±MAX_VALUE, or
    None for NaN and infinities. Raises ValueError for anything else; a finite number
    out of range is a :class:`ValueOutOfRange`."""
    if type(text) is not str or len(text) > MAX_VALUE_CHARS:
        raise ResponseError("a sample's value must be a short string")
    if _NUMBER.fullmatch(text) is None:
        raise ResponseError(f"a sample's value is not a number: {clip(text, 24)}")
    value = float(text)
    if not math.isfinite(value):
        return None
    if abs(value) > MAX_VALUE:
        raise ValueOutOfRange(f"{clip(text, 24)} is beyond ±2**60")
    return value


def _value(pair: Any, problems: list[str] | None, labels: dict[str, str],
           ) -> tuple[float, float | None]:
    if type(pair) is not list or len(pair) != 2:
        raise ResponseError("a sample must be [timestamp, \"value\"]")
    stamp, text = pair
    if type(stamp) not in (int, float) or not -1e12 < stamp < 1e12:   # NaN fails too
        raise ResponseError("a sample's timestamp must be a number of seconds")
    try:
        value = parse_value(text)
    except ValueOutOfRange as exc:
        if problems is not None and len(problems) < MAX_PROBLEMS:
            name = clip(labels.get("__name__", "?"), 60)
            gpu = clip(labels.get("gpu", ""), 12)
            problems.append(f"{name}{{gpu={gpu}}}: {exc}" if gpu else f"{name}: {exc}")
        value = None
    return float(stamp), value


def _labels(metric: Any) -> dict[str, str]:
    if type(metric) is not dict:
        raise ResponseError("a series' metric must be an object of labels")
    for key, value in metric.items():
        if type(value) is not str or len(key) > MAX_LABEL_CHARS \
                or len(value) > MAX_LABEL_CHARS:
            raise ResponseError("labels must be short strings")
    return metric


MAX_PROBLEMS = 8


def parse_response(body: bytes | str, problems: list[str] | None = None) -> list[Series]:
    """The series of an instant-vector answer. Raises QueryRefused for an error answer,
    ResponseError for anything that is not a Prometheus answer. Values out of range are
    read as None, and (the first few) described in ``problems``."""
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
                           message if isinstance(message, str) else "no reason given")
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
        labels = _labels(item.get("metric", {}))
        stamp, value = _value(item.get("value"), problems, labels)
        series.append(Series(labels, stamp, value))
    return series
