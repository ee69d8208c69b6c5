"""``gpuwatch serve``: the sampler's GPUs as a Prometheus/OpenMetrics endpoint.

- :mod:`.listen`: the ``--listen`` address, and whether it stays on this machine
- :mod:`.budgets`: ``--budget``: estimates (``gpuwatch estimate --json``) linked to processes
- :mod:`.families`: one snapshot, its hints and budgets -> metric families
- :mod:`.state`: what the sampler thread last saw, handed to scrapes
- :mod:`.server`: the HTTP endpoint and the sampler behind it

Only :mod:`.families` and :mod:`.server` import ``prometheus_client`` (an optional extra:
``pip install gpuwatch[prometheus]``); importing this package imports nothing.
"""
