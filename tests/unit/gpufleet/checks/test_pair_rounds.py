# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pair_search_plan: the next round rebuilt from the records of a results directory (SYNTHETIC figures)."""

from __future__ import annotations

import pytest

from gpufleet.checks.pair_rounds import PlanError, plan, search_records
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
