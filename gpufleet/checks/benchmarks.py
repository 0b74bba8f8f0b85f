# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark checks (pure): all-reduce in a node and across nodes, the fleet-relative rule, the pair search.

Reads the benchmark records of each host (``NodeContext.settings["benchmarks"]``, the host
record's ``benchmarks`` list, docs/results-schema.md). A record's kind is :func:`benchmark_kind`
(its ``kind`` field; records of older runs without one are read by their name there, and only there).

The checks are declared here (the engine runs a family's checks by the module that declares them); what they read
and how they word it live beside them by concern: checks/bench_records.py (records, outcomes, figures),
bench_pair_records.py (the search's records and label), bench_floors.py (floors and where they come from),
bench_words.py (message words), and the steps of the checks in bench_allreduce.py, bench_nccl_evidence.py and
bench_pair_search.py.

- ``benchmarks.allreduce_single``: out-of-place busbw at the profile's
  ``thresholds.allreduce_single_node.message_size`` (else the largest size of the sweep, and the
  message says so) against its floor / warn band. Repeats vote: the median figure is judged and
  the spread (min-max) is reported; ``gpufleet_benchmark_vote: best`` judges the best instead. A run
  with one rank (``1 rank: busbw is 0 by definition``) or with a rank count other than the node's GPU
  count (``4 of 8 GPUs in the run``; GPU facts, else claim, else profile) fails by name and is never
  judged as a figure; a 1-GPU node is not judged. A busbw above what the node's GPU links carry (checks/plausible.py
  ``busbw_ceiling``: the profile's NVLink both ways, else 1,800 GB/s) fails as ``implausible: ...`` and is never
  judged, nor compared with the fleet (``allreduce_relative``); so does such a figure of a multi-node run.
- ``benchmarks.allreduce_wrong``: ``#wrong`` (and ``Out of bounds values``) must be 0, any kind. A run that hung or
  failed (bench_records.py :func:`run_problem`) compared nothing past where it stopped: never a ``#wrong 0`` pass
  (skip, naming why).
- ``benchmarks.allreduce_algo``: ``NCCL_ALGO`` and NVLS as recorded (warns when the profile's floor
  assumes NVLS and the NCCL log says NVLS was unavailable or disabled).
- ``benchmarks.allreduce_multi`` (fleet): a multi-node run that fell back to sockets on a node with
  active RDMA ports FAILS with that reason whatever its number; else busbw at the largest size
  against the floor that fits the run (bench_floors.py :func:`multi_node_floor`): the node count of the profile's
  published ``thresholds.allreduce_multi_node`` (its ``nodes``: 2 as shipped; null: every count); another count (or
  fewer NICs than the profile's), the NIC-bound floor from the per-node NIC aggregate and link layer (docs/baselines.md
  3b), its source saying why the profile's was not used; neither known: not judged, saying which floor is for
  which count. Judged on every host of the run, each host against the floor of its own profile: the figure is the
  run's, the floor is what each host's profile (and its ``gpufleet_profile_overrides``) expects of it, so one
  host's stricter (or laxer) floor never judges another; where the hosts' floors differ, every result of the run
  names them. A node left out of it for having no Active compute rail fails naming that.
- ``benchmarks.allreduce_relative`` (fleet): single-node busbw against the cohort median, each node held to its own
  profile's ``fleet.max_below_median`` (checks/fleet.py ``cohort_relative``). A node's figure is at its profile's
  ``thresholds.allreduce_single_node.message_size`` (else the largest size of its sweep, and the message says so,
  as ``allreduce_single`` does); figures at different sizes are never compared: each size is its own comparison,
  and the message names the sizes of the cohort.
- ``benchmarks.pair_search`` (fleet): the per-pair figures of the bad-node search
  (``allreduce_pair`` records; a pair's runs in different rounds are its measurements, repeats in
  one round vote by median) go through ``bench/pair_search.infer`` with the mode, confirmation and
  seed of the search (the records' ``group`` label, bench_pair_records.py :func:`search_label`); a convicted node fails
  naming the pairs that convicted it, a convicted link fails on both ends naming the link, an
  unresolved slow pair (or one still awaiting its confirmation run) warns. Besides the relative rule
  an absolute floor (the NIC-bound floor of the searched nodes) makes a pair slow; a conviction says
  which rule made it, and a node none of whose pairs reaches the absolute floor fails (a fleet slow
  everywhere). Every message ends with the search's summary: bad nodes and links named, rounds used, mode.
  A pair run with fewer ranks than the two nodes' GPUs (``2 of 16 GPUs in the pair run``: ``-np 2`` loads one
  rail of eight) fails on both nodes by name and is never a figure of the search.
- ``benchmarks.nccl_network`` (fleet): the NCCL_DEBUG=INFO evidence of the multi-node and pair runs
  (:func:`check_nccl_network`, docs/baselines.md 9): NET/IB without GDRDMA where GPUDirect is required fails, fewer
  distinct HCAs than compute rails fails, ranks on different networks warn, MNNVL 0 on a multi-node NVLink profile
  fails.
- A run that never started on the node (``outcome`` in bench_records.py :data:`NOT_RUN_OUTCOMES`: the tool is not
  installed, the preflight skipped it) is not verified: SKIP with the reason, so a level that requires it leaves the
  node INCOMPLETE, as a verdict's meaning says ("not run, tool missing"), never REJECT.
- A run that started and did not finish (``outcome`` hang, crash, launcher_error, failed) fails its check with
  the outcome and reason (bench_records.py :func:`outcome_problem`; a hang whose reason says it hung is not called a
  hang twice): it is never read as a figure; nor is a table a row of which another rank's output cut (parsed
  ``damaged``), even after exit 0 (bench_records.py :func:`figure_problem`).
"""

from __future__ import annotations

from typing import Optional

from gpufleet.checks.bench_allreduce import (ALGO_CHECK, MULTI_CHECK, SINGLE_CHECK, WRONG_CHECK, algo_result,
                                             corrupt_result, left_out_results, multi_run_results, no_busbw_result,
                                             problem_results, rank_problems, rank_results, read_single,
                                             single_node_figure, single_result, unvalidated_result, wrong_pass_result)
from gpufleet.checks.bench_floors import profile_size
from gpufleet.checks.bench_nccl_evidence import NCCL_NETWORK_CHECK, judge_nccl_network, log_host_of
from gpufleet.checks.bench_pair_search import PAIR_SEARCH_CHECK, PairSearch
from gpufleet.checks.bench_records import (all_records, figure_problem, node_gpu_count, not_validated, parsed_of,
                                           run_problem)
from gpufleet.checks.bench_words import size_reason, sizes_words
from gpufleet.checks.fleet import cohort_relative, cohorts
from gpufleet.checks.model import SKIP, CheckResult, NodeContext, result
from gpufleet.checks.profiles import profile_value
from gpufleet.checks.registry import fleet_check, node_check

# Re-exported (__all__ below): other modules, the collection's plugins and the tests import these from here; they
# live in the bench_*.py modules by concern (records, pair records, floors, words).
from gpufleet.checks.bench_floors import nic_aggregate, nic_floor
from gpufleet.checks.bench_pair_records import (lost_hosts, pair_measurements, pair_not_measured, pair_ranks_problem,
                                                parse_search_label, search_label, unmeasured_pairs)
from gpufleet.checks.bench_records import (ALLREDUCE_KINDS, NOT_RUN_OUTCOMES, VOTE_SETTING, benchmark_kind, hosts_of,
                                           outcome_problem, records_of, vote)
from gpufleet.checks.bench_words import size_words
from gpufleet.checks.fleet import median
# the re-exported names above (a plain import and __all__, so mypy and pylint both see them exported)
__all__ = ["nic_aggregate", "nic_floor", "lost_hosts", "pair_measurements", "pair_not_measured", "pair_ranks_problem",
           "parse_search_label", "search_label", "unmeasured_pairs", "ALLREDUCE_KINDS", "NOT_RUN_OUTCOMES",
           "VOTE_SETTING", "benchmark_kind", "hosts_of", "outcome_problem", "records_of", "vote", "size_words",
           "median"]

RELATIVE_CHECK = "benchmarks.allreduce_relative"
RELATIVE_WHAT = "single-node all-reduce busbw"


# --- single node ---------------------------------------------------------------------------------


@node_check(SINGLE_CHECK)
def check_allreduce_single(node: NodeContext) -> list[CheckResult]:
    """Single-node all-reduce busbw at the profile's message size against its floor and warn band."""
    records = [record for record in records_of(node) if benchmark_kind(record) == "allreduce_single"]
    if not records:
        return [result(SINGLE_CHECK, SKIP, "not judged: no single-node all_reduce_perf run recorded")]
    out = problem_results(records)
    threshold, threshold_source = profile_value(node.profile, "thresholds.allreduce_single_node")
    wanted = (threshold or {}).get("message_size")
    gpus, gpus_from = node_gpu_count(node)
    if gpus == 1 and not out:
        return [result(SINGLE_CHECK, SKIP, "not judged: a node with 1 GPU (%s) has no all-reduce within it "
                       "(busbw is 0 by definition)" % gpus_from)]
    # a run over fewer GPUs than the node has (or one rank, whose busbw is 0) fails by name and is never judged as the
    # node's
    bad_ranks = rank_problems(node, records)
    out += rank_results(bad_ranks, gpus, gpus_from)
    counted = [record for records_of_problem in bad_ranks.values() for record in records_of_problem]
    read = read_single(node, [record for record in records
                              if not figure_problem(record) and not any(record is bad for bad in counted)], wanted)
    out += read.implausible
    if not read.figures:
        return out or [no_busbw_result(records)]
    out.append(single_result(node, read, threshold, threshold_source, wanted, gpus))
    return out


@node_check(WRONG_CHECK)
def check_allreduce_wrong(node: NodeContext) -> list[CheckResult]:
    """``#wrong`` must be 0 (and ``Out of bounds values`` 0) in every all-reduce run recorded on the node."""
    records = [record for record in records_of(node) if benchmark_kind(record) in ALLREDUCE_KINDS and parsed_of(record)]
    if not records:
        return [result(WRONG_CHECK, SKIP, "not judged: no all_reduce_perf output recorded")]
    out: list[CheckResult] = []
    unchecked: list[CheckResult] = []
    unfinished: list[CheckResult] = []
    for record in records:
        unvalidated = not_validated(record)
        if unvalidated:
            # -c 0: nccl-tests prints N/A (older versions 0) in #wrong without comparing anything: not a pass
            unchecked.append(unvalidated_result(record, unvalidated))
            continue
        corrupt = corrupt_result(record)
        problem = None if corrupt else run_problem(record)
        if corrupt:
            out.append(corrupt)
        elif problem:
            # a hung or failed run compared nothing past where it stopped: its #wrong 0 is no pass
            unfinished.append(result(WRONG_CHECK, SKIP, "not judged: %s: its #wrong says nothing" % problem,
                                     subject=record.get("name")))
    checked = len(records) - len(unchecked) - len(unfinished)
    if not out and checked:
        out.append(wrong_pass_result(checked, len(unchecked)))
    return out + unchecked + unfinished


@node_check(ALGO_CHECK)
def check_allreduce_algo(node: NodeContext) -> list[CheckResult]:
    """NCCL_ALGO and NVLS as recorded with the single-node runs."""
    singles = [record for record in records_of(node) if benchmark_kind(record) == "allreduce_single"]
    records = [record for record in singles if not run_problem(record)]
    if not records:
        failed = [problem for problem in map(run_problem, singles) if problem]
        said = " (%s)" % "; ".join(failed[:2]) if failed else ""
        return [result(ALGO_CHECK, SKIP, "not judged: no finished single-node all_reduce_perf run%s" % said)]
    threshold = profile_value(node.profile, "thresholds.allreduce_single_node")[0] or {}
    return [algo_result(record, threshold) for record in records]


# --- across nodes ----------------------------------------------------------------------------------


@fleet_check(MULTI_CHECK)
def check_allreduce_multi(nodes: list[NodeContext]) -> dict[str, list[CheckResult]]:
    """Multi-node all-reduce: socket fallback on RDMA nodes fails; else busbw against the multi-node floor."""
    by_name = {node.name: node for node in nodes}
    out: dict[str, list[CheckResult]] = {}
    runs = all_records(nodes, "allreduce_multi")
    for record in runs:
        hosts = [host for host in hosts_of(record) if host in by_name]
        for host, item in multi_run_results(record, hosts, by_name):
            out.setdefault(host, []).append(item)
    out.update(left_out_results(nodes, runs, out))
    return out


# --- the NCCL evidence of runs across nodes ------------------------------------------------------------


@fleet_check(NCCL_NETWORK_CHECK)
def check_nccl_network(nodes: list[NodeContext]) -> dict[str, list[CheckResult]]:
    """What NCCL_DEBUG=INFO says about the runs across nodes (multi-node and pair all-reduce) on each host.

    GPUDirect required (checks/bench_floors.py :func:`gpudirect_required`) and a NET/IB connection without GDRDMA
    fails; fewer distinct HCAs in the NET/IB connections than compute rails fails (naming them; a run with fewer ranks
    per node than rails is not judged); ranks naming different networks warn; on a multi-node NVLink system MNNVL 0
    fails. A run that did not finish, or one without NCCL_DEBUG lines, gives no result (the benchmark checks judge it).
    """
    by_name = {node.name: node for node in nodes}
    out: dict[str, list[CheckResult]] = {}
    for kind in ("allreduce_multi", "allreduce_pair"):
        for record in all_records(nodes, kind):
            debug = parsed_of(record).get("debug") or {}
            hosts = [host for host in dict.fromkeys(hosts_of(record)) if host in by_name]
            if len(set(hosts_of(record))) < 2 or not debug or run_problem(record):
                continue
            log_hosts = [via.get("host") for via in debug.get("net_vias") or []] + list(debug.get("hosts") or [])
            for host in hosts:
                log_host = log_host_of(host, log_hosts)
                if log_host is None and any(log_host_of(other, log_hosts) for other in hosts if other != host):
                    # the other hosts are named in the log, this one is not: its lines are not in the output
                    continue
                out.setdefault(host, []).extend(judge_nccl_network(by_name[host], record, debug, log_host))
    return out


def _with_notes(item: CheckResult, notes: list[str]) -> CheckResult:
    """A copy of ``item`` whose message ends with ``notes``."""
    noted = item.copy()
    noted["message"] = "; ".join([item["message"]] + notes)
    return noted


@fleet_check(RELATIVE_CHECK)
def check_allreduce_relative(nodes: list[NodeContext]) -> dict[str, list[CheckResult]]:
    """Single-node busbw of each node against its cohort's median at the same message size
    (checks/bench_allreduce.py :func:`single_node_figure`), each node held to its own profile's
    ``fleet.max_below_median`` (checks/fleet.py ``cohort_relative``)."""
    out: dict[str, list[CheckResult]] = {}
    for members in cohorts(nodes).values():
        read = {node.name: single_node_figure(node) for node in members}
        if all(value is None for value, _size in read.values()):
            continue
        by_size: dict[Optional[int], list[NodeContext]] = {}
        for node in members:
            value, size = read[node.name]
            if value is None:
                out[node.name] = [result(RELATIVE_CHECK, SKIP, "not judged: no %s for this node" % RELATIVE_WHAT)]
            else:
                by_size.setdefault(size, []).append(node)
        split = sizes_words(by_size) if len(by_size) > 1 else None
        for size, group in by_size.items():
            what = "%s at %s" % (RELATIVE_WHAT, size_words(size))
            figures = {node.name: read[node.name][0] for node in group}
            judged = cohort_relative(group, figures, RELATIVE_CHECK, what, "GB/s")
            for node in group:
                # which size judged the node and why, where it is not its profile's size (as allreduce_single says)
                notes = [note for note in (size_reason(size, profile_size(node)), split) if note]
                out[node.name] = [_with_notes(item, notes) for item in judged[node.name]]
    return out


# --- the pair search -----------------------------------------------------------------------------------


@fleet_check(PAIR_SEARCH_CHECK)
def check_pair_search(nodes: list[NodeContext]) -> dict[str, list[CheckResult]]:
    """The bad-node search's verdict: convicted nodes and links fail, naming the pairs (checks/bench_pair_search.py)."""
    records = all_records(nodes, "allreduce_pair")
    if not records:
        return {}
    search = PairSearch(nodes, records)
    return {node.name: search.node_results(node) for node in nodes}
