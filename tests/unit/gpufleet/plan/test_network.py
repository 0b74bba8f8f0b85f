# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""network_plan: iperf3 ring and rounds, rack grouping, perftest plan, exact argv of every tool, and the filters over them
(hand-written expectations)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.acceptance.plugins.filter import network_plan as filters
from gpufleet.plan import network as plan


def pairs(runs):
    return [(run["round"], run["client"], run["server"], run["port"]) for run in runs]


def rounds_of(runs):
    """``[[run, ...], ...]`` grouped by ``round`` in order."""
    out = {}
    for run in runs:
        out.setdefault(run["round"], []).append(run)
    return [out[key] for key in sorted(out)]


def test_ring_rounds_even_odd_and_two():
    assert plan.ring_rounds(["h1", "h2", "h3", "h4"]) == [[("h1", "h2"), ("h3", "h4")], [("h2", "h3"), ("h4", "h1")]]
    assert plan.ring_rounds(["h1", "h2", "h3"]) == [[("h1", "h2")], [("h2", "h3")], [("h3", "h1")]]
    assert plan.ring_rounds(["h1", "h2", "h3", "h4", "h5"]) == [[("h1", "h2"), ("h3", "h4")], [("h2", "h3"), ("h4", "h5")], [("h5", "h1")]]
    assert plan.ring_rounds(["h1", "h2"]) == [[("h1", "h2")], [("h2", "h1")]]
    assert plan.ring_rounds(["h1"]) == [] and plan.ring_rounds(["h1", "h1"]) == []


def test_alone_is_the_ring_two_partners_per_host_recorded_on_the_client():
    runs = plan.iperf3_alone(["h1", "h2", "h3", "h4"])
    assert pairs(runs) == [(0, "h1", "h2", 5201), (0, "h3", "h4", 5202), (1, "h2", "h3", 5201), (1, "h4", "h1", 5202)]
    assert [run["record_host"] for run in runs] == ["h1", "h3", "h2", "h4"]
    assert runs[0]["hosts"] == ["h1", "h2"] and runs[0]["mode"] == "alone" and runs[0]["group"] is None
    for batch in rounds_of(runs):
        used = [host for run in batch for host in (run["client"], run["server"])]
        assert len(used) == len(set(used))
    for host in ("h1", "h2", "h3", "h4"):
        partners = {run["server"] if run["client"] == host else run["client"] for run in runs if host in run["hosts"]}
        assert len(partners) == 2


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


TOPOLOGY = {"nearest_nic": {"GPU0": {"devices": ["mlx5_0"]}, "GPU1": {"devices": ["mlx5_1", "mlx5_2"]}, "GPU10": {"devices": ["mlx5_9"]}}}


def test_cuda_device_nearest_gpu_else_index():
    assert plan.cuda_device_for("mlx5_1", 0, TOPOLOGY) == 1
    assert plan.cuda_device_for("mlx5_9", 0, TOPOLOGY) == 10
    assert plan.cuda_device_for("mlx5_5", 5, TOPOLOGY, gpu_count=4) == 1
    assert plan.cuda_device_for("mlx5_5", 5) == 0


def test_perftest_plan_ring_rails_cuda_and_skips():
    rail0 = {"hca": "mlx5_0", "port": 1, "link_layer": "InfiniBand", "gid_index": None}
    rail1 = {"hca": "mlx5_1", "port": 1, "link_layer": "InfiniBand", "gid_index": None}
    info = {"a": {"rails": [rail0, rail1], "address": "10.0.0.1", "cuda": True, "topology": TOPOLOGY},
            "b": {"rails": [rail0], "address": "10.0.0.2", "cuda": False},
            "c": {"rails": [rail1], "address": "10.0.0.3", "cuda": True, "gpu_count": 8},
            "d": {"rails": [], "address": "10.0.0.4"}}
    out = plan.perftest_plan(["a", "b", "c", "d"], info)
    assert out["skipped"] == {"d": "no active RDMA rail in this host's NIC facts (gpufleet_nic.rdma, restricted by NCCL_IB_HCA)"}
    assert [(run["round"], run["client"], run["server"], run["record_host"]) for run in out["runs"]] == [
        (0, "a", "b", "a"), (1, "b", "c", "b"), (2, "c", "a", "c")]
    first = out["runs"][0]["rails"]
    assert len(first) == 1  # a has two rails, b one: the first min(2, 1) are paired
    assert first[0]["label"] == "mlx5_0->mlx5_0" and first[0]["client_cuda"] == 0 and first[0]["server_cuda"] is None
    assert first[0]["client_argv"] == ["ib_write_bw", "-d", "mlx5_0", "--report_gbits", "-s", "8388608", "-F", "-p", "18515",
                                       "--use_cuda", "0", "10.0.0.2"]
    assert first[0]["server_argv"] == ["ib_write_bw", "-d", "mlx5_0", "--report_gbits", "-s", "8388608", "-F", "-p", "18515"]
    last = out["runs"][2]["rails"][0]
    assert (last["client_hca"], last["server_hca"], last["client_cuda"], last["server_cuda"]) == ("mlx5_1", "mlx5_0", 0, 0)
    lat = plan.perftest_plan(["a", "b"], info, tool="ib_write_lat", path="/opt/perftest/ib_write_lat")
    assert lat["runs"][0]["rails"][0]["client_argv"] == ["/opt/perftest/ib_write_lat", "-d", "mlx5_0", "-n", "10000", "-s", "8", "-F", "-p",
                                                         "18515", "10.0.0.2"]
    alone = plan.perftest_plan(["a", "d"], info)
    assert alone["runs"] == [] and alone["skipped"]["a"] == "no other host with an active RDMA rail to pair with"
    with pytest.raises(plan.PlanError):
        plan.perftest_plan(["a"], info, tool="ib_send_bw")


def test_gpudirect_only_with_a_cuda_build():
    assert plan.perftest_has_cuda("      --use_cuda=<cuda device id> Use CUDA specific device for GPUDirect RDMA testing")
    assert not plan.perftest_has_cuda(" -d, --ib-dev=<dev>  Use IB device <dev>")


def test_nvbandwidth_argv():
    assert plan.nvbandwidth_argv() == ["nvbandwidth", "-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce",
                                       "device_to_device_memcpy_write_ce"]
    with pytest.raises(plan.PlanError):
        plan.nvbandwidth_argv(["x; rm -rf /"])


def test_filters_read_only_the_plan_vars_and_cut_rounds_to_the_forks():
    hostvars = {h: {"gpufleet_rack": r, "ansible_host": "10.0.0.%d" % i, "unrelated": "{{ undefined_var }}"}
                for i, (h, r) in enumerate((("h1", "A"), ("h2", "A"), ("h3", "B"), ("h4", "B"), ("h5", "B"), ("h6", "A")), 1)}
    assert filters.rack_groups(["h1", "h2", "h3", "h4"], hostvars) == {"A": ["h1", "h2"], "B": ["h3", "h4"]}
    runs = filters.network_plan(["h1", "h2", "h3", "h4", "h5", "h6"], hostvars=hostvars, streams=2, seconds=4, omit=1, forks=5)
    # the ring's two rounds of three runs each, cut to forks // 2 = 2 runs: four rounds
    assert [(run["round"], run["client"], run["server"]) for run in runs] == [
        (0, "h1", "h2"), (0, "h3", "h4"), (1, "h5", "h6"), (2, "h2", "h3"), (2, "h4", "h5"), (3, "h6", "h1")]
    assert runs[0]["client_argv"] == ["iperf3", "-c", "10.0.0.2", "-P", "2", "-t", "4", "-O", "1", "--json", "-p", "5201"]
    with pytest.raises(AnsibleFilterError, match="at least two racks"):
        filters.network_plan(["h1", "h2"], mode="concurrent", hostvars=hostvars)
    with pytest.raises(AnsibleFilterError, match="ib_write_bw or ib_write_lat"):
        filters.perftest_plan(["h1"], {}, tool="ib_read_bw")
    assert filters.nvbandwidth_argv([], tool="/opt/nvb") == [
        "/opt/nvb", "-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_write_ce"]
