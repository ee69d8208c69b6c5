"""A server chooses which GPUs it names: the source holds at most so many per exporter
and in all, and releases GPUs (and their history) gone for longer than a set time, so an
exporter that keeps coming back under new names cannot grow memory for ever. Odd labels
and out-of-range values from the server never end a tick."""

from __future__ import annotations

from hostile_http import HostileServer, answers_each, vector

from gpuwatch.core.history import History
from gpuwatch.core.snapshot import GpuState
from gpuwatch.telemetry.prometheus.backend import PrometheusBackend
from gpuwatch.telemetry.prometheus.caps import GpuCaps


class StepClock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def now_s(self) -> float:
        return self.t


def _gpus(instance: str, count: int, uuid_prefix: str = "GPU") -> list:
    out = []
    for g in range(count):
        labels = {"job": "dcgm", "instance": instance, "gpu": str(g),
                  "UUID": f"{uuid_prefix}-{instance}-{g}", "Hostname": instance}
        out += [({**labels, "__name__": "DCGM_FI_DEV_FB_USED"}, "1000"),
                ({**labels, "__name__": "DCGM_FI_DEV_FB_FREE"}, "3000")]
    return out


def test_an_exporter_restarting_under_new_names_does_not_grow_memory() -> None:
    # each tick the exporter is back under a new instance (a new pod IP) with new UUIDs
    clock = StepClock()
    caps = GpuCaps(per_target=8, total=40, forget_after_s=600)
    with HostileServer(answers_each(lambda i: vector(_gpus(f"10.0.0.{i}:9400", 4))),
                       max_connections=200) as server:
        backend = PrometheusBackend(server.url, clock=clock, timeout_s=5, caps=caps).open()
        history = History(capacity=16)
        sizes = []
        for _ in range(150):
            clock.t += 60
            snap = backend.sample()
            history.append(snap)
            sizes.append(len(snap.gpus))
            assert len(history.gpus) == len(snap.gpus)
    # a restart every minute, gone ones kept 10 min: 11 generations of 4 GPUs at most
    assert max(sizes) <= 40 and sizes[-1] == sizes[-50]       # a plateau, not a climb
    current = [g for g in snap.gpus if g.state is GpuState.OK]
    assert len(current) == 4
    assert len({g.index for g in snap.gpus}) == len(snap.gpus)    # indices never reused


def test_gpus_past_the_caps_are_left_out_and_said_so() -> None:
    clock = StepClock()
    caps = GpuCaps(per_target=64, total=100)
    body = vector(_gpus("big:9400", 90) + _gpus("other:9400", 50))
    with HostileServer(answers_each(lambda i: body), max_connections=4) as server:
        backend = PrometheusBackend(server.url, clock=clock, caps=caps).open()
        snap = backend.sample()
    assert len(snap.gpus) == 100
    assert sum(g.name.startswith("big:9400/") for g in snap.gpus) == 64
    assert any("40 GPUs left out" in w and "at most 64 per exporter and 100 in all" in w
               for w in snap.warnings)


def test_odd_labels_and_huge_values_never_end_a_tick() -> None:
    labels = {"job": "gpuwatch", "instance": "n:9400", "gpu": "0", "UUID": "GPU-0",
              "Hostname": "n\x1b]0;x\x07"}
    odd = [({**labels, "__name__": "DCGM_FI_DEV_FB_USED"}, "1e308"),
           ({**labels, "__name__": "DCGM_FI_DEV_FB_FREE"}, "1e17"),    # 1e17 MiB: > 1 EiB
           ({**labels, "__name__": "gpuwatch_gpu_memory_total_bytes"}, "8e10"),
           ({**labels, "__name__": "gpuwatch_process_memory_used_bytes", "pid": "²"}, "5"),
           ({**labels, "__name__": "gpuwatch_process_memory_used_bytes", "pid": "١٢"}, "5"),
           ({**labels, "__name__": "gpuwatch_process_memory_used_bytes",
             "pid": "9" * 400}, "5"),
           ({**labels, "__name__": "gpuwatch_process_memory_used_bytes", "pid": "42"},
            "1e300"),
           ({**labels, "__name__": "gpuwatch_process_allocator_reserved_bytes",
             "pid": "³"}, "7")]
    with HostileServer(answers_each(lambda i: vector(odd)), max_connections=4) as server:
        backend = PrometheusBackend(server.url, clock=StepClock()).open()
        snap = backend.sample()
    (gpu,) = snap.gpus
    assert gpu.state is GpuState.OK
    assert gpu.memory.used_bytes is None and gpu.memory.free_bytes is None
    assert gpu.memory.total_bytes == 80_000_000_000
    assert [(p.pid, p.used_bytes) for p in gpu.processes] == [(42, None)]
    assert snap.probes == ()
    assert any("values out of range" in w and "1e308" in w for w in snap.warnings)
