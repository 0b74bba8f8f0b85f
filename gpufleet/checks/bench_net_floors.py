# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the network and GPU-bandwidth benchmarks are held to, and where it comes from (pure).

A pair run's threshold is ``(value, words for the message, source)`` (:data:`Limit`): iperf3 against a fraction of
the line rate of the slower end (:func:`iperf3_floor`), ib_write_bw against the lower of the two ends' profile floors
(:func:`ib_write_bw_floor`), ib_write_lat against the stricter of their latency limits (:func:`ib_write_lat_limit`).
"""

from __future__ import annotations

from typing import Optional

from gpufleet.checks.bench_net_records import setting_of
from gpufleet.checks.model import NodeContext
from gpufleet.checks.network import num
from gpufleet.checks.profiles import profile_value

# A pair run's threshold: (value, words for the message, source)
Limit = tuple[float, str, str]

# TCP goodput on Ethernet tops out below line rate: at MTU 1500 a frame carries 1448 payload bytes
# (20 IP + 32 TCP with timestamps) for 1538 bytes on the wire (14 header + 4 FCS + 8 preamble +
# 12 inter-frame gap) = 94.1 %; the 1GbE recording tests/fixtures/perf/iperf3-text-tcp-1gbe-
# baseline-934mbps.txt measured 93.4 %. 0.9 leaves room for that and for scheduling jitter.
IPERF3_FLOOR_FRACTION = 0.9
IPERF3_FLOOR_SOURCE = ("gpufleet default 0.9 x line rate: TCP payload ceiling 1448/1538 = 94.1 % at MTU 1500 "
                       "(Ethernet framing), 93.4 % measured in perf/iperf3-text-tcp-1gbe-baseline-934mbps.txt")
# A non-blocking fabric carries every cross-rack pair at its alone rate; 0.8 is a gpufleet choice
# (no figure in docs/baselines.md), overridable with gpufleet_iperf3_concurrent_ratio_min.
CONCURRENT_RATIO_MIN = 0.8
CONCURRENT_SOURCE = ("policy (docs/baselines.md 9): concurrent/alone >= 0.8 on a non-blocking fabric "
                     "(no published figure)")
# docs/baselines.md 4 (OCI oci-hpc multi_node_active_healthcheck.py): ib_write_lat <= 5 us.
IB_LAT_MAX_US = 5.0
IB_LAT_SOURCE = "docs/baselines.md 4: OCI oci-hpc multi_node_active_healthcheck.py ib_write_lat <= 5 us"
INFERENCE_SOURCE = ("fault model of bench/pair_search.py: an end in a fast pair is cleared; an end slow with two "
                    "cleared partners is convicted; a slow pair of two cleared ends is a slow link")

# mlx5 hw_counters that count transport errors (NVIDIA, "Understanding mlx5 Linux Counters and Status
# Parameters"): their growth during a benchmark warns (congestion alone can raise some of them, so it is
# not a failure); the IB PortCounters error counters (COUNTER_MAX) fail.
HW_ERROR_COUNTERS = ("duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err", "out_of_buffer",
                     "out_of_sequence", "packet_seq_err", "req_cqe_error", "req_remote_access_errors",
                     "req_remote_invalid_request", "resp_cqe_error", "resp_local_length_error",
                     "resp_remote_access_errors", "rnr_nak_retry_err")
HW_COUNTER_SOURCE = "NVIDIA 'Understanding mlx5 Linux Counters and Status Parameters': transport error hw_counters"

# nvbandwidth testcase name prefix -> the profile's thresholds key its copies are held to
NVBANDWIDTH_THRESHOLDS = (
    ("host_to_device", "h2d_bandwidth"),
    ("device_to_host", "d2h_bandwidth"),
    ("device_to_device", "p2p_bandwidth"),
)


def line_rate(node: NodeContext) -> tuple[Optional[float], Optional[str]]:
    """``(Gb/s, source)`` the iperf3 path should carry: setting, else the claim's Ethernet NICs."""
    rate = node.settings.get("gpufleet_iperf3_line_rate_gbps")
    if rate is not None:
        return float(rate), "gpufleet_iperf3_line_rate_gbps %s Gb/s" % num(rate)
    nics = (node.claim or {}).get("nics") or []
    ethernet = [nic for nic in nics if nic.get("type") == "ethernet" and nic.get("gbps")]
    frontend = [nic for nic in ethernet if nic.get("role") == "frontend"]
    chosen = frontend or ethernet
    if chosen:
        fastest = max(nic["gbps"] for nic in chosen)
        return float(fastest), "claim: %s ethernet %s Gb/s" % (chosen[0].get("role"), num(fastest))
    return None, None


def iperf3_floor(client_node: Optional[NodeContext], server_node: Optional[NodeContext]) -> Optional[Limit]:
    """Fraction x the line rate of the slower end (``gpufleet_iperf3_floor_fraction``, else 0.9); None without one."""
    rates = [(rate, source, node) for node in (client_node, server_node) if node is not None
             for rate, source in [line_rate(node)] if rate is not None]
    if not rates:
        return None
    rate, source, node = min(rates, key=lambda item: item[0])
    fraction = float(setting_of(node, "gpufleet_iperf3_floor_fraction", IPERF3_FLOOR_FRACTION))
    why = IPERF3_FLOOR_SOURCE if "gpufleet_iperf3_floor_fraction" not in node.settings \
        else "gpufleet_iperf3_floor_fraction %s" % num(fraction)
    words = "%s x %s" % (num(fraction), source)
    return round(fraction * rate, 6), words, "%s; %s" % (words, why)


def ib_write_bw_floor(client_node: Optional[NodeContext], server_node: Optional[NodeContext]) -> Optional[Limit]:
    """The lower of the two ends' profile ``thresholds.ib_write_bw`` floors; None when neither profile has one."""
    found = [(node, profile_value(node.profile, "thresholds.ib_write_bw")[0])
             for node in (client_node, server_node) if node is not None]
    found = [(node, item) for node, item in found if item]
    if not found:
        return None
    node, item = min(found, key=lambda pair: pair[1]["floor"])
    words = "profile %s thresholds.ib_write_bw" % (node.profile or {}).get("name")
    return float(item["floor"]), words, "%s: %s" % (words, item.get("source") or "no source given")


def ib_write_lat_limit(client_node: Optional[NodeContext], server_node: Optional[NodeContext]) -> Limit:
    """The stricter of the two ends' ``gpufleet_ib_write_lat_max_us`` (else 5 us, docs/baselines.md 4)."""
    limits: list[Limit] = []
    for node in (client_node, server_node):
        if node is None:
            continue
        setting = node.settings.get("gpufleet_ib_write_lat_max_us")
        if setting is not None:
            limits.append((float(setting), "gpufleet_ib_write_lat_max_us", "gpufleet_ib_write_lat_max_us"))
        else:
            limits.append((IB_LAT_MAX_US, "docs/baselines.md 4", IB_LAT_SOURCE))
    return (min(limits, key=lambda item: item[0]) if limits
            else (IB_LAT_MAX_US, "docs/baselines.md 4", IB_LAT_SOURCE))


def concurrent_ratio_min(node: NodeContext) -> tuple[float, str]:
    """``(ratio, source)``: the lowest concurrent/alone iperf3 ratio the node's uplink may show."""
    floor = float(setting_of(node, "gpufleet_iperf3_concurrent_ratio_min", CONCURRENT_RATIO_MIN))
    source = CONCURRENT_SOURCE if node.settings.get("gpufleet_iperf3_concurrent_ratio_min") is None else (
        "gpufleet_iperf3_concurrent_ratio_min %s" % num(floor))
    return floor, source
