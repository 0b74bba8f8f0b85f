# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark checks on records built from REAL nccl-tests recordings (figures read by hand from them).

The record envelopes (name, kind, hosts, outcome) are what bench_run records; the ``parsed`` part is
the parser's output on the recording. NIC facts marked SYNTHETIC are minimal hand-made dicts.
"""

from __future__ import annotations

import pytest

from gpufleet.checks import benchmarks
from gpufleet.checks import engine
from gpufleet.checks.model import FAIL, PASS, REJECT, SKIP, WARN, NodeContext
from gpufleet.checks.profiles import load_profiles
from gpufleet.parsers.registry import parse

SINGLE = "nccl/h100-8gpu-1node-nvls-allreduce-128M-4G-issue290.txt"  # 128M..4G; 4 GiB row busbw 473.60
MULTI = "nccl/h100-2node-16rank-ndr-ib-allreduce-RING-PARTIAL-issue290.txt"  # node005+node007; 8 GiB busbw 89.90
WRONG = "nccl/rtx3090-2node-1nic-inc-allreduce-WRONG-108-FAILED.txt"  # Out of bounds values : 108 FAILED
JEANZAY = "nccl-debug/jeanzay-h100-2node-ib-hw-but-socket-fallback-rdma-core-dlvsym-PARTIAL-ANNOTATED.txt"  # NET/Socket over ibp* IPoIB
FAMILY = ("benchmarks",)


def profile(name="hgx-h100-8"):
    profiles = load_profiles()
    if isinstance(profiles, dict):
        return profiles[name]
    return next(item for item in profiles if item["name"] == name)


def record(fixture_text, path, kind, hosts, name="all_reduce_perf", **extra):
    out = {"name": name, "command": ["all_reduce_perf"], "environment": {"NCCL_DEBUG": "INFO"}, "message_size_bytes": None,
           "algorithm": None, "raw_output_path": None, "parsed": parse("nccl", fixture_text(path)), "started": "2026-01-01T00:00:00Z",
           "duration_s": 1.0, "kind": kind, "hosts": hosts, "outcome": "ok", "reason": None, "rc": 0, "repeat": 0, "round": None, "group": None}
    out.update(extra)
    return out


def only(items, check_id):
    return [item for item in items if item["id"] == check_id]


def node(name, records, prof=None, nic=None, settings=None):
    facts = {"nic": nic} if nic is not None else {}
    return NodeContext(name, facts=facts, profile=prof if prof is not None else profile(), settings=dict(settings or {}, benchmarks=records))


def test_h100_single_node_passes_at_its_largest_size_and_says_16g_is_absent(fixture_text):
    item, = benchmarks.check_allreduce_single(node("node005", [record(fixture_text, SINGLE, "allreduce_single", ["node005"])]))
    assert item["status"] == PASS  # 473.60 >= warn band 470 >= floor 460
    assert item["measured"] == 473.6 and item["expected"] == 460.0
    assert "at 4 GiB" in item["message"] and "16 GiB is absent" in item["message"]


def test_single_node_at_the_profile_size_when_the_sweep_has_it(fixture_text):
    prof = profile()
    prof["thresholds"]["allreduce_single_node"] = dict(prof["thresholds"]["allreduce_single_node"], message_size=1 << 30)
    item, = benchmarks.check_allreduce_single(node("node005", [record(fixture_text, SINGLE, "allreduce_single", ["node005"])], prof=prof))
    assert item["status"] == WARN  # 1 GiB row: 465.25, between the floor 460 and the warn band 470
    assert item["measured"] == 465.25 and "absent" not in item["message"]


def test_repeats_vote_median_and_report_the_spread(fixture_text):
    first = record(fixture_text, SINGLE, "allreduce_single", ["node005"], repeat=0)
    slow = record(fixture_text, SINGLE, "allreduce_single", ["node005"], repeat=1)
    slow["parsed"]["busbw_at_largest_size_gbs"] = 400.0  # SYNTHETIC: one slow repeat
    slow["parsed"]["rows"] = []
    third = record(fixture_text, SINGLE, "allreduce_single", ["node005"], repeat=2)
    item, = benchmarks.check_allreduce_single(node("node005", [first, slow, third]))
    assert item["status"] == PASS and item["measured"] == 473.6
    assert "median of 3 repeats, spread 400-473.6" in item["message"]
    best, = benchmarks.check_allreduce_single(node("node005", [slow, slow], settings={"gpufleet_benchmark_vote": "best"}))
    assert best["status"] == FAIL and best["measured"] == 400.0


def test_hang_is_a_failure_with_its_reason_never_a_figure(fixture_text):
    hung = record(fixture_text, SINGLE, "allreduce_single", ["node005"], outcome="hang", reason="no exit within 30 s; killed the process group")
    hung["parsed"] = None
    items = benchmarks.check_allreduce_single(node("node005", [hung]))
    assert [item["status"] for item in items] == [FAIL]
    assert "did not finish: hang" in items[0]["message"] and "30 s" in items[0]["message"]


def test_wrong_values_fail(fixture_text):
    items = benchmarks.check_allreduce_wrong(node("worker1", [record(fixture_text, WRONG, "allreduce_multi", ["worker1", "worker2"])]))
    assert [item["status"] for item in items] == [FAIL]
    assert "Out of bounds values 108" in items[0]["message"]
    ok, = benchmarks.check_allreduce_wrong(node("node005", [record(fixture_text, SINGLE, "allreduce_single", ["node005"])]))
    assert ok["status"] == PASS


def test_algo_and_nvls_are_recorded(fixture_text):
    rec = record(fixture_text, SINGLE, "allreduce_single", ["node005"], algorithm="RING", environment={"NCCL_ALGO": "RING", "NCCL_NVLS_ENABLE": "0"})
    item, = benchmarks.check_allreduce_algo(node("node005", [rec]))
    assert item["status"] == WARN  # hgx-h100-8's floor assumes NVLS
    assert "NCCL_ALGO RING" in item["message"] and "NVLS off" in item["message"]


def test_multi_node_low_busbw_fails_on_both_hosts(fixture_text):
    rec = record(fixture_text, MULTI, "allreduce_multi", ["node005", "node007"])
    out = benchmarks.check_allreduce_multi([node("node005", [rec]), node("node007", [])])
    for host in ("node005", "node007"):
        item, = out[host]
        assert item["status"] == FAIL and item["measured"] == 89.9 and item["expected"] == 440.0


IB_NIC = {"rdma": [{"device": "mlx5_0", "ports": [{"port": 1, "state": "Active", "link_layer": "InfiniBand"}]}]}  # SYNTHETIC


def test_socket_fallback_fails_when_the_node_has_active_rdma(fixture_text):
    rec = record(fixture_text, JEANZAY, "allreduce_multi", ["jzxh330", "jzxh331"])
    out = benchmarks.check_allreduce_multi([node("jzxh330", [rec], nic=IB_NIC), node("jzxh331", [], nic={"rdma": []})])
    item, = out["jzxh330"]
    assert item["status"] == FAIL and "fell back to NET/Socket" in item["message"] and "mlx5_0/1" in item["message"]
    other, = out["jzxh331"]
    assert other["status"] == PASS  # no active RDMA port: sockets are that node's network


def test_socket_fallback_fails_whatever_its_number(fixture_text):
    rec = record(fixture_text, JEANZAY, "allreduce_multi", ["a", "b"])
    rec["parsed"]["busbw_at_largest_size_gbs"] = 999.0  # SYNTHETIC: a figure above any floor
    item, = benchmarks.check_allreduce_multi([node("a", [rec], nic=IB_NIC)])["a"]
    assert item["status"] == FAIL and "999" in item["message"]


def test_fleet_relative_names_the_slow_node(fixture_text):
    nodes = []
    for name, value in (("n1", 473.6), ("n2", 470.0), ("n3", 380.0), ("n4", 475.0)):
        rec = record(fixture_text, SINGLE, "allreduce_single", [name])
        rec["parsed"]["rows"] = []  # SYNTHETIC figures on the real envelope
        rec["parsed"]["busbw_at_largest_size_gbs"] = value
        nodes.append(node(name, [rec]))
    out = benchmarks.check_allreduce_relative(nodes)
    assert out["n3"][0]["status"] == FAIL  # median 471.8, floor 424.62
    assert all(out[name][0]["status"] == PASS for name in ("n1", "n2", "n4"))


def pair_record(a, b, value, rnd, outcome="ok"):
    return {"name": "all_reduce_perf-pair-%s-%s" % (a, b), "kind": "allreduce_pair", "hosts": [a, b], "round": rnd, "repeat": 0,
            "started": "r%d" % rnd, "outcome": outcome, "reason": None, "parsed": {"busbw_at_largest_size_gbs": value}}  # SYNTHETIC


def test_pair_search_verdict_names_node_and_link():
    recs = [pair_record("a", "b", 1.0, 1), pair_record("c", "d", 10.0, 1), pair_record("e", "f", 9.8, 1),
            pair_record("a", "c", 1.1, 2), pair_record("b", "d", 9.9, 2), pair_record("e", "f", 10.0, 2),
            pair_record("c", "e", 2.0, 3), pair_record("d", "f", 10.1, 3), pair_record("a", "e", None, 3, outcome="hang")]
    nodes = [node(name, [rec for rec in recs if rec["hosts"][0] == name], prof={}) for name in "abcdef"]
    out = benchmarks.check_pair_search(nodes)
    assert [item["status"] for item in out["a"]] == [FAIL]
    assert "a-b 1 GB/s" in out["a"][0]["message"] and "a-c 1.1 GB/s" in out["a"][0]["message"]
    link = [item for item in out["c"] if item["subject"] == "c-e"]
    assert link and link[0]["status"] == FAIL
    assert any(item["subject"] == "c-e" and item["status"] == FAIL for item in out["e"])
    assert [item["status"] for item in out["b"]] == [PASS]
    assert [item["status"] for item in out["f"]] == [PASS]


def test_engine_runs_the_family_and_rejects(fixture_text):
    rec = record(fixture_text, WRONG, "allreduce_multi", ["worker1", "worker2"])
    report = engine.run_checks([node("worker1", [rec], prof={}), node("worker2", [], prof={})], families=FAMILY)
    assert report["nodes"]["worker1"]["verdict"] == REJECT
    assert "benchmarks.allreduce_wrong" in report["nodes"]["worker1"]["failed"]
    assert "benchmarks" in engine.DEFAULT_FAMILIES


@pytest.mark.parametrize("check", [benchmarks.check_allreduce_single, benchmarks.check_allreduce_wrong, benchmarks.check_allreduce_algo])
def test_no_records_skip(check):
    assert [item["status"] for item in check(node("x", []))] == [SKIP]
