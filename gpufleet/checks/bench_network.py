# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Network and GPU-bandwidth benchmark checks (pure): iperf3, perftest, nvbandwidth, IB counters.

Reads the node's benchmark records (``node.settings["benchmarks"]``, the host record's
``benchmarks`` list: docs/results-schema.md) that ``playbooks/benchmark_tasks/*.yml`` wrote,
the claim and the profile. A record is recognised by its ``kind`` (``iperf3``,
``iperf3_concurrent``, ``ib_write_bw``, ``ib_write_lat``, ``nvbandwidth``, ``ib_counters``),
else by its name's first word.

Repeats vote: the figures of the repeats of one run (same kind, same hosts, same HCA pair) are
reduced to their median (``gpufleet_benchmark_vote: best`` takes the best instead) and the
spread (lowest-highest) is written in the message. A repeat that produced no figure is named.

iperf3 is judged on its per-second intervals after the omitted warm-up (``-O``; a capture
without omitted intervals loses its first interval: the slow-start / token-bucket burst), not
on the end summary: a repeat's figure is its median interval. Every run is recorded under the
host that ran its client, with ``hosts: [client, server]``.

Pair runs (iperf3 alone, ib_write_bw, ib_write_lat) are judged across the fleet (the plan is a
directed ring: every host, or HCA, meets two partners). A pair is fast when each direction
measured reaches its threshold; from the pairs the checks infer who is at fault with the fault
model of bench/pair_search.py: an end in a fast pair is *cleared*; an end that is not cleared
and is slow with two cleared partners is *convicted* (a slow node, or a slow HCA rail); a slow
pair of two cleared ends is a slow *link* (both ends fail, naming the link); a slow pair that
cannot be resolved fails the ends that are not cleared (no run proved them good) and leaves the
cleared end passing. A host is never failed because its partner was slow. A missing binary
fails the host that lacked it, and its runs are left out of the inference (they say nothing of
the other end); a skipped benchmark (outcome ``skipped``) is SKIP with its reason.

A pair none of whose repeats produced a figure is *not measured*, never slow: it stays out of the inference (a peer
that rebooted mid-round convicts nobody), and a host whose every pair is unmeasured is SKIP "not measured". A repeat
whose tool says it failed is such a repeat, whatever figure its first seconds left: iperf3's JSON ``error``
(``control socket has closed unexpectedly``, ``interrupt - the client has terminated``; iperf3 may exit 0 with it).
"""

from __future__ import annotations

import statistics

from gpufleet.checks.benchmarks import benchmark_kind
from gpufleet.checks.registry import fleet_check, node_check
from gpufleet.checks.model import ERROR, FAIL, PASS, SKIP, WARN, result
from gpufleet.checks.network import COUNTER_MAX, COUNTER_SOURCE, num
from gpufleet.checks.profiles import profile_value

BENCHMARKS = "benchmarks"
VOTE_SETTING = "gpufleet_benchmark_vote"

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
CONCURRENT_SOURCE = "policy (docs/baselines.md 9): concurrent/alone >= 0.8 on a non-blocking fabric (no published figure)"
# docs/baselines.md 4 (OCI oci-hpc multi_node_active_healthcheck.py): ib_write_lat <= 5 us.
IB_LAT_MAX_US = 5.0
IB_LAT_SOURCE = "docs/baselines.md 4: OCI oci-hpc multi_node_active_healthcheck.py ib_write_lat <= 5 us"
INFERENCE_SOURCE = ("fault model of bench/pair_search.py: an end in a fast pair is cleared; an end slow with two cleared partners is "
                    "convicted; a slow pair of two cleared ends is a slow link")

# mlx5 hw_counters that count transport errors (NVIDIA, "Understanding mlx5 Linux Counters and Status
# Parameters"): their growth during a benchmark warns (congestion alone can raise some of them, so it is
# not a failure); the IB PortCounters error counters (COUNTER_MAX) fail.
HW_ERROR_COUNTERS = ("duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err", "out_of_buffer", "out_of_sequence",
                     "packet_seq_err", "req_cqe_error", "req_remote_access_errors", "req_remote_invalid_request", "resp_cqe_error",
                     "resp_local_length_error", "resp_remote_access_errors", "rnr_nak_retry_err")
HW_COUNTER_SOURCE = "NVIDIA 'Understanding mlx5 Linux Counters and Status Parameters': transport error hw_counters"

NVBANDWIDTH_THRESHOLDS = (
    ("host_to_device", "h2d_bandwidth"),
    ("device_to_host", "d2h_bandwidth"),
    ("device_to_device", "p2p_bandwidth"),
)

KINDS = ("iperf3", "iperf3_concurrent", "ib_write_bw", "ib_write_lat", "nvbandwidth", "ib_counters")
# Outcomes that are the fault of the host that ran the command, whoever its partner was.
OWN_FAULTS = ("missing_binary",)


# --- records ----------------------------------------------------------------------------------


def records(node, *kinds):
    """The node's benchmark records of the given kinds, in order."""
    return [rec for rec in node.settings.get(BENCHMARKS) or []
            if isinstance(rec, dict) and benchmark_kind(rec) in kinds]


def _setting(node, name, default):
    value = node.settings.get(name)
    return default if value is None else value


def _outcome_words(record):
    why = (" (%s)" % record["reason"]) if record.get("reason") else ""
    return "%s%s" % (record.get("outcome"), why)


def _label(record):
    hosts = record.get("hosts") or []
    text = str(record.get("name") or benchmark_kind(record))
    if len(hosts) == 2:
        text += " (%s -> %s)" % (hosts[0], hosts[1])
    if record.get("round") is not None:
        text += " round %s" % record["round"]
    return text


# --- repeats ----------------------------------------------------------------------------------


def vote(values, how="median", higher_is_better=True):
    """``(judged, low, high)`` of the repeats' figures: the median, or the best with ``how="best"``."""
    if not values:
        return None, None, None
    if how == "best":
        judged = max(values) if higher_is_better else min(values)
    else:
        judged = statistics.median(values)
    return judged, min(values), max(values)


def repeat_words(values, how, fmt=num):
    """`` (median of 3 repeats, spread 9.3-9.5)``; empty for one repeat."""
    if len(values) < 2:
        return ""
    return " (%s of %d repeats, spread %s-%s)" % ("best" if how == "best" else "median", len(values), fmt(min(values)), fmt(max(values)))


def _how(nodes):
    for node in nodes:
        value = node.settings.get(VOTE_SETTING)
        if value:
            return str(value)
    return "median"


# --- iperf3 figures ---------------------------------------------------------------------------


def summed_intervals(parsed):
    """The run's per-second intervals; with several runs in one output, their sum interval by interval.

    The plan runs one-stream client processes side by side where an end has iperf3 < 3.16
    (gpufleet/plan/network.py ``iperf3_commands``; the record's environment says
    ``GPUFLEET_IPERF3_PARALLEL: processes:N`` and :func:`iperf3_parsed` marks ``parsed``): their N
    documents are one run, so interval i is the sum of every process's interval i (omitted when
    any is). A process without interval i ends the sum there: a missing process is no measurement.
    Documents appended one after the other (no such mark) are not summed: the last one is the run.
    """
    runs = [run for run in parsed.get("runs") or [] if isinstance(run, dict)]
    if len(runs) < 2 or not parsed.get("parallel_processes"):
        return list(parsed.get("intervals") or [])
    lists = [[item for item in run.get("intervals") or [] if isinstance(item.get("bps"), (int, float))] for run in runs]
    summed = []
    for index in range(min(len(items) for items in lists)):
        column = [items[index] for items in lists]
        summed.append(dict(column[0], bps=sum(float(item["bps"]) for item in column),
                           omitted=any(item.get("omitted") for item in column), processes=len(column)))
    return summed


def iperf3_parsed(record):
    """The record's ``parsed``, marked ``parallel_processes: N`` when its run was N one-stream processes at once."""
    parsed = record.get("parsed") if isinstance(record.get("parsed"), dict) else {}
    parallel = str((record.get("environment") or {}).get("GPUFLEET_IPERF3_PARALLEL") or "")
    mode, _sep, count = parallel.partition(":")
    if mode == "processes" and count.isdigit() and int(count) > 1:
        return dict(parsed, parallel_processes=int(count))
    return parsed


def judged_intervals(parsed):
    """``(intervals, dropped)``: the intervals judged (``-O`` omitted ones dropped; without any, the first)."""
    intervals = [item for item in summed_intervals(parsed) if isinstance(item.get("bps"), (int, float))]
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


def iperf3_gbps(parsed):
    """A repeat's figure: the median judged interval in Gb/s (None without one)."""
    median = interval_stats(parsed)["median_bps"]
    return None if median is None else median / 1e9


def line_rate(node):
    """``(Gb/s, source)`` the iperf3 path should carry: setting, else the claim's Ethernet NICs."""
    rate = node.settings.get("gpufleet_iperf3_line_rate_gbps")
    if rate is not None:
        return float(rate), "gpufleet_iperf3_line_rate_gbps %s Gb/s" % num(rate)
    nics = (node.claim or {}).get("nics") or []
    ethernet = [nic for nic in nics if nic.get("type") == "ethernet" and nic.get("gbps")]
    frontend = [nic for nic in ethernet if nic.get("role") == "frontend"]
    chosen = frontend or ethernet
    if chosen:
        return float(max(nic["gbps"] for nic in chosen)), "claim: %s ethernet %s Gb/s" % (chosen[0].get("role"), num(max(nic["gbps"] for nic in chosen)))
    return None, None


# --- pair runs judged across the fleet --------------------------------------------------------


def infer_ends(pairs):
    """``{convicted: {end: [pair]}, links: [pair], unresolved: [pair], cleared: set}`` from ``{pair: fast (bool)}``.

    The fault model of bench/pair_search.py (see the module docstring), on pairs already judged.
    """
    cleared = set()
    for pair, fast in pairs.items():
        if fast:
            cleared.update(pair)
    ends = sorted({end for pair in pairs for end in pair}, key=str)
    convicted = {}
    for end in ends:
        if end in cleared:
            continue
        accusers = sorted((pair for pair, fast in pairs.items() if not fast and end in pair and _other(pair, end) in cleared), key=str)
        if len({_other(pair, end) for pair in accusers}) >= 2:
            convicted[end] = accusers
    links, unresolved = [], []
    for pair, fast in sorted(pairs.items(), key=lambda item: str(item[0])):
        if fast:
            continue
        if pair[0] in cleared and pair[1] in cleared:
            links.append(pair)
        elif pair[0] not in convicted and pair[1] not in convicted:
            unresolved.append(pair)
    return {"convicted": convicted, "links": links, "unresolved": unresolved, "cleared": cleared}


def _other(pair, end):
    return pair[1] if pair[0] == end else pair[0]


def _pair(a, b):
    return (a, b) if str(a) <= str(b) else (b, a)


def _host_of(end):
    return end[0] if isinstance(end, tuple) else end


def _end_words(end):
    return "%s:%s" % end if isinstance(end, tuple) else str(end)


class PairJudge:
    """One pair-run check over the fleet: gather the directed runs, vote the repeats, infer, word the results.

    Subclasses give ``check_id``, ``kind``, ``unit``, ``higher_is_better``, :meth:`ends` (the two
    ends of a record: hosts, or (host, HCA)), :meth:`figure` (of a parsed output) and
    :meth:`threshold` (``(value, words for the message, source)`` for a run, or None when there is nothing to judge
    against).
    """

    check_id = ""
    kind = ""
    what = ""
    unit = ""
    digits = 3
    higher_is_better = True

    def ends(self, record):
        hosts = record.get("hosts") or []
        return (str(hosts[0]), str(hosts[1])) if len(hosts) == 2 else None

    def figure(self, parsed):
        raise NotImplementedError

    def run_error(self, parsed):
        """What the tool's own output says went wrong with the run (None when nothing): such a repeat has no figure."""
        del parsed
        return None

    def threshold(self, client_node, server_node):
        raise NotImplementedError

    def fmt(self, value):
        return num(round(value, self.digits))

    def __init__(self, nodes):
        self.nodes = {node.name: node for node in nodes}
        self.how = _how(nodes)
        self.own = {name: [] for name in self.nodes}
        self.edges = {}

    def gather(self):
        for name, node in self.nodes.items():
            for rec in records(node, self.kind):
                outcome = rec.get("outcome")
                if outcome == "skipped":
                    self.own[name].append(result(self.check_id, SKIP, "%s not run on this host: %s" % (self.what, rec.get("reason") or "skipped"),
                                                 subject=_label(rec)))
                    continue
                if outcome in OWN_FAULTS:
                    # the tool is missing here: nothing measured, not verified (INCOMPLETE where required), never failed
                    self.own[name].append(result(self.check_id, SKIP, "not verified: %s did not run on %s: %s" % (
                        _label(rec), name, _outcome_words(rec)), measured=outcome, subject=_label(rec)))
                ends = self.ends(rec)
                if ends is None and outcome in OWN_FAULTS:
                    # the benchmark preflight's record of a host that cannot run the tool: no run, so no link to judge
                    continue
                if ends is None:
                    self.own[name].append(result(self.check_id, ERROR, "%s: the record names no client and server" % _label(rec), subject=_label(rec)))
                    continue
                edge = self.edges.setdefault(ends, {"values": [], "problems": [], "notes": [], "own_fault": False})
                if outcome in OWN_FAULTS:
                    edge["own_fault"] = True
                if outcome not in (None, "ok"):
                    edge["problems"].append("repeat %s on %s: %s" % (rec.get("repeat") or 1, name, _outcome_words(rec)))
                    continue
                said = self.run_error(rec["parsed"]) if isinstance(rec.get("parsed"), dict) else None
                if said:
                    # a run its tool calls failed (a peer rebooted: "control socket has closed unexpectedly") measured
                    # nothing about the link, whatever figure its first seconds left
                    edge["problems"].append("repeat %s on %s: %s reported: %s"
                                            % (rec.get("repeat") or 1, name, self.what, said))
                    continue
                value = self.figure(self.parsed_of(rec)) if isinstance(rec.get("parsed"), dict) else None
                if value is None:
                    said = (rec.get("parsed") or {}).get("error") if isinstance(rec.get("parsed"), dict) else None
                    why = "%s said: %s" % (self.what, said) if said else "no figure in the output"
                    edge["problems"].append("repeat %s on %s: %s" % (rec.get("repeat") or 1, name, why))
                    continue
                edge["values"].append(float(value))
                for note in self.notes(rec["parsed"]):
                    if note not in edge["notes"]:
                        edge["notes"].append(note)

    def parsed_of(self, record):
        """What :meth:`figure` reads of a record (its ``parsed``; iperf3 marks runs of several processes)."""
        return record["parsed"]

    def notes(self, parsed):
        """Words about a repeat's output worth keeping in the message (none by default)."""
        del parsed
        return []

    def edge_figure(self, edge):
        return vote(edge["values"], self.how, self.higher_is_better)[0]

    def edge_words(self, ends, edge):
        value = self.edge_figure(edge)
        text = "%s->%s " % (_end_words(ends[0]), _end_words(ends[1]))
        if value is None:
            return text + "no figure (%s)" % "; ".join(edge["problems"][:3])
        text += "%s %s%s" % (self.fmt(value), self.unit, repeat_words(edge["values"], self.how, self.fmt))
        if edge["notes"]:
            text += " (%s)" % ", ".join(edge["notes"])
        if edge["problems"]:
            text += " [%s]" % "; ".join(edge["problems"][:3])
        return text

    def infer(self):
        """``(verdict, limits, pairs)``: gather the runs, judge each pair against its threshold, infer the ends.

        Runs without a threshold (no line rate, no profile floor) stay out of ``limits``: their hosts get a SKIP with the figures.
        """
        self.gather()
        limits, pairs = {}, {}
        for ends, edge in self.edges.items():
            if edge["own_fault"]:
                # one side could not run at all (missing binary): that host fails for it; the run says nothing of the link
                continue
            client, server = (self.nodes.get(_host_of(end)) for end in ends)
            limit = self.threshold(client, server)
            if limit is None:
                continue
            limits[ends] = limit
            value = self.edge_figure(edge)
            if value is None:
                # not measured (every repeat failed or said nothing): no evidence that the pair is slow, nor fast
                continue
            fast = value >= limit[0] if self.higher_is_better else value <= limit[0]
            key = _pair(*ends)
            pairs[key] = pairs.get(key, True) and fast
        return infer_ends(pairs), limits, pairs

    def judge(self):
        """``{node: [result]}``."""
        verdict, limits, pairs = self.infer()
        out = {}
        for name in self.nodes:
            out[name] = list(self.own[name]) + self._node_results(name, verdict, limits, pairs)
            if not out[name]:
                out[name] = [result(self.check_id, SKIP, "no %s run recorded with this host" % self.what)]
        return out

    def _limit_words(self, limits, pair_edges):
        values = sorted({limits[ends][:2] for ends in pair_edges if ends in limits}, key=str)
        return "; ".join("%s %s %s (%s)" % ("floor" if self.higher_is_better else "limit", self.fmt(value), self.unit, words)
                         for value, words in values)

    def _node_results(self, name, verdict, limits, pairs):
        mine = sorted((ends for ends in self.edges if name in (_host_of(ends[0]), _host_of(ends[1])) and not self.edges[ends]["own_fault"]), key=str)
        if not mine:
            return []
        out = []
        convicted = [end for end in verdict["convicted"] if _host_of(end) == name]
        for end in convicted:
            pair_edges = [ends for ends in mine if _pair(*ends) in verdict["convicted"][end]]
            figures = [self.edge_figure(self.edges[ends]) for ends in pair_edges]
            worst = self._worst(figures)
            message = "slow %s %s: every %s run with it misses the threshold, against partners that meet it with others: %s; %s" % (
                "rail" if isinstance(end, tuple) else "host", _end_words(end), self.what,
                ", ".join(self.edge_words(ends, self.edges[ends]) for ends in pair_edges), self._limit_words(limits, pair_edges))
            out.append(result(self.check_id, FAIL, message,
                              measured=None if worst is None else round(worst, self.digits), expected=self._expected(limits, pair_edges),
                              threshold_source=self._sources(limits, pair_edges, INFERENCE_SOURCE), subject=_end_words(end)))
        for pair in verdict["links"]:
            if name not in (_host_of(pair[0]), _host_of(pair[1])):
                continue
            pair_edges = [ends for ends in mine if _pair(*ends) == pair]
            worst = self._worst([self.edge_figure(self.edges[ends]) for ends in pair_edges])
            out.append(result(self.check_id, FAIL, "slow link %s<->%s: %s, while both ends meet the threshold with other partners; %s" % (
                _end_words(pair[0]), _end_words(pair[1]), ", ".join(self.edge_words(ends, self.edges[ends]) for ends in pair_edges),
                self._limit_words(limits, pair_edges)), measured=None if worst is None else round(worst, self.digits),
                expected=self._expected(limits, pair_edges), threshold_source=self._sources(limits, pair_edges, INFERENCE_SOURCE),
                subject="%s<->%s" % (_end_words(pair[0]), _end_words(pair[1]))))
        stuck = {}
        for pair in verdict["unresolved"]:
            for end in pair:
                if _host_of(end) == name and end not in verdict["cleared"]:
                    stuck.setdefault(end, []).append(pair)
        for end, unresolved in sorted(stuck.items(), key=lambda item: str(item[0])):
            pair_edges = [ends for ends in mine if _pair(*ends) in unresolved]
            worst = self._worst([self.edge_figure(self.edges[ends]) for ends in pair_edges])
            message = "%s %s not cleared: no %s run with it meets the threshold (%s) and no partner proves which end is slow; %s" % (
                "rail" if isinstance(end, tuple) else "host", _end_words(end), self.what,
                ", ".join(self.edge_words(ends, self.edges[ends]) for ends in pair_edges), self._limit_words(limits, pair_edges))
            out.append(result(self.check_id, FAIL, message,
                              measured=None if worst is None else round(worst, self.digits), expected=self._expected(limits, pair_edges),
                              threshold_source=self._sources(limits, pair_edges, INFERENCE_SOURCE), subject=_end_words(end)))
        if out:
            return out
        judged = [ends for ends in mine if ends in limits]
        if not judged:
            figures = [self.edge_figure(self.edges[ends]) for ends in mine]
            worst = self._worst(figures)
            return [result(self.check_id, SKIP, "%s: %s; no threshold to judge against (%s)" % (
                self.what, ", ".join(self.edge_words(ends, self.edges[ends]) for ends in mine), self.no_threshold_words()),
                measured=None if worst is None else round(worst, self.digits))]
        unmeasured = [ends for ends in judged if self.edge_figure(self.edges[ends]) is None]
        if len(unmeasured) == len(judged):
            return [result(self.check_id, SKIP, "not measured: %s produced no figure with this host: %s" % (
                self.what, ", ".join(self.edge_words(ends, self.edges[ends]) for ends in judged)))]
        partial = [ends for ends in judged if self.edges[ends]["problems"]]
        slow_partner = [ends for ends in judged if not pairs.get(_pair(*ends), True)]
        words = ", ".join(self.edge_words(ends, self.edges[ends]) for ends in judged)
        worst = self._worst([self.edge_figure(self.edges[ends]) for ends in judged])
        if unmeasured:
            status, lead = WARN, "some pairs were not measured (no figure); the others meet the threshold"
        elif partial:
            status, lead = WARN, "some repeats produced no figure; the others meet the threshold"
        else:
            status, lead = PASS, "meets the threshold"
        tail = ""
        if slow_partner:
            tail = "; slow runs with %s are the partner's fault (this end is cleared)" % ", ".join(sorted(
                {_end_words(end) for ends in slow_partner for end in ends if _host_of(end) != name}))
        return [result(self.check_id, status, "%s %s: %s; %s%s" % (self.what, lead, words, self._limit_words(limits, judged), tail),
                       measured=None if worst is None else round(worst, self.digits), expected=self._expected(limits, judged),
                       threshold_source=self._sources(limits, judged))]

    def _worst(self, figures):
        known = [value for value in figures if value is not None]
        if not known:
            return None
        return min(known) if self.higher_is_better else max(known)

    def _expected(self, limits, pair_edges):
        values = [limits[ends][0] for ends in pair_edges if ends in limits]
        if not values:
            return None
        return round(max(values) if self.higher_is_better else min(values), self.digits)

    @staticmethod
    def _sources(limits, pair_edges, *more):
        return "; ".join(sorted({limits[ends][2] for ends in pair_edges if ends in limits}) + list(more)) or None

    def no_threshold_words(self):
        return "no threshold"


class Iperf3Judge(PairJudge):
    """iperf3 alone: median interval of each repeat, voted, against fraction x line rate."""

    check_id = "bench_network.iperf3"
    kind = "iperf3"
    what = "iperf3"
    unit = "Gb/s"

    def figure(self, parsed):
        return iperf3_gbps(parsed)

    def run_error(self, parsed):
        # iperf3 --json reports a failed run in "error" and may still exit 0 with the intervals it had
        return parsed.get("error")

    def parsed_of(self, record):
        return iperf3_parsed(record)

    def threshold(self, client_node, server_node):
        rates = [(rate, source, node) for node in (client_node, server_node) if node is not None for rate, source in [line_rate(node)]
                 if rate is not None]
        if not rates:
            return None
        rate, source, node = min(rates, key=lambda item: item[0])
        fraction = float(_setting(node, "gpufleet_iperf3_floor_fraction", IPERF3_FLOOR_FRACTION))
        why = IPERF3_FLOOR_SOURCE if "gpufleet_iperf3_floor_fraction" not in node.settings else "gpufleet_iperf3_floor_fraction %s" % num(fraction)
        words = "%s x %s" % (num(fraction), source)
        return round(fraction * rate, 6), words, "%s; %s" % (words, why)

    def no_threshold_words(self):
        return "claim an ethernet NIC or set gpufleet_iperf3_line_rate_gbps"


@fleet_check("bench_network.iperf3")
def check_iperf3(nodes):
    """iperf3 alone over the ring: a host slow with two partners (or a slow link) fails, naming the runs and the floor."""
    return Iperf3Judge(nodes).judge()


# --- iperf3 concurrent ------------------------------------------------------------------------


def _suspect(record, slow_hosts, slow_links):
    """The slow host or link (bench_network.iperf3's inference) a run involves, or None."""
    hosts = [str(host) for host in record.get("hosts") or []]
    for host in hosts:
        if host in slow_hosts:
            return "slow host %s" % host
    if len(hosts) == 2 and _pair(hosts[0], hosts[1]) in slow_links:
        return "slow link %s<->%s" % _pair(hosts[0], hosts[1])
    return None


def _voted_iperf3(recs, how):
    values = [iperf3_gbps(iperf3_parsed(rec)) for rec in recs
              if rec.get("outcome") in (None, "ok") and isinstance(rec.get("parsed"), dict)
              and not rec["parsed"].get("error")]
    values = [value for value in values if value is not None]
    return values, vote(values, how)[0]


def _alone_by_host(nodes, how, slow_hosts, slow_links):
    """``{host: figure}``: the vote over every alone run the host was in (client or server), slow hosts' and links' runs left out."""
    runs = {}
    for node in nodes:
        for rec in records(node, "iperf3"):
            if str(rec.get("name") or "").endswith("server") or _suspect(rec, slow_hosts, slow_links):
                continue
            for host in dict.fromkeys(str(item) for item in rec.get("hosts") or []):
                runs.setdefault(host, []).append(rec)
    return {host: _voted_iperf3(recs, how)[1] for host, recs in runs.items()}


def _concurrent(node, how, alone, slow_hosts=(), slow_links=()):
    """``[(group, ratio|None, words, problem_records, suspect)]`` of the node's concurrent runs against ``alone``.

    ``alone`` is the node's alone figure (:func:`_alone_by_host`). Runs with a host or over a link bench_network.iperf3
    found slow are left out (``suspect`` names it): their ratio would be the slow host's, not the uplink's.
    """
    groups = {}
    for rec in records(node, "iperf3_concurrent"):
        if rec.get("outcome") == "skipped" or str(rec.get("name") or "").endswith("server"):
            continue
        groups.setdefault((rec.get("group") or "(no rack label)", tuple(rec.get("hosts") or [])), []).append(rec)
    out = []
    for (group, hosts), recs in sorted(groups.items(), key=lambda item: str(item[0])):
        suspect = _suspect(recs[0], slow_hosts, slow_links)
        if suspect:
            out.append((group, None, "%s %s->%s" % (group, hosts[0] if hosts else "?", hosts[1] if len(hosts) > 1 else "?"), [], suspect))
            continue
        values, concurrent = _voted_iperf3(recs, how)
        problems = [rec for rec in recs if rec.get("outcome") not in (None, "ok")]
        ratio = None if concurrent is None or not alone else concurrent / alone
        words = "%s %s->%s concurrent %s Gb/s%s vs alone %s Gb/s" % (
            group, hosts[0] if hosts else "?", hosts[1] if len(hosts) > 1 else "?", "none" if concurrent is None else num(round(concurrent, 3)),
            repeat_words(values, how, lambda v: num(round(v, 3))), "none" if not alone else num(round(alone, 3)))
        out.append((group, ratio, words, problems, None))
    return out


@fleet_check("bench_network.iperf3_uplink")
def check_iperf3_uplink(nodes):
    """Concurrent / alone per rack pair: a group median below the ratio fails every node of the group."""
    check_id = "bench_network.iperf3_uplink"
    how = _how(nodes)
    verdict = Iperf3Judge(nodes).infer()[0]
    slow_hosts = {_host_of(end) for end in verdict["convicted"]}
    slow_links = set(verdict["links"])
    alone = _alone_by_host(nodes, how, slow_hosts, slow_links)
    per_node = {node.name: _concurrent(node, how, alone.get(node.name), slow_hosts, slow_links) for node in nodes}
    minimum = {node.name: float(_setting(node, "gpufleet_iperf3_concurrent_ratio_min", CONCURRENT_RATIO_MIN)) for node in nodes}
    groups = {}
    for items in per_node.values():
        for group, ratio, _words, _problems, _suspect_of in items:
            if ratio is not None:
                groups.setdefault(group, []).append(ratio)
    group_median = {group: statistics.median(values) for group, values in groups.items()}
    out = {}
    for node in nodes:
        skipped = [rec for rec in records(node, "iperf3_concurrent") if rec.get("outcome") == "skipped"]
        results = [result(check_id, SKIP, "concurrent iperf3 not run: %s" % (rec.get("reason") or "skipped"), subject=_label(rec)) for rec in skipped]
        items = per_node[node.name]
        if not items and not results:
            out[node.name] = [result(check_id, SKIP, "no concurrent iperf3 run recorded for this node")]
            continue
        for group, ratio, words, problems, suspect in items:
            racks = " and ".join("rack %s" % part for part in group.split("<->"))
            if suspect:
                results.append(result(check_id, SKIP, "%s: not judged, the run involves a %s (bench_network.iperf3)" % (words, suspect), subject=group))
                continue
            own = [rec for rec in problems if rec.get("outcome") in OWN_FAULTS]
            for rec in own:
                results.append(result(check_id, FAIL, "%s did not run on %s: %s" % (_label(rec), node.name, _outcome_words(rec)), measured=rec.get("outcome"),
                                      subject=group))
            if ratio is None:
                why = ("; ".join("repeat %s: %s" % (rec.get("repeat") or 1, _outcome_words(rec)) for rec in problems)
                       or "no alone iperf3 run with this node to compare with")
                results.append(result(check_id, ERROR, "%s: not measured (%s)" % (words, why), subject=group))
                continue
            floor = minimum[node.name]
            source = CONCURRENT_SOURCE if node.settings.get("gpufleet_iperf3_concurrent_ratio_min") is None else (
                "gpufleet_iperf3_concurrent_ratio_min %s" % num(floor))
            gmed = group_median.get(group)
            text = "%s: concurrent/alone %.2f for this node, %.2f median over %s" % (words, ratio, gmed, racks)
            if gmed is not None and gmed < floor:
                results.append(result(check_id, FAIL, "uplink between %s oversold: %s (< %s)" % (racks, text, num(floor)),
                                      measured=round(gmed, 3), expected=floor, threshold_source=source, subject=group))
            elif ratio < floor:
                results.append(result(check_id, WARN, "%s; this node alone below %s" % (text, num(floor)),
                                      measured=round(ratio, 3), expected=floor, threshold_source=source, subject=group))
            else:
                results.append(result(check_id, PASS, text, measured=round(ratio, 3), expected=floor, threshold_source=source,
                                      subject=group))
        out[node.name] = results
    return out


# --- perftest ---------------------------------------------------------------------------------


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


def _rail_ends(record):
    """``((client host, client HCA), (server host, server HCA))`` from ``hosts`` and ``group`` ``"mlx5_0->mlx5_1"``."""
    hosts = record.get("hosts") or []
    if len(hosts) != 2:
        return None
    group = str(record.get("group") or "")
    if "->" in group:
        client_hca, server_hca = group.split("->", 1)
    else:
        client_hca = server_hca = str(record.get("name") or "").split()[-1] if len(str(record.get("name") or "").split()) > 1 else "?"
    return (str(hosts[0]), client_hca), (str(hosts[1]), server_hca)


class IbWriteBwJudge(PairJudge):
    """ib_write_bw per rail pair: BW average at the threshold's size against ``thresholds.ib_write_bw``."""

    check_id = "bench_network.ib_write_bw"
    kind = "ib_write_bw"
    what = "ib_write_bw"
    unit = "Gb/s"
    digits = 2

    def __init__(self, nodes):
        super().__init__(nodes)
        # the size the profiles name (a profile without the threshold names none); several: none of them is judged,
        # and every message says so
        sizes = {(profile_value(node.profile, "thresholds.ib_write_bw")[0] or {}).get("message_size") for node in nodes}
        self.mixed_sizes = sorted(size for size in sizes if size is not None)
        self.size = self.mixed_sizes.pop() if len(self.mixed_sizes) == 1 else None

    def ends(self, record):
        return _rail_ends(record)

    def figure(self, parsed):
        row, _exact = bw_row(parsed, self.size)
        return None if row is None else float(row["bw_avg_gbps"])

    def notes(self, parsed):
        row, exact = bw_row(parsed, self.size)
        out = []
        if row is not None and self.mixed_sizes:
            sizes = ", ".join(num(size) for size in self.mixed_sizes)
            out.append("at %s bytes, the largest size printed; the profiles' thresholds.ib_write_bw.message_size "
                       "differ (%s bytes), so none was applied" % (num(row.get("bytes")), sizes))
        elif row is not None:
            missing = ", the largest size printed; thresholds.ib_write_bw.message_size %s bytes is not in the output"
            out.append("at %s bytes%s" % (num(row.get("bytes")), "" if exact else missing % num(self.size)))
        if parsed.get("gpu_direct"):
            out.append("GPUDirect")
        return out

    def threshold(self, client_node, server_node):
        found = [(node, profile_value(node.profile, "thresholds.ib_write_bw")[0])
                 for node in (client_node, server_node) if node is not None]
        found = [(node, item) for node, item in found if item]
        if not found:
            return None
        node, item = min(found, key=lambda pair: pair[1]["floor"])
        words = "profile %s thresholds.ib_write_bw" % (node.profile or {}).get("name")
        return float(item["floor"]), words, "%s: %s" % (words, item.get("source") or "no source given")

    def no_threshold_words(self):
        return "the profile has no thresholds.ib_write_bw"


class IbWriteLatJudge(PairJudge):
    """ib_write_lat per rail pair: typical latency of the smallest size against gpufleet_ib_write_lat_max_us (5 us)."""

    check_id = "bench_network.ib_write_lat"
    kind = "ib_write_lat"
    what = "ib_write_lat"
    unit = "us"
    digits = 2
    higher_is_better = False

    def ends(self, record):
        return _rail_ends(record)

    def figure(self, parsed):
        rows = [row for row in parsed.get("results") or [] if isinstance(row.get("t_typical_us"), (int, float))]
        if not rows:
            return None
        return float(min(rows, key=lambda item: item.get("bytes") or 0)["t_typical_us"])

    def threshold(self, client_node, server_node):
        limits = []
        for node in (client_node, server_node):
            if node is None:
                continue
            if "gpufleet_ib_write_lat_max_us" in node.settings and node.settings["gpufleet_ib_write_lat_max_us"] is not None:
                limits.append((float(node.settings["gpufleet_ib_write_lat_max_us"]), "gpufleet_ib_write_lat_max_us", "gpufleet_ib_write_lat_max_us"))
            else:
                limits.append((IB_LAT_MAX_US, "docs/baselines.md 4", IB_LAT_SOURCE))
        return (min(limits, key=lambda item: item[0]) if limits
                else (IB_LAT_MAX_US, "docs/baselines.md 4", IB_LAT_SOURCE))


@fleet_check("bench_network.ib_write_bw")
def check_ib_write_bw(nodes):
    """ib_write_bw per compute-rail HCA pair over the ring: a slow rail (two partners) or link fails, naming the HCA."""
    return IbWriteBwJudge(nodes).judge()


@fleet_check("bench_network.ib_write_lat")
def check_ib_write_lat(nodes):
    """ib_write_lat per compute-rail HCA pair over the ring: typical latency above the limit with two partners fails the rail."""
    return IbWriteLatJudge(nodes).judge()


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


def _nvbandwidth_repeats(runs):
    """``({testcase: {"cells": {(row, col): [GB/s per repeat]}, "testcase": last}}, problems)``."""
    testcases, problems = {}, []
    for rec in runs:
        for testcase in rec["parsed"].get("testcases") or []:
            name = str(testcase.get("name") or "")
            entry = testcases.setdefault(name, {"cells": {}, "testcase": testcase, "status": []})
            entry["status"].append(testcase.get("status"))
            if testcase.get("status") != "ok":
                problems.append((name, testcase))
                continue
            entry["testcase"] = testcase
            for row, column, value in copy_cells(testcase):
                entry["cells"].setdefault((row, column), []).append(value)
    return testcases, problems


@node_check("bench_network.nvbandwidth")
def check_nvbandwidth(node):
    """H2D / D2H / D2D copy bandwidth of every GPU (pair) against h2d/d2h/p2p_bandwidth floors; repeats vote per copy."""
    check_id = "bench_network.nvbandwidth"
    runs = records(node, "nvbandwidth")
    if not runs:
        return [result(check_id, SKIP, "no nvbandwidth run recorded for this node")]
    how = _how([node])
    out = []
    measured = []
    for rec in runs:
        if rec.get("outcome") == "skipped":
            out.append(result(check_id, SKIP, "nvbandwidth not run: %s" % (rec.get("reason") or "skipped"), subject=_label(rec)))
        elif rec.get("outcome") not in (None, "ok"):
            out.append(result(check_id, FAIL, "%s did not complete: %s" % (_label(rec), _outcome_words(rec)), measured=rec.get("outcome"),
                              subject="%s repeat %s" % (_label(rec), rec.get("repeat") or 1)))
        elif not isinstance(rec.get("parsed"), dict):
            out.append(result(check_id, ERROR, "%s repeat %s has no parsed output to judge" % (_label(rec), rec.get("repeat") or 1), subject=_label(rec)))
        else:
            measured.append(rec)
    testcases, problems = _nvbandwidth_repeats(measured)
    for name, testcase in problems:
        subject = "nvbandwidth %s" % name
        out.append(result(check_id, ERROR if testcase.get("status") == "error" else SKIP,
                          "%s: %s (%s)" % (subject, testcase.get("status"), testcase.get("message")), subject=subject))
    for name, entry in sorted(testcases.items()):
        key = next((threshold for prefix, threshold in NVBANDWIDTH_THRESHOLDS if name.startswith(prefix)), None)
        subject = "nvbandwidth %s" % name
        cells = [(row, col, vote(values, how)[0], values) for (row, col), values in entry["cells"].items()]
        if key is None or not cells:
            continue
        lowest = min(cells, key=lambda cell: cell[2])
        spread = repeat_words(lowest[3], how)
        threshold = profile_value(node.profile, "thresholds." + key)[0]
        if not threshold:
            out.append(result(check_id, SKIP, "%s: lowest %s->%s %s GB/s%s; profile %s has no thresholds.%s" % (
                subject, lowest[0], lowest[1], num(lowest[2]), spread, (node.profile or {}).get("name"), key), measured=lowest[2], subject=subject))
            continue
        floor = threshold["floor"]
        below = [cell for cell in cells if cell[2] < floor]
        if below:
            named = ", ".join("%s->%s %s" % (row, col, num(value)) for row, col, value, _values in sorted(below, key=lambda c: c[2])[:8])
            more = " ..." if len(below) > 8 else ""
            message = "%s: %d of %d copies below %s GB/s (%s): %s%s; lowest%s" % (
                subject, len(below), len(cells), num(floor), entry["testcase"].get("description"), named, more, spread or " of 1 run")
            status = FAIL
        else:
            message = "%s: all %d copies >= %s GB/s; lowest %s->%s %s GB/s%s" % (subject, len(cells), num(floor), lowest[0], lowest[1],
                                                                                 num(lowest[2]), spread)
            status = WARN if threshold.get("warn_below") is not None and lowest[2] < threshold["warn_below"] else PASS
        out.append(result(check_id, status, message, measured=lowest[2], expected=floor, threshold_source=threshold.get("source"), subject=subject))
    return out or [result(check_id, SKIP, "nvbandwidth ran no testcase with a copy matrix")]


# --- IB port counters -------------------------------------------------------------------------


def counter_growth(before, after, names=None):
    """``[(port, counter, before, after)]`` of counters (default the IB error counters) that grew (``{port: {counter: int}}``)."""
    names = sorted(COUNTER_MAX) if names is None else sorted(names)
    grown = []
    for port in sorted(after or {}):
        for counter in names:
            old = ((before or {}).get(port) or {}).get(counter)
            new = (after[port] or {}).get(counter)
            if isinstance(old, int) and isinstance(new, int) and new > old:
                grown.append((port, counter, old, new))
    return grown


@node_check("bench_network.ib_counters")
def check_ib_counters(node):
    """IB port error counters read before and after each network benchmark: growth fails naming the port.

    A saturated error counter (at its PortCounters width) cannot show growth: it warns (the facts check
    network.ib_port_errors fails it); growth of an mlx5 transport-error hw_counter warns.
    """
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
        if grown:
            ports = sorted({item[0] for item in grown})
            out.append(result(check_id, FAIL, "error counters grew during %s on port %s: %s" % (
                around, ", ".join(ports), "; ".join("%s %s %d -> %d" % item for item in grown)),
                measured=sum(item[3] - item[2] for item in grown), expected=0,
                threshold_source=COUNTER_SOURCE, subject=", ".join(ports)))
        hw_grown = counter_growth(parsed.get("hw_before"), parsed.get("hw_after"), HW_ERROR_COUNTERS)
        if hw_grown:
            ports = sorted({item[0] for item in hw_grown})
            out.append(result(check_id, WARN, "transport error hw_counters grew during %s on port %s: %s" % (
                around, ", ".join(ports), "; ".join("%s %s %d -> %d" % item for item in hw_grown)), measured=len(hw_grown), expected=0,
                threshold_source=HW_COUNTER_SOURCE, subject=", ".join(ports)))
        saturated = [(port, counter) for port, counters in sorted(parsed["after"].items()) for counter, value in sorted((counters or {}).items())
                     if counter in COUNTER_MAX and value == COUNTER_MAX[counter]]
        if saturated:
            out.append(result(check_id, WARN, "counters around %s: %s saturated, their growth cannot be seen (network.ib_port_errors judges them)" % (
                around, ", ".join("%s %s" % item for item in saturated)), measured=len(saturated), expected=0, threshold_source=COUNTER_SOURCE,
                subject=", ".join(sorted({port for port, _counter in saturated}))))
        if not grown:
            out.append(result(check_id, PASS, "no IB error counter grew during %s (%d ports)" % (around, len(parsed["after"])),
                              measured=0, expected=0, threshold_source=COUNTER_SOURCE, subject=around))
    return out
