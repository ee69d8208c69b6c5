"""Data-sheet compute and interconnect figures for the budget catalog's GPUs.

Memory size and bandwidth come from :data:`gpuwatch.budget.gpus.GPUS`; this table adds
what a step-time roofline needs: the dense (no 2:4 sparsity) peak of each number format,
the link the GPUs of one node talk over, and how many GPUs share a fast (NVLink,
Infinity Fabric) domain. Figures are the vendors' data sheets and whitepapers, named
per row in ``source``; they are peaks no real kernel reaches (see the efficiency input).

Link bandwidths are per direction: NVIDIA quotes NVLink as the sum of both directions
(900 GB/s on H100 = 450 GB/s each way), PCIe 4.0 x16 carries 32 GB/s each way. Between
nodes each row names the usual network and its share per GPU (``--inter-node`` sets
another); a node holds ``node`` GPUs (8, MI250X 4).
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
    path (Volta and Turing have no bf16 or TF32; only Hopper, Ada, Blackwell and MI300
    have FP8)."""

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
    fp8_flops: float | None = None
    node: int = 8  # GPUs per node (server) in the usual build
    network: str = "Ethernet/RoCE, 200 Gb/s per node"  # between nodes, the usual build
    network_bytes_per_s: float = 200 / 8 / 8 * GB_S  # per GPU, per direction
    fp8_source: str = ""


def _sheet(name: str, fp32: float, tf32: float | None, bf16: float | None, fp16: float,
           link: str, link_gb_s: float, domain: int, pcie: float, source: str,
           fp8: float | None = None, node: int = 8,
           network: tuple[str, float] = ("Ethernet/RoCE, 200 Gb/s per node", 200 / 8 / 8),
           fp8_source: str = "") -> GpuSheet:
    """``network``: the usual inter-node link and its GB/s per GPU, per direction."""
    t = TFLOPS
    return GpuSheet(name, fp32 * t, None if tf32 is None else tf32 * t,
                    None if bf16 is None else bf16 * t, fp16 * t, link,
                    link_gb_s * GB_S, domain, pcie, source,
                    None if fp8 is None else fp8 * t, node, network[0],
                    network[1] * GB_S, fp8_source)


_P3, _P4, _P5 = PCIE3_BYTES_PER_S, PCIE4_BYTES_PER_S, PCIE5_BYTES_PER_S
# between nodes, per GPU and direction: one 400 Gb/s NIC per GPU (DGX H100's ConnectX-7
# NDR InfiniBand; AWS p5's 3,200 Gb/s EFA over 8 GPUs; Azure ND MI300X v5), one 200 Gb/s
# per GPU (DGX A100's ConnectX-6 HDR), four 100 Gb/s EDR for eight (DGX-1)
_NDR = ("InfiniBand NDR / EFA, 400 Gb/s per GPU", 50.0)
_HDR = ("InfiniBand HDR, 200 Gb/s per GPU", 25.0)
_EDR = ("InfiniBand EDR, 4 × 100 Gb/s per 8 GPUs", 6.25)
_SLINGSHOT = ("Slingshot, 200 Gb/s per GPU", 25.0)
SHEETS: dict[str, GpuSheet] = {s.name: s for s in (
    _sheet("T4", 8.1, None, None, 65, "PCIe 3.0", 16, 1, _P3,
           "NVIDIA T4 Tensor Core GPU data sheet (2019)"),
    _sheet("V100-16GB", 15.7, None, None, 125, "NVLink 2", 150, 8, _P3,
           "NVIDIA Tesla V100 data sheet, SXM2 (NVLink 300 GB/s total)", network=_EDR),
    _sheet("V100-32GB", 15.7, None, None, 125, "NVLink 2", 150, 8, _P3,
           "NVIDIA Tesla V100 data sheet, SXM2 (NVLink 300 GB/s total)", network=_EDR),
    _sheet("A10", 31.2, 62.5, 125, 125, "PCIe 4.0", 32, 1, _P4,
           "NVIDIA A10 Tensor Core GPU data sheet (2021)"),
    _sheet("L4", 30.3, 60, 121, 121, "PCIe 4.0", 32, 1, _P4,
           "NVIDIA L4 Tensor Core GPU data sheet (2023)", fp8=242.5,
           fp8_source="L4 data sheet: FP8 485 TFLOP/s with sparsity, 242.5 dense"),
    _sheet("RTX-3090", 35.6, 35.6, 71, 71, "PCIe 4.0", 32, 1, _P4,
           "NVIDIA Ampere GA102 GPU architecture whitepaper, fp32-accumulate tensor rate"),
    _sheet("RTX-4090", 82.6, 82.6, 165.2, 165.2, "PCIe 4.0", 32, 1, _P4,
           "NVIDIA Ada GPU architecture whitepaper, fp32-accumulate tensor rate"),
    _sheet("RTX-5090", 104.8, 104.8, 209.5, 209.5, "PCIe 5.0", 64, 1, _P5,
           "NVIDIA RTX Blackwell GPU architecture whitepaper, fp32-accumulate tensor rate"),
    _sheet("A100-40GB", 19.5, 156, 312, 312, "NVLink 3", 300, 8, _P4,
           "NVIDIA A100 Tensor Core GPU data sheet, SXM4 (NVLink 600 GB/s total)",
           network=_HDR),
    _sheet("L40S", 91.6, 183, 362, 362, "PCIe 4.0", 32, 1, _P4,
           "NVIDIA L40S data sheet (2023)", fp8=733,
           fp8_source="L40S data sheet: FP8 733 TFLOP/s dense (1,466 with sparsity)"),
    _sheet("A100-80GB", 19.5, 156, 312, 312, "NVLink 3", 300, 8, _P4,
           "NVIDIA A100 Tensor Core GPU data sheet, SXM4 80GB (NVLink 600 GB/s total)",
           network=_HDR),
    _sheet("A100-80GB-PCIe", 19.5, 156, 312, 312, "PCIe 4.0", 32, 1, _P4,
           "NVIDIA A100 Tensor Core GPU data sheet, PCIe 80GB (1,935 GB/s; NVLink bridge "
           "for pairs only)"),
    _sheet("H100-80GB", 67, 494.7, 989.4, 989.4, "NVLink 4", 450, 8, _P5,
           "NVIDIA H100 Tensor Core GPU data sheet, SXM5 (NVLink 900 GB/s total)",
           fp8=1978.9, network=_NDR,
           fp8_source="H100 data sheet, SXM5: FP8 1,979 TFLOP/s dense (3,958 with sparsity)"),
    _sheet("H100-PCIe", 51.2, 378, 756, 756, "PCIe 5.0", 64, 1, _P5,
           "NVIDIA H100 Tensor Core GPU data sheet, PCIe (2.0 TB/s; NVLink bridge for "
           "pairs only)", fp8=1513,
           fp8_source="H100 data sheet, PCIe: FP8 1,513 TFLOP/s dense (3,026 with sparsity)"),
    _sheet("MI250X", 47.9, None, 383, 383, "Infinity Fabric", 400, 4, _P4,
           "AMD Instinct MI250X data sheet (Infinity Fabric up to 800 GB/s total)", node=4,
           network=_SLINGSHOT),
    _sheet("H200", 67, 494.7, 989.4, 989.4, "NVLink 4", 450, 8, _P5,
           "NVIDIA H200 Tensor Core GPU data sheet, SXM (NVLink 900 GB/s total)",
           fp8=1978.9, network=_NDR,
           fp8_source="H200 data sheet, SXM: FP8 1,979 TFLOP/s dense (3,958 with sparsity)"),
    _sheet("MI300X", 163.4, 653.7, 1307.4, 1307.4, "Infinity Fabric", 448, 8, _P5,
           "AMD Instinct MI300X data sheet (FP32 matrix and vector 163.4 TFLOP/s; 7 links × "
           "128 GB/s, 896 GB/s total)", fp8=2614.9, network=_NDR,
           fp8_source="MI300X data sheet: FP8 2,614.9 TFLOP/s dense (5,229.8 with sparsity)"),
)}


# what each --precision computes its matmuls in, and what the rest of the work runs in
_MATMUL_FORMAT = {"fp32": "fp32", "tf32": "tf32", "fp8": "fp8", "fp8-weights": "fp8"}


@dataclass(frozen=True)
class Peaks:
    """The dense peak a regime's matmuls (and convolutions) run at, and the peak of the
    rest of its work (attention in bf16 under FP8), each with its format's name."""

    matmul: float
    matmul_format: str
    other: float
    other_format: str


@dataclass(frozen=True)
class Hardware:
    """A catalog GPU (memory and bandwidth) with its data sheet."""

    gpu: GpuInfo
    sheet: GpuSheet

    @property
    def name(self) -> str:
        return self.gpu.name

    def peaks(self, precision: str, convolutions: bool = False) -> Peaks:
        """The dense peaks a budget precision regime runs at (see :class:`Peaks`).

        Autocast, mixed, bf16/fp16 and int8/int4 (which compute in bf16) run their
        matmuls on 16-bit tensor cores; ``fp8`` runs the blocks' matmuls on FP8 tensor
        cores (Transformer Engine) and the rest in bf16; ``tf32`` on TF32 tensor cores.
        ``fp32`` runs on CUDA cores, as PyTorch leaves TF32 off for matmuls, except
        ``convolutions`` (CNNs), which cuDNN runs in TF32 by default
        (``torch.backends.cudnn.allow_tf32`` is True). A format the GPU lacks falls
        back to the next one it has, and the format's name says so.
        """
        s = self.sheet
        half, half_fmt = self._half(precision)
        want = _MATMUL_FORMAT.get(precision, "half")
        if want == "fp8":
            if s.fp8_flops is not None:
                return Peaks(s.fp8_flops, "fp8", half, half_fmt)
            return Peaks(half, half_fmt + " (no FP8 tensor cores)", half, half_fmt)
        if want == "tf32" or (want == "fp32" and convolutions):
            if s.tf32_flops is None:
                return Peaks(s.fp32_flops, "fp32 (no TF32 before Ampere)", s.fp32_flops, "fp32")
            if want == "tf32":  # every matmul, attention's included
                return Peaks(s.tf32_flops, "tf32", s.tf32_flops, "tf32")
            return Peaks(s.tf32_flops, "tf32 (cuDNN's default for convolutions)",
                         s.fp32_flops, "fp32")
        if want == "fp32":
            return Peaks(s.fp32_flops, "fp32", s.fp32_flops, "fp32")
        return Peaks(half, half_fmt, half, half_fmt)

    def _half(self, precision: str) -> tuple[float, str]:
        s = self.sheet
        if precision.endswith("fp16"):
            return s.fp16_flops, "fp16"
        if s.bf16_flops is None:
            return s.fp32_flops, "fp32 (no bf16 tensor cores: use fp16)"
        return s.bf16_flops, "bf16"

    def peak_flops(self, precision: str) -> tuple[float, str]:
        """The dense peak of a regime's matmuls, and the format they run in."""
        p = self.peaks(precision)
        return p.matmul, p.matmul_format

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
