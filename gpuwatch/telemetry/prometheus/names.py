"""The metric and label names that ``gpuwatch serve`` writes and the Prometheus source reads.

Names shared with NVIDIA's dcgm-exporter follow its default counters
(``etc/default-counters.csv``, ``etc/dcp-metrics-included.csv``) and its labels
(``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``, ``hostname``), so
dashboards built for dcgm-exporter work on gpuwatch's exporter and the window reads plain
dcgm-exporters (older ones spell the host label ``Hostname``: both are read).
gpuwatch's own metrics carry the ``gpuwatch_`` prefix and their unit in the name.
"""

from __future__ import annotations

MIB = 1 << 20

# dcgm-exporter's labels, in the order its GPU template writes them
# (internal/pkg/rendermetrics/render_metrics.go); DCGM_FI_DRIVER_VERSION is the label its
# default counters add (a "label" line in default-counters.csv)
GPU, UUID, PCI_BUS_ID, DEVICE, MODEL = "gpu", "UUID", "pci_bus_id", "device", "modelName"
HOSTNAME = "hostname"             # dcgm-exporter's spelling since 2026 (it was "Hostname")
OLD_HOSTNAME = "Hostname"         # still read: older dcgm-exporters and gpuwatch exporters
DRIVER_VERSION = "DCGM_FI_DRIVER_VERSION"
GPU_LABELS = (GPU, UUID, PCI_BUS_ID, DEVICE, MODEL, HOSTNAME, DRIVER_VERSION)
# gpuwatch's own metrics keep the labels that identify a GPU and join with DCGM's
OWN_GPU_LABELS = (GPU, UUID, HOSTNAME)
PROCESS_LABELS = (*OWN_GPU_LABELS, "pid", "name", "user", "container")
HINT_LABELS = (*OWN_GPU_LABELS, "code", "severity")
# Prometheus's own labels
INSTANCE, JOB = "instance", "job"
UP = "up"

# dcgm-exporter compatible (units as dcgm-exporter has them), each in its
# etc/default-counters.csv or etc/dcp-metrics-included.csv
FB_USED = "DCGM_FI_DEV_FB_USED"               # MiB
FB_FREE = "DCGM_FI_DEV_FB_FREE"               # MiB
FB_RESERVED = "DCGM_FI_DEV_FB_RESERVED"       # MiB
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"             # %
MEM_COPY_UTIL = "DCGM_FI_DEV_MEM_COPY_UTIL"   # % of time memory was read or written
ENC_UTIL = "DCGM_FI_DEV_ENC_UTIL"             # %
DEC_UTIL = "DCGM_FI_DEV_DEC_UTIL"             # %
GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"             # degrees C
MEMORY_TEMP = "DCGM_FI_DEV_MEMORY_TEMP"       # degrees C
POWER_USAGE = "DCGM_FI_DEV_POWER_USAGE"       # W
PCIE_TX = "DCGM_FI_PROF_PCIE_TX_BYTES"        # bytes per second
PCIE_RX = "DCGM_FI_PROF_PCIE_RX_BYTES"        # bytes per second
SM_CLOCK = "DCGM_FI_DEV_SM_CLOCK"             # MHz
MEM_CLOCK = "DCGM_FI_DEV_MEM_CLOCK"           # MHz
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"        # ratio 0-1 (GPM)
PIPE_TENSOR_ACTIVE = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"    # ratio 0-1 (GPM)
DRAM_ACTIVE = "DCGM_FI_PROF_DRAM_ACTIVE"      # ratio 0-1 of peak DRAM bandwidth (GPM)
XID_ERRORS = "DCGM_FI_DEV_XID_ERRORS"         # the last XID seen (a code, not a count)
TOTAL_ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"   # mJ since the driver loaded
DCGM_METRICS = (FB_USED, FB_FREE, FB_RESERVED, GPU_UTIL, MEM_COPY_UTIL, ENC_UTIL, DEC_UTIL,
                GPU_TEMP, MEMORY_TEMP, POWER_USAGE, PCIE_TX, PCIE_RX, SM_CLOCK, MEM_CLOCK,
                GR_ENGINE_ACTIVE, PIPE_TENSOR_ACTIVE, DRAM_ACTIVE, XID_ERRORS)
# written, not read back (a counter the window has no use for)
DCGM_WRITE_ONLY = (TOTAL_ENERGY,)
# What gpuwatch exporters before the parity work wrote for NVLink (names neither of
# dcgm-exporter's lists has): still read, no longer written.
OLD_NVLINK_TX = "DCGM_FI_PROF_NVLINK_TX_BYTES"
OLD_NVLINK_RX = "DCGM_FI_PROF_NVLINK_RX_BYTES"

# gpuwatch's own
PREFIX = "gpuwatch_"
GPU_TOTAL = "gpuwatch_gpu_memory_total_bytes"
GPU_POWER_LIMIT = "gpuwatch_gpu_power_limit_watts"
GPU_PEAK_BANDWIDTH = "gpuwatch_gpu_memory_peak_bandwidth_bytes_per_second"
GPU_MEASURED_BANDWIDTH = "gpuwatch_gpu_memory_bandwidth_measured_bytes_per_second"
GPU_ESTIMATED_BANDWIDTH = "gpuwatch_gpu_memory_bandwidth_estimated_bytes_per_second"
GPU_NVLINK_TX = "gpuwatch_gpu_nvlink_transmit_bytes_per_second"    # all links
GPU_NVLINK_RX = "gpuwatch_gpu_nvlink_receive_bytes_per_second"
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
READ_METRICS = (*DCGM_METRICS, OLD_NVLINK_TX, OLD_NVLINK_RX, GPU_TOTAL, GPU_POWER_LIMIT,
                GPU_PEAK_BANDWIDTH, GPU_NVLINK_TX, GPU_NVLINK_RX, GPU_READABLE,
                PROCESS_USED, PROCESS_BUDGET, ALLOC_ALLOCATED, ALLOC_RESERVED, ALLOC_INACTIVE)
