# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pair_search_plan: the next round rebuilt from the records of a results directory (SYNTHETIC figures)."""

from __future__ import annotations

import pytest

from gpufleet.checks.pair_rounds import PlanError, plan, search_floor, search_records
from gpufleet.plan.pair_search import PairSearch
from gpufleet.checks import benchmarks
from gpufleet.checks.model import NodeContext
from gpufleet.results.store import RunDir

JOB = "gpufleet-20260101T000000Z"


def add_pair(run, rnd, a, b, value, job=JOB, outcome="ok", group=None):
    """One allreduce_pair record as bench_run writes it (SYNTHETIC figure), on the pair's first host."""
    run.add_benchmark(a, {
        "name": "all_reduce_perf", "command": ["mpirun"], "environment": {}, "message_size_bytes": None, "algorithm": None,
        "raw_output_path": None, "parsed": {"busbw_at_largest_size_gbs": value}, "started": "2026-01-01T00:00:%02dZ" % rnd,
        "duration_s": 1.0, "kind": "allreduce_pair", "hosts": [a, b], "outcome": outcome, "reason": None if outcome == "ok" else "x",
        "rc": 0, "repeat": 0, "round": rnd, "group": group, "job_id": "%s-pair-r%d-%s-%s" % (job, rnd, a, b), "stderr_path": None})


@pytest.fixture(name="run")
def run_fixture(tmp_path):
    return RunDir.create(str(tmp_path / "run"))


def test_round_robin_of_four_then_the_confirmation_of_the_slow_link(run):
    hosts = ["a", "b", "c", "d"]
    by_round = search_records(run, JOB)
    # the circle method over a, b, c, d (tests/unit/.../bench: [(0, 3), (1, 2)], [(0, 2), (1, 3)], [(0, 1), (2, 3)])
    assert plan(hosts, by_round, 0, 7, mode="round_robin")[0] == [("a", "d"), ("b", "c")]
    figures = {("a", "d"): 10.0, ("b", "c"): 9.8, ("a", "c"): 10.1, ("b", "d"): 9.9, ("a", "b"): 1.0, ("c", "d"): 10.0}
    for rnd, pairs in enumerate([[("a", "d"), ("b", "c")], [("a", "c"), ("b", "d")], [("a", "b"), ("c", "d")]]):
        for a, b in pairs:
            add_pair(run, rnd, a, b, figures[(a, b)])
    by_round = search_records(run, JOB)
    pairs, search = plan(hosts, by_round, 3, 7, mode="round_robin")
    # a-b is slow while a and b are fast with c and d: a bad link, re-measured once before it convicts
    assert pairs == [("a", "b")]
    assert search.current()["pending"] == [("a", "b")] and search.current()["bad_links"] == []
    add_pair(run, 3, "a", "b", 1.1)
    pairs, search = plan(hosts, search_records(run, JOB), 4, 7, mode="round_robin")
    assert pairs == []
    assert search.current()["bad_links"] == [("a", "b")] and search.current()["bad_nodes"] == {}
    assert len(search.rounds) == 4


def test_confirmation_that_comes_back_fast_accuses_nobody(run):
    hosts = ["a", "b", "c", "d"]
    for rnd, pairs in enumerate([[("a", "d"), ("b", "c")], [("a", "c"), ("b", "d")], [("a", "b"), ("c", "d")]]):
        for a, b in pairs:
            add_pair(run, rnd, a, b, 1.0 if (a, b) == ("a", "b") else 10.0)
    add_pair(run, 3, "a", "b", 9.7)   # the dip did not repeat
    pairs, search = plan(hosts, search_records(run, JOB), 4, 1, mode="round_robin")
    assert pairs == []
    verdict = search.current()
    assert verdict["bad_links"] == [] and verdict["bad_nodes"] == {} and verdict["unresolved"] == []


def test_adaptive_replay_equals_the_live_search(run):
    """The plan rebuilt from records at each round is the plan a live PairSearch makes (node e is slow)."""
    hosts = ["a", "b", "c", "d", "e", "f"]
    live = PairSearch(hosts, seed=42, confirm=2)
    for rnd in range(20):
        pairs = live.next_round()
        rebuilt, _search = plan(hosts, search_records(run, JOB), rnd, 42)
        assert rebuilt == pairs, rnd
        if not pairs:
            break
        figures = {pair: (1.0 if "e" in pair else 10.0) for pair in pairs}
        live.record(figures)
        for (a, b), value in figures.items():
            add_pair(run, rnd, a, b, value)
    verdict = live.verdict()
    assert set(verdict["bad_nodes"]) == {"e"}
    # e: two cleared accusers, each measured twice
    assert all(len(live.results[pair]) == 2 for pair in verdict["bad_nodes"]["e"])


def test_other_jobs_records_are_ignored_and_strays_refused(run):
    hosts = ["a", "b", "c", "d"]
    add_pair(run, 0, "a", "b", 10.0, job="gpufleet-another-run")
    assert search_records(run, JOB) == {}
    first = plan(hosts, {}, 0, 5)[0]
    stray = [pair for pair in [("a", "b"), ("a", "c"), ("a", "d")] if pair not in first][0]
    add_pair(run, 0, stray[0], stray[1], 10.0)
    with pytest.raises(PlanError, match="round 0: recorded pairs %s-%s were not planned by this search" % stray):
        plan(hosts, search_records(run, JOB), 1, 5)


def test_a_pair_that_left_no_record_is_not_measured(run):
    hosts = ["a", "b", "c", "d"]
    first = plan(hosts, {}, 0, 3)[0]
    add_pair(run, 0, first[0][0], first[0][1], 10.0)   # the other pair's first host left the play
    _pairs, search = plan(hosts, search_records(run, JOB), 1, 3)
    assert list(search.results) == [first[0]]


def test_the_check_reads_the_label_and_the_confirmation(run):
    """The verdict's check: confirm=2 from the group label, a pair's runs in two rounds are its measurements."""
    label = benchmarks.search_label("round_robin", 2, 7)
    assert label == "pair_search mode=round_robin confirm=2 seed=7"
    assert benchmarks.parse_search_label(label) == {"mode": "round_robin", "confirm": 2, "seed": "7"}
    assert benchmarks.parse_search_label("rack-1") == {}
    for rnd, pairs in enumerate([[("a", "d"), ("b", "c")], [("a", "c"), ("b", "d")], [("a", "b"), ("c", "d")]]):
        for a, b in pairs:
            add_pair(run, rnd, a, b, 1.0 if (a, b) == ("a", "b") else 10.0, group=label)
    records = run.host_records()

    def nodes():
        return [NodeContext(name, settings={"benchmarks": (records.get(name) or {}).get("benchmarks", [])}) for name in "abcd"]

    # one slow run: awaits its confirmation, nobody is convicted
    out = benchmarks.check_pair_search(nodes())
    assert [item["status"] for item in out["a"]] == ["warn"] and "awaits its confirmation run" in out["a"][0]["message"]
    assert [item["status"] for item in out["c"]] == ["pass"]
    add_pair(run, 3, "a", "b", 1.2, group=label)
    records = run.host_records()
    out = benchmarks.check_pair_search(nodes())
    assert [item["status"] for item in out["a"]] == ["fail"] and [item["status"] for item in out["b"]] == ["fail"]
    message = out["b"][0]["message"]
    assert message.startswith("slow link a-b: a-b 1.2 GB/s (best of 2 runs: 1, 1.2)"), message
    assert message.endswith("search: 0 bad node(s) and 1 bad link(s) named in 4 round(s) (round_robin)"), message
    assert "round_robin, seed 7" in out["b"][0]["threshold_source"]


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="mode must be one of adaptive, round_robin"):
        PairSearch(["a", "b"], mode="sideways")


# 8 x 400 Gb/s InfiniBand per node: 400 GB/s, expected 0.94 x 400 = 376, floor 0.9 x 376 = 338.4 GB/s
CLAIM_8X_NDR = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8,
                "nics": [{"role": "compute", "type": "ib", "count": 8, "gbps": 400}]}


def write_host(run, host, claim=None, nic=None):
    """The host's record as the facts phase leaves it: its claim and (optionally) its NIC facts."""
    record = RunDir.new_host_record(host)
    record["claim"] = claim
    record["facts"]["nic"] = nic
    run.write_host(record)


def test_the_floor_comes_from_the_claim_else_the_active_ports_else_none(run):
    write_host(run, "a", claim=CLAIM_8X_NDR)
    floor = search_floor(run, ["a"])
    assert floor["floor"] == 338.4 and floor["expected"] == 376.0
    assert "8 x 400 Gb/s InfiniBand = 400 GB/s (claim)" in floor["source"]
    # no claim: the node's Active RDMA ports, 2 x 200 Gb/s = 50 GB/s, floor 0.9 x 0.94 x 50 = 42.3
    port = {"state": "Active", "link_layer": "InfiniBand", "rate_gbps": 200}
    write_host(run, "b", nic={"rdma": [{"device": "mlx5_0", "ports": [dict(port, port=1)]},
                                       {"device": "mlx5_1", "ports": [dict(port, port=1)]},
                                       {"device": "mlx5_2", "ports": [dict(port, port=1, state="Down")]}]})
    assert search_floor(run, ["b"])["floor"] == 42.3
    # the smallest aggregate bounds the search
    assert search_floor(run, ["a", "b"])["floor"] == 42.3
    write_host(run, "c")
    assert search_floor(run, ["c"]) is None
    assert search_floor(run, ["nobody"]) is None


def test_a_pair_slow_only_by_the_floor_gets_its_confirmation_run(run):
    """Node d's pairs run at 300 GB/s, the others at 370: within the 25 % relative rule, below the 338.4 floor."""
    hosts = ["a", "b", "c", "d"]
    for host in hosts:
        write_host(run, host, claim=CLAIM_8X_NDR)
    label = benchmarks.search_label("round_robin", 2, 7)
    for rnd, pairs in enumerate([[("a", "d"), ("b", "c")], [("a", "c"), ("b", "d")], [("a", "b"), ("c", "d")]]):
        for a, b in pairs:
            add_pair(run, rnd, a, b, 300.0 if "d" in (a, b) else 370.0, group=label)
    floor = search_floor(run, hosts)["floor"]
    # without the floor the search would stop here, every pair fast by the relative rule
    assert plan(hosts, search_records(run, JOB), 3, 7, mode="round_robin")[0] == []
    d_pairs = {("a", "d"), ("b", "d"), ("c", "d")}
    confirmed = set()
    for rnd in (3, 4):
        pairs, search = plan(hosts, search_records(run, JOB), rnd, 7, mode="round_robin", floor=floor)
        # d's three slow pairs are pending; they share d, so one confirmation per round
        assert len(pairs) == 1 and pairs[0] in d_pairs - confirmed, (rnd, pairs)
        assert set(search.current()["pending"]) == d_pairs - confirmed
        confirmed.add(pairs[0])
        add_pair(run, rnd, pairs[0][0], pairs[0][1], 301.0, group=label)
    pairs, search = plan(hosts, search_records(run, JOB), 5, 7, mode="round_robin", floor=floor)
    assert pairs == []
    assert sorted(search.current()["bad_nodes"]["d"]) == sorted(confirmed)
    # the check judges the same records with the same floor: d convicted by the floor, nothing awaits a run
    records = run.host_records()
    nodes = [NodeContext(name, claim=CLAIM_8X_NDR, settings={"benchmarks": (records.get(name) or {}).get("benchmarks", [])})
             for name in hosts]
    out = benchmarks.check_pair_search(nodes)
    assert [item["status"] for item in out["d"]] == ["fail"]
    message = out["d"][0]["message"]
    assert "convicted by the absolute floor 338.4 GB/s" in message and "awaits" not in message, message
    assert message.endswith("search: 1 bad node(s) and 0 bad link(s) named in 5 round(s) (round_robin)"), message
    for name in "abc":
        assert [item["status"] for item in out[name]] == ["pass"], out[name]
