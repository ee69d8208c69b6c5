"""Data-sheet compute and interconnect figures for the budget catalog's GPUs.

Memory size and bandwidth come from :data:`gpuwatch.budget.gpus.GPUS`; this table adds
what a step-time roofline needs: the dense (no 2:4 sparsity) peak of each number format,
the link the GPUs of one node talk over, and how many GPUs share a fast (NVLink,
Infinity Fabric) domain. Figures are the vendors' data sheets and whitepapers, named
per row in ``source``; they are peaks no real kernel reaches (see the efficiency input).

Link bandwidths are per direction: NVIDIA quotes NVLink as the sum of both directions
(900 GB/s on H100 = 450 GB/s each way), PCIe 4.0 x16 carries 32 GB/s each way.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.budget.gpus import GPUS, GpuInfo
from gpuwatch.plan.errors import PlanError

TFLOPS = 10**12
GB_S = 10**9
PCIE3_BYTES_PER_S = 16 * GB_S  # PCIe 3.0 x16, one direction
PCIE4_BYTES_PER_S = 32 * GB_S
PCIE5_BYTES_PER_S = 64 * GB_S


@dataclass(frozen=True)
class GpuSheet:
    """One GPU's data-sheet peaks. ``bf16``/``fp16`` are dense tensor-core peaks (with
    fp32 accumulation, the mode training uses); None where the format has no tensor-core
    path (Volta and Turing have no bf16)."""

    name: str
    fp32_flops: float  # plain fp32 (CUDA cores), what PyTorch uses unless TF32 is allowed
    tf32_flops: float | None
    bf16_flops: float | None
    fp16_flops: float
    link: str  # how GPUs of one node talk: "NVLink", "Infinity Fabric" or "PCIe 4.0"…
    link_bytes_per_s: float  # per direction, per GPU
    fast_domain: int  # GPUs per NVLink/Infinity Fabric domain (1: PCIe only)
    pcie_bytes_per_s: float  # host link, per direction (offload traffic)
    source: str


def _sheet(name: str, fp32: float, tf32: float | None, bf16: float | None, fp16: float,
           link: str, link_gb_s: float, domain: int, pcie: float, source: str) -> GpuSheet:
    return GpuSheet(name, fp32 * TFLOPS, None if tf32 is None else tf32 * TFLOPS,
                    None if bf16 is None else bf16 * TFLOPS, fp16 * TFLOPS, link,
                    link_gb_s * GB_S, domain, pcie, source)


_P3, _P4, _P5 = PCIE3_BYTES_PER_S, PCIE4_BYTES_PER_S, PCIE5_BYTES_PER_S
SHEETS: dict[str, GpuSheet] = {s.name: s for s in (
    _sheet("T4", 8.1, None, None, 65, "PCIe 3.0", 16, 1, _P3,
           "NVIDIA T4 Tensor Core GPU data sheet (2019)"),
    _sheet("V100-16GB", 15.7, None, None, 125, "NVLink 2", 150, 8, _P3,
           "NVIDIA Tesla V100 data sheet, SXM2 (NVLink 300 GB/s total)"),
    _sheet("V100-32GB", 15.7, None, None, 125, "NVLink 2", 150, 8, _P3,
           "NVIDIA Tesla V100 data sheet, SXM2 (NVLink 300 GB/s total)"),
    _sheet("A10", 31.2, 62.5, 125, 125, "PCIe 4.0", 32, 1, _P4,
           "NVIDIA A10 Tensor Core GPU data sheet (2021)"),
    _sheet("L4", 30.3, 60, 121, 121, "PCIe 4.0", 32, 1, _P4,
           "NVIDIA L4 Tensor Core GPU data sheet (2023)"),
    _sheet("RTX-3090", 35.6, 35.6, 71, 71, "PCIe 4.0", 32, 1, _P4,
           "NVIDIA Ampere GA102 GPU architecture whitepaper, fp32-accumulate tensor rate"),
    _sheet("RTX-4090", 82.6, 82.6, 165.2, 165.2, "PCIe 4.0", 32, 1, _P4,
           "NVIDIA Ada GPU architecture whitepaper, fp32-accumulate tensor rate"),
    _sheet("RTX-5090", 104.8, 104.8, 209.5, 209.5, "PCIe 5.0", 64, 1, _P5,
           "NVIDIA RTX Blackwell GPU architecture whitepaper, fp32-accumulate tensor rate"),
    _sheet("A100-40GB", 19.5, 156, 312, 312, "NVLink 3", 300, 8, _P4,
           "NVIDIA A100 Tensor Core GPU data sheet, SXM4 (NVLink 600 GB/s total)"),
    _sheet("L40S", 91.6, 183, 362, 362, "PCIe 4.0", 32, 1, _P4,
           "NVIDIA L40S data sheet (2023)"),
    _sheet("A100-80GB", 19.5, 156, 312, 312, "NVLink 3", 300, 8, _P4,
           "NVIDIA A100 Tensor Core GPU data sheet, SXM4 (NVLink 600 GB/s total)"),
    _sheet("H100-80GB", 67, 494.7, 989.4, 989.4, "NVLink 4", 450, 8, _P5,
           "NVIDIA H100 Tensor Core GPU data sheet, SXM5 (NVLink 900 GB/s total)"),
    _sheet("MI250X", 47.9, None, 383, 383, "Infinity Fabric", 400, 8, _P4,
           "AMD Instinct MI250X data sheet (Infinity Fabric up to 800 GB/s total)"),
    _sheet("H200", 67, 494.7, 989.4, 989.4, "NVLink 4", 450, 8, _P5,
           "NVIDIA H200 Tensor Core GPU data sheet, SXM (NVLink 900 GB/s total)"),
    _sheet("MI300X", 81.7, 653.7, 1307.4, 1307.4, "Infinity Fabric", 448, 8, _P5,
           "AMD Instinct MI300X data sheet (7 links × 128 GB/s, 896 GB/s total)"),
)}


@dataclass(frozen=True)
class Hardware:
    """A catalog GPU (memory and bandwidth) with its data sheet."""

    gpu: GpuInfo
    sheet: GpuSheet

    @property
    def name(self) -> str:
        return self.gpu.name

    def peak_flops(self, precision: str) -> tuple[float, str]:
        """The dense peak for a budget precision regime, and the format it runs in.

        Autocast, mixed, bf16/fp16 and the quantized regimes (which compute in bf16)
        run their matmuls on 16-bit tensor cores; fp32 runs on CUDA cores (PyTorch
        leaves TF32 off for matmuls by default). A GPU without bf16 falls back to fp32.
        """
        s = self.sheet
        if precision == "fp32":
            return s.fp32_flops, "fp32"
        if precision.endswith("fp16"):
            return s.fp16_flops, "fp16"
        if s.bf16_flops is None:
            return s.fp32_flops, "fp32 (no bf16 tensor cores: use fp16)"
        return s.bf16_flops, "bf16"

    def bandwidth_per_gb(self) -> float:
        """Memory bandwidth per GB of capacity, in 1/s: how often a full memory can be
        read each second (decoding and small-batch work scale with it)."""
        return self.gpu.bandwidth_bytes_per_s / (self.gpu.memory_bytes / 10**9) / 10**9

    def ridge_point(self, precision: str) -> float:
        """FLOPs per byte at which compute and bandwidth take equal time: kernels with
        fewer FLOPs per byte moved are bandwidth-bound."""
        return self.peak_flops(precision)[0] / self.gpu.bandwidth_bytes_per_s


def catalog() -> tuple[Hardware, ...]:
    """Every budget-catalog GPU that has a data sheet here, in the catalog's order."""
    return tuple(Hardware(g, SHEETS[g.name]) for g in GPUS if g.name in SHEETS)


def hardware_for(name: str) -> Hardware:
    """One GPU by its catalog name (the budget's lookup resolves aliases)."""
    from gpuwatch.budget.gpus import lookup_gpu

    gpu = lookup_gpu(name)
    if gpu.name not in SHEETS:
        raise PlanError("--gpu", f"no data sheet for {gpu.name} in the planner's table.")
    return Hardware(gpu, SHEETS[gpu.name])
