"""Sessions that several report test modules read (never write): recorded once per run."""

from __future__ import annotations

from pathlib import Path

import pytest
from session_support import record_scenario


@pytest.fixture(scope="session")
def oom_session(tmp_path_factory) -> Path:
    """``oom-ramp`` recorded for 600 s with the advisor running: an ``oom-risk`` warning
    that turns critical, then the likely out-of-memory death of pid 71310."""
    return record_scenario(tmp_path_factory.mktemp("oom") / "oom.sqlite", "oom-ramp", 600,
                           advisor=True)
