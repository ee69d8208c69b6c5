"""The exact peak of one training step (or a forward pass), traced on the CPU with no GPU
and no weights: the model is built inside ``FakeTensorMode`` (no real memory) and two
steps run under PyTorch's ``MemTracker``, which counts every tensor storage by category.

This is what ``gpuwatch estimate --trace`` runs. It needs PyTorch (imported only here,
when a trace is asked for); a model comes from a builder the user names:

* ``path/to/file.py:callable`` or ``package.module:callable`` — any function (or class)
  that returns an ``nn.Module`` when called with no arguments;
* ``torchvision:NAME`` / ``timm:NAME`` — a model of those libraries, by its name there;
* ``transformers:path/to/config.json`` — a Hugging Face model built from its config
  (``AutoModelForCausalLM.from_config``, or the seq2seq class for an
  encoder-decoder), when transformers is installed.

The step is the loop Hugging Face's Trainer runs (loss, ``backward()``, ``step()``,
``zero_grad(set_to_none=True)``): an image model gets a batch of images and a
cross-entropy over its outputs (any other output: their mean), a language model token
ids and the shifted cross-entropy its head computes. Categories match the estimate's:
parameters (and buffers), gradients and optimizer states after the step (an fp32 master
counts there), activations at their own peak over the forward and backward passes
(saved tensors and temporaries, the loss's gradients included), and the step's total.
Like the estimate without framework overhead, it counts tensors only: no CUDA context,
workspaces or allocator rounding; and CPU kernels stand in for CUDA's (attention falls
back to the math path on the CPU).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class TraceError(Exception):
    """A trace that cannot run: the reason names the input (one sentence). ``code`` is
    the exit status: 2 for a bad or unusable input, 1 when the user's model fails."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class TraceRequest:
    target: str  # what builds the model (see the module docstring)
    mode: str = "train"
    batch: int = 1
    seq: int = 512
    image: tuple[int, int] | None = None
    vocab: int = 0  # token ids for a language model built by a callable
    precision: str = "amp-bf16"
    optimizer: str = "adamw"


def torch_version() -> str | None:
    """PyTorch's version, or None when it is not installed."""
    try:
        import torch
    except ImportError:
        return None
    return str(torch.__version__)


def _load_callable(target: str) -> Callable[[], Any]:
    where, _, name = target.rpartition(":")
    if not where or not name.isidentifier():
        raise TraceError(f"--trace-model {target!r} should be FILE.py:callable, "
                         "module:callable, torchvision:NAME or timm:NAME.")
    if where in ("torchvision", "timm"):
        try:
            lib = importlib.import_module("torchvision.models" if where == "torchvision"
                                          else "timm")
        except Exception as e:  # a broken install reads as missing
            raise TraceError(f"--trace-model {target}: {where} is not usable here "
                             f"({type(e).__name__}); pip install {where}.") from None
        if where == "timm":
            return lambda: lib.create_model(name, pretrained=False)
        if not hasattr(lib, name):
            raise TraceError(f"--trace-model {target}: torchvision has no model {name!r}.")
        return lambda: getattr(lib, name)(weights=None)
    try:
        if where.endswith(".py"):
            path = Path(where)
            if not path.is_file():
                raise TraceError(f"--trace-model {target}: no file {where}.")
            spec = importlib.util.spec_from_file_location(path.stem, path)
            if spec is None or spec.loader is None:
                raise TraceError(f"--trace-model {target}: cannot load {where}.")
            module = importlib.util.module_from_spec(spec)
            sys.modules.setdefault(path.stem, module)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except TraceError:
        raise
    except Exception as e:  # the user's module failed to import
        raise TraceError(f"--trace-model {target}: importing {where} failed: "
                         f"{type(e).__name__}: {str(e)[:160]}") from None
    builder = getattr(module, name, None)
    if not callable(builder):
        raise TraceError(f"--trace-model {target}: {where} has no callable {name!r}.")
    return builder


def _transformers_builder(config_path: str) -> Callable[[], Any]:
    try:
        import transformers
    except ImportError:
        raise TraceError("--trace with --config builds the Hugging Face model, which needs "
                         "transformers (pip install transformers); or give --trace-model "
                         "FILE.py:callable.") from None
    cfg = transformers.AutoConfig.from_pretrained(config_path)
    auto = (transformers.AutoModelForSeq2SeqLM if getattr(cfg, "is_encoder_decoder", False)
            else transformers.AutoModelForCausalLM)  # T5 and its kind: the seq2seq head
    return lambda: auto.from_config(cfg)


def builder_for(target: str) -> Callable[[], Any]:
    """The no-argument callable that builds the model ``target`` names."""
    if target.startswith("transformers:"):
        return _transformers_builder(target.removeprefix("transformers:"))
    return _load_callable(target)


def trace(request: TraceRequest) -> dict[str, int]:
    """Bytes per category at the traced peak (see the module docstring)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise TraceError("--trace needs PyTorch (pip install torch); the analytic estimate "
                         "needs nothing.") from None
    from gpuwatch.probe import memtrace_step

    build = builder_for(request.target)
    try:
        return memtrace_step.run(build, request)
    except TraceError:
        raise
    except Exception as e:  # the user's model failed to build or run
        raise TraceError(f"tracing {request.target} failed: {type(e).__name__}: "
                         f"{str(e)[:200]}", code=1) from None
