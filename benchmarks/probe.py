"""The probe's cost inside a training loop, and how many trials the batch search needs.

* publish: time to collect and write one ``gpuwatch.probe/1`` document for a GPT-2-small
  sized model (124M parameters, 148 tensors) with AdamW state, against one training
  step of a small model for scale. On a GPU nothing here waits for the device: only
  tensor metadata and the allocator's counters are read.
* search: trials to find the largest batch, for gpuwatch's search seeded with an
  estimate, unseeded doubling + bisection, and a ×0.9 back-off from a large start
  (the usual trial-and-error loop), over a range of true maxima.
Run: .venv/bin/python benchmarks/probe.py   (needs torch; skips without it)
"""

from __future__ import annotations

import statistics
import tempfile
import time

from gpuwatch.probe import Probe, find_max_batch


def gpt2_small_like(torch):
    layers = []
    for _ in range(12):
        layers += [torch.nn.LayerNorm(768), torch.nn.Linear(768, 2304),
                   torch.nn.Linear(768, 768), torch.nn.LayerNorm(768),
                   torch.nn.Linear(768, 3072), torch.nn.Linear(3072, 768)]
    return torch.nn.Sequential(torch.nn.Embedding(50257, 768), *layers)


def publish_cost() -> None:
    import torch

    model = gpt2_small_like(torch)
    optimizer = torch.optim.AdamW(model.parameters())
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()
    with tempfile.TemporaryDirectory() as tmp:
        probe = Probe(model, optimizer, interval_s=3600, directory=tmp)
        times = []
        for _ in range(50):
            start = time.perf_counter()
            probe.publish()
            times.append(time.perf_counter() - start)
        probe.close(withdraw=True)
    small = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(small.parameters(), lr=0.1)
    steps = []
    for _ in range(50):
        start = time.perf_counter()
        small(torch.randn(64, 256)).sum().backward()
        opt.step()
        opt.zero_grad()
        steps.append(time.perf_counter() - start)
    n = sum(p.numel() for p in model.parameters())
    print(f"publish, {n / 1e6:.0f}M parameters + AdamW: median "
          f"{statistics.median(times) * 1e3:.2f} ms (p95 {sorted(times)[47] * 1e3:.2f} ms), "
          "once a second on the probe's own thread")
    print(f"  for scale, one CPU step of a 256x256 MLP: {statistics.median(steps) * 1e3:.2f} ms;"
          f" publish every 1 s = {statistics.median(times) * 100:.3f} % of a core")


def backoff_trials(true_max: int, start: int) -> int:
    batch, trials = start, 0
    while True:
        trials += 1
        if batch <= true_max:
            return trials
        batch = max(1, int(batch * 0.9))


def search_trials() -> None:
    print("trials to find the largest batch (true maximum -> trials):")
    print(f"  {'max':>5}  {'seeded (estimate ±10 %)':>24}  {'doubling+bisection':>19}  "
          f"{'x0.9 back-off from 4x*':>22}")
    print("  * stops at the first batch that fits, not the largest (the usual OOM retry loop)")
    for true_max in (7, 24, 100, 333, 1000):
        def step(batch: int, limit: int = true_max) -> None:
            if batch > limit:
                raise MemoryError("out of memory")
        seeded = max(find_max_batch(step, start=max(1, round(true_max * f))).trials
                     for f in (0.9, 1.1))
        plain = find_max_batch(step).trials
        print(f"  {true_max:>5}  {seeded:>24}  {plain:>19}  "
              f"{backoff_trials(true_max, 4 * true_max):>22}")


def main() -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch is not installed: skipping the probe benchmark")
        return
    publish_cost()
    search_trials()


if __name__ == "__main__":
    main()
