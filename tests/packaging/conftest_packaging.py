"""Helpers for the packaging tests."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest


def wait_for(predicate: Callable[[], bool], what: str, limit_s: float = 90.0) -> None:
    """Polls until ``predicate()``; the limit only stops a broken run from hanging."""
    end = time.monotonic() + limit_s
    while not predicate():
        if time.monotonic() > end:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.1)
