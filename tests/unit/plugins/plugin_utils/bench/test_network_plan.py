# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""network_plan: iperf3 pairs and rounds, rack grouping, exact argv of every tool (hand-written expectations)."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.bench import network_plan as plan


def pairs(runs):
    return [(run["round"], run["client"], run["server"], run["port"]) for run in runs]


def test_disjoint_pairs_even_and_odd():
    assert plan.disjoint_pairs(["h1", "h2", "h3", "h4"]) == [[("h1", "h2"), ("h3", "h4")]]
    assert plan.disjoint_pairs(["h1", "h2", "h3"]) == [[("h1", "h2")], [("h3", "h1")]]
    assert plan.disjoint_pairs(["h1"]) == []
    assert plan.disjoint_pairs(["h1", "h1", "h2"]) == [[("h1", "h2")]]


def test_alone_runs_both_directions_one_round_each_recorded_on_the_receiver():
    runs = plan.iperf3_alone(["h1", "h2", "h3", "h4"])
    assert pairs(runs) == [(0, "h1", "h2", 5201), (0, "h3", "h4", 5202), (1, "h2", "h1", 5201), (1, "h4", "h3", 5202)]
    assert [run["record_host"] for run in runs] == ["h2", "h4", "h1", "h3"]
    assert runs[0]["hosts"] == ["h1", "h2"] and runs[0]["mode"] == "alone" and runs[0]["group"] is None
    for batch in plan.rounds_of(runs):
        used = [host for run in batch for host in (run["client"], run["server"])]
        assert len(used) == len(set(used))


def test_rack_labels_claim_first():
    hostvars = {"h1": {"gpufleet_claim": {"rack": "A"}, "gpufleet_rack": "Z"}, "h2": {"gpufleet_rack": "A"},
                "h3": {"gpufleet_claim": {"rack": None}, "gpufleet_rack": "B"}, "h4": {"gpufleet_rack": "B"}, "h5": {}}
    assert plan.rack_of(hostvars["h1"]) == "A"
    assert plan.group_by_rack(["h1", "h2", "h3", "h4", "h5"], hostvars) == {"A": ["h1", "h2"], "B": ["h3", "h4"]}


def test_concurrent_pairs_cross_racks_all_at_once():
    hostvars = {"h1": {"gpufleet_rack": "A"}, "h2": {"gpufleet_rack": "A"}, "h3": {"gpufleet_rack": "B"}, "h4": {"gpufleet_rack": "B"}}
    runs = plan.iperf3_concurrent(["h1", "h2", "h3", "h4"], hostvars)
    assert pairs(runs) == [(0, "h1", "h3", 5201), (0, "h2", "h4", 5202), (1, "h3", "h1", 5201), (1, "h4", "h2", 5202)]
    assert {run["group"] for run in runs} == {"A<->B"}
    assert {run["mode"] for run in runs} == {"concurrent"}


def test_three_racks_one_round_pair_per_rack_pair_and_direction():
    hostvars = {h: {"gpufleet_rack": r} for h, r in (("a1", "A"), ("b1", "B"), ("c1", "C"))}
    runs = plan.iperf3_concurrent(["a1", "b1", "c1"], hostvars)
    assert [(run["round"], run["group"], run["client"], run["server"]) for run in runs] == [
        (0, "A<->B", "a1", "b1"), (1, "A<->B", "b1", "a1"), (2, "A<->C", "a1", "c1"), (3, "A<->C", "c1", "a1"),
        (4, "B<->C", "b1", "c1"), (5, "B<->C", "c1", "b1")]


def test_concurrent_needs_two_racks():
    with pytest.raises(plan.PlanError, match="at least two racks"):
        plan.iperf3_concurrent(["h1", "h2"], {"h1": {"gpufleet_rack": "A"}, "h2": {"gpufleet_rack": "A"}})


def test_iperf3_argv_exact():
    assert plan.iperf3_server_argv(5202) == ["iperf3", "-s", "-p", "5202", "-1"]
    assert plan.iperf3_client_argv("10.0.0.2", 5202, streams=8, seconds=60, omit=3) == [
        "iperf3", "-c", "10.0.0.2", "-P", "8", "-t", "60", "-O", "3", "--json", "-p", "5202"]
    assert plan.iperf3_client_argv("h2", 5201, 4, 3, 1, iperf3="/opt/iperf3")[0] == "/opt/iperf3"
    with pytest.raises(plan.PlanError):
        plan.iperf3_client_argv("-oProxyCommand=x", 5201)
    with pytest.raises(plan.PlanError):
        plan.iperf3_client_argv("h2", 5201, streams=0)


NIC = {"rdma": [
    {"device": "mlx5_0", "ports": [{"port": 1, "state": "Active", "link_layer": "InfiniBand", "gids": []}]},
    {"device": "mlx5_1", "ports": [{"port": 1, "state": "Active", "link_layer": "Ethernet", "gids": [
        {"index": 0, "gid": "fe80:0000:0000:0000:0000:0000:0000:0001", "type": "IB/RoCE v1"},
        {"index": 1, "gid": "fe80:0000:0000:0000:0000:0000:0000:0001", "type": "RoCE v2"},
        {"index": 3, "gid": "0000:0000:0000:0000:0000:ffff:0a00:0002", "type": "RoCE v2"}]}]},
    {"device": "mlx5_2", "ports": [{"port": 1, "state": "Down", "link_layer": "InfiniBand"}]},
    {"device": "mlx5_bond_0", "ports": [{"port": 1, "state": "Active", "link_layer": "Ethernet", "gids": []}]},
]}


def test_rail_hcas_from_facts_and_nccl_ib_hca():
    assert [h["hca"] for h in plan.rail_hcas(NIC)] == ["mlx5_0", "mlx5_1", "mlx5_bond_0"]
    assert [h["hca"] for h in plan.rail_hcas(NIC, "mlx5_0,mlx5_1")] == ["mlx5_0", "mlx5_1"]
    assert [h["hca"] for h in plan.rail_hcas(NIC, "mlx5")] == ["mlx5_0", "mlx5_1", "mlx5_bond_0"]  # prefix match, as NCCL
    assert [h["hca"] for h in plan.rail_hcas(NIC, "=mlx5_0,mlx5_1")] == ["mlx5_0", "mlx5_1"]
    assert [h["hca"] for h in plan.rail_hcas(NIC, "^mlx5_bond")] == ["mlx5_0", "mlx5_1"]
    rails = {h["hca"]: h for h in plan.rail_hcas(NIC)}
    assert rails["mlx5_0"]["gid_index"] is None  # InfiniBand: no -x
    assert rails["mlx5_1"]["gid_index"] == 3  # the RoCE v2 GID of an IPv4 address


def test_perftest_argv_exact():
    hca = {"hca": "mlx5_1", "port": 1, "link_layer": "Ethernet", "gid_index": 3}
    assert plan.ib_write_bw_argv(hca, 18515, gid_index=3) == [
        "ib_write_bw", "-d", "mlx5_1", "-x", "3", "--report_gbits", "-s", "8388608", "-F", "-p", "18515"]
    assert plan.ib_write_bw_argv(hca, 18516, gid_index=3, cuda_device=2, server_address="10.0.0.2") == [
        "ib_write_bw", "-d", "mlx5_1", "-x", "3", "--report_gbits", "-s", "8388608", "-F", "-p", "18516", "--use_cuda", "2", "10.0.0.2"]
    assert plan.ib_write_lat_argv({"hca": "mlx5_0", "port": 2}, 18515, server_address="h2") == [
        "ib_write_lat", "-d", "mlx5_0", "-i", "2", "-n", "10000", "-s", "8", "-F", "-p", "18515", "h2"]
    assert plan.perftest_pairs(["a0", "a1"], ["b0", "b1", "b2"]) == [
        {"client": "a0", "server": "b0", "port": 18515}, {"client": "a1", "server": "b1", "port": 18516}]


def test_gpudirect_only_with_a_cuda_build():
    assert plan.perftest_has_cuda("      --use_cuda=<cuda device id> Use CUDA specific device for GPUDirect RDMA testing")
    assert not plan.perftest_has_cuda(" -d, --ib-dev=<dev>  Use IB device <dev>")


def test_nvbandwidth_argv():
    assert plan.nvbandwidth_argv() == ["nvbandwidth", "-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce",
                                       "device_to_device_memcpy_write_ce"]
    with pytest.raises(plan.PlanError):
        plan.nvbandwidth_argv(["x; rm -rf /"])
