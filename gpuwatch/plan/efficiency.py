"""The default compute efficiency by kind of workload, each with its published source.

A roofline needs the fraction of the dense peak real kernels reach. One figure for all
is wrong by 3× for CNNs, so the default follows the model:

* **Large transformers** (hidden ≥ 2,048): 50 %. Megatron-LM reaches 44–52 % model
  FLOPs utilisation on A100s from 1.7 B to 1 T parameters (Narayanan et al. 2021,
  Table 1) including its pipeline bubbles and communication, which the plan adds
  apart; Llama 3 405B 38–43 % on H100s (Llama 3 paper, Table 4).
* **Small transformers** (hidden 1,024–2,047): 40 %; below 1,024: 35 %. Narrow
  matmuls (BERT-large's 1,024 × 4,096) fill fewer tensor-core tiles, and the
  elementwise, normalisation and attention kernels, which a matmul count does not
  see, take a larger share of the step.
* **CNNs** (convolutional networks without attention): 17 % of a tensor-core peak.
  MLPerf Training v3.0 ResNet-50 on 8× H100 (ID 3.0-2053) runs at about 170 TFLOP/s
  per GPU of 989; NVIDIA's DeepLearningExamples ResNet-50 on A100 in TF32 and AMP sits
  at 15–20 % of the matching peak: small channel counts, batch norm and elementwise
  kernels starve the tensor cores. In plain fp32 on CUDA cores (Volta, Turing), where
  the convolutions themselves take most of the step, 50 % (ResNet-50 on V100 in fp32:
  roughly 350–400 images/s in NVIDIA's tables, 55–60 % of 15.7 TFLOP/s).
* **FP8 matmuls** reach 80 % of that fraction of the FP8 peak (the ``fp8_factor``):
  Transformer Engine's FP8 GEMMs run 1.5–1.7× faster than bf16 ones on H100, not the
  data sheet's 2×: the casts, amax reductions and scaling kernels sit beside every FP8
  GEMM. This is the one default set with the published runs in view (docs/plan.md):
  0.7 left the three Megatron-Bridge FP8 runs 0.66–0.89× of their throughput and 1.0
  made FP8 prefill faster than TensorRT-LLM's (0.68–0.82× its first-token time); 0.8
  holds both.
* **Decoding** is bandwidth-bound: the bandwidth efficiency (80 % of the data sheet,
  what copy kernels reach) sets its pace; its compute share uses the model's figure.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.budget.specs import CnnSpec, ModelSpec, TransformerSpec

DEFAULT_BANDWIDTH_EFFICIENCY = 0.8  # of the data-sheet bandwidth: what copy kernels reach
FP8_FACTOR = 0.8  # FP8 matmuls reach this share of the efficiency, of the FP8 peak


@dataclass(frozen=True)
class Efficiency:
    """The fraction of the data-sheet peaks real kernels reach (measured, or assumed)."""

    compute: float = 0.5
    bandwidth: float = DEFAULT_BANDWIDTH_EFFICIENCY
    source: str = "the default: large matmuls reach 40–60 % of the dense peak"
    fp8_factor: float = FP8_FACTOR  # FP8 matmuls: this share of ``compute``, of the FP8 peak
    cuda_cores: float | None = None  # plain fp32 on CUDA cores, where it differs (CNNs)


@dataclass(frozen=True)
class Family:
    name: str
    compute: float
    source: str
    cuda_cores: float | None = None


LARGE = Family("large transformer", 0.5,
               "large transformers (hidden ≥ 2,048): Megatron-LM 44–52 % MFU on A100s "
               "(Narayanan et al. 2021), Llama 3 405B 38–43 % on H100s")
MEDIUM = Family("transformer, hidden 1,024–2,047", 0.4,
                "transformers of hidden 1,024–2,047: narrow matmuls and a larger share of "
                "elementwise and attention kernels")
SMALL = Family("transformer, hidden < 1,024", 0.35,
               "transformers of hidden < 1,024: narrow matmuls, launch and elementwise "
               "kernels take a large share")
CNN = Family("CNN", 0.17,
             "CNNs: MLPerf Training v3.0 ResNet-50 on 8× H100 (ID 3.0-2053) ≈ 170 TFLOP/s "
             "per GPU of 989; ResNet-50 on A100 in TF32 and AMP 15–20 %; in plain fp32 on "
             "CUDA cores 50 % (ResNet-50 on V100: roughly 350–400 images/s)", 0.5)
DIFFUSION = Family("diffusion UNet", 0.5,
                   "assumed for UNets: large convolutions and attention at 50 %")


def family(spec: ModelSpec) -> Family:
    """The kind of workload the default efficiency is chosen by."""
    if isinstance(spec, CnnSpec):
        return DIFFUSION if any(row.scores for row in spec.layers) else CNN
    if isinstance(spec, TransformerSpec):
        if spec.hidden >= 2048:
            return LARGE
        return MEDIUM if spec.hidden >= 1024 else SMALL
    return LARGE


def default_efficiency(spec: ModelSpec,
                       bandwidth: float = DEFAULT_BANDWIDTH_EFFICIENCY) -> Efficiency:
    """The efficiency for ``spec``'s kind of model, naming its source."""
    f = family(spec)
    return Efficiency(f.compute, bandwidth, f"the default for a {f.name}: {f.source}",
                      cuda_cores=f.cuda_cores)
