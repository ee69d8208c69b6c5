"""``gpuwatch serve``: the sampler's GPUs as a Prometheus/OpenMetrics endpoint.

- :mod:`.listen`: the ``--listen`` address, and whether it stays on this machine
- :mod:`.budgets`: ``--budget``: estimates (``gpuwatch estimate --json``) linked to processes
- :mod:`.families`: one snapshot, its hints and budgets -> metric families
- :mod:`.state`: what the sampler thread last saw, handed to scrapes
- :mod:`.server`: the ``/metrics`` answers, rendered once per sample
- :mod:`.httpd`: the HTTP/1.1 server under them: one thread, every cost bounded

Only :mod:`.families` and :mod:`.server` import ``prometheus_client`` (an optional extra:
``pip install gpuwatch[prometheus]``); importing this package imports nothing.
"""
