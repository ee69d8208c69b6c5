"""The in-process probe: two lines in a training script tell gpuwatch exactly what it holds.

```python
from gpuwatch import probe
probe.attach(model, optimizer)          # both optional
```

A daemon thread publishes, every second and at exit, the model's parameter, buffer
and gradient bytes, the optimizer's state bytes, and PyTorch's caching-allocator
figures (``gpuwatch.probe/1``, see :mod:`gpuwatch.core.probe_format`) to a folder
private to the user. Importing this module needs neither Qt nor a GPU; torch is only
imported when a probe is attached.

``probe.find_max_batch(step_fn, start=…, limit=…)`` finds the largest batch that runs,
recovering from each out-of-memory error; ``probe.AdaptiveBatch`` keeps adapting it
during training (smaller after an out-of-memory error, larger when memory allows).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuwatch.probe.adaptive import AdaptiveBatch, BatchChange
from gpuwatch.probe.batch_search import BatchSearch, find_max_batch, is_out_of_memory
from gpuwatch.probe.publisher import Probe

__all__ = ["AdaptiveBatch", "BatchChange", "BatchSearch", "Probe", "attach", "current",
           "detach", "find_max_batch", "is_out_of_memory"]

_current: Probe | None = None


def attach(model: Any = None, optimizer: Any = None, *, interval_s: float = 1.0,
           directory: str | Path | None = None) -> Probe:
    """Start publishing for this process (replacing an earlier probe of this process)."""
    global _current
    if _current is not None:
        _current.close()
    _current = Probe(model, optimizer, interval_s=interval_s, directory=directory)
    return _current


def detach(withdraw: bool = True) -> None:
    """Stop publishing; by default also remove this process's document."""
    global _current
    if _current is not None:
        _current.close(withdraw=withdraw)
        _current = None


def current() -> Probe | None:
    """The probe attached in this process, if any."""
    return _current
