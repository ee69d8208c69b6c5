"""GPUs read from a Prometheus server: a telemetry source beside NVML and simulated GPUs.

The series come from gpuwatch exporters (``gpuwatch serve``) or plain NVIDIA
dcgm-exporters; one instant query per tick turns them into the same
:class:`~gpuwatch.core.snapshot.Snapshot` the sampler hands out for local GPUs.

- :mod:`.names`: the metric and label names both ends agree on
- :mod:`.selector`, :mod:`.url`: the ``--match`` and ``--prometheus`` values, checked
- :mod:`.response`: the HTTP API's JSON answer, parsed strictly
- :mod:`.client`: the query over HTTP (urllib)
- :mod:`.assemble`: series -> GPUs grouped by host, hosts whose series stop
- :mod:`.backend`: :class:`PrometheusBackend`, opened like the NVML backend

Importing this package imports nothing: the command line imports the parsers when it
declares its options.
"""
