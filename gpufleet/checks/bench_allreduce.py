# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The steps of the all-reduce checks of checks/benchmarks.py (pure): each builds the results of one part of a check.

The checks themselves stay in checks/benchmarks.py (the engine runs a family's checks by the module that declares
them); their docstrings there say what each judges. Here: the single-node figure and its band
(:func:`read_single`, :func:`single_result`), ``#wrong`` (:func:`corrupt_result`), NCCL_ALGO and NVLS
(:func:`algo_result`), one multi-node run on each of its hosts (:func:`multi_run_results`) and the node single-node
figure the fleet compares (:func:`single_node_figure`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from gpufleet.checks.bench_floors import HostFloor, implausible_busbw, left_out_of_rdma, multi_node_floor, profile_size
from gpufleet.checks.bench_records import (NOT_RUN_OUTCOMES, VOTE_SETTING, Record, active_rdma_ports, benchmark_kind,
                                           busbw_at, fell_back, figure_problem, hosts_of, largest_size, not_run,
                                           parsed_of, ranks_problem, records_of, run_problem, vote, voted)
from gpufleet.checks.bench_words import floors_words, launch_words, repeat_words, size_reason, size_words
from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, CheckResult, NodeContext, result
from gpufleet.checks.network import num

SINGLE_CHECK = "benchmarks.allreduce_single"
WRONG_CHECK = "benchmarks.allreduce_wrong"
ALGO_CHECK = "benchmarks.allreduce_algo"
MULTI_CHECK = "benchmarks.allreduce_multi"

# --- single node ---------------------------------------------------------------------------------


def problem_results(records: Sequence[Record]) -> list[CheckResult]:
    """A run that never started is SKIP (not verified), one that did not finish (or whose table is cut) FAILS."""
    return [result(SINGLE_CHECK, SKIP if not_run(record) else FAIL, not_run(record) or problem,
                   subject=record.get("name"))
            for record in records for problem in [figure_problem(record)] if problem]


def rank_problems(node: NodeContext, records: Sequence[Record]) -> dict[str, list[Record]]:
    """``{why: [run, ...]}``: the finished runs over fewer (or more) ranks than the node's GPUs, by problem."""
    bad_ranks: dict[str, list[Record]] = {}
    for record in records:
        problem = None if figure_problem(record) else ranks_problem(node, record)
        if problem:
            bad_ranks.setdefault(problem, []).append(record)
    return bad_ranks


def rank_results(bad_ranks: Mapping[str, list[Record]], gpus: Optional[int],
                 gpus_from: Optional[str]) -> list[CheckResult]:
    """One FAIL per rank problem, naming how many runs had it."""
    return [result(SINGLE_CHECK, FAIL, "%s%s" % (problem, " (%d runs)" % len(bad) if len(bad) > 1 else ""),
                   measured=parsed_of(bad[0]).get("ranks"), expected=gpus,
                   threshold_source="the node's GPU count (%s)" % (gpus_from or "unknown"), subject=bad[0].get("name"))
            for problem, bad in bad_ranks.items()]


@dataclass
class SingleFigures:
    """What the whole-node single-node runs read: their busbw figures and sizes, ranks, launches, absurd figures."""

    figures: list[float] = field(default_factory=list)
    sizes: set[Optional[int]] = field(default_factory=set)
    ranks_seen: set[Any] = field(default_factory=set)
    launches: set[str] = field(default_factory=set)
    implausible: list[CheckResult] = field(default_factory=list)


def read_single(node: NodeContext, records: Sequence[Record], wanted: Optional[int]) -> SingleFigures:
    """The busbw of each run at the ``wanted`` size (else its largest); a figure above the GPU links' ceiling is
    never a figure (:func:`implausible_busbw` FAILS it)."""
    read = SingleFigures()
    for record in records:
        read.ranks_seen.add(parsed_of(record).get("ranks"))
        read.launches.add(launch_words(record))
        value, size = busbw_at(parsed_of(record), wanted)
        absurd = implausible_busbw(node, record, value)
        if absurd:
            read.implausible.append(absurd)
        elif value is not None:
            read.figures.append(value)
            read.sizes.add(size)
    return read


def no_busbw_result(records: Sequence[Record]) -> CheckResult:
    """The FAIL of runs none of which printed a result row (naming what the first failed one said)."""
    said = next((problem for problem in map(run_problem, records) if problem), None)
    message = "no busbw in the single-node all_reduce_perf output (no result row)"
    return result(SINGLE_CHECK, FAIL, message + (": " + said if said else ""))


def _single_where(read: SingleFigures, judged_size: Optional[int], wanted: Optional[int], gpus: Optional[int]) -> str:
    """``at 8 GiB over 8 of 8 GPUs (one rank per GPU through mpirun)``: the size judged and why, the ranks."""
    why = size_reason(judged_size, wanted)
    where = "at %s%s" % (size_words(judged_size), " (%s)" % why if why else "")
    ranks = next(iter(read.ranks_seen)) if len(read.ranks_seen) == 1 else None
    launch = "; ".join(sorted(word for word in read.launches if word))
    if isinstance(ranks, int):
        where += " over %d of %s GPUs%s" % (ranks, num(gpus), " (%s)" % launch if launch else "") \
            if gpus is not None else " over %d ranks (the node's GPU count is unknown: not compared)" % ranks
    return where


def _single_band(judged: float, floor: Any, warn_below: Any) -> tuple[str, str]:
    """``(status, words)`` of a figure against the floor and the warn band above it (the profile's figures)."""
    if judged < floor:
        return FAIL, "below the floor %s GB/s" % num(floor)
    if warn_below is not None and judged < warn_below:
        return WARN, "above the floor %s GB/s but below %s GB/s" % (num(floor), num(warn_below))
    return PASS, "at or above the floor %s GB/s" % num(floor)


def single_result(node: NodeContext, read: SingleFigures, threshold: Optional[dict[str, Any]],
                  threshold_source: Optional[str], wanted: Optional[int], gpus: Optional[int]) -> CheckResult:
    """The vote of the node's figures (``read.figures``, not empty) against the profile's floor and warn band."""
    how = node.settings.get(VOTE_SETTING) or "median"
    judged = voted(read.figures, how)
    judged_size = largest_size(read.sizes)
    where = _single_where(read, judged_size, wanted, gpus)
    spread = repeat_words(read.figures, how)
    if threshold is None:
        return result(SINGLE_CHECK, SKIP, "not judged: the profile sets no thresholds.allreduce_single_node; "
                      "busbw %s GB/s %s%s" % (num(judged), where, spread), measured=judged)
    source = threshold.get("source") or threshold_source
    floor, warn_below = threshold.get("floor"), threshold.get("warn_below")
    status, words = _single_band(judged, floor, warn_below)
    return result(SINGLE_CHECK, status,
                  "single-node all-reduce busbw %s GB/s %s%s, %s" % (num(judged), where, spread, words),
                  measured=judged, expected=floor, threshold_source=source, subject=size_words(judged_size))


def single_node_figure(node: NodeContext) -> tuple[Optional[float], Optional[int]]:
    """``(figure, size)``: the vote of the node's finished whole-node single-node runs at :func:`profile_size` (else
    their largest size), of the figures at that size only; ``(None, None)`` without one."""
    read = [busbw_at(parsed_of(record), profile_size(node)) for record in records_of(node)
            if benchmark_kind(record) == "allreduce_single" and not figure_problem(record)
            and not ranks_problem(node, record)]
    # an implausible figure (benchmarks.allreduce_single fails it) is no member of the cohort's median
    known = [(value, size) for value, size in read if value is not None and not implausible_busbw(node, {}, value)]
    size = largest_size(size for _value, size in known)
    values = [value for value, at in known if at == size]
    return vote(values, node.settings.get(VOTE_SETTING) or "median")[0], size


# --- #wrong and the algorithm ----------------------------------------------------------------------


def _wrong_in(half: Any) -> bool:
    """True when one half (in/out of place) of a result row counts wrong elements."""
    wrong = (half or {}).get("wrong")
    return isinstance(wrong, (int, float)) and wrong > 0


def unvalidated_result(record: Record, unvalidated: str) -> CheckResult:
    """The SKIP of a run with ``-c 0``: nccl-tests prints N/A (older versions 0) in #wrong without comparing
    anything."""
    return result(WRONG_CHECK, SKIP, "not validated: " + unvalidated, measured="not validated",
                  expected=0, threshold_source="nccl-tests: #wrong must be 0 (with -c 1)", subject=record.get("name"))


def corrupt_result(record: Record) -> Optional[CheckResult]:
    """A FAIL when a run counted wrong elements (``#wrong``, ``Out of bounds values``), else None."""
    parsed = parsed_of(record)
    wrong, bounds = parsed.get("wrong_total"), parsed.get("out_of_bounds")
    if not ((wrong or 0) > 0 or (bounds or 0) > 0 or parsed.get("out_of_bounds_status") == "FAILED"):
        return None
    bad_rows = [row["size_bytes"] for row in parsed.get("rows") or []
                if any(_wrong_in(row.get(half)) for half in ("out_of_place", "in_place"))]
    message = "%s: #wrong %s in %d row(s) (first at %s), Out of bounds values %s: the results are corrupt"
    return result(WRONG_CHECK, FAIL, message % (
        record.get("name"), num(wrong), len(bad_rows), size_words(bad_rows[0]) if bad_rows else "unknown size",
        num(bounds)),
        measured=wrong if wrong is not None else bounds, expected=0, threshold_source="nccl-tests: #wrong must be 0",
        subject=record.get("name"))


def wrong_pass_result(checked: int, unchecked: int) -> CheckResult:
    """The PASS of ``checked`` validated runs (naming the ``unchecked`` ones run with ``-c 0``)."""
    return result(WRONG_CHECK, PASS, "#wrong 0 in %d validated all-reduce run(s)%s" % (
        checked, "; %d not validated (-c 0)" % unchecked if unchecked else ""), measured=0, expected=0,
        threshold_source="nccl-tests: #wrong must be 0")


def algo_result(record: Record, threshold: Mapping[str, Any]) -> CheckResult:
    """NCCL_ALGO and NVLS of one finished run; a WARN when the profile's floor assumes NVLS and NVLS was off."""
    env = record.get("environment") or {}
    algo = record.get("algorithm") or env.get("NCCL_ALGO") or "not pinned (NCCL's choice)"
    debug = parsed_of(record).get("debug") or {}
    channels = debug.get("channels") or {}
    nvls_off = (debug.get("nvls_available") is False or debug.get("nvls_disabled_by_env")
                or str(env.get("NCCL_NVLS_ENABLE")) == "0")
    nvls = "off" if nvls_off else (
        "on (%s NVLS channels)" % channels["nvls"] if channels.get("nvls") else "not reported")
    message = "%s: NCCL_ALGO %s, NVLS %s" % (record.get("name"), algo, nvls)
    if threshold.get("nvls") and nvls_off:
        return result(ALGO_CHECK, WARN, message + "; the profile's floor assumes NVLS", measured=nvls,
                      expected="NVLS on", threshold_source=threshold.get("source"))
    return result(ALGO_CHECK, PASS, message, measured=algo)


# --- across nodes ----------------------------------------------------------------------------------


@dataclass
class MultiRun:
    """One finished (or failed) multi-node run: its record, figure, why it is no figure, and its floors' differences."""

    record: Record
    parsed: dict[str, Any]
    value: Any
    problem: Optional[str]
    differ: Optional[str]
    where: str


def multi_run_results(record: Record, hosts: Sequence[str],
                      by_name: Mapping[str, NodeContext]) -> list[tuple[str, CheckResult]]:
    """``[(host, result)]`` of one multi-node run on each of its ``hosts``, each against its own floor."""
    if record.get("outcome") in NOT_RUN_OUTCOMES:
        # the preflight did not start it (one host in the play, a host of the launcher blocked, the tool missing):
        # nothing was measured, so the item is unverified (INCOMPLETE where required), not failed, like the pair
        # search's
        reason = " ".join(str(record.get("reason") or "no reason recorded").split())[:300]
        message = "not judged: %s was not run: %s" % (record.get("name") or "the multi-node all-reduce", reason)
        return [(host, result(MULTI_CHECK, SKIP, message, subject=record.get("name"))) for host in hosts]
    parsed = parsed_of(record)
    # each host's floor, fitted to the run's node count and its nodes' NICs
    floors = multi_node_floor([by_name[host] for host in dict.fromkeys(hosts)], len(set(hosts_of(record))))
    run = MultiRun(record, parsed, parsed.get("busbw_at_largest_size_gbs"), figure_problem(record),
                   floors_words(floors), "%s over %s" % (record.get("name"), ", ".join(hosts_of(record))))
    return [(host, _multi_host_result(by_name[host], run, floors[host])) for host in hosts]


def _multi_host_result(node: NodeContext, run: MultiRun, threshold: HostFloor) -> CheckResult:
    """One host's result of a multi-node run: a socket fallback, a run that did not finish, or the figure."""
    name = run.record.get("name")
    if fell_back(run.parsed):
        return _fallback_result(node, run)
    if run.problem:
        return result(MULTI_CHECK, FAIL, "%s: %s" % (run.where, run.problem), subject=name)
    if run.value is None:
        return result(MULTI_CHECK, FAIL, "%s: no busbw in the output" % run.where, subject=name)
    absurd = implausible_busbw(node, run.record, run.value, MULTI_CHECK)
    if absurd:
        return absurd
    differ = "; " + run.differ if run.differ else ""
    if threshold["floor"] is None:
        return result(MULTI_CHECK, SKIP, "not judged: %s; %s busbw %s GB/s%s" % (
            threshold["why"], run.where, num(run.value), differ), measured=run.value)
    low = run.value < threshold["floor"]
    message = "%s: busbw %s GB/s at %s, %s %s %s GB/s%s" % (
        run.where, num(run.value), size_words(run.parsed.get("largest_size_bytes")), "below" if low else "at or above",
        threshold["rule"], num(threshold["floor"]), differ)
    return result(MULTI_CHECK, FAIL if low else PASS, message, measured=run.value, expected=threshold["floor"],
                  threshold_source=threshold.get("source"), subject=name)


def _fallback_result(node: NodeContext, run: MultiRun) -> CheckResult:
    """A run that fell back to NET/Socket: FAILS on a node with active RDMA ports, whatever its number."""
    name = run.record.get("name")
    ports = active_rdma_ports(node)
    evidence = "; ".join((run.parsed.get("debug") or {}).get("hca_evidence") or [])[:300]
    message = "%s fell back to NET/Socket%s (busbw %s GB/s not judged)" % (
        run.where, ": " + evidence if evidence else "", num(run.value))
    if ports:
        return result(MULTI_CHECK, FAIL, message + "; the node has %d active RDMA port(s) (%s)" % (
            len(ports), ", ".join(ports[:8])), measured="NET/Socket", expected="NET/IB", subject=name)
    if ports is None:
        return result(MULTI_CHECK, WARN, message + "; the node's RDMA ports are unknown (no NIC facts)",
                      measured="NET/Socket", subject=name)
    if run.problem:
        # sockets are this node's network, but a run that did not finish proves nothing about it
        return result(MULTI_CHECK, FAIL, "%s: %s" % (run.where, run.problem), subject=name)
    return result(MULTI_CHECK, PASS, message + "; the node has no active RDMA port: sockets are its network",
                  measured="NET/Socket", subject=name)


def left_out_results(nodes: Sequence[NodeContext], runs: Sequence[Record],
                     judged: Mapping[str, Any]) -> dict[str, list[CheckResult]]:
    """``{node: [FAIL]}``: the nodes not ``judged`` by any run that were left out of them for want of an RDMA rail."""
    started = [record for record in runs if record.get("outcome") != "skipped"]  # a run never started left no one out
    out: dict[str, list[CheckResult]] = {}
    if not started:
        return out
    for node in nodes:
        why = None if node.name in judged or node.name in out else left_out_of_rdma(node, nodes)
        if why:
            run_hosts = sorted({host for record in started for host in hosts_of(record)})
            out[node.name] = [result(MULTI_CHECK, FAIL, "%s; not in the multi-node all-reduce over %s" % (
                why, ", ".join(run_hosts)), measured="no RDMA rail",
                expected="Active RDMA ports on the compute rails", subject=node.name)]
    return out
