# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report/model.py on the hand-built results directory of conftest.py (expected values by hand)."""

from __future__ import annotations

import os

import pytest

from gpufleet.report.cost import cost_view
from gpufleet.report.model import (
    ReportError,
    build_model,
    load_profile_thresholds,
    load_results,
)
from gpufleet.results.store import RunDir


def _model(path):
    return build_model(load_results(path), profiles=load_profile_thresholds())


def test_nodes_failing_first_with_their_reasons(small_run):
    model = _model(small_run)
    assert [node["host"] for node in model["nodes"]] == ["bravo", "delta", "charlie", "alpha"]
    assert [node["verdict"] for node in model["nodes"]] == ["REJECT", "UNREACHABLE", "ACCEPT WITH WARNINGS", "ACCEPT"]
    assert [node["host"] for node in model["failing"]] == ["bravo", "delta"]
    bravo = model["nodes"][0]
    # fail before warn, passes are not reasons; measured, expected and source kept
    assert [(item["status"], item["id"]) for item in bravo["reasons"]] == [("fail", "benchmark.allreduce_single_node"), ("warn", "gpu.consistency")]
    assert bravo["reasons"][0]["measured"] == "476.72" and bravo["reasons"][0]["expected"] == "480" and bravo["reasons"][0]["source"] == "claim"
    assert model["nodes"][1]["unreachable"] == "ssh: connect to host delta port 22: Connection refused"
    assert model["fleet"]["verdict"] == "REJECT"
    counts = {item["verdict"]: item["count"] for item in model["fleet"]["counts"]}
    assert counts == {"REJECT": 1, "UNREACHABLE": 1, "INCOMPLETE": 0, "ACCEPT WITH WARNINGS": 1, "ACCEPT": 1}


def test_topology_fingerprints_group_identical_matrices(small_run):
    groups = _model(small_run)["topology_groups"]
    assert [group["hosts"] for group in groups] == [["bravo", "alpha"], ["charlie"]]
    assert groups[0]["majority"] and not groups[1]["majority"]
    assert groups[0]["fingerprint"] != groups[1]["fingerprint"]
    # the H100 recording: NV18 between every pair of 8 GPUs, coloured as NVLink
    first = groups[0]
    assert first["names"][:8] == ["GPU%d" % index for index in range(8)]
    assert first["rows"][0]["cells"][1] == {"code": "NV18", "css": "l-nv"}
    assert first["rows"][0]["cells"][0] == {"code": "X", "css": "l-self"}


def test_gpu_values_unlike_the_majority_are_flagged(small_run):
    model = _model(small_run)
    # 16 H100 GPUs, 15 with the recorded VBIOS 96.00.74.00.0D and bravo's GPU3 edited: only that one is flagged
    assert model["gpu_flagged"] == [{"host": "bravo", "gpu": "3", "field": "vbios_version", "value": "96.00.99.00.01",
                                     "majority": "96.00.74.00.0D", "scope": "fleet"}]
    bravo = model["nodes"][0]
    vbios_column = model["gpu_columns"].index("VBIOS")
    assert [row[vbios_column].flag for row in bravo["gpu_rows"]] == [False, False, False, True, False, False, False, False]
    assert bravo["flagged"] == 1


def test_a_tie_has_no_majority_and_flags_both_sides(small_run):
    run = RunDir.open(small_run)
    record = run.read_host("alpha")
    for gpu in record["facts"]["gpu"]["gpus"][4:]:
        gpu["pcie_link_width_current"] = 8  # SYNTHETIC: half of alpha's GPUs at x8
    run.write_host(record)
    flagged = [item for item in _model(small_run)["gpu_flagged"] if item["field"] == "pcie_link_width_current"]
    assert [(item["host"], item["gpu"], item["scope"]) for item in flagged] == [("alpha", str(index), "node") for index in range(8)]
    assert flagged[0]["majority"] == "no majority: 16 / 8"


def test_cost_view_ranks_the_accepted_node_only(small_run):
    cost = _model(small_run)["cost"]
    # alpha (ACCEPT, 23.5 $/h) is the one offer; bravo is cheaper (20.0 $/h) but REJECTed: listed apart, never ranked;
    # charlie claims no price; delta is unreachable
    assert cost["available"] and [row["hosts"] for row in cost["rows"]] == [["alpha"]]
    assert cost["unpriced"] == ["charlie"]
    apart = [(item["host"], item["verdict"]) for item in cost["not_offers"]]
    assert apart == [("bravo", "REJECT"), ("delta", "UNREACHABLE")]
    assert cost["not_offers"][0]["reason"] == "busbw 476.72 GB/s, expected >= 480"
    inputs = cost["rows"][0]["inputs"]
    # alpha's all-reduce record: its curve, measured; its GPUs (the H100 recording): 81,559 MiB = 85.52 GB each
    intra = inputs["intra_node_busbw_gbs"]
    assert intra["kind"] == "measured" and max(intra["value"])[1] == 476.72
    assert inputs["gpu_memory_gb"]["value"] == 85.52 and inputs["nvlink_domain_gpus"]["value"] == 8
    # the claim names no NIC and no multi-node run was measured: 70B, which needs several nodes, is not costed
    assert cost["rows"][0]["cells"][0]["feasible"] and not cost["rows"][0]["cells"][1]["feasible"]
    assert "no inter-node busbw measured or claimed" in cost["rows"][0]["cells"][1]["reason"]


def test_cost_view_absent_without_a_price(small_run):
    results = load_results(small_run)
    model = build_model(results)
    assert model["benchmarks"]["pairwise"] is None and model["benchmarks"]["iperf"] is None
    for record in results["hosts"].values():
        record["claim"] = None
    assert cost_view(list(results["hosts"].values())) is None


def test_single_node_chart_floor_from_the_check_else_the_profile(small_run):
    chart = _model(small_run)["benchmarks"]["single"]
    bars = {item["label"]: item for item in chart["bars"]}
    assert [item["label"] for item in chart["bars"]] == ["bravo", "alpha"]  # below its floor first
    assert bars["bravo"]["floor"] == "480.0 GB/s" and bars["bravo"]["css"] == "bar-bad"
    assert bars["alpha"]["floor"] == "460.0 GB/s" and bars["alpha"]["css"] == "bar-ok"  # gpufleet/profiles/hgx-h100-8.yml
    assert bars["alpha"]["value"] == "476.7 GB/s"
    assert any(source.startswith("profile hgx-h100-8: docs/baselines.md 3a") for source in chart["sources"])


def test_pairwise_heatmap_and_iperf_alone_vs_concurrent(small_run):
    results = load_results(small_run)
    pair = {"name": "all_reduce_perf pair", "parsed": {"hosts": ["alpha", "charlie"], "ranks": 16, "busbw_at_largest_size_gbs": 100.0, "failed": False}}
    slow = {"name": "all_reduce_perf pair", "parsed": {"hosts": ["bravo", "alpha"], "ranks": 16, "busbw_at_largest_size_gbs": 50.0, "failed": False}}
    alone = {"name": "iperf3 charlie", "environment": {}, "parsed": {"received_bps": 9.4e9, "remote_host": "charlie"}}
    busy = {"name": "iperf3 charlie concurrent", "environment": {}, "parsed": {"received_bps": 4.7e9, "remote_host": "charlie"}}
    results["hosts"]["alpha"]["benchmarks"] = [pair, alone, busy]
    results["hosts"]["bravo"]["benchmarks"] = [slow]
    views = build_model(results)["benchmarks"]
    heat = views["pairwise"]
    assert heat["hosts"] == ["alpha", "bravo", "charlie"]
    cells = {(row["host"], views["pairwise"]["hosts"][index]): cell for row in heat["rows"] for index, cell in enumerate(row["cells"])}
    assert cells[("alpha", "charlie")]["value"] == "100" and cells[("charlie", "alpha")]["value"] == "100"
    assert cells[("alpha", "bravo")]["css"] == "h-bad"  # 50 < 0.9 * median 100
    assert cells[("bravo", "charlie")]["css"] == "h-none"
    assert views["iperf_ratios"] == [{"host": "alpha", "peer": "charlie", "alone": "9.40 Gb/s", "concurrent": "4.70 Gb/s", "ratio": "0.50"}]


def test_claim_beside_measurement(small_run):
    alpha = [node for node in _model(small_run)["nodes"] if node["host"] == "alpha"][0]
    rows = {row["key"]: row for row in alpha["claim_rows"]}
    assert rows["gpu_count"] == {"key": "gpu_count", "claimed": "8", "measured": "8", "status": "pass"}
    assert rows["price_per_node_hour"]["claimed"] == "23.5"


def test_unfinished_run_and_foreign_directories(small_run, tmp_path):
    RunDir.open(small_run).update_run(status="running", finished=None)
    os.unlink(os.path.join(small_run, "fleet.json"))
    model = _model(small_run)
    assert model["fleet"]["verdict"] == "NOT JUDGED" and "interrupted" in model["fleet"]["note"]
    assert {item["verdict"]: item["count"] for item in model["fleet"]["counts"]}["REJECT"] == 1
    with pytest.raises(ReportError, match="not a gpufleet results directory"):
        load_results(str(tmp_path))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "run.json").write_text('{"schema": "someone-else/v9"}')
    with pytest.raises(ReportError, match="someone-else/v9"):
        load_results(str(tmp_path / "other"))
    # a fleet.json that is there but holds no fleet document is refused, not read as a run still going
    with open(os.path.join(small_run, "fleet.json"), "w", encoding="utf-8") as handle:
        handle.write("null")
    with pytest.raises(ReportError, match="fleet.json: schema None, this gpufleet reads"):
        load_results(small_run)


def test_multi_node_runs_one_row_each_with_the_checks_floor(multi_run):
    views = _model(multi_run)["benchmarks"]
    assert views["multi_table"] == [
        {"hosts": "alpha, bravo", "first_host": "alpha", "nodes": 2, "ranks": 16, "size": "8 GiB",
         "busbw": "155.57 GB/s", "floor": "440 GB/s", "status": "fail"},
        {"hosts": "charlie, alpha, bravo", "first_host": "charlie", "nodes": 3, "ranks": 16, "size": "8 GiB",
         "busbw": "89.9 GB/s", "floor": "", "status": "not judged"},
    ]
    chart = views["multi"]
    assert [item["label"] for item in chart["bars"]] == ["alpha + 1 node", "charlie + 2 nodes"]
    below, unjudged = chart["bars"]
    assert below["value"] == "155.6 GB/s" and below["floor"] == "440.0 GB/s" and below["css"] == "bar-bad"
    assert unjudged["floor"] is None and unjudged["floor_x"] is None and unjudged["css"] == "bar-ok"
    assert chart["sources"] == ["docs/baselines.md 3b: two nodes 440 GB/s"]


def test_no_multi_node_run_no_multi_node_view(small_run):
    views = _model(small_run)["benchmarks"]
    assert views["multi"] is None and views["multi_table"] == []


def test_a_multi_node_run_that_fell_back_to_sockets_shows_its_failure_without_a_floor(multi_run):
    results = load_results(multi_run)
    for host in ("alpha", "bravo"):
        # as checks/benchmarks.py words a socket fallback on an RDMA node: no figure judged, no floor
        results["hosts"][host]["checks"][-1].update(
            measured="NET/Socket", expected="NET/IB", threshold_source=None,
            message="all_reduce_perf over alpha, bravo fell back to NET/Socket (busbw 155.57 GB/s not judged)")
    views = build_model(results)["benchmarks"]
    assert [(row["hosts"], row["floor"], row["status"]) for row in views["multi_table"]] == [
        ("alpha, bravo", "", "fail"), ("charlie, alpha, bravo", "", "not judged")]
