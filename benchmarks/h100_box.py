"""The simulated box the window benchmarks share: H100s, each with ``per_gpu`` training
processes whose memory saws up and down; the caller says how busy the GPUs look."""

from __future__ import annotations

from collections.abc import Callable


def h100_box(name: str, gpus: int, per_gpu: int, memory_high: str = "1GiB",
             gpu_util: Callable[[int], object] = lambda k: 50,
             memory_busy: Callable[[int], object] = lambda k: 30) -> dict:
    """A scenario document; ``gpu_util(k)`` and ``memory_busy(k)`` give process k's
    signals (a number, or a generator table)."""
    return {
        "schema": "gpuwatch.scenario/1", "name": name,
        "duration_s": 100000,
        "gpus": [{"name": "NVIDIA H100 80GB HBM3", "memory_total": "80GiB",
                  "memory_base": "300MiB", "memory_reserved": "560MiB",
                  "memory_bus_width_bits": 5120, "max_memory_clock_mhz": 2619}
                 for _ in range(gpus)],
        "processes": [{"pid": 10000 + k, "gpu": k % gpus, "name": f"worker{k}",
                       "cmdline": ["python", "train.py", f"--rank={k}"], "user": "alice",
                       "memory": {"generator": "sawtooth", "low": "300MiB",
                                  "high": memory_high, "period_s": 3 + k % 7},
                       "gpu_util_percent": gpu_util(k), "memory_busy_percent": memory_busy(k),
                       "cpu_percent": 20.0, "rss": "2GiB"}
                      for k in range(gpus * per_gpu)],
    }
