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
    assert item["status"] == PASS  # 473.60 >= warn band 465 >= floor 460
    assert item["measured"] == 473.6 and item["expected"] == 460.0
    assert "at 4 GiB" in item["message"] and "16 GiB is absent" in item["message"]


def test_a_b200_node_at_h100_speed_fails_its_nvlink5_floor(fixture_text):
    # SYNTHETIC: the real 8-GPU H100 run (473.60 GB/s at 4 GiB) judged as if its node were sold as 8x B200. With the
    # old floor (OCI's H100 440) it passed; NVLink5 reaches ~845, the floor is 0.9 x that: 760
    item, = benchmarks.check_allreduce_single(node("node005", [record(fixture_text, SINGLE, "allreduce_single", ["node005"])],
                                                   prof=profile("hgx-b200-8")))
    assert item["status"] == FAIL
    assert item["measured"] == 473.6 and item["expected"] == 760.0


def test_single_node_at_the_profile_size_when_the_sweep_has_it(fixture_text):
    prof = profile()
    # a site band of 470 (the shipped band is 465, below the typical range): the 1 GiB row is judged against it
    prof["thresholds"]["allreduce_single_node"] = dict(prof["thresholds"]["allreduce_single_node"], message_size=1 << 30, warn_below=470.0)
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


# the preflight's record when --limit leaves one host in the play (playbooks/benchmark_tasks/preflight.yml,
# bench_record: the name is the kind's, all_reduce_perf)
PREFLIGHT_SKIPPED_MULTI = {"name": "all_reduce_perf", "kind": "allreduce_multi", "hosts": ["a"], "outcome": "skipped",
                           "reason": "only one host in the play: allreduce_multi runs between hosts"}


def test_a_multi_node_run_the_preflight_skipped_is_unverified_not_failed():
    out = benchmarks.check_allreduce_multi([node("a", [dict(PREFLIGHT_SKIPPED_MULTI)], nic=NDR_NIC),
                                            node("b", [], nic=NO_RAIL_NIC)])
    item, = out["a"]
    assert item["status"] == SKIP and item["subject"] == "all_reduce_perf"
    assert "b" not in out  # a run never started left no node out of it
    assert item["message"] == ("not judged: all_reduce_perf was not run: "
                               "only one host in the play: allreduce_multi runs between hosts")


def test_a_skipped_multi_node_run_required_by_the_level_makes_the_node_incomplete():
    settings = {"required_benchmarks": ["allreduce_multi"]}
    entry = engine.run_checks([node("a", [dict(PREFLIGHT_SKIPPED_MULTI)], settings=settings)],
                              families=["benchmarks"])["nodes"]["a"]
    assert entry["verdict"] == "INCOMPLETE"
    assert [reason for reason in entry["coverage"]["incomplete"] if reason.startswith("benchmark")] == [
        "benchmark multi-node all-reduce: not judged: all_reduce_perf was not run: "
        "only one host in the play: allreduce_multi runs between hosts"
    ]


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
    # the size judged, and why it is not the profile's 16 GiB (the recording's sweep ends at 4 GiB), as
    # allreduce_single says it; 380 is 91.8 / 471.8 = 19 % below
    assert out["n3"][0]["message"] == (
        "single-node all-reduce busbw at 4 GiB 380 GB/s is 19% below the fleet median 471.8 GB/s (more than 10% below "
        "fails); the profile's size 16 GiB is absent from the sweep: judged at its largest size")


def test_fleet_relative_never_compares_figures_at_different_sizes(fixture_text):
    # n4's profile names 128 MiB, in the sweep (busbw 382.99 on its first row); n1-n3's 16 GiB is not, so they are
    # judged at 4 GiB (473.6). Before, n4's 128 MiB figure was held to the 4 GiB median 473.6 and failed (19 % below)
    small = profile()
    single = small["thresholds"]["allreduce_single_node"]
    small["thresholds"]["allreduce_single_node"] = dict(single, message_size=128 << 20)
    nodes = [node(name, [record(fixture_text, SINGLE, "allreduce_single", [name])],
                  prof=small if name == "n4" else None) for name in ("n1", "n2", "n3", "n4")]
    out = benchmarks.check_allreduce_relative(nodes)
    split = ("busbw at different message sizes is not compared: the cohort's figures are at 4 GiB (3 nodes), "
             "128 MiB (1 node), each held to the median at its size")
    item, = out["n4"]
    assert item["status"] == SKIP and item["measured"] is None
    assert item["message"] == ("not judged: 1 node(s) with a single-node all-reduce busbw at 128 MiB; the fleet median "
                               "needs at least 3; " + split)
    for name in ("n1", "n2", "n3"):
        item, = out[name]
        assert (item["status"], item["measured"], item["expected"]) == (PASS, 473.6, 426.24)  # 0.9 x 473.6
        assert item["message"] == (
            "single-node all-reduce busbw at 4 GiB 473.6 GB/s, fleet median 473.6 GB/s (floor 426.24); the profile's "
            "size 16 GiB is absent from the sweep: judged at its largest size; " + split)


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


# --- every GPU of the node, floors that fit the run, the absolute pair floor, nodes without rails ---------------

ONE_RANK = "nccl/rtx3090-1rank-allreduce-busbw0-inplace-bogus-algbw.txt"  # 1 rank on worker1, busbw 0.00 on every row
GPUS_8 = {"gpu_count": 8}  # SYNTHETIC: the count part of gpu_facts


def gpu_node(name, records, **extra):
    return NodeContext(name, facts={"gpu": GPUS_8}, profile=profile(), settings=dict(extra, benchmarks=records))


def test_one_rank_default_run_on_an_8_gpu_node_fails_naming_it(fixture_text):
    # what `all_reduce_perf -g 1` without a launcher gives: one rank, whose busbw is 0 by definition
    items = benchmarks.check_allreduce_single(gpu_node("worker1", [record(fixture_text, ONE_RANK, "allreduce_single", ["worker1"])]))
    assert [item["status"] for item in items] == [FAIL]
    assert items[0]["message"].startswith("1 rank: busbw is 0 by definition")
    assert items[0]["measured"] == 1 and items[0]["expected"] == 8
    assert "0 GB/s" not in items[0]["message"]  # never read as a figure below the floor
    # nor judged against the fleet: nothing to compare
    assert benchmarks.check_allreduce_relative([gpu_node("worker1", [record(fixture_text, ONE_RANK, "allreduce_single", ["worker1"])])]) == {}


def test_four_gpu_run_on_an_8_gpu_node_fails_naming_4_of_8(fixture_text):
    rec = record(fixture_text, SINGLE, "allreduce_single", ["node005"])
    rec["parsed"]["ranks"] = 4  # SYNTHETIC: the real 8-rank H100 run relabelled as a run over 4 of the node's GPUs
    items = benchmarks.check_allreduce_single(gpu_node("node005", [rec]))
    assert [item["status"] for item in items] == [FAIL]
    assert items[0]["message"].startswith("4 of 8 GPUs in the run (8 GPUs by the GPU facts)")
    assert items[0]["measured"] == 4 and items[0]["expected"] == 8
    # the whole node (8 ranks of 8 GPUs): judged, and the message says so with how it was launched
    full = record(fixture_text, SINGLE, "allreduce_single", ["node005"], group="single_node launch=mpirun gpus=8")
    item, = benchmarks.check_allreduce_single(gpu_node("node005", [full]))
    assert item["status"] == PASS and "over 8 of 8 GPUs (one rank per GPU through mpirun)" in item["message"]
    # the same run as srun launched it (playbooks/benchmark.yml's group label on a Slurm fleet)
    srun = record(fixture_text, SINGLE, "allreduce_single", ["node005"], group="single_node launch=srun gpus=8")
    item, = benchmarks.check_allreduce_single(gpu_node("node005", [srun]))
    assert item["status"] == PASS and "over 8 of 8 GPUs (one task per GPU through srun)" in item["message"]


def _multi(fixture_text, hosts, busbw=None):
    rec = record(fixture_text, MULTI, "allreduce_multi", hosts)
    if busbw is not None:
        rec["parsed"]["busbw_at_largest_size_gbs"] = busbw  # SYNTHETIC figure on the real 16-rank envelope
    return rec


def test_multi_node_floor_at_4_nodes_of_8_ndr_is_the_nic_bound_one_not_440(fixture_text):
    hosts = ["n1", "n2", "n3", "n4"]
    # 365.8 GB/s: the 4-node 8x NDR figure of nccl-tests #309 (docs/baselines.md 3b); below 440, above the NIC bound
    rec = _multi(fixture_text, hosts, busbw=365.8)
    out = benchmarks.check_allreduce_multi([node(host, [rec] if host == "n1" else []) for host in hosts])
    for host in hosts:
        item, = out[host]
        # hgx-h100-8 expects 8 x 400 Gb/s InfiniBand: 400 GB/s, x 0.94 = 376 expected, x 0.9 = 338.4
        assert item["status"] == PASS and item["expected"] == 338.4
        assert "at or above the NIC-bound floor for 4 nodes 338.4 GB/s" in item["message"]
        assert item["threshold_source"].startswith("docs/baselines.md 3b NIC-bound floors: 0.94 x the per-node NIC aggregate")
        assert "aggregate 8 x 400 Gb/s InfiniBand = 400 GB/s" in item["threshold_source"]
    # the real 89.9 GB/s fails it; two nodes keep the published two-node floor of 440
    low = benchmarks.check_allreduce_multi([node(host, [_multi(fixture_text, hosts)] if host == "n1" else []) for host in hosts])
    assert low["n3"][0]["status"] == FAIL and low["n3"][0]["measured"] == 89.9
    two = benchmarks.check_allreduce_multi([node("n1", [_multi(fixture_text, ["n1", "n2"], busbw=365.8)]), node("n2", [])])
    assert two["n2"][0]["status"] == FAIL and two["n2"][0]["expected"] == 440.0 and "the two-node published floor 440" in two["n2"][0]["message"]


def test_claimed_nics_set_the_multi_node_floor(fixture_text):
    # a claim of 4 x 200 Gb/s RoCE per node: 100 GB/s, x 0.916 = 91.6, x 0.9 = 82.4 (also for two nodes: below the profile's 8 x 400)
    claim = {"nics": [{"role": "compute", "type": "roce", "count": 4, "gbps": 200}, {"role": "frontend", "type": "ethernet", "count": 1, "gbps": 100}]}
    rec = _multi(fixture_text, ["a", "b"])
    nodes = [NodeContext(name, claim=claim, profile=profile(), settings={"benchmarks": [rec] if name == "a" else []}) for name in "ab"]
    item, = benchmarks.check_allreduce_multi(nodes)["b"]
    assert item["status"] == PASS and item["expected"] == 82.4 and item["measured"] == 89.9
    assert "aggregate 4 x 200 Gb/s Ethernet = 100 GB/s (claim)" in item["threshold_source"]
    assert "the profile's two-node floor 440 GB/s assumes 400 GB/s of NICs per node" in item["threshold_source"]


def test_a_fleet_slow_everywhere_in_pairs_is_caught_by_the_absolute_floor():
    # SYNTHETIC: 6 nodes of 8 x NDR, every pair near 150 GB/s (a quarter of the NICs): relatively all alike
    recs = [pair_record(a, b, value, rnd) for a, b, value, rnd in (
        ("a", "b", 150.0, 0), ("c", "d", 151.0, 0), ("e", "f", 149.0, 0), ("a", "c", 150.5, 1), ("b", "e", 150.2, 1), ("d", "f", 149.8, 1))]
    nodes = [node(name, [rec for rec in recs if rec["hosts"][0] == name]) for name in "abcdef"]
    out = benchmarks.check_pair_search(nodes)
    for name in "abcdef":
        item, = out[name]
        assert item["status"] == FAIL and item["expected"] == 338.4, item
        assert item["message"].startswith("below the absolute floor in every pair")
        assert "convicted by the absolute floor 338.4 GB/s" in item["message"]
        assert "or below the absolute floor 338.4 GB/s (docs/baselines.md 3b" in item["threshold_source"]
    # without an absolute floor (no NIC aggregate known) the same figures pass: the relative rule alone cannot see it
    bare = benchmarks.check_pair_search([node(name, [rec for rec in recs if rec["hosts"][0] == name], prof={}) for name in "abcdef"])
    assert all(bare[name][0]["status"] == PASS for name in "abcdef")


def test_a_slow_node_names_the_rule_that_convicted_it():
    # SYNTHETIC: 8 x NDR nodes near 450 GB/s, node a at 100 in every pair: below both the relative limit and the floor
    recs = [pair_record(a, b, value, rnd) for a, b, value, rnd in (
        ("a", "b", 100.0, 0), ("c", "d", 450.0, 0), ("e", "f", 452.0, 0), ("a", "c", 101.0, 1), ("b", "e", 449.0, 1), ("d", "f", 451.0, 1))]
    out = benchmarks.check_pair_search([node(name, [rec for rec in recs if rec["hosts"][0] == name]) for name in "abcdef"])
    item, = out["a"]
    assert item["status"] == FAIL and "convicted by both rules: below the absolute floor 338.4 GB/s" in item["message"]
    assert all(out[name][0]["status"] == PASS for name in "bcdef")


NDR_NIC = {"rdma": [{"device": "mlx5_%d" % index, "ports": [{"port": 1, "state": "Active", "link_layer": "InfiniBand", "rate_gbps": 400}]}
                    for index in range(8)]}  # SYNTHETIC: 8 Active NDR ports
NO_RAIL_NIC = {"rdma": [{"device": "mlx5_0", "ports": [{"port": 1, "state": "Down", "link_layer": "InfiniBand", "rate_gbps": 400}]}]}  # SYNTHETIC


def test_a_node_without_rails_is_left_out_and_failed_while_the_others_are_judged_on_ib(fixture_text):
    # the multi-node run over the two nodes with rails (NCCL_IB_DISABLE=0 there); n3 has none and is left out
    rec = _multi(fixture_text, ["n1", "n2"], busbw=470.0)
    ib_on, ib_off = {"gpufleet_nccl_env": {"NCCL_IB_DISABLE": "0"}}, {"gpufleet_nccl_env": {"NCCL_IB_DISABLE": "1"}}
    nodes = [node("n1", [rec], nic=NDR_NIC, settings=ib_on), node("n2", [], nic=NDR_NIC, settings=ib_on),
             node("n3", [], nic=NO_RAIL_NIC, settings=ib_off)]
    out = benchmarks.check_allreduce_multi(nodes)
    for host in ("n1", "n2"):
        item, = out[host]
        assert item["status"] == PASS and "fell back" not in item["message"]  # the IB run is judged on its figure
    left, = out["n3"]
    assert left["status"] == FAIL and left["subject"] == "n3"
    assert left["message"].startswith("left out of the RDMA runs: no Active RDMA port on a compute rail (NCCL_IB_DISABLE=1 on this node only)")
    assert "not in the multi-node all-reduce over n1, n2" in left["message"]
    pairs = benchmarks.check_pair_search([node("n1", [pair_record("n1", "n2", 470.0, 0)], nic=NDR_NIC, settings=ib_on),
                                          node("n2", [], nic=NDR_NIC, settings=ib_on), node("n3", [], nic=NO_RAIL_NIC, settings=ib_off)])
    assert pairs["n3"][0]["status"] == FAIL and "in no pair of the search" in pairs["n3"][0]["message"]


TWO_RANK_PAIR = "nccl/l40s-2node-1gpu-each-sockets-ib-disabled-allreduce-reducing-maxbytes.txt"  # 2 ranks, one per node; 8.11 GB/s


def test_a_pair_run_over_fewer_ranks_than_its_gpus_fails_on_its_own_and_is_no_figure(fixture_text):
    # the real 2-rank run (`-np 2`, one rank per node) recorded as the pair a-b of two 8-GPU nodes (GPU facts)
    short = record(fixture_text, TWO_RANK_PAIR, "allreduce_pair", ["a", "b"], round=0)
    # the real 16-rank run over two 8-GPU nodes as the pair c-d: every GPU of both nodes, judged as a figure
    full = record(fixture_text, MULTI, "allreduce_pair", ["c", "d"], round=0)
    nodes = [gpu_node("a", [short]), gpu_node("b", []), gpu_node("c", [full]), gpu_node("d", [])]
    out = benchmarks.check_pair_search(nodes)
    for name in "ab":
        item, = out[name]
        assert item["status"] == FAIL and item["subject"] == "a-b"
        assert item["message"].startswith("pair a-b: 2 of 16 GPUs in the pair run (8 on a (GPU facts) + 8 on b (GPU facts))"), item
        assert item["measured"] == "2 ranks" and item["expected"] == "one rank per GPU of both nodes"
        assert "8.11" not in item["message"]  # never read as the pair's figure
    for name in "cd":
        # judged on its figure (the recording's 89.9 GB/s, below the 8 x NDR floor 338.4), not on its ranks
        item, = out[name]
        assert item["message"].startswith("below the absolute floor in every pair: c-d 89.9 GB/s"), item
    # more ranks than GPUs is no figure of the pair either
    assert benchmarks.pair_ranks_problem({"c": gpu_node("c", []), "d": NodeContext("d", facts={"gpu": {"gpu_count": 4}})},
                                         full).startswith("16 ranks for 12 GPUs in the pair run")
    # GPU count unknown on one node: nothing to compare with
    assert benchmarks.pair_ranks_problem({"c": gpu_node("c", []), "d": NodeContext("d")}, full) is None


def test_a_multi_node_floor_is_never_dropped_without_a_word(fixture_text):
    """The shipped thresholds.allreduce_multi_node is a published two-node figure (nodes: 2): at 12 nodes the NIC-bound
    floor judges, and the result says why the profile's was not used (before, it fell back without a word). An
    operator's override with nodes: null applies to every node count; nodes: 12 applies to 12."""
    from gpufleet.checks.profiles import apply_overrides  # pylint: disable=import-outside-toplevel

    hosts = ["n%d" % index for index in range(1, 13)]
    rec = _multi(fixture_text, hosts, busbw=365.8)  # SYNTHETIC figure on the real 16-rank envelope

    def judged(prof):
        fleet = [node(host, [rec] if host == "n1" else [], prof=prof) for host in hosts]
        return benchmarks.check_allreduce_multi(fleet)["n7"][0]

    shipped = judged(profile())
    assert (shipped["status"], shipped["expected"]) == (PASS, 338.4)
    assert shipped["threshold_source"].endswith(
        "; thresholds.allreduce_multi_node (440 GB/s) is for 2 nodes (its nodes), not 12")
    every = apply_overrides(profile(), {"thresholds": {"allreduce_multi_node": {"floor": "380 GB/s", "nodes": None}}})
    mine = judged(every)
    assert (mine["status"], mine["expected"]) == (FAIL, 380.0)
    assert "below the profile's multi-node floor (every node count) 380 GB/s" in mine["message"]
    assert mine["threshold_source"] == "gpufleet_profile_overrides (replaces the profile's value)"
    twelve = apply_overrides(profile(), {"thresholds": {"allreduce_multi_node": {"floor": "300 GB/s", "nodes": 12}}})
    assert (judged(twelve)["status"], judged(twelve)["expected"]) == (PASS, 300.0)


def test_a_multi_node_floor_for_another_node_count_without_a_nic_bound_says_so(fixture_text):
    # hgx-b200-8 sets the two-node 440 GB/s and no compute rail (EFA on AWS); no claim, no NIC facts: 12 nodes have no
    # floor. Before, the result said the profile sets no thresholds.allreduce_multi_node
    hosts = ["n%d" % index for index in range(1, 13)]
    rec = _multi(fixture_text, hosts, busbw=365.8)  # SYNTHETIC figure on the real 16-rank envelope
    out = benchmarks.check_allreduce_multi([node(host, [rec] if host == "n1" else [], prof=profile("hgx-b200-8"))
                                            for host in hosts])
    item, = out["n7"]
    assert (item["status"], item["measured"], item["expected"]) == (SKIP, 365.8, None)
    assert item["message"] == (
        "not judged: thresholds.allreduce_multi_node (440 GB/s) is for 2 nodes, this run has 12, and no NIC-bound "
        "floor is known (no compute rail speeds: no claimed compute NICs, expect.compute_rail or Active RDMA port "
        "rates); all_reduce_perf over %s busbw 365.8 GB/s" % ", ".join(hosts))


def test_hosts_of_one_multi_node_run_are_each_judged_against_their_own_floor(fixture_text):
    # n2's operator set 380 GB/s; n1 keeps the shipped two-node 440. Before, both were held to the first host's 440
    from gpufleet.checks.profiles import apply_overrides  # pylint: disable=import-outside-toplevel

    lower = apply_overrides(profile(), {"thresholds": {"allreduce_multi_node": {"floor": "380 GB/s"}}})
    rec = _multi(fixture_text, ["n1", "n2"], busbw=400.0)  # SYNTHETIC figure on the real 16-rank envelope
    out = benchmarks.check_allreduce_multi([node("n1", [rec]), node("n2", [], prof=lower)])
    differ = "; the run's hosts have different floors (380 GB/s: n2; 440 GB/s: n1): each host is judged against its own"
    first, = out["n1"]
    assert (first["status"], first["expected"]) == (FAIL, 440.0)
    assert first["message"] == ("all_reduce_perf over n1, n2: busbw 400 GB/s at 8 GiB, below the two-node published "
                                "floor 440 GB/s" + differ)
    second, = out["n2"]
    assert (second["status"], second["expected"]) == (PASS, 380.0)
    assert second["message"] == ("all_reduce_perf over n1, n2: busbw 400 GB/s at 8 GiB, at or above the two-node "
                                 "published floor 380 GB/s" + differ)
    assert second["threshold_source"] == "gpufleet_profile_overrides (replaces the profile's value)"


@pytest.mark.parametrize("nodes, message", [
    (1, "a node count of 2 or more (got 1); leave it out for every node count"),
    ("two", "a node count of 2 or more (got 'two'); leave it out for every node count"),
])
def test_a_multi_node_floor_node_count_is_refused_when_it_is_not_one(nodes, message):
    from gpufleet.checks.profiles import ProfileError, apply_overrides  # pylint: disable=import-outside-toplevel

    with pytest.raises(ProfileError) as caught:
        apply_overrides(profile(), {"thresholds": {"allreduce_multi_node": {"floor": "380 GB/s", "nodes": nodes}}})
    assert "thresholds.allreduce_multi_node.nodes" in str(caught.value) and message in str(caught.value)
