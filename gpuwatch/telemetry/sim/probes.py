"""Probe reports for simulated processes, from their scenario's ``probe`` tables."""

from __future__ import annotations

from collections.abc import Iterable

from gpuwatch.core.probe_format import AllocatorFacts, ModelFacts, OptimizerFacts, ProbeReport
from gpuwatch.telemetry.sim.library import SimulatedNvml

_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int8": 1,
                "uint8": 1}


class ScenarioProbes:
    def __init__(self, nvml: SimulatedNvml):
        self._nvml = nvml
        self._by_pid = {p.pid: p for p in nvml.scenario.processes if p.probe is not None}

    def __bool__(self) -> bool:
        return bool(self._by_pid)

    def read(self, pids: Iterable[int]) -> dict[int, ProbeReport]:
        t = self._nvml.scenario_time_s()
        now = self._nvml.clock.now_s()
        out: dict[int, ProbeReport] = {}
        for pid in pids:
            proc = self._by_pid.get(pid)
            if proc is None or not proc.alive_at(t):
                continue
            pr = proc.probe
            local = t - proc.start_s
            param_bytes = pr.parameters * _DTYPE_BYTES.get(pr.dtype, 4)

            def at(signal, local=local):
                return None if signal is None else int(signal.at(local))

            allocated, reserved = at(pr.allocated), at(pr.reserved)
            allocator = None
            if allocated is not None or reserved is not None:
                allocator = AllocatorFacts(allocated, allocated, reserved, reserved, allocated,
                                           allocated, at(pr.inactive_split),
                                           at(pr.alloc_retries), 0)
            out[pid] = ProbeReport(
                pid=pid,
                published_at_s=now,
                torch_version="2.13.0",
                devices=(f"cuda:{proc.gpu}",),
                model=ModelFacts("Model", pr.parameters,
                                 pr.trainable_parameters if pr.trainable_parameters is not None
                                 else pr.parameters,
                                 param_bytes, {pr.dtype: param_bytes}, pr.buffer_bytes,
                                 pr.gradient_bytes),
                optimizer=(OptimizerFacts(pr.optimizer, pr.optimizer_state_bytes,
                                          int(local)) if pr.optimizer else None),
                allocator=allocator,
                alloc_conf=pr.alloc_conf,
            )
        return out
