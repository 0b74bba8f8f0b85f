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

The checks are declared here (the engine runs a family's checks by the module that declares them); the rest lives
beside them by concern: checks/bench_net_records.py (records, repeats, figures), bench_net_floors.py (thresholds and
where they come from), bench_pair_judge.py (the pair runs' fault model and wording), bench_net_judges.py (iperf3 and
perftest judges), and the steps of the other checks in bench_uplink.py, bench_nvbandwidth.py and bench_ib_counters.py.

A pair none of whose repeats produced a figure is *not measured*, never slow: it stays out of the inference (a peer
that rebooted mid-round convicts nobody), and a host whose every pair is unmeasured is SKIP "not measured". A repeat
whose tool says it failed is such a repeat, whatever figure its first seconds left: iperf3's JSON ``error``
(``control socket has closed unexpectedly``, ``interrupt - the client has terminated``; iperf3 may exit 0 with it).
"""

from __future__ import annotations

from gpufleet.checks.bench_ib_counters import IB_COUNTERS_CHECK, snapshot_results
from gpufleet.checks.bench_net_judges import IbWriteBwJudge, IbWriteLatJudge, Iperf3Judge
from gpufleet.checks.bench_net_records import records, vote_of
from gpufleet.checks.bench_nvbandwidth import (NVBANDWIDTH_CHECK, nvbandwidth_repeats, run_result,
                                               testcase_problem_result, testcase_result)
from gpufleet.checks.bench_uplink import (UPLINK_CHECK, Suspects, alone_by_host, concurrent_runs, group_medians,
                                          minimum_ratios, uplink_results)
from gpufleet.checks.model import SKIP, CheckResult, NodeContext, result
from gpufleet.checks.registry import fleet_check, node_check

# Re-exported (__all__ below): the tests and other modules import these from here; they live in the bench_*.py
# modules by concern.
from gpufleet.checks.bench_net_floors import CONCURRENT_SOURCE
from gpufleet.checks.bench_net_records import bw_row, interval_stats, iperf3_gbps
# the re-exported names above (a plain import and __all__, so mypy and pylint both see them exported)
__all__ = ["CONCURRENT_SOURCE", "bw_row", "interval_stats", "iperf3_gbps"]


@fleet_check("bench_network.iperf3")
def check_iperf3(nodes: list[NodeContext]) -> dict[str, list[CheckResult]]:
    """iperf3 alone over the ring: a host slow with two partners (or a slow link) fails, naming the runs and the
    floor."""
    return Iperf3Judge(nodes).judge()


@fleet_check(UPLINK_CHECK)
def check_iperf3_uplink(nodes: list[NodeContext]) -> dict[str, list[CheckResult]]:
    """Concurrent / alone per rack pair: a group median below the ratio fails every node of the group."""
    how = vote_of(nodes)
    suspects = Suspects.of(Iperf3Judge(nodes).infer()[0])
    alone = alone_by_host(nodes, how, suspects)
    per_node = {node.name: concurrent_runs(node, how, alone.get(node.name), suspects) for node in nodes}
    minimum = minimum_ratios(nodes)
    group_median = group_medians(per_node.values())
    return {node.name: uplink_results(node, per_node[node.name], group_median, minimum[node.name]) for node in nodes}


@fleet_check("bench_network.ib_write_bw")
def check_ib_write_bw(nodes: list[NodeContext]) -> dict[str, list[CheckResult]]:
    """ib_write_bw per compute-rail HCA pair over the ring: a slow rail (two partners) or link fails, naming the HCA."""
    return IbWriteBwJudge(nodes).judge()


@fleet_check("bench_network.ib_write_lat")
def check_ib_write_lat(nodes: list[NodeContext]) -> dict[str, list[CheckResult]]:
    """ib_write_lat per compute-rail HCA pair over the ring: typical latency above the limit with two partners fails
    the rail."""
    return IbWriteLatJudge(nodes).judge()


@node_check(NVBANDWIDTH_CHECK)
def check_nvbandwidth(node: NodeContext) -> list[CheckResult]:
    """H2D / D2H / D2D copy bandwidth of every GPU (pair) against h2d/d2h/p2p_bandwidth floors; repeats vote per
    copy."""
    runs = records(node, "nvbandwidth")
    if not runs:
        return [result(NVBANDWIDTH_CHECK, SKIP, "no nvbandwidth run recorded for this node")]
    how = vote_of([node])
    out: list[CheckResult] = []
    measured = []
    for rec in runs:
        problem = run_result(rec)
        if problem:
            out.append(problem)
        else:
            measured.append(rec)
    testcases, problems = nvbandwidth_repeats(measured)
    out += [testcase_problem_result(name, testcase) for name, testcase in problems]
    for name, entry in sorted(testcases.items()):
        judged = testcase_result(node, name, entry, how)
        if judged:
            out.append(judged)
    return out or [result(NVBANDWIDTH_CHECK, SKIP, "nvbandwidth ran no testcase with a copy matrix")]


@node_check(IB_COUNTERS_CHECK)
def check_ib_counters(node: NodeContext) -> list[CheckResult]:
    """IB port error counters read before and after each network benchmark: growth fails naming the port.

    A saturated error counter (at its PortCounters width) cannot show growth: it warns (the facts check
    network.ib_port_errors fails it); growth of an mlx5 transport-error hw_counter warns.
    """
    runs = records(node, "ib_counters")
    if not runs:
        return [result(IB_COUNTERS_CHECK, SKIP, "no IB counter snapshots recorded for this node")]
    return [item for rec in runs for item in snapshot_results(rec)]
