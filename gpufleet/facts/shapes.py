# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shape of each fact group, as its builder returns it and the action plugins set it.

One TypedDict per group (``gpufleet_topology``: :class:`TopologyFacts`, ``gpufleet_gpu``: :class:`GpuFacts`,
``gpufleet_nic``: :class:`NicFacts`, ``gpufleet_host``: :class:`HostFacts`) and one per entry of a fixed shape
(one GPU, one interface, one RDMA device and port, ...); the meaning of each key is in docs/facts/*.md. A group
as set also carries :class:`FactNotes` (``RawReader.attach_notes``, after its builder). ``Any`` marks what a
tool printed and a parser kept as it was (ethtool's dict, a kernel-log event): foreign data, not modelled here.
"""

from __future__ import annotations

from typing import Any, TypedDict

from gpufleet.parsers.common import IgnoredLine


class NotedIgnoredLine(IgnoredLine):
    """A line a parse skipped as foreign, with the command whose output held it."""

    command: str


class FactNotes(TypedDict, total=False):
    """What ``RawReader.attach_notes`` adds to every group's dict beside the facts, each only when there is one."""

    ignored_lines: list[NotedIgnoredLine]
    # the tools that overran the fact phase (gpufleet.facts.raw.overruns)
    overran: list[str]


# --- gpufleet_topology (gpufleet/facts/topology.py) --------------------------------------------------------------


class TopologyGpu(TypedDict):
    """One GPU row of ``nvidia-smi topo -m`` (the ``topo`` parser's entry)."""

    name: str
    cpu_affinity: str | None
    numa_affinity: str | None
    numa_nodes: list[int] | None
    gpu_numa_id: int | None


class TopologyNic(TypedDict):
    """One NIC row of ``nvidia-smi topo -m`` (the ``topo`` parser's entry)."""

    name: str
    device: str | None
    cpu_affinity: str | None
    numa_affinity: str | None


class TopologyMatrix(TypedDict):
    """The ``topo`` parser's result, copied into the fact (its ``ignored_lines`` go to :class:`FactNotes`)."""

    format: str | None
    gpus: list[TopologyGpu]
    nics: list[TopologyNic]
    names: list[str]
    links: dict[str, dict[str, str]]
    columns: list[str]
    legend: dict[str, str] | None
    nic_legend: dict[str, str] | None
    notes: list[str]


class GpuPair(TypedDict):
    """How two GPUs are linked: the matrix code, its class, and the NVLink count (None unless NVLink)."""

    a: str
    b: str
    code: str
    link_class: str
    nvlinks: int | None


class NearestNic(TypedDict):
    """The NIC(s) nearest to one GPU and the path to them."""

    nics: list[str]
    devices: list[str | None]
    code: str
    link_class: str


class TopologySummary(TypedDict):
    """What a judge holds against the seller's claim."""

    gpu_count: int
    nic_count: int
    pair_count: int
    all_pairs_nvlink: bool
    nvlink_pairs: int
    min_nvlinks: int | None
    max_nvlinks: int | None
    non_nvlink_pairs: list[str]
    link_classes: dict[str, int]
    numa_nodes: list[str]


class TopologyAnalysis(TypedDict):
    """What ``analyse_topology`` adds to the matrix."""

    gpu_pairs: list[GpuPair]
    nearest_nic: dict[str, NearestNic]
    summary: TopologySummary


class TopologyFacts(TopologyMatrix, TopologyAnalysis):
    """``gpufleet_topology``: the parsed matrix and what it says."""


TopologyFactGroup = TypedDict("TopologyFactGroup", {"gpufleet_topology": TopologyFacts})


# --- gpufleet_gpu (gpufleet/facts/gpu.py) ------------------------------------------------------------------------


class RetiredPages(TypedDict):
    """Pages retired for ECC errors (pre-A100 GPUs)."""

    single_bit_ecc: int | None
    double_bit_ecc: int | None
    pending: bool | None


class RemappedRows(TypedDict):
    """Rows remapped for ECC errors (A100 and later)."""

    correctable: int | None
    uncorrectable: int | None
    pending: bool | None
    failure: bool | None


class GpuFabric(TypedDict):
    """A GPU's NVSwitch fabric registration (all None outside a fabric)."""

    state: str | None
    status: str | None
    clique_id: int | None
    cluster_uuid: str | None


class GpuQueryFields(TypedDict):
    """The keys of one GPU that ``nvidia-smi -q -x`` / ``-q`` print (``gpu.GPU_KEYS``, in that order).

    Numbers are as the parsers read them (an int, or a float where printed with a point); None when not printed
    or N/A. ``errors`` is the text printed in the GPU's section instead of data (the text parser's, else []).
    """

    index: int
    pci_bus_id: str | None
    name: str | None
    product_brand: str | None
    product_architecture: str | None
    uuid: str | None
    serial: str | None
    minor_number: int | None
    board_part_number: str | None
    vbios_version: str | None
    persistence_mode: bool | None
    mig_mode_current: str | None
    memory_total_mib: float | None
    memory_used_mib: float | None
    ecc_mode_current: bool | None
    ecc_mode_pending: bool | None
    ecc_errors_volatile_correctable: int | None
    ecc_errors_volatile_uncorrectable: int | None
    ecc_errors_aggregate_correctable: int | None
    ecc_errors_aggregate_uncorrectable: int | None
    ecc_errors_volatile_sram_correctable: int | None
    ecc_errors_volatile_sram_uncorrectable: int | None
    ecc_errors_aggregate_sram_correctable: int | None
    ecc_errors_aggregate_sram_uncorrectable: int | None
    ecc_errors_volatile_dram_correctable: int | None
    ecc_errors_volatile_dram_uncorrectable: int | None
    ecc_errors_aggregate_dram_correctable: int | None
    ecc_errors_aggregate_dram_uncorrectable: int | None
    retired_pages: RetiredPages | None
    remapped_rows: RemappedRows | None
    gpu_recovery_action: str | None
    temperature_c: float | None
    temperature_slowdown_c: float | None
    temperature_shutdown_c: float | None
    power_draw_w: float | None
    power_limit_w: float | None
    power_max_limit_w: float | None
    clocks_graphics_mhz: float | None
    clocks_sm_mhz: float | None
    clocks_mem_mhz: float | None
    clocks_max_graphics_mhz: float | None
    clocks_max_sm_mhz: float | None
    clocks_max_mem_mhz: float | None
    clocks_applications_graphics_mhz: int | None  # None where the driver no longer serves it (590: deprecated)
    clocks_applications_mem_mhz: int | None
    # {reason: Active?} for gpu.CLOCK_EVENT_REASONS
    clock_event_reasons: dict[str, bool | None] | None
    pcie_link_gen_current: int | None
    pcie_link_gen_max: int | None
    pcie_link_width_current: int | None
    pcie_link_width_max: int | None
    replays_since_reset: int | None
    fabric: GpuFabric | None
    # [{pid, type, name, used_memory_mib, ...}] as the parsers read them
    processes: list[dict[str, Any]] | None
    # the XML parser's MIG devices without their ``raw`` tree
    mig_devices: list[dict[str, Any]] | None
    errors: list[Any]


class GpuNvlink(TypedDict):
    """One GPU's NVLink state from ``nvidia-smi nvlink -s`` and ``-e``."""

    supported: bool | None
    message: str | None
    # {link, active, speed_gbs, replay_errors, ...}: every counter ``nvlink -e`` printed, merged by link number
    links: list[dict[str, Any]]
    elided: bool
    errors_message: str | None


class _GpuDerived(TypedDict):
    active_clock_event_reasons: list[str]
    # None when NVLink was not asked for
    nvlink: GpuNvlink | None


class _GpuFilled(TypedDict, total=False):
    # only when both queries were read: the keys the text filled where the XML had null
    filled_from_text: list[str]


class Gpu(GpuQueryFields, _GpuDerived, _GpuFilled):
    """One ``gpus[]`` entry of ``gpufleet_gpu``."""


class GpuInventorySummary(TypedDict):
    """What GPUs the node has (distinct values sorted: one value = a homogeneous node)."""

    gpu_count: int
    names: list[str]
    memory_total_mib: list[float]
    vbios_versions: list[str]
    board_part_numbers: list[str]
    persistence_mode_all: bool | None
    mig_enabled_gpus: list[int]


class GpuMemorySummary(TypedDict):
    """ECC mode and errors, retired pages and remapped rows over the GPUs."""

    ecc_enabled_all: bool | None
    ecc_errors_volatile_uncorrectable_total: int | None
    ecc_errors_aggregate_uncorrectable_total: int | None
    ecc_errors_volatile_correctable_total: int | None
    ecc_errors_aggregate_correctable_total: int | None
    retired_pages_pending_any: bool | None
    retired_pages_pending_gpus: list[int]
    retired_pages_double_bit_total: int | None
    retired_pages_single_bit_total: int | None
    remapped_rows_pending_any: bool | None
    remapped_rows_failure_any: bool | None
    remapped_rows_pending_gpus: list[int]
    remapped_rows_failure_gpus: list[int]
    remapped_rows_uncorrectable_total: int | None


class GpuClockSummary(TypedDict):
    """Throttling, temperature and power over the GPUs."""

    throttled_gpus: list[int]
    clock_event_reasons_active: dict[str, list[int]]
    temperature_max_c: float | None
    power_draw_total_w: float | None


class GpuLinkSummary(TypedDict):
    """PCIe links and NVSwitch fabric over the GPUs."""

    pcie_width_degraded_gpus: list[int]
    pcie_gen_below_max_gpus: list[int]
    fabric_states: list[str]
    fabric_statuses: list[str]
    fabric_not_ready_gpus: list[int]


class GpuProcessSummary(TypedDict):
    """Processes and error text over the GPUs."""

    compute_processes: int
    gpus_with_processes: list[int]
    gpus_reporting_errors: list[int]


class InactiveNvlink(TypedDict):
    """A link printed ``<inactive>``."""

    gpu: int
    link: int


class NvlinkSummary(TypedDict):
    """NVLink over the GPUs (every key but ``nvlink_collected`` None when NVLink was not asked for)."""

    nvlink_collected: bool
    nvlink_active_links: int | None
    nvlink_inactive_links: list[InactiveNvlink] | None
    nvlink_speeds_gbs: list[float] | None
    nvlink_unsupported_gpus: list[int] | None
    nvlink_no_active_link_gpus: list[int] | None
    # {replay_errors, recovery_errors, crc_errors} sums; None without ``nvlink -e`` data
    nvlink_error_totals: dict[str, float] | None
    nvlink_gpus_with_errors: list[int] | None


class GpuSummary(GpuInventorySummary, GpuMemorySummary, GpuClockSummary, GpuLinkSummary, GpuProcessSummary,
                 NvlinkSummary):
    """``gpufleet_gpu.summary``: the judgement-ready view of the GPUs."""


class GpuQueryTop(TypedDict):
    """The node-wide keys of the ``-q`` queries (XML first, text fills)."""

    driver_version: str | None
    cuda_version: str | None
    timestamp: str | None
    attached_gpus: int | None


class LspciView(TypedDict):
    """The lspci view of the GPUs (every key None without lspci)."""

    lspci_gpu_count: int | None
    lspci_gpus: list[str] | None
    missing_from_nvml: int | None
    lspci_only_bus_ids: list[str] | None
    nvml_only_bus_ids: list[str | None] | None


class GpuSources(TypedDict):
    """Which outputs were parsed and used."""

    xml: bool
    text: bool
    nvlink_status: bool
    nvlink_errors: bool
    lspci: bool


class _GpuCount(TypedDict):
    # GPU sections printed; from ``nvlink -s`` alone the GPUs it lists (None when elided)
    gpu_count: int | None


class _GpuFactsBody(TypedDict):
    sources: GpuSources
    query_failures: list[str]
    gpus: list[Gpu]
    summary: GpuSummary
    warnings: list[str]


class GpuFacts(GpuQueryTop, _GpuCount, LspciView, _GpuFactsBody):
    """``gpufleet_gpu``: every GPU, its health, its NVLinks, and the lspci count."""


GpuFactGroup = TypedDict("GpuFactGroup", {"gpufleet_gpu": GpuFacts})


# --- gpufleet_nic (gpufleet/facts/nic.py) ------------------------------------------------------------------------


class InterfacePcie(TypedDict):
    """An interface's PCIe link: generations and widths read, speeds as sysfs prints them."""

    gen_current: int | None
    width_current: int | None
    gen_max: int | None
    width_max: int | None
    speed_current: str | None
    speed_max: str | None


class IpAddress(TypedDict):
    """One address of ``ip -j addr``."""

    address: str | None
    prefixlen: int | None
    scope: str | None
    dynamic: bool


class BondMember(TypedDict):
    """One member (slave) of a bond in ``/proc/net/bonding/<bond>``."""

    name: str
    mii_status: str | None
    speed_mbps: int | None
    duplex: str | None
    link_failure_count: int | None
    aggregator_id: int | None
    # up and, in 802.3ad, in the active aggregator
    active: bool


class Bond(TypedDict):
    """A bond's mode, active aggregator and members (``nic.parse_bonding``)."""

    mode: str | None
    lacp: bool
    mii_status: str | None
    active_aggregator: int | None
    members: list[BondMember]


class Interface(TypedDict):
    """One ``interfaces[]`` entry of ``gpufleet_nic``: sysfs, then what the tools said about it."""

    name: str
    virtual: bool
    virtual_kind: str | None
    virtual_reason: str | None
    operstate: str | None
    carrier: bool | None
    speed_mbps: int | None
    duplex: str | None
    mtu: int | None
    mac: str | None
    arp_type: int | None
    numa_node: int | None
    pci_address: str | None
    driver: str | None
    pcie: InterfacePcie | None
    # the ``ethtool`` / ``ethtool -i`` parsers' dicts, as parsed
    ethtool: dict[str, Any] | None
    ethtool_driver: dict[str, Any] | None
    ethtool_error: str | None
    ethtool_driver_error: str | None
    # None when ``ip`` is missing
    ipv4: list[IpAddress] | None
    ipv6: list[IpAddress] | None
    rdma_device: str | None
    rdma_port: int | None
    bond: Bond | None


class Gid(TypedDict):
    """One non-zero GID of an RDMA port's GID table."""

    index: int | None
    gid: str
    type: str | None
    netdev: str | None


class _RdmaPortBody(TypedDict):
    port: int | None
    state: str | None
    state_code: int | None
    physical_state: str | None
    physical_state_code: int | None
    rate_gbps: float | None
    rate_text: str | None
    link_layer: str | None
    lid: int | None
    sm_lid: int | None
    netdev: str | None
    gids: list[Gid]
    counters: dict[str, int | None]
    hw_counters: dict[str, int | None]
    # the non-zero IB error counters (nic.ERROR_COUNTERS)
    errors: dict[str, int | None]
    sources: list[str]


class _RdmaPortFromTools(TypedDict, total=False):
    # with ibstat
    port_guid: str | None
    capability_mask: str | None
    # with ibv_devinfo
    active_mtu: Any
    max_mtu: Any


class RdmaPort(_RdmaPortBody, _RdmaPortFromTools):
    """One ``rdma[].ports[]`` entry: sysfs first, ibstat then ibv_devinfo fill what is still null."""


class HcaPart(TypedDict):
    """What HCA firmware is compared within (``nic.hca_part``)."""

    part: str | None
    firmware_family: int | None
    firmware_group: str | None


class _RdmaDeviceBody(TypedDict):
    device: str
    fw_ver: str | None
    board_id: str | None
    node_guid: str | None
    sys_image_guid: str | None
    hca_type: str | None
    pci_address: str | None
    netdevs: list[str]
    ports: list[RdmaPort]
    sources: list[str]


class _RdmaDeviceLater(TypedDict, total=False):
    # with ibv_devinfo
    vendor_part_id: Any
    transport: str | None
    # HcaPart's keys: set on every device of the fact once sysfs and the tools are merged (nic.build_nic_facts)
    part: str | None
    firmware_family: int | None
    firmware_group: str | None


class RdmaDevice(_RdmaDeviceBody, _RdmaDeviceLater):
    """One ``rdma[]`` entry of ``gpufleet_nic``."""


class InterfaceSummary(TypedDict):
    """The interfaces' part of ``gpufleet_nic.summary`` (interfaces named)."""

    interface_count: int
    physical_count: int
    virtual_count: int
    physical_up: list[str]
    physical_down: list[str]
    # of the physical interfaces that are up
    fastest_mbps: int | None
    pcie_degraded: list[str]
    ethtool_failed: list[str]


class RdmaSummary(TypedDict):
    """The RDMA part of ``gpufleet_nic.summary`` (ports named ``dev/port``)."""

    rdma_device_count: int
    rdma_port_count: int
    rdma_active_ports: list[str]
    rdma_inactive_ports: list[str]
    rdma_ports_with_errors: list[str]


class NicSummary(InterfaceSummary, RdmaSummary):
    """``gpufleet_nic.summary``: judgement-ready lists and counts."""

    tools_missing: list[str]


class NicFacts(TypedDict):
    """``gpufleet_nic``: network interfaces and RDMA devices."""

    interfaces: list[Interface]
    rdma: list[RdmaDevice]
    summary: NicSummary


NicFactGroup = TypedDict("NicFactGroup", {"gpufleet_nic": NicFacts})


# --- gpufleet_host (gpufleet/facts/host.py) ----------------------------------------------------------------------


class KernelInfo(TypedDict):
    """The kernel release (osrelease, else ``os.uname()``) and machine."""

    release: str | None
    major: int | None
    minor: int | None
    machine: str | None


class DriverInfo(TypedDict):
    """The NVIDIA driver from ``/proc/driver/nvidia/version``; None values with ``reason`` when unknown."""

    version: str | None
    open_kernel_module: bool | None
    nvrm: str | None
    reason: str | None


class GpuDirectRdma(TypedDict):
    """Whether GPUDirect RDMA is possible: nvidia-peermem loaded, or dma-buf possible."""

    peermem_loaded: bool | None
    peermem_module: str | None
    dmabuf_possible: bool | None
    ok: bool | None
    reasons: list[str]


class AcsBridge(TypedDict):
    """A bridge on a GPU/NIC path with ACS redirect on."""

    address: str
    description: str | None
    # the ACSCtl flags that are on
    enabled: list[str]
    # the endpoints below it
    devices: list[str]


class AcsState(TypedDict):
    """ACS redirect on the PCIe paths of the GPUs and RDMA devices."""

    state: str
    bridges_with_acs_on_path: list[AcsBridge]
    bridges_on_path: list[str]
    unknown_bridges: list[str]
    reason: str | None


class IommuInfo(TypedDict):
    """The IOMMU's mode and what it was judged from."""

    mode: str
    enabled: bool
    passthrough: bool
    units: list[str]
    groups: int | None
    group_types: dict[str, int]
    cmdline_flags: dict[str, str]
    reason: str | None


class MemlockInfo(TypedDict):
    """The collector's own memlock limit in bytes (None: unlimited, or unknown when ``source`` is None)."""

    soft: int | None
    hard: int | None
    unit: str
    unlimited: bool | None
    ok: bool | None
    source: str | None
    # what resource.getrlimit(RLIMIT_MEMLOCK) returned on the node, as sent
    getrlimit: dict[str, Any] | None


class MpiVersion(TypedDict):
    """The first line of ``mpirun --version`` and the version number in it."""

    text: str
    version: str | None


class NcclVersion(TypedDict):
    """The NCCL version and the library or header it was read from."""

    version: str
    source: str | None


class HostVersions(TypedDict):
    """Software versions, each None when absent."""

    ofed: str | None
    mpi: MpiVersion | None
    nccl: NcclVersion | None


class CriticalXid(TypedDict):
    """An Xid of the log that the catalog sends to a repair."""

    xid: int
    count: int
    meaning: str | None


class FatalSxid(TypedDict):
    """A fatal NVSwitch SXid: how often, on which switches, and its first message."""

    sxid: int
    count: int
    switches: list[str]
    first_message: str


class SxidSummary(TypedDict):
    """NVSwitch SXids of the kernel log."""

    # the last events: {line, timestamp, switch, pci, sxid, fatal, message} as the kernel-log parser reads them
    events: list[dict[str, Any]]
    events_total: int | None
    counts: dict[str, int]
    fatal: list[FatalSxid]
    severity_unknown: list[int]


class XidSummary(TypedDict):
    """Xids of the kernel log (``state`` ``unreadable`` with ``reason`` when no log could be read)."""

    state: str
    source: str | None
    reason: str | None
    # the last events: {line, timestamp, pci, xid, pid, process, message} as the kernel-log parser reads them
    events: list[dict[str, Any]]
    events_total: int | None
    counts: dict[str, int]
    fallen_off_bus: list[str]
    critical: list[CriticalXid]
    peermem_errors: int | None
    # {gpu address: the action its last Xid 154 named (None when it named none)}
    recovery_actions: dict[str, str | None]
    sxid: SxidSummary


class Endpoint(TypedDict):
    """A GPU or RDMA device and the PCI bridges above it (root port first), as the node read them."""

    kind: str | None
    name: str | None
    address: str | None
    bridges: list[str] | None


class HostFacts(TypedDict):
    """``gpufleet_host``: the host preconditions."""

    kernel: KernelInfo
    driver: DriverInfo
    gpudirect_rdma: GpuDirectRdma
    acs: AcsState
    iommu: IommuInfo
    memlock: MemlockInfo
    uptime_s: float | None
    versions: HostVersions
    xid: XidSummary
    endpoints: list[Endpoint]
    # one-line findings a person reads first
    summary: list[str]


HostFactGroup = TypedDict("HostFactGroup", {"gpufleet_host": HostFacts})
