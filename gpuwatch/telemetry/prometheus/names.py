"""The metric and label names that ``gpuwatch serve`` writes and the Prometheus source reads.

Names shared with NVIDIA's dcgm-exporter follow its default counters
(``etc/default-counters.csv``, ``etc/dcp-metrics-included.csv``) and its labels
(``gpu``, ``UUID``, ``device``, ``modelName``, ``Hostname``), so dashboards built for
dcgm-exporter work on gpuwatch's exporter and the window reads plain dcgm-exporters.
gpuwatch's own metrics carry the ``gpuwatch_`` prefix and their unit in the name.
"""

from __future__ import annotations

MIB = 1 << 20

# dcgm-exporter's labels
GPU, UUID, DEVICE, MODEL, HOSTNAME = "gpu", "UUID", "device", "modelName", "Hostname"
GPU_LABELS = (GPU, UUID, DEVICE, MODEL, HOSTNAME)
# gpuwatch's own metrics keep the labels that identify a GPU and join with DCGM's
OWN_GPU_LABELS = (GPU, UUID, HOSTNAME)
PROCESS_LABELS = (*OWN_GPU_LABELS, "pid", "name", "user", "container")
HINT_LABELS = (*OWN_GPU_LABELS, "code", "severity")
# Prometheus's own labels
INSTANCE, JOB = "instance", "job"
UP = "up"

# dcgm-exporter compatible (units as dcgm-exporter has them)
FB_USED = "DCGM_FI_DEV_FB_USED"               # MiB
FB_FREE = "DCGM_FI_DEV_FB_FREE"               # MiB
FB_RESERVED = "DCGM_FI_DEV_FB_RESERVED"       # MiB
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"             # %
MEM_COPY_UTIL = "DCGM_FI_DEV_MEM_COPY_UTIL"   # % of time memory was read or written
GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"             # degrees C
POWER_USAGE = "DCGM_FI_DEV_POWER_USAGE"       # W
PCIE_TX = "DCGM_FI_PROF_PCIE_TX_BYTES"        # bytes per second
PCIE_RX = "DCGM_FI_PROF_PCIE_RX_BYTES"        # bytes per second
NVLINK_TX = "DCGM_FI_PROF_NVLINK_TX_BYTES"    # bytes per second, all links
NVLINK_RX = "DCGM_FI_PROF_NVLINK_RX_BYTES"    # bytes per second, all links
SM_CLOCK = "DCGM_FI_DEV_SM_CLOCK"             # MHz
MEM_CLOCK = "DCGM_FI_DEV_MEM_CLOCK"           # MHz
DCGM_METRICS = (FB_USED, FB_FREE, FB_RESERVED, GPU_UTIL, MEM_COPY_UTIL, GPU_TEMP,
                POWER_USAGE, PCIE_TX, PCIE_RX, NVLINK_TX, NVLINK_RX, SM_CLOCK, MEM_CLOCK)

# gpuwatch's own
PREFIX = "gpuwatch_"
GPU_TOTAL = "gpuwatch_gpu_memory_total_bytes"
GPU_POWER_LIMIT = "gpuwatch_gpu_power_limit_watts"
GPU_PEAK_BANDWIDTH = "gpuwatch_gpu_memory_peak_bandwidth_bytes_per_second"
GPU_READABLE = "gpuwatch_gpu_readable"        # 1: read this tick; 0: lost or unreadable
SECONDS_TO_FULL = "gpuwatch_gpu_time_to_full_seconds"
PROCESS_USED = "gpuwatch_process_memory_used_bytes"
PROCESS_BUDGET = "gpuwatch_process_budget_peak_bytes"
ALLOC_ALLOCATED = "gpuwatch_process_allocator_allocated_bytes"
ALLOC_RESERVED = "gpuwatch_process_allocator_reserved_bytes"
ALLOC_INACTIVE = "gpuwatch_process_allocator_inactive_split_bytes"
HINTS_OPEN = "gpuwatch_hints_open"
OTHER_PID = "other"       # the pid label of the bucket that sums the processes past the top N
OTHER_NAME = "(other processes)"

# One query reads all of these, and ``up`` where it is 0 (to tell a target whose scrape
# fails from one gone from Prometheus).
READ_METRICS = (*DCGM_METRICS, GPU_TOTAL, GPU_POWER_LIMIT, GPU_PEAK_BANDWIDTH,
                GPU_READABLE, PROCESS_USED,
                ALLOC_ALLOCATED, ALLOC_RESERVED, ALLOC_INACTIVE)
