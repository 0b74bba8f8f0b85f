# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Network and GPU-bandwidth benchmark checks (pure): iperf3, perftest, nvbandwidth, IB counters.

Reads the node's benchmark records (``node.settings["benchmarks"]``, the host record's
``benchmarks`` list: docs/results-schema.md) that ``playbooks/benchmark_tasks/*.yml`` wrote,
the claim and the profile. A record is recognised by its ``kind`` (``iperf3``,
``iperf3_concurrent``, ``ib_write_bw``, ``ib_write_lat``, ``nvbandwidth``, ``ib_counters``),
else by its name's first word.

iperf3 is judged on its per-second intervals after the omitted warm-up (``-O``; a capture
without omitted intervals loses its first interval: the slow-start / token-bucket burst), not
on the end summary: the median interval against ``floor_fraction`` x the line rate fails, a
slower single interval warns.
"""

from __future__ import annotations

import statistics

from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.checks.engine import fleet_check, node_check
from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.checks.model import ERROR, FAIL, PASS, SKIP, WARN, result
from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.checks.network import COUNTER_MAX, COUNTER_SOURCE, num

BENCHMARKS = "benchmarks"

# TCP goodput on Ethernet tops out below line rate: at MTU 1500 a frame carries 1448 payload bytes
# (20 IP + 32 TCP with timestamps) for 1538 bytes on the wire (14 header + 4 FCS + 8 preamble +
# 12 inter-frame gap) = 94.1 %; the 1GbE recording tests/fixtures/perf/iperf3-text-tcp-1gbe-
# baseline-934mbps.txt measured 93.4 %. 0.9 leaves room for that and for scheduling jitter.
IPERF3_FLOOR_FRACTION = 0.9
IPERF3_FLOOR_SOURCE = ("gpufleet default 0.9 x line rate: TCP payload ceiling 1448/1538 = 94.1 % at MTU 1500 "
                       "(Ethernet framing), 93.4 % measured in perf/iperf3-text-tcp-1gbe-baseline-934mbps.txt")
# A non-blocking fabric carries every cross-rack pair at its alone rate; 0.8 is a gpufleet choice
# (no figure in BASELINES.md), overridable with gpufleet_iperf3_concurrent_ratio_min.
CONCURRENT_RATIO_MIN = 0.8
CONCURRENT_SOURCE = "gpufleet default: concurrent/alone >= 0.8 on a non-blocking fabric (no BASELINES.md figure)"
# BASELINES.md 4 (OCI oci-hpc multi_node_active_healthcheck.py): ib_write_lat <= 5 us.
IB_LAT_MAX_US = 5.0
IB_LAT_SOURCE = "BASELINES.md 4: OCI oci-hpc multi_node_active_healthcheck.py ib_write_lat <= 5 us"

NVBANDWIDTH_THRESHOLDS = (
    ("host_to_device", "h2d_bandwidth"),
    ("device_to_host", "d2h_bandwidth"),
    ("device_to_device", "p2p_bandwidth"),
)

KINDS = ("iperf3", "iperf3_concurrent", "ib_write_bw", "ib_write_lat", "nvbandwidth", "ib_counters")


# --- records ----------------------------------------------------------------------------------


def record_kind(record):
    """The kind of a benchmark record: its ``kind``, else from its name and environment."""
    kind = record.get("kind")
    if kind:
        return kind
    name = str(record.get("name") or "")
    first = name.split()[0] if name.split() else ""
    if first.startswith("iperf3"):
        concurrent = (record.get("environment") or {}).get("GPUFLEET_IPERF3_MODE") == "concurrent" or "concurrent" in name
        return "iperf3_concurrent" if concurrent else "iperf3"
    return first or None


def records(node, *kinds):
    """The node's benchmark records of the given kinds, in order."""
    return [rec for rec in node.settings.get(BENCHMARKS) or [] if isinstance(rec, dict) and record_kind(rec) in kinds]


def _label(record):
    hosts = record.get("hosts") or []
    text = str(record.get("name") or record_kind(record))
    if len(hosts) == 2:
        text += " (%s -> %s)" % (hosts[0], hosts[1])
    if record.get("round") is not None:
        text += " round %s" % record["round"]
    return text


def _not_measured(check_id, record):
    """A result for a record that carries no figure (failed run / unparsed), else None."""
    outcome = record.get("outcome")
    if outcome not in (None, "ok"):
        why = (" (%s)" % record["reason"]) if record.get("reason") else ""
        return result(check_id, FAIL, "%s did not complete: %s%s" % (_label(record), outcome, why), measured=outcome, subject=_label(record))
    if not isinstance(record.get("parsed"), dict):
        return result(check_id, ERROR, "%s has no parsed output to judge" % _label(record), subject=_label(record))
    return None


def _setting(node, name, default):
    value = node.settings.get(name)
    return default if value is None else value


# --- iperf3 -----------------------------------------------------------------------------------


def judged_intervals(parsed):
    """``(intervals, dropped)``: the intervals judged (``-O`` omitted ones dropped; without any, the first)."""
    intervals = [item for item in parsed.get("intervals") or [] if isinstance(item.get("bps"), (int, float))]
    kept = [item for item in intervals if not item.get("omitted")]
    if len(kept) == len(intervals) and kept:
        return kept[1:], 1
    return kept, len(intervals) - len(kept)


def interval_stats(parsed):
    """``{median_bps, min_bps, count, dropped}`` of the judged intervals (None figures without any)."""
    kept, dropped = judged_intervals(parsed)
    values = [float(item["bps"]) for item in kept]
    return {"median_bps": statistics.median(values) if values else None, "min_bps": min(values) if values else None,
            "count": len(values), "dropped": dropped}


def line_rate(node):
    """``(Gb/s, source)`` the iperf3 path should carry: setting, else the claim's Ethernet NICs."""
    rate = node.settings.get("gpufleet_iperf3_line_rate_gbps")
    if rate is not None:
        return float(rate), "gpufleet_iperf3_line_rate_gbps"
    nics = (node.claim or {}).get("nics") or []
    ethernet = [nic for nic in nics if nic.get("type") == "ethernet" and nic.get("gbps")]
    frontend = [nic for nic in ethernet if nic.get("role") == "frontend"]
    chosen = frontend or ethernet
    if chosen:
        return float(max(nic["gbps"] for nic in chosen)), "claim: %s ethernet %s Gb/s" % (chosen[0].get("role"), num(max(nic["gbps"] for nic in chosen)))
    return None, None


@node_check("bench_network.iperf3")
def check_iperf3(node):
    """Each alone iperf3 run: median interval >= fraction x line rate (fail), every interval (warn)."""
    check_id = "bench_network.iperf3"
    runs = records(node, "iperf3")
    if not runs:
        return [result(check_id, SKIP, "no iperf3 run recorded for this node")]
    rate, rate_source = line_rate(node)
    fraction = float(_setting(node, "gpufleet_iperf3_floor_fraction", IPERF3_FLOOR_FRACTION))
    out = []
    for rec in runs:
        bad = _not_measured(check_id, rec)
        if bad:
            out.append(bad)
            continue
        stats = interval_stats(rec["parsed"])
        label = _label(rec)
        if stats["median_bps"] is None:
            out.append(result(check_id, ERROR, "%s printed no per-second interval after the warm-up" % label, subject=label))
            continue
        median_g, min_g = stats["median_bps"] / 1e9, stats["min_bps"] / 1e9
        if rate is None:
            out.append(result(check_id, SKIP, "%s: median %.3f Gb/s; no line rate to judge against (claim an ethernet NIC or set "
                                              "gpufleet_iperf3_line_rate_gbps)" % (label, median_g), measured=round(median_g, 3), subject=label))
            continue
        floor = fraction * rate
        source = "%s; %s" % (rate_source, IPERF3_FLOOR_SOURCE if "gpufleet_iperf3_floor_fraction" not in node.settings
                             else "gpufleet_iperf3_floor_fraction %s" % num(fraction))
        detail = "median %.3f Gb/s, min %.3f Gb/s over %d intervals (%d warm-up dropped)" % (median_g, min_g, stats["count"], stats["dropped"])
        if median_g < floor:
            status, verdict = FAIL, "below"
        elif min_g < floor:
            status, verdict = WARN, "median meets, an interval dips below"
        else:
            status, verdict = PASS, "meets"
        out.append(result(check_id, status, "%s: %s; %s %.3f Gb/s (%s x %s Gb/s)" % (label, detail, verdict, floor, num(fraction), num(rate)),
                          measured=round(median_g, 3), expected=round(floor, 3), threshold_source=source, subject=label))
    return out


def _alone_median(node):
    values = []
    for rec in records(node, "iperf3"):
        if rec.get("outcome") in (None, "ok") and isinstance(rec.get("parsed"), dict):
            median = interval_stats(rec["parsed"])["median_bps"]
            if median is not None:
                values.append(median)
    return statistics.median(values) if values else None


def _concurrent(node):
    """``[(group, ratio|None, record)]`` of the node's concurrent runs against its alone median."""
    alone = _alone_median(node)
    out = []
    for rec in records(node, "iperf3_concurrent"):
        group = rec.get("group") or "(no rack label)"
        if rec.get("outcome") not in (None, "ok") or not isinstance(rec.get("parsed"), dict):
            out.append((group, None, rec))
            continue
        median = interval_stats(rec["parsed"])["median_bps"]
        out.append((group, None if median is None or not alone else median / alone, rec))
    return out


@fleet_check("bench_network.iperf3_uplink")
def check_iperf3_uplink(nodes):
    """Concurrent / alone per rack pair: a group median below the ratio fails every node of the group."""
    check_id = "bench_network.iperf3_uplink"
    per_node = {node.name: _concurrent(node) for node in nodes}
    minimum = {node.name: float(_setting(node, "gpufleet_iperf3_concurrent_ratio_min", CONCURRENT_RATIO_MIN)) for node in nodes}
    groups = {}
    for items in per_node.values():
        for group, ratio, _rec in items:
            if ratio is not None:
                groups.setdefault(group, []).append(ratio)
    group_median = {group: statistics.median(values) for group, values in groups.items()}
    out = {}
    for node in nodes:
        items = per_node[node.name]
        if not items:
            out[node.name] = [result(check_id, SKIP, "no concurrent iperf3 run recorded for this node")]
            continue
        results = []
        for group, ratio, rec in items:
            label = _label(rec)
            racks = " and ".join("rack %s" % part for part in group.split("<->"))
            if ratio is None:
                bad = _not_measured(check_id, rec) or result(check_id, ERROR, "%s: no alone iperf3 run of this node to compare with" % label,
                                                             subject=group)
                results.append(bad)
                continue
            floor = minimum[node.name]
            gmed = group_median.get(group)
            text = "%s: concurrent/alone %.2f for this node, %.2f median over %s" % (label, ratio, gmed, racks)
            if gmed is not None and gmed < floor:
                results.append(result(check_id, FAIL, "uplink between %s oversold: %s (< %s)" % (racks, text, num(floor)),
                                      measured=round(gmed, 3), expected=floor, threshold_source=CONCURRENT_SOURCE, subject=group))
            elif ratio < floor:
                results.append(result(check_id, WARN, "%s; this node alone below %s" % (text, num(floor)),
                                      measured=round(ratio, 3), expected=floor, threshold_source=CONCURRENT_SOURCE, subject=group))
            else:
                results.append(result(check_id, PASS, text, measured=round(ratio, 3), expected=floor, threshold_source=CONCURRENT_SOURCE,
                                      subject=group))
        out[node.name] = results
    return out


# --- perftest ---------------------------------------------------------------------------------


def _threshold(node, name):
    return ((node.profile or {}).get("thresholds") or {}).get(name)


def bw_row(parsed, size=None):
    """``(row, exact)``: the results row of ``size`` bytes, else the largest message size."""
    rows = [row for row in parsed.get("results") or [] if isinstance(row.get("bw_avg_gbps"), (int, float))]
    if not rows:
        return None, False
    if size is not None:
        for row in rows:
            if row.get("bytes") == size:
                return row, True
    return max(rows, key=lambda row: row.get("bytes") or 0), size is None


@node_check("bench_network.ib_write_bw")
def check_ib_write_bw(node):
    """Each ib_write_bw run: BW average at the threshold's message size against ``thresholds.ib_write_bw``."""
    check_id = "bench_network.ib_write_bw"
    runs = records(node, "ib_write_bw")
    if not runs:
        return [result(check_id, SKIP, "no ib_write_bw run recorded for this node")]
    threshold = _threshold(node, "ib_write_bw")
    out = []
    for rec in runs:
        bad = _not_measured(check_id, rec)
        if bad:
            out.append(bad)
            continue
        label = _label(rec)
        row, exact = bw_row(rec["parsed"], (threshold or {}).get("message_size"))
        if row is None:
            out.append(result(check_id, ERROR, "%s printed no bandwidth row" % label, subject=label))
            continue
        measured = round(float(row["bw_avg_gbps"]), 2)
        gdr = rec["parsed"].get("gpu_direct")
        what = "%s: BW average %s Gb/s at %s bytes%s%s" % (label, num(measured), num(row.get("bytes")), "" if exact else
                                                           " (largest size printed; the threshold names another)",
                                                           " GPUDirect" if gdr else "")
        if not threshold:
            out.append(result(check_id, SKIP, "%s; profile %s has no thresholds.ib_write_bw" % (what, (node.profile or {}).get("name")),
                              measured=measured, subject=label))
            continue
        floor, warn_below = threshold["floor"], threshold.get("warn_below")
        status = FAIL if measured < floor else WARN if warn_below is not None and measured < warn_below else PASS
        out.append(result(check_id, status, "%s; floor %s Gb/s" % (what, num(floor)), measured=measured, expected=floor,
                          threshold_source=threshold.get("source"), subject=label))
    return out


@node_check("bench_network.ib_write_lat")
def check_ib_write_lat(node):
    """Each ib_write_lat run: typical latency <= gpufleet_ib_write_lat_max_us (default 5 us, BASELINES.md 4)."""
    check_id = "bench_network.ib_write_lat"
    runs = records(node, "ib_write_lat")
    if not runs:
        return [result(check_id, SKIP, "no ib_write_lat run recorded for this node")]
    limit = float(_setting(node, "gpufleet_ib_write_lat_max_us", IB_LAT_MAX_US))
    source = IB_LAT_SOURCE if "gpufleet_ib_write_lat_max_us" not in node.settings else "gpufleet_ib_write_lat_max_us"
    out = []
    for rec in runs:
        bad = _not_measured(check_id, rec)
        if bad:
            out.append(bad)
            continue
        label = _label(rec)
        rows = [row for row in rec["parsed"].get("results") or [] if isinstance(row.get("t_typical_us"), (int, float))]
        if not rows:
            out.append(result(check_id, ERROR, "%s printed no latency row" % label, subject=label))
            continue
        row = min(rows, key=lambda item: item.get("bytes") or 0)
        typical = float(row["t_typical_us"])
        status = FAIL if typical > limit else PASS
        out.append(result(check_id, status, "%s: t_typical %s us at %s bytes; limit %s us" % (label, num(typical), num(row.get("bytes")), num(limit)),
                          measured=typical, expected=limit, threshold_source=source, subject=label))
    return out


# --- nvbandwidth ------------------------------------------------------------------------------


def copy_cells(testcase):
    """``[(row, column, GB/s)]`` of a testcase matrix, without the diagonal of GPU x GPU matrices and N/A."""
    square = testcase.get("rows") == testcase.get("columns")
    cells = []
    for row, values in (testcase.get("matrix") or {}).items():
        for column, value in values.items():
            if value is None or (square and row == column):
                continue
            cells.append((row, column, float(value)))
    return cells


@node_check("bench_network.nvbandwidth")
def check_nvbandwidth(node):
    """H2D / D2H / D2D copy bandwidth of every GPU (pair) against h2d/d2h/p2p_bandwidth floors."""
    check_id = "bench_network.nvbandwidth"
    runs = records(node, "nvbandwidth")
    if not runs:
        return [result(check_id, SKIP, "no nvbandwidth run recorded for this node")]
    out = []
    for rec in runs:
        bad = _not_measured(check_id, rec)
        if bad:
            out.append(bad)
            continue
        for testcase in rec["parsed"].get("testcases") or []:
            name = str(testcase.get("name") or "")
            key = next((threshold for prefix, threshold in NVBANDWIDTH_THRESHOLDS if name.startswith(prefix)), None)
            subject = "nvbandwidth %s" % name
            if testcase.get("status") != "ok":
                out.append(result(check_id, ERROR if testcase.get("status") == "error" else SKIP,
                                  "%s: %s (%s)" % (subject, testcase.get("status"), testcase.get("message")), subject=subject))
                continue
            cells = copy_cells(testcase)
            if key is None or not cells:
                continue
            lowest = min(cells, key=lambda cell: cell[2])
            threshold = _threshold(node, key)
            if not threshold:
                out.append(result(check_id, SKIP, "%s: lowest %s GB/s; profile %s has no thresholds.%s" % (subject, num(lowest[2]),
                                  (node.profile or {}).get("name"), key), measured=lowest[2], subject=subject))
                continue
            floor = threshold["floor"]
            below = [cell for cell in cells if cell[2] < floor]
            if below:
                named = ", ".join("%s->%s %s" % (row, col, num(value)) for row, col, value in sorted(below, key=lambda c: c[2])[:8])
                more = " ..." if len(below) > 8 else ""
                message = "%s: %d of %d copies below %s GB/s (%s): %s%s" % (
                    subject, len(below), len(cells), num(floor), testcase.get("description"), named, more)
                status = FAIL
            else:
                message = "%s: all %d copies >= %s GB/s; lowest %s->%s %s GB/s" % (subject, len(cells), num(floor), lowest[0], lowest[1], num(lowest[2]))
                status = WARN if threshold.get("warn_below") is not None and lowest[2] < threshold["warn_below"] else PASS
            out.append(result(check_id, status, message, measured=lowest[2], expected=floor, threshold_source=threshold.get("source"), subject=subject))
    return out or [result(check_id, SKIP, "nvbandwidth ran no testcase with a copy matrix")]


# --- IB port counters -------------------------------------------------------------------------


def counter_growth(before, after):
    """``[(port, counter, before, after)]`` of error counters that grew (``{port: {counter: int}}``)."""
    grown = []
    for port in sorted(after or {}):
        for counter in sorted(COUNTER_MAX):
            old = ((before or {}).get(port) or {}).get(counter)
            new = (after[port] or {}).get(counter)
            if isinstance(old, int) and isinstance(new, int) and new > old:
                grown.append((port, counter, old, new))
    return grown


@node_check("bench_network.ib_counters")
def check_ib_counters(node):
    """IB port error counters read before and after each network benchmark: any growth fails, naming the port."""
    check_id = "bench_network.ib_counters"
    runs = records(node, "ib_counters")
    if not runs:
        return [result(check_id, SKIP, "no IB counter snapshots recorded for this node")]
    out = []
    for rec in runs:
        parsed = rec.get("parsed") if isinstance(rec.get("parsed"), dict) else {}
        around = parsed.get("benchmark") or rec.get("name")
        if parsed.get("before") is None or parsed.get("after") is None:
            out.append(result(check_id, ERROR, "counters around %s: a snapshot is missing" % around, subject=around))
            continue
        grown = counter_growth(parsed["before"], parsed["after"])
        saturated = [(port, counter) for port, counters in sorted(parsed["after"].items()) for counter, value in sorted((counters or {}).items())
                     if counter in COUNTER_MAX and value == COUNTER_MAX[counter]]
        if grown or saturated:
            parts = ["%s %s %d -> %d" % item for item in grown] + ["%s %s SATURATED" % item for item in saturated if item not in
                                                                   [(g[0], g[1]) for g in grown]]
            ports = sorted({item[0] for item in grown} | {item[0] for item in saturated})
            out.append(result(check_id, FAIL, "error counters grew during %s on port %s: %s" % (around, ", ".join(ports), "; ".join(parts)),
                              measured=len(parts), expected=0, threshold_source=COUNTER_SOURCE, subject=", ".join(ports)))
        else:
            out.append(result(check_id, PASS, "no IB error counter grew during %s (%d ports)" % (around, len(parsed["after"])),
                              measured=0, expected=0, threshold_source=COUNTER_SOURCE, subject=around))
    return out
