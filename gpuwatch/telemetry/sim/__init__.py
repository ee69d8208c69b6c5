"""Simulated GPUs: a scenario-driven NVML that the real backend runs on unchanged."""
