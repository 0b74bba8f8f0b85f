# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Concurrent iperf3 against iperf3 alone, per rack pair (pure): the steps of ``bench_network.iperf3_uplink``.

Every concurrent run of a node is compared with the node's alone figure (the vote over every alone run it was in,
client or server); a group's (rack pair's) median ratio below the minimum fails every node of the group: its uplink
is oversold. Runs with a host or over a link that ``bench_network.iperf3`` found slow are left out: their ratio would
be the slow host's, not the uplink's.
"""

from __future__ import annotations

import statistics
from typing import Collection, Iterable, Mapping, NamedTuple, Optional, Sequence

from gpufleet.checks.bench_net_floors import concurrent_ratio_min
from gpufleet.checks.bench_net_records import (OWN_FAULTS, Ends, iperf3_gbps, iperf3_parsed, outcome_words,
                                               record_label, records, vote)
from gpufleet.checks.bench_pair_judge import EndsVerdict, host_of, pair_of
from gpufleet.checks.bench_records import Record
from gpufleet.checks.bench_words import repeat_words
from gpufleet.checks.model import ERROR, FAIL, PASS, SKIP, WARN, CheckResult, NodeContext, result
from gpufleet.checks.network import num

UPLINK_CHECK = "bench_network.iperf3_uplink"


class Suspects(NamedTuple):
    """The hosts and links ``bench_network.iperf3`` convicted: runs with them say nothing of an uplink."""

    hosts: Collection[str]
    links: Collection[Ends]

    @classmethod
    def of(cls, verdict: EndsVerdict) -> Suspects:
        return cls({host_of(end) for end in verdict["convicted"]}, set(verdict["links"]))


class ConcurrentRun(NamedTuple):
    """One concurrent run of a node (its repeats voted) against the node's alone figure."""

    group: str
    ratio: Optional[float]
    words: str
    problems: list[Record]
    suspect: Optional[str]


def _suspect(record: Record, suspects: Suspects) -> Optional[str]:
    """The slow host or link (bench_network.iperf3's inference) a run involves, or None."""
    hosts = [str(host) for host in record.get("hosts") or []]
    for host in hosts:
        if host in suspects.hosts:
            return "slow host %s" % host
    if len(hosts) == 2 and pair_of(hosts[0], hosts[1]) in suspects.links:
        return "slow link %s<->%s" % pair_of(hosts[0], hosts[1])
    return None


def _voted_iperf3(recs: Iterable[Record], how: str) -> tuple[list[float], Optional[float]]:
    figures = [iperf3_gbps(iperf3_parsed(rec)) for rec in recs
               if rec.get("outcome") in (None, "ok") and isinstance(rec.get("parsed"), dict)
               and not rec["parsed"].get("error")]
    values = [value for value in figures if value is not None]
    return values, vote(values, how)[0]


def alone_by_host(nodes: Iterable[NodeContext], how: str, suspects: Suspects) -> dict[str, Optional[float]]:
    """``{host: figure}``: the vote over every alone run the host was in (client or server), slow hosts' and links'
    runs left out."""
    runs: dict[str, list[Record]] = {}
    for node in nodes:
        for rec in records(node, "iperf3"):
            if str(rec.get("name") or "").endswith("server") or _suspect(rec, suspects):
                continue
            for host in dict.fromkeys(str(item) for item in rec.get("hosts") or []):
                runs.setdefault(host, []).append(rec)
    return {host: _voted_iperf3(recs, how)[1] for host, recs in runs.items()}


def concurrent_runs(node: NodeContext, how: str, alone: Optional[float], suspects: Suspects) -> list[ConcurrentRun]:
    """The node's concurrent runs against ``alone``, its alone figure (:func:`alone_by_host`).

    Runs with a host or over a link bench_network.iperf3 found slow are left out (``suspect`` names it).
    """
    groups: dict[tuple[str, tuple[str, ...]], list[Record]] = {}
    for rec in records(node, "iperf3_concurrent"):
        if rec.get("outcome") == "skipped" or str(rec.get("name") or "").endswith("server"):
            continue
        groups.setdefault((rec.get("group") or "(no rack label)", tuple(rec.get("hosts") or [])), []).append(rec)
    out = []
    for (group, hosts), recs in sorted(groups.items(), key=lambda item: str(item[0])):
        direction = "%s %s->%s" % (group, hosts[0] if hosts else "?", hosts[1] if len(hosts) > 1 else "?")
        suspect = _suspect(recs[0], suspects)
        if suspect:
            out.append(ConcurrentRun(group, None, direction, [], suspect))
            continue
        values, concurrent = _voted_iperf3(recs, how)
        problems = [rec for rec in recs if rec.get("outcome") not in (None, "ok")]
        ratio = None if concurrent is None or not alone else concurrent / alone
        words = "%s concurrent %s Gb/s%s vs alone %s Gb/s" % (
            direction, "none" if concurrent is None else num(round(concurrent, 3)),
            repeat_words(values, how, lambda v: num(round(v, 3))), "none" if not alone else num(round(alone, 3)))
        out.append(ConcurrentRun(group, ratio, words, problems, None))
    return out


def group_medians(per_node: Iterable[Sequence[ConcurrentRun]]) -> dict[str, float]:
    """``{group: median ratio}`` over every node's measured concurrent runs of the group."""
    groups: dict[str, list[float]] = {}
    for runs in per_node:
        for run in runs:
            if run.ratio is not None:
                groups.setdefault(run.group, []).append(run.ratio)
    return {group: statistics.median(values) for group, values in groups.items()}


def uplink_results(node: NodeContext, runs: Sequence[ConcurrentRun], group_median: Mapping[str, float],
                   minimum: tuple[float, str]) -> list[CheckResult]:
    """The node's results: its skipped runs, then each concurrent run against the minimum ratio."""
    skipped = [rec for rec in records(node, "iperf3_concurrent") if rec.get("outcome") == "skipped"]
    results = [result(UPLINK_CHECK, SKIP, "concurrent iperf3 not run: %s" % (rec.get("reason") or "skipped"),
                      subject=record_label(rec)) for rec in skipped]
    if not runs and not results:
        return [result(UPLINK_CHECK, SKIP, "no concurrent iperf3 run recorded for this node")]
    for run in runs:
        results += _run_results(node, run, group_median, minimum)
    return results


def _run_results(node: NodeContext, run: ConcurrentRun, group_median: Mapping[str, float],
                 minimum: tuple[float, str]) -> list[CheckResult]:
    """One concurrent run: not judged (a suspect), a missing tool, not measured, or its ratio."""
    if run.suspect:
        return [result(UPLINK_CHECK, SKIP, "%s: not judged, the run involves a %s (bench_network.iperf3)" % (
            run.words, run.suspect), subject=run.group)]
    out = [result(UPLINK_CHECK, FAIL, "%s did not run on %s: %s" % (record_label(rec), node.name, outcome_words(rec)),
                  measured=rec.get("outcome"), subject=run.group)
           for rec in run.problems if rec.get("outcome") in OWN_FAULTS]
    if run.ratio is None:
        why = ("; ".join("repeat %s: %s" % (rec.get("repeat") or 1, outcome_words(rec)) for rec in run.problems)
               or "no alone iperf3 run with this node to compare with")
        return out + [result(UPLINK_CHECK, ERROR, "%s: not measured (%s)" % (run.words, why), subject=run.group)]
    # the run's own ratio is one of its group's: the group has a median
    return out + [_ratio_result(run, run.ratio, group_median[run.group], minimum)]


def _ratio_result(run: ConcurrentRun, ratio: float, gmed: float, minimum: tuple[float, str]) -> CheckResult:
    """The group's median below the minimum fails (the uplink is oversold); this node's ratio alone below it warns."""
    floor, source = minimum
    racks = " and ".join("rack %s" % part for part in run.group.split("<->"))
    text = "%s: concurrent/alone %.2f for this node, %.2f median over %s" % (run.words, ratio, gmed, racks)
    if gmed < floor:
        return result(UPLINK_CHECK, FAIL, "uplink between %s oversold: %s (< %s)" % (racks, text, num(floor)),
                      measured=round(gmed, 3), expected=floor, threshold_source=source, subject=run.group)
    if ratio < floor:
        return result(UPLINK_CHECK, WARN, "%s; this node alone below %s" % (text, num(floor)),
                      measured=round(ratio, 3), expected=floor, threshold_source=source, subject=run.group)
    return result(UPLINK_CHECK, PASS, text, measured=round(ratio, 3), expected=floor, threshold_source=source,
                  subject=run.group)


def minimum_ratios(nodes: Iterable[NodeContext]) -> dict[str, tuple[float, str]]:
    """``{node: (minimum concurrent/alone ratio, source)}``, read for every node before any is judged."""
    return {node.name: concurrent_ratio_min(node) for node in nodes}
