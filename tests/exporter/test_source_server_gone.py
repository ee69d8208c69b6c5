"""When the Prometheus server itself stops answering mid-run, every GPU is shown
unreadable with the reason, none as empty; when it answers again they come back."""

from __future__ import annotations

import json

from prometheus_support import StaticTarget

from gpuwatch.core.snapshot import GpuState
from gpuwatch.telemetry.prometheus.backend import PrometheusBackend

LABELS = {"job": "dcgm", "instance": "n1:9400", "gpu": "0", "UUID": "GPU-1",
          "modelName": "NVIDIA L4", "Hostname": "n1"}
ANSWER = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
    {"metric": {**LABELS, "__name__": "DCGM_FI_DEV_FB_USED"}, "value": [1.0, "1000"]},
    {"metric": {**LABELS, "__name__": "DCGM_FI_DEV_FB_FREE"}, "value": [1.0, "21000"]},
    {"metric": {"__name__": "up", "job": "dcgm", "instance": "n1:9400"}, "value": [1.0, "1"]},
]}})


def test_a_server_that_goes_away_leaves_every_gpu_unreadable_then_back() -> None:
    server = StaticTarget(ANSWER, "application/json")
    backend = PrometheusBackend(f"http://127.0.0.1:{server.port}", timeout_s=2.0).open()
    (gpu,) = backend.sample().gpus
    assert gpu.state is GpuState.OK and gpu.memory.used_bytes == 1000 << 20
    server.stop()
    snap = backend.sample()
    (gpu,) = snap.gpus
    assert gpu.state is GpuState.ERROR and gpu.memory.used_bytes is None
    assert "did not answer" in gpu.error and snap.warnings == (gpu.error,)
    back = StaticTarget(ANSWER, "application/json")
    backend.client.base_url = f"http://127.0.0.1:{back.port}"       # the server restarted
    try:
        (gpu,) = backend.sample().gpus
        assert gpu.state is GpuState.OK and gpu.index == 0
    finally:
        back.stop()
