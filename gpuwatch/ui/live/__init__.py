"""The live window: GPU cards, time plots, the process table, budget and advisor tabs."""
