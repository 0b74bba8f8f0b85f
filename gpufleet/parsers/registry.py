# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The parser for each KIND of tool output: one implementation per format.

``gpufleet parse KIND FILE``, the action plugins and the tests all look parsers up here.
Entries name a parser module of this package and the function in it that reads the format.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Callable

from gpufleet.parsers import (
    dcgmi_diag,
    ethtool,
    gpubench,
    ibdev2netdev,
    ibstat,
    ibstatus,
    ibv_devinfo,
    ip_addr,
    iperf3,
    kernel_log,
    kernel_modules,
    lspci,
    lspci_acs,
    nccl_debug,
    nccl_tests,
    nccl_tests_json,
    nvbandwidth,
    nvidia_smi_csv,
    nvidia_smi_nvlink,
    nvidia_smi_query_text,
    nvidia_smi_topo,
    nvidia_smi_xml,
    p2p_bandwidth_latency,
    perftest,
    perftest_json,
    resource_limits,
)
from gpufleet.parsers.common import ParseError

# The parser modules KINDS names, by their name in this package.
MODULES: dict[str, ModuleType] = {
    module.__name__.rsplit(".", 1)[-1]: module
    for module in (dcgmi_diag, ethtool, gpubench, ibdev2netdev, ibstat, ibstatus, ibv_devinfo, ip_addr, iperf3,
                   kernel_log, kernel_modules, lspci, lspci_acs, nccl_debug, nccl_tests, nccl_tests_json, nvbandwidth,
                   nvidia_smi_csv, nvidia_smi_nvlink, nvidia_smi_query_text, nvidia_smi_topo, nvidia_smi_xml,
                   p2p_bandwidth_latency, perftest, perftest_json, resource_limits)
}

# KIND -> (module, function, what the tool was asked)
KINDS = {
    "topo": ("nvidia_smi_topo", "parse_topo_matrix", "nvidia-smi topo -m / topo -mp"),
    "topo-p2p": ("nvidia_smi_topo", "parse_p2p_matrix", "nvidia-smi topo -p2p r|w|n|a|p"),
    "nvidia-smi-q": ("nvidia_smi_query_text", "parse_query_text", "nvidia-smi -q (text)"),
    "nvidia-smi-xml": ("nvidia_smi_xml", "parse_query_xml", "nvidia-smi -q -x"),
    "query-gpu": ("nvidia_smi_csv", "parse_query_gpu_csv", "nvidia-smi --query-gpu=... --format=csv"),
    "nvlink-status": ("nvidia_smi_nvlink", "parse_nvlink_status", "nvidia-smi nvlink -s"),
    "nvlink-errors": ("nvidia_smi_nvlink", "parse_nvlink_errors", "nvidia-smi nvlink -e"),
    "ibstat": ("ibstat", "parse_ibstat", "ibstat"),
    "ibstatus": ("ibstatus", "parse_ibstatus", "ibstatus"),
    "ibv-devinfo": ("ibv_devinfo", "parse_ibv_devinfo", "ibv_devinfo [-v]"),
    "ibdev2netdev": ("ibdev2netdev", "parse_ibdev2netdev", "ibdev2netdev"),
    "ethtool": ("ethtool", "parse_ethtool", "ethtool IFACE"),
    "ethtool-driver": ("ethtool", "parse_ethtool_driver", "ethtool -i IFACE"),
    "ip-addr": ("ip_addr", "parse_ip_addr", "ip -j addr"),
    "nccl": ("nccl_tests", "parse_nccl_tests", "nccl-tests *_perf (with NCCL_DEBUG=INFO lines when present)"),
    "nccl-json": ("nccl_tests_json", "parse_nccl_tests_json", "nccl-tests *_perf -J FILE (its JSON document)"),
    "nccl-debug": ("nccl_debug", "parse_nccl_debug", "NCCL_DEBUG=INFO/TRACE log lines"),
    "iperf3": ("iperf3", "parse_iperf3", "iperf3 client (text or --json)"),
    "ib-bw": ("perftest", "parse_perftest_bw", "perftest ib_write_bw / ib_read_bw / ib_send_bw"),
    "ib-lat": ("perftest", "parse_perftest_lat", "perftest ib_write_lat / ib_read_lat / ib_send_lat"),
    "perftest-json": ("perftest_json", "parse_perftest_json", "perftest ib_*_bw / ib_*_lat --out_json (its JSON report)"),
    "lspci": ("lspci", "parse_lspci", "lspci [-nn|-n] [-D] [-v...]"),
    "lspci-acs": ("lspci_acs", "parse_lspci_acs", "lspci -vvv (ACS capability and control of each bridge)"),
    "kernel-modules": ("kernel_modules", "parse_kernel_modules", "/proc/modules or lsmod"),
    "kernel-log": ("kernel_log", "parse_kernel_log", "dmesg / journalctl -k (NVIDIA Xid events)"),
    "limits": ("resource_limits", "parse_limits", "/proc/PID/limits"),
    "ulimit-l": ("resource_limits", "parse_ulimit_l", "ulimit -l (job logs)"),
    "nvbandwidth": ("nvbandwidth", "parse_nvbandwidth", "nvbandwidth"),
    "p2p-bandwidth": ("p2p_bandwidth_latency", "parse_p2p_bandwidth_latency", "CUDA sample p2pBandwidthLatencyTest"),
    "dcgmi-diag": ("dcgmi_diag", "parse_dcgmi_diag", "dcgmi diag -r LEVEL -j (DCGM's diagnostic as JSON)"),
    "gpubench": ("gpubench", "parse_gpubench", "gpubench (gpufleet's per-GPU GEMM and HBM bandwidth benchmark)"),
}


def get_parser(kind: str) -> Callable[[str], dict[str, Any]]:
    """Return the parse function for ``kind``; KeyError names the known kinds."""
    try:
        module_name, function_name, _what = KINDS[kind]
    except KeyError:
        raise KeyError("unknown kind %r; known: %s" % (kind, ", ".join(sorted(KINDS)))) from None
    parser: Callable[[str], dict[str, Any]] = getattr(MODULES[module_name], function_name)
    return parser


def parse(kind: str, text: str) -> dict[str, Any]:
    """Parse ``text`` as ``kind``. Raises ParseError (with ``kind`` set) on damaged input."""
    parser = get_parser(kind)
    try:
        return parser(text)
    except ParseError as exc:
        if exc.kind is None:
            exc.kind = kind
        raise
