"""The analytic memory budget: what a model needs on each GPU, before it is launched."""
