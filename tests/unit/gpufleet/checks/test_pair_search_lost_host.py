# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host lost after its facts, in the all-reduce pair search: its pairs are not measured, never slow.

SYNTHETIC records.

What the playbook writes (benchmark_tasks/allreduce_pair_round.yml): a pair run is started by its FIRST host with
bench_run, which records outcome ``unreachable`` for that host when it does not answer (and the host then leaves the
play: its later pairs have no record at all); a lost SECOND host makes the first host's mpirun fail to reach it
(outcome ``launcher_error``, ``ssh: connect to host ...``).
"""

from __future__ import annotations

import pytest

from gpufleet.checks import benchmarks
from gpufleet.checks.model import PASS, SKIP, WARN, NodeContext
from gpufleet.checks.pair_rounds import plan, search_records
from gpufleet.results.store import RunDir

JOB = "gpufleet-20260101T000000Z"
SSH_D = "ssh: connect to host d port 22: No route to host"
GONE_A = "Failed to connect to the host via ssh: ssh: connect to host a port 22: Connection timed out"
# the circle method over a, b, c, d (plan/pair_search.py round_robin)
ROUND_ROBIN = [[("a", "d"), ("b", "c")], [("a", "c"), ("b", "d")], [("a", "b"), ("c", "d")]]


def pair_record(a, b, rnd, value=None, outcome="ok", reason=None, mode="round_robin"):
    """One allreduce_pair record as bench_run writes it, on the pair's first host (SYNTHETIC figure)."""
    return {
        "name": "all_reduce_perf",
        "kind": "allreduce_pair",
        "hosts": [a, b],
        "round": rnd,
        "repeat": 0,
        "command": ["mpirun"],
        "environment": {},
        "message_size_bytes": None,
        "algorithm": None,
        "raw_output_path": None,
        "duration_s": 1.0,
        "started": "2026-01-01T00:00:%02dZ" % rnd,
        "outcome": outcome,
        "reason": reason,
        "rc": None,
        "parsed": {"busbw_at_largest_size_gbs": value} if value is not None else {},
        "group": "pair_search mode=%s confirm=2 seed=7" % mode,
        "job_id": "%s-pair-r%d-%s-%s" % (JOB, rnd, a, b),
    }


def judge(records):
    nodes = [
        NodeContext(name, settings={"benchmarks": [rec for rec in records if rec["hosts"][0] == name]})
        for name in "abcd"
    ]
    return benchmarks.check_pair_search(nodes)


def test_lost_second_host_is_not_measured_and_its_partners_are_not_blamed():
    # d lost from round 0: every pair with it is a launcher_error of its partner's mpirun; the others measure 10 GB/s
    records = [
        pair_record(a, b, rnd, outcome="launcher_error", reason=SSH_D) if b == "d" else pair_record(a, b, rnd, 10.0)
        for rnd, pairs in enumerate(ROUND_ROBIN)
        for a, b in pairs
    ]
    out = judge(records)
    # d: three pairs, none with a figure: not measured (SKIP), not a slow node
    (item,) = out["d"]
    assert item["status"] == SKIP
    assert item["message"].startswith(
        "not measured: no pair with this node produced a figure: a-d: launcher error (%s), "
        "b-d: launcher error (%s), c-d: launcher error (%s); search: 0 bad node(s)" % (SSH_D, SSH_D, SSH_D)
    )
    # a, b, c: two pairs of 10 GB/s each (limit 0.75 x 10 = 7.5), and the pair with d named as not measured (WARN)
    for name in "abc":
        (item,) = out[name]
        assert item["status"] == WARN
        assert item["message"].startswith(
            "2 pair(s) with this node, none convicts it (limit 7.5 GB/s); not measured "
            "(no figure, not slow): %s-d: launcher error (%s); search: 0 bad node(s) and 0 bad link(s)" % (name, SSH_D)
        )


def test_lost_first_host_skips_and_only_the_partner_of_its_recorded_pair_warns():
    # a does not answer its round-0 run (a-d, a first): bench_run records unreachable; a then left the play, so its
    # rounds 1 and 2 (a-c, a-b) wrote no record at all
    records = [
        pair_record("a", "d", 0, outcome="unreachable", reason=GONE_A),
        pair_record("b", "c", 0, 10.0),
        pair_record("b", "d", 1, 10.0),
        pair_record("c", "d", 2, 10.0),
    ]
    out = judge(records)
    (item,) = out["a"]
    assert (item["status"], item["message"]) == (
        SKIP,
        "not measured: no pair with this node produced a figure: a-d: unreachable (%s); "
        "a did not answer from round 0 on; search: 0 bad node(s) and 0 bad link(s) "
        "named in 3 round(s) (round_robin)" % GONE_A,
    )
    (item,) = out["d"]
    assert item["status"] == WARN and "not measured (no figure, not slow): a-d: unreachable" in item["message"]
    assert item["message"].startswith("2 pair(s) with this node, none convicts it (limit 7.5 GB/s)")
    for name in "bc":
        (item,) = out[name]
        assert item["status"] == PASS and item["message"].startswith(
            "2 pair(s) with this node, none convicts it (limit 7.5 GB/s)"
        )


def test_a_hang_with_a_host_lost_by_then_is_not_measured_but_one_before_stays_slow():
    # a did not answer in round 1; its round-2 partner's run hung: no evidence against b. Round 0's hang of c-d has
    # no lost host: a fault of the pair, slow, as before
    records = [
        pair_record("a", "d", 0, 10.0),
        pair_record("b", "c", 0, 10.0),
        pair_record("a", "c", 1, outcome="unreachable", reason=GONE_A),
        pair_record("b", "d", 1, 10.0),
        pair_record("a", "b", 2, outcome="hang", reason="no exit within the 900s timeout"),
    ]
    lost = benchmarks.lost_hosts(records)
    assert lost == {"a": 1}
    assert benchmarks.pair_measurements(records, lost) == {("a", "d"): [10.0], ("b", "c"): [10.0], ("b", "d"): [10.0]}
    assert benchmarks.unmeasured_pairs(records, lost) == {
        ("a", "c"): ["unreachable (%s); a did not answer from round 1 on" % GONE_A],
        ("a", "b"): ["hang (no exit within the 900s timeout); a did not answer from round 1 on"],
    }
    hang = pair_record("c", "d", 0, outcome="hang", reason="no exit within the 900s timeout")
    assert benchmarks.pair_not_measured(hang, lost) is None
    assert benchmarks.pair_measurements([hang], lost) == {("c", "d"): [None]}


@pytest.fixture(name="run")
def run_fixture(tmp_path):
    return RunDir.create(str(tmp_path / "run"))


def run_search(run, lost, mode):
    """Plan and 'run' each round as the playbook would with host ``lost`` gone from round 0; the others measure 10."""
    gone = False
    for rnd in range(20):
        pairs, search = plan(list("abcd"), search_records(run, JOB), rnd, 7, mode=mode)
        if not pairs:
            return search
        for a, b in pairs:
            if lost not in (a, b):
                run.add_benchmark(a, pair_record(a, b, rnd, 10.0, mode=mode))
            elif lost == b:
                run.add_benchmark(a, pair_record(a, b, rnd, outcome="launcher_error", reason=SSH_D, mode=mode))
            elif not gone:
                # the lost host is the first host: one unreachable record, then it has left the play
                gone = True
                run.add_benchmark(a, pair_record(a, b, rnd, outcome="unreachable", reason=GONE_A, mode=mode))
    raise AssertionError("the search did not end")


@pytest.mark.parametrize("mode", ["adaptive", "round_robin"])
def test_search_never_convicts_a_lost_second_host_nor_tries_a_pair_twice(run, mode):
    search = run_search(run, "d", mode)
    verdict = search.verdict()
    assert verdict["bad_nodes"] == {} and verdict["bad_links"] == [] and verdict["unresolved"] == []
    assert verdict["pending"] == [] and verdict["cleared"] == ["a", "b", "c"] and verdict["untested"] == ["d"]
    # every pair with d tried once, without a figure: a-d, b-d, c-d (3 pairs of 4 hosts), none planned again
    assert verdict["not_measured"] == [("a", "d"), ("b", "d"), ("c", "d")]
    planned = [pair for pairs in verdict["rounds"] for pair in pairs]
    assert len(planned) == len(set(planned))


def test_search_stops_planning_a_lost_first_host(run):
    search = run_search(run, "a", "adaptive")
    verdict = search.verdict()
    assert verdict["lost"] == ["a"] and verdict["bad_nodes"] == {} and verdict["unresolved"] == []
    assert verdict["cleared"] == ["b", "c", "d"] and verdict["untested"] == ["a"]
    # after its unreachable record no round holds a pair with a, and no pair is planned twice
    first = next(index for index, pairs in enumerate(verdict["rounds"]) if any("a" in pair for pair in pairs))
    assert all("a" not in pair for pairs in verdict["rounds"][first + 1 :] for pair in pairs)
    planned = [pair for pairs in verdict["rounds"] for pair in pairs]
    assert len(planned) == len(set(planned))
