# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The records of the network and GPU-bandwidth benchmarks (pure): selecting them, voting repeats, reading figures.

Reads the node's benchmark records (``node.settings["benchmarks"]``, the host record's ``benchmarks`` list:
docs/results-schema.md) that ``playbooks/benchmark_tasks/*.yml`` wrote. A record is recognised by its ``kind``
(``iperf3``, ``iperf3_concurrent``, ``ib_write_bw``, ``ib_write_lat``, ``nvbandwidth``, ``ib_counters``), else by its
name's first word (checks/bench_records.py :func:`benchmark_kind`).

Repeats vote (:func:`vote`): the figures of the repeats of one run are reduced to their median
(``gpufleet_benchmark_vote: best`` takes the best instead). iperf3 is judged on its per-second intervals after the
omitted warm-up (``-O``; a capture without omitted intervals loses its first interval: the slow-start / token-bucket
burst), not on the end summary: a repeat's figure is its median interval (:func:`iperf3_gbps`).
"""

from __future__ import annotations

import statistics
from typing import Any, Iterable, Optional, Sequence, Union

from gpufleet.checks.bench_records import Record, benchmark_kind
from gpufleet.checks.model import NodeContext

BENCHMARKS = "benchmarks"
VOTE_SETTING = "gpufleet_benchmark_vote"

KINDS = ("iperf3", "iperf3_concurrent", "ib_write_bw", "ib_write_lat", "nvbandwidth", "ib_counters")
# Outcomes that are the fault of the host that ran the command, whoever its partner was.
OWN_FAULTS = ("missing_binary",)

# One end of a pair run: a host, or a (host, HCA) rail
End = Union[str, tuple[str, str]]
# The (client, server) ends of a directed run; undirected (checks/bench_pair_judge.py pair_of), the ends of a pair
Ends = tuple[End, End]


def records(node: NodeContext, *kinds: str) -> list[Record]:
    """The node's benchmark records of the given kinds, in order."""
    return [rec for rec in node.settings.get(BENCHMARKS) or []
            if isinstance(rec, dict) and benchmark_kind(rec) in kinds]


def setting_of(node: NodeContext, name: str, default: Any) -> Any:
    """The node's setting ``name``, ``default`` when unset (None)."""
    value = node.settings.get(name)
    return default if value is None else value


def parsed_or_empty(record: Record) -> dict[str, Any]:
    """The record's ``parsed`` output, ``{}`` when it has none."""
    parsed = record.get("parsed")
    return parsed if isinstance(parsed, dict) else {}


def outcome_words(record: Record) -> str:
    """``missing_binary (iperf3 not found)``: a run's outcome and its reason."""
    why = (" (%s)" % record["reason"]) if record.get("reason") else ""
    return "%s%s" % (record.get("outcome"), why)


def record_label(record: Record) -> str:
    """``iperf3 a->b (a -> b) round 2``: the run's name, its client and server, its round."""
    hosts = record.get("hosts") or []
    text = str(record.get("name") or benchmark_kind(record))
    if len(hosts) == 2:
        text += " (%s -> %s)" % (hosts[0], hosts[1])
    if record.get("round") is not None:
        text += " round %s" % record["round"]
    return text


# --- repeats ----------------------------------------------------------------------------------


def vote(values: Sequence[float], how: str = "median",
         higher_is_better: bool = True) -> tuple[Optional[float], Optional[float], Optional[float]]:
    """``(judged, low, high)`` of the repeats' figures: the median, or the best with ``how="best"``."""
    if not values:
        return None, None, None
    return voted(values, how, higher_is_better), min(values), max(values)


def voted(values: Sequence[float], how: str = "median", higher_is_better: bool = True) -> float:
    """The judged figure of one or more repeats: their median, or the best with ``how="best"``."""
    if how == "best":
        return max(values) if higher_is_better else min(values)
    return statistics.median(values)


def vote_of(nodes: Iterable[NodeContext]) -> str:
    """How repeats vote: the first node's ``gpufleet_benchmark_vote`` that is set, else ``median``."""
    for node in nodes:
        value = node.settings.get(VOTE_SETTING)
        if value:
            return str(value)
    return "median"


# --- iperf3 figures ---------------------------------------------------------------------------


def summed_intervals(parsed: dict[str, Any]) -> list[dict[str, Any]]:
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


def iperf3_parsed(record: Record) -> dict[str, Any]:
    """The record's ``parsed``, marked ``parallel_processes: N`` when its run was N one-stream processes at once."""
    parsed = parsed_or_empty(record)
    parallel = str((record.get("environment") or {}).get("GPUFLEET_IPERF3_PARALLEL") or "")
    mode, _sep, count = parallel.partition(":")
    if mode == "processes" and count.isdigit() and int(count) > 1:
        return dict(parsed, parallel_processes=int(count))
    return parsed


def judged_intervals(parsed: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """``(intervals, dropped)``: the intervals judged (``-O`` omitted ones dropped; without any, the first)."""
    intervals = [item for item in summed_intervals(parsed) if isinstance(item.get("bps"), (int, float))]
    kept = [item for item in intervals if not item.get("omitted")]
    if len(kept) == len(intervals) and kept:
        return kept[1:], 1
    return kept, len(intervals) - len(kept)


def interval_stats(parsed: dict[str, Any]) -> dict[str, Any]:
    """``{median_bps, min_bps, count, dropped}`` of the judged intervals (None figures without any)."""
    kept, dropped = judged_intervals(parsed)
    values = [float(item["bps"]) for item in kept]
    return {"median_bps": statistics.median(values) if values else None, "min_bps": min(values) if values else None,
            "count": len(values), "dropped": dropped}


def iperf3_gbps(parsed: dict[str, Any]) -> Optional[float]:
    """A repeat's figure: the median judged interval in Gb/s (None without one)."""
    median: Optional[float] = interval_stats(parsed)["median_bps"]
    return None if median is None else median / 1e9


# --- perftest ---------------------------------------------------------------------------------


def bw_row(parsed: dict[str, Any], size: Optional[int] = None) -> tuple[Optional[dict[str, Any]], bool]:
    """``(row, exact)``: the results row of ``size`` bytes, else the largest message size."""
    rows = [row for row in parsed.get("results") or [] if isinstance(row.get("bw_avg_gbps"), (int, float))]
    if not rows:
        return None, False
    if size is not None:
        for row in rows:
            if row.get("bytes") == size:
                return row, True
    return max(rows, key=lambda row: row.get("bytes") or 0), size is None


def rail_ends(record: Record) -> Optional[Ends]:
    """``((client host, client HCA), (server host, server HCA))`` from ``hosts`` and ``group`` ``"mlx5_0->mlx5_1"``."""
    hosts = record.get("hosts") or []
    if len(hosts) != 2:
        return None
    group = str(record.get("group") or "")
    if "->" in group:
        client_hca, server_hca = group.split("->", 1)
    else:
        name_words = str(record.get("name") or "").split()
        client_hca = server_hca = name_words[-1] if len(name_words) > 1 else "?"
    return (str(hosts[0]), client_hca), (str(hosts[1]), server_hca)
