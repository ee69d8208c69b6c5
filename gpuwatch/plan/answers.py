"""What the person choosing hardware asks: how long, how much, how fast for a user.

Training: the whole job's wall-clock and cost, from its size (the data set times the
epochs, or the tokens to train on over the sequence length) and the step time.
Inference (one decoding step per token for every sequence of the batch): time to first
token (the prompt's prefill for the batch, all prompts arriving together), tokens/s for
one user and in total, and dollars per million output tokens with the prefill counted,
for ``context − seq`` output tokens per request. The table's decoding step is taken at
the full context (what memory must hold); a request's generation time uses the mean
context over its output, ``seq + out/2``, since the KV cache read per token grows from
the prompt's length to the full context.
"""

from __future__ import annotations

import math

from gpuwatch.budget.workload import Workload
from gpuwatch.plan.cloud import CloudFit
from gpuwatch.plan.layouts import Config


def job_steps(config: Config, job_samples: float | None) -> int | None:
    if job_samples is None or not config.fits or config.samples_per_step < 1:
        return None
    return math.ceil(job_samples / config.samples_per_step)


def job_s(config: Config, job_samples: float | None) -> float | None:
    steps = job_steps(config, job_samples)
    return None if steps is None or config.step is None else steps * config.step.total_s


def output_tokens(workload: Workload) -> int | None:
    """Tokens each request generates: context − prompt (None unless the context is longer)."""
    if workload.mode != "infer" or workload.context is None:
        return None
    return workload.context - workload.seq if workload.context > workload.seq else None


def mean_decode_s(config: Config, workload: Workload) -> float | None:
    """The decoding step at the mean context of the generation (module docstring)."""
    step = config.step
    if step is None:
        return None
    out = output_tokens(workload)
    if not out or not step.kv_bytes or not step.bytes_moved:
        return step.total_s
    share = (workload.seq + out / 2) / workload.kv_context
    bytes_mean = step.bytes_moved - step.kv_bytes * (1 - share)
    memory = step.memory_s * bytes_mean / step.bytes_moved
    return max(step.compute_s, memory) + step.exposed_s + step.offload_s


def generation_s(config: Config, workload: Workload) -> float | None:
    """One batch of requests: its prompts' prefill, then every output token."""
    out = output_tokens(workload)
    decode = mean_decode_s(config, workload)
    if config.step is None or not out or decode is None:
        return None
    return config.step.prefill_s + out * decode


def time_to_first_token_s(config: Config) -> float | None:
    return None if config.step is None or not config.step.prefill_s else config.step.prefill_s


def tokens_per_s_per_user(config: Config) -> float | None:
    return None if config.step is None else 1.0 / config.step.total_s


def tokens_per_s(config: Config) -> float | None:
    """All sequences of the global batch, one token each per decoding step."""
    return None if config.step is None else config.samples_per_step / config.step.total_s


def cost_per_million_tokens(fit: CloudFit, workload: Workload) -> float:
    """Dollars per million output tokens on ``fit`` (prefill counted when the output
    length is known, else steady decoding only)."""
    step = fit.step
    per_s = fit.cost_per_step / step.total_s
    batch = fit.config.samples_per_step
    out = output_tokens(workload)
    seconds = generation_s(fit.config, workload) if out else None
    if out and seconds is not None:
        # the instance's own link may be slower than the plan's: scale by its step
        seconds *= step.total_s / fit.config.step.total_s if fit.config.step else 1.0
        return per_s * seconds / (batch * out) * 1e6
    return per_s * step.total_s / batch * 1e6
