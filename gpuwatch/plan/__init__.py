"""The planning advisor: which hardware to buy or rent for a model and setup, how fast a
step runs there (a roofline over data-sheet peaks), what it costs in the cloud, and what
each memory lever costs in time.

Pure computation over the budget engine (``gpuwatch.budget``) and data-sheet tables;
the only file read is the price list, by :func:`gpuwatch.plan.prices.read_prices`::

    from gpuwatch.plan.planner import PlanInput, make_plan
    plan = make_plan(PlanInput(spec, workload, setup), read_prices())
    to_json(plan)   # gpuwatch.plan/1 (gpuwatch.plan.document)

Importing this package imports nothing else.
"""
