"""GPU catalog: memory and peak bandwidth from the vendors' data sheets.

Memory is the data sheet's size; GPU memory chips are binary-sized, so a "24 GB"
card holds 24 GiB, of which the driver reserves a little (``gpuwatch snapshot``
shows your card's total). Bandwidths are the data sheets' figures in bytes per second:
A100 80GB SXM4 2,039 GB/s and PCIe 1,935 GB/s (NVIDIA A100 data sheet, 2021); H100 SXM5
3.35 TB/s and PCIe 2.0 TB/s (NVIDIA H100 data sheet, 2023).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.budget.errors import BudgetError
from gpuwatch.core.units import shown

GIB = 1024**3
TB_S = 10**12


@dataclass(frozen=True)
class GpuInfo:
    name: str
    memory_bytes: int
    bandwidth_bytes_per_s: int
    vendor: str = "NVIDIA"


GPUS: tuple[GpuInfo, ...] = (
    GpuInfo("T4", 16 * GIB, int(0.320 * TB_S)),
    GpuInfo("V100-16GB", 16 * GIB, int(0.900 * TB_S)),
    GpuInfo("V100-32GB", 32 * GIB, int(0.900 * TB_S)),
    GpuInfo("A10", 24 * GIB, int(0.600 * TB_S)),
    GpuInfo("L4", 24 * GIB, int(0.300 * TB_S)),
    GpuInfo("RTX-3090", 24 * GIB, int(0.936 * TB_S)),
    GpuInfo("RTX-4090", 24 * GIB, int(1.008 * TB_S)),
    GpuInfo("RTX-5090", 32 * GIB, int(1.792 * TB_S)),
    GpuInfo("A100-40GB", 40 * GIB, int(1.555 * TB_S)),
    GpuInfo("L40S", 48 * GIB, int(0.864 * TB_S)),
    GpuInfo("A100-80GB", 80 * GIB, int(2.039 * TB_S)),  # SXM4
    GpuInfo("A100-80GB-PCIe", 80 * GIB, int(1.935 * TB_S)),
    GpuInfo("H100-80GB", 80 * GIB, int(3.35 * TB_S)),  # SXM5
    GpuInfo("H100-PCIe", 80 * GIB, int(2.0 * TB_S)),
    GpuInfo("MI250X", 128 * GIB, int(3.2768 * TB_S), "AMD"),
    GpuInfo("H200", 141 * GIB, int(4.8 * TB_S)),
    GpuInfo("MI300X", 192 * GIB, int(5.3 * TB_S), "AMD"),
)

# Other spellings of one card. A family name sold in several memory sizes (A100, V100)
# is not an alias: it is refused with the choices, because the sizes differ 2×.
_ALIASES = {
    "4090": "RTX-4090",
    "3090": "RTX-3090",
    "5090": "RTX-5090",
    "H100-SXM": "H100-80GB",
    "H100-SXM5": "H100-80GB",
    "H100-SXM5-80GB": "H100-80GB",
    # both H100s hold 80 GB; the SXM part is what "H100" means in clouds and papers
    "H100": "H100-80GB",
    "A100-SXM4-80GB": "A100-80GB",
    "A100-PCIE-80GB": "A100-80GB-PCIe",
}


def _key(name: str) -> str:
    return name.strip().upper().replace(" ", "-").replace("_", "-").removeprefix("NVIDIA-")


def gpu_choices(name: str) -> tuple[GpuInfo, ...]:
    """The catalog GPUs ``name`` may mean: one for an exact name or alias, several for a
    family sold in several memory sizes (``A100`` → A100-40GB and A100-80GB), none."""
    key = _key(name)
    key = {_key(k): v for k, v in _ALIASES.items()}.get(key, key)
    for gpu in GPUS:
        if _key(gpu.name) == key or _key(gpu.name).replace("RTX-", "") == key:
            return (gpu,)
    return tuple(
        g for g in GPUS
        if key and (_key(g.name).startswith(key + "-")
                    or _key(g.name).replace("RTX-", "").startswith(key + "-"))
    )


def lookup_gpu(name: str) -> GpuInfo:
    """A catalog GPU by name; an ambiguous family name is refused with its choices."""
    found = gpu_choices(name)
    if len(found) == 1:
        return found[0]
    if found:
        raise BudgetError(
            "--gpu", f"GPU {shown(name)} is ambiguous: use one of "
                     f"{', '.join(g.name for g in found)}."
        )
    raise BudgetError(
        "--gpu", f"unknown GPU {shown(name)}; known GPUs: {', '.join(g.name for g in GPUS)}."
    )
