"""gpuwatch: a desktop monitor and advisor for GPU memory in deep learning."""

__version__ = "0.1.0"
