# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl_env: NCCL's list-matching rules and the fleet-wide derivation of NCCL networking.

NIC facts are built with gpufleet.facts.nic's pure builders from the RECORDED tool outputs under
tests/fixtures/ib/ and tests/fixtures/ethtool/ and the synthetic sysfs trees of
tests/fixtures/sysfs/ (each README names its recordings). Expected values are read by hand from
those recordings. Facts labelled SYNTHETIC below (EFA, gVNIC, GID tables, a peer on another
subnet) exist in no recording and are written here to exercise logic only.
"""

from __future__ import annotations

import copy
import os
import sys

import pytest

from ansible_collections.gpufleet.acceptance.plugins.modules import nic_facts
from gpufleet.plan import nccl_env
from gpufleet.facts import nic as inv
from gpufleet.parsers.registry import parse

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs"))

import render_tree  # noqa: E402  pylint: disable=import-error,wrong-import-position

IB_3DOWN = "ib/gpud-ibstat-h100-ndr-ib-3ports-down-disabled.txt"
IB_BOND = "ib/gpud-ibstat-h100-8x-ndr400-ib-plus-bf3-bond-roce200-SPACES.txt"
ROCE_400 = "ib/gpud-ibstat-h100-8xcx7-roce400-4xcx6dx-100g-all-active.txt"
AZURE_H200 = "ib/azure-nd-h200-v5-ibv_devinfo-8x-ndr-vf-plus-an0-ethernet.txt"
SPARK = "ib/dgx-spark-gb10-cx7-roce-ibv_devinfo-2up-2down.txt"
MLX4_DOWN = "ib/ibstat-mlx4-dualport-ib-polling-eth-disabled.txt"
DESKTOP_IP = "ethtool/ip-j-addr-desktop-lo-enp8s0-docker-bridge-NO-CARRIER.json.txt"

# The 8 ConnectX-7 NDR rails of the 12-CA recordings (the 4 CX-6 Dx are mlx5_1, 2, 7, 8).
TWELVE_CA_RAILS = "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1"


# --- NCCL's matching rules -------------------------------------------------------------------

IFACES = ["eth1", "eth10", "eth2", "ib0"]
HCAS = [("mlx5_1", 1), ("mlx5_10", 1), ("mlx5_11", 1), ("mlx5_2", 1), ("mlx5_2", 2)]


@pytest.mark.parametrize(
    "spec, names, expected",
    [
        ("eth1", IFACES, ["eth1", "eth10"]),  # prefix: the eth1/eth10 trap
        ("=eth1", IFACES, ["eth1"]),
        ("^eth1", IFACES, ["eth2", "ib0"]),  # excludes eth10 too (prefix)
        ("^=eth1", IFACES, ["eth10", "eth2", "ib0"]),
        ("=eth1,eth2", IFACES, ["eth1", "eth2"]),  # "=" applies to the whole list
        ("eth1,=eth2", IFACES, ["eth1", "eth10"]),  # "=" mid-list is part of a name that matches nothing
        ("=^eth1", IFACES, []),  # "^" after "=" is part of the name
        ("eth,ib", IFACES, ["eth1", "eth10", "eth2", "ib0"]),
        ("eth1:1", IFACES, ["eth1", "eth10"]),  # an interface has no port: any port matches
        ("", IFACES, IFACES),  # empty list: everything, as NCCL
        ("^", IFACES, []),
        ("eth1, eth2", IFACES, ["eth1", "eth10"]),  # nothing is trimmed: " eth2" matches nothing
        ("mlx5_1", HCAS, [("mlx5_1", 1), ("mlx5_10", 1), ("mlx5_11", 1)]),  # the mlx5_1/mlx5_10 trap
        ("=mlx5_1", HCAS, [("mlx5_1", 1)]),
        ("=mlx5_1:1", HCAS, [("mlx5_1", 1)]),
        ("=mlx5_1:2", HCAS, []),
        ("mlx5_2:2", HCAS, [("mlx5_2", 2)]),
        ("=mlx5_2", HCAS, [("mlx5_2", 1), ("mlx5_2", 2)]),  # no port: every port of the device
        ("^mlx5_1", HCAS, [("mlx5_2", 1), ("mlx5_2", 2)]),
        ("^=mlx5_1:1,mlx5_2:2", HCAS, [("mlx5_10", 1), ("mlx5_11", 1), ("mlx5_2", 1)]),
        ("=mlx5_10:1,mlx5_11:1", HCAS, [("mlx5_10", 1), ("mlx5_11", 1)]),
    ],
)
def test_matches_follows_nccl_rules(spec, names, expected):
    assert nccl_env.matches(spec, names) == expected


def test_parse_spec():
    assert nccl_env.parse_spec("^=mlx5_0:1,mlx5_3") == (True, True, [("mlx5_0", 1), ("mlx5_3", -1)])
    assert nccl_env.parse_spec("mlx5_0:x,,:2") == (False, False, [("mlx5_0", 0)])  # atoi("x") is 0; an empty name is dropped
    assert nccl_env.parse_spec(None) == (False, False, [])
    assert nccl_env.exact_list(["eth1"]) == "=eth1"


def test_version_tuple():
    assert nccl_env.version_tuple("2.18.3") == (2, 18, 3)
    assert nccl_env.version_tuple("2.21") == (2, 21, 0)
    assert nccl_env.version_tuple("unknown") is None
    assert nccl_env.version_tuple(None) is None


# --- facts from recordings -------------------------------------------------------------------


def _sysfs(name, tmp_path):
    root = render_tree.render(os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs", name), str(tmp_path / ("root-" + name)))
    return {"net": nic_facts.read_net(root), "infiniband": nic_facts.read_infiniband(root)}


def _empty():
    return {"net": [], "infiniband": []}


def _fleet(nic, hosts=("node-a", "node-b"), version=None, claim=None):
    return {host: {"nic": copy.deepcopy(nic), "nccl_version": version, "claim": claim} for host in hosts}


def _ports(nic):
    return [(dev["device"], port["port"]) for dev in nic["rdma"] for port in dev["ports"]]


def test_ib_ndr_with_down_ports_and_prefix_traps(tmp_path, fixture_text):
    # 12 CAs: 8 CX-7 400 InfiniBand Active, mlx5_1 CX-6 Dx 100 Ethernet Active, mlx5_2/7/8 Down/Disabled.
    nic = inv.build_nic_facts(_sysfs("h100-12ca-3down", tmp_path), ibstat=parse("ibstat", fixture_text(IB_3DOWN)))
    out = nccl_env.derive(_fleet(nic))
    node = out["hosts"]["node-a"]
    assert node["env"]["NCCL_IB_DISABLE"] == "0"
    assert node["env"]["NCCL_IB_HCA"] == TWELVE_CA_RAILS
    assert node["fabric"] == "ib" and "NCCL_IB_GID_INDEX" not in node["env"]
    assert node["excluded"] == {
        "mlx5_1:1": "100 Gb/s Ethernet, the compute rails are 400 Gb/s InfiniBand: storage/front-end",
        "mlx5_2:1": "Down / Disabled",
        "mlx5_7:1": "Down / Disabled",
        "mlx5_8:1": "Down / Disabled",
    }
    # The exact list selects the 8 rails and nothing else; a prefix "mlx5_1" would also take mlx5_10/11.
    ports = _ports(nic)
    assert sorted(nccl_env.matches(node["env"]["NCCL_IB_HCA"], ports)) == sorted(
        [("mlx5_0", 1), ("mlx5_3", 1), ("mlx5_4", 1), ("mlx5_5", 1), ("mlx5_6", 1), ("mlx5_9", 1), ("mlx5_10", 1), ("mlx5_11", 1)])
    assert nccl_env.matches("mlx5_1", ports) == [("mlx5_1", 1), ("mlx5_10", 1), ("mlx5_11", 1)]
    # Its sysfs tree holds only lo (interfaces were not recorded): no socket interface, said per node.
    assert out["problems"] == ["node-a: no up interface NCCL could bootstrap over; left out: lo (loopback)",
                               "node-b: no up interface NCCL could bootstrap over; left out: lo (loopback)"]
    assert "NCCL_SOCKET_IFNAME" not in node["env"]


def test_claim_decides_the_rails(tmp_path, fixture_text):
    nic = inv.build_nic_facts(_sysfs("h100-12ca-3down", tmp_path), ibstat=parse("ibstat", fixture_text(IB_3DOWN)))
    ib = nccl_env.derive(_fleet(nic, claim={"nics": [{"role": "compute", "type": "ib", "count": 8, "gbps": 400}]}))
    assert ib["hosts"]["node-a"]["env"]["NCCL_IB_HCA"] == TWELVE_CA_RAILS
    assert "rails by the claim's compute NICs" in ib["hosts"]["node-a"]["why"]["NCCL_IB_HCA"]
    # A claim whose compute network is RoCE at 100 Gb/s makes the CX-6 Dx port the rail.
    roce = nccl_env.derive(_fleet(nic, claim={"nics": [{"role": "compute", "type": "roce", "count": 1, "gbps": 100}]}))
    assert roce["hosts"]["node-a"]["env"]["NCCL_IB_HCA"] == "=mlx5_1:1"
    assert roce["hosts"]["node-a"]["fabric"] == "roce"
    # Ethernet-only compute claim: no RDMA rail, IB off.
    eth = nccl_env.derive(_fleet(nic, claim={"nics": [{"role": "compute", "type": "ethernet", "count": 2, "gbps": 100}]}))
    assert eth["hosts"]["node-a"]["env"]["NCCL_IB_DISABLE"] == "1" and "NCCL_IB_HCA" not in eth["hosts"]["node-a"]["env"]


def test_ib_plus_roce_storage_bond(tmp_path, fixture_text):
    # 8x CX-7 400 InfiniBand (mlx5_0, 1, 4-9) + mlx5_bond_0 BlueField-3 200 Ethernet, all Active.
    nic = inv.build_nic_facts(_sysfs("h100-ndr-ib", tmp_path), ibstat=parse("ibstat", fixture_text(IB_BOND)))
    out = nccl_env.derive(_fleet(nic))
    assert out["problems"] == []
    node = out["hosts"]["node-b"]
    assert node["env"] == {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_8:1,mlx5_9:1",
                           "NCCL_SOCKET_IFNAME": "=ibp26s0"}
    assert node["excluded"] == {"mlx5_bond_0:1": "a bond (front-end/storage), never a compute rail"}
    # No `ip` recording for this machine: the fastest up interface (IPoIB, 400000 Mb/s; ibp26s0 first by
    # name), with a warning that its subnet was not verified; enp1s0f1 is down.
    assert node["why"]["NCCL_SOCKET_IFNAME"].startswith("ibp26s0: the fastest up interface (400000 Mb/s); its subnet was not verified")
    assert "enp1s0f1 (not up (operstate down))" in node["why"]["NCCL_SOCKET_IFNAME"]
    assert any(warning.startswith("NCCL_SOCKET_IFNAME: ibp26s0 chosen without checking its subnet") for warning in node["warnings"])


def test_roce_rails_and_storage_by_rate(fixture_text):
    # 8x CX-7 400 Ethernet + 4x CX-6 Dx 100 Ethernet (mlx5_1, 2, 7, 8), all Active; no GID table recorded.
    nic = inv.build_nic_facts(_empty(), ibstat=parse("ibstat", fixture_text(ROCE_400)))
    out = nccl_env.derive(_fleet(nic, version="2.18.3"), overrides={"NCCL_SOCKET_IFNAME": None})
    node = out["hosts"]["node-a"]
    assert node["fabric"] == "roce"
    assert node["env"]["NCCL_IB_HCA"] == TWELVE_CA_RAILS
    assert sorted(node["excluded"]) == ["mlx5_1:1", "mlx5_2:1", "mlx5_7:1", "mlx5_8:1"]
    assert node["excluded"]["mlx5_7:1"] == "100 Gb/s Ethernet, the compute rails are 400 Gb/s Ethernet: storage/front-end"
    # NCCL 2.18 predates automatic GID selection, but no GID table was read: nothing guessed, a warning.
    assert "NCCL_IB_GID_INDEX" not in node["env"]
    assert node["why"]["NCCL_IB_GID_INDEX"].startswith("not set: NCCL 2.18.3 predates automatic GID selection (2.21)")
    assert any(warning.startswith("NCCL_IB_GID_INDEX not chosen") for warning in node["warnings"])
    # An override of null removes a variable and no socket problem is raised for it.
    assert out["problems"] == [] and node["why"]["NCCL_SOCKET_IFNAME"] == "removed by override"


def _with_gids(nic, tables):
    """SYNTHETIC GID tables on the rail ports (no GID table has been recorded)."""
    nic = copy.deepcopy(nic)
    for dev in nic["rdma"]:
        for port in dev["ports"]:
            port["gids"] = tables(dev["device"])
    return nic


def _gid_table(device):
    suffix = "%04x" % (int(device.rsplit("_", 1)[1]) + 1)
    return [
        {"index": 0, "gid": "fe80:0000:0000:0000:0000:0000:0000:%s" % suffix, "type": "IB/RoCE v1", "netdev": None},
        {"index": 1, "gid": "fe80:0000:0000:0000:0000:0000:0000:%s" % suffix, "type": "RoCE v2", "netdev": None},
        {"index": 2, "gid": "0000:0000:0000:0000:0000:ffff:0a00:%s" % suffix, "type": "IB/RoCE v1", "netdev": None},
        {"index": 3, "gid": "0000:0000:0000:0000:0000:ffff:0a00:%s" % suffix, "type": "RoCE v2", "netdev": None},
    ]


def test_roce_gid_index_only_before_nccl_2_21(fixture_text):
    nic = _with_gids(inv.build_nic_facts(_empty(), ibstat=parse("ibstat", fixture_text(ROCE_400))), _gid_table)
    old = nccl_env.derive(_fleet(nic, version="2.18.3"), overrides={"NCCL_SOCKET_IFNAME": None})["hosts"]["node-a"]
    assert old["env"]["NCCL_IB_GID_INDEX"] == "3"
    assert old["why"]["NCCL_IB_GID_INDEX"].startswith("3: NCCL 2.18.3 predates automatic GID selection (2.21)")
    unknown = nccl_env.derive(_fleet(nic, version=None), overrides={"NCCL_SOCKET_IFNAME": None})["hosts"]["node-a"]
    assert unknown["env"]["NCCL_IB_GID_INDEX"] == "3"
    new = nccl_env.derive(_fleet(nic, version="2.21.5"), overrides={"NCCL_SOCKET_IFNAME": None})["hosts"]["node-a"]
    assert "NCCL_IB_GID_INDEX" not in new["env"]
    assert new["why"]["NCCL_IB_GID_INDEX"] == "not set: NCCL 2.21.5 selects the RoCE GID index itself (since 2.21)"
    # InfiniBand never gets a GID index, whatever the version.
    ib = inv.build_nic_facts(_empty(), ibstat=parse("ibstat", fixture_text(IB_BOND)))
    assert "NCCL_IB_GID_INDEX" not in nccl_env.derive(_fleet(ib, version="2.18.3"), overrides={"NCCL_SOCKET_IFNAME": None})["hosts"]["node-a"]["why"]


def test_dgx_spark_roce_two_up_two_down(tmp_path, fixture_text):
    nic = inv.build_nic_facts(_sysfs("dgx-spark-roce", tmp_path), ibv_devinfo=parse("ibv-devinfo", fixture_text(SPARK)))
    out = nccl_env.derive(_fleet(nic, version="2.21.5"))
    node = out["hosts"]["node-a"]
    assert out["problems"] == []
    assert node["fabric"] == "roce"
    assert node["env"]["NCCL_IB_HCA"] == "=roceP2p1s0f1:1,rocep1s0f1:1"
    assert node["excluded"] == {"roceP2p1s0f0:1": "Down", "rocep1s0f0:1": "Down"}
    # Both up CX-7 netdevs have unknown speed and no recorded address: the first by name, with a warning.
    assert node["env"]["NCCL_SOCKET_IFNAME"] == "=enP2p1s0f1np1"
    assert "NCCL_IB_GID_INDEX" not in node["env"]


def test_azure_h200_leaves_out_the_an0_management_device(fixture_text):
    nic = inv.build_nic_facts(_empty(), ibv_devinfo=parse("ibv-devinfo", fixture_text(AZURE_H200)))
    node = nccl_env.derive(_fleet(nic))["hosts"]["node-a"]
    assert node["env"]["NCCL_IB_HCA"] == "=mlx5_ib0:1,mlx5_ib1:1,mlx5_ib2:1,mlx5_ib3:1,mlx5_ib4:1,mlx5_ib5:1,mlx5_ib6:1,mlx5_ib7:1"
    assert node["excluded"] == {"mlx5_an0:1": "a management/accelerated-networking device (mlx5_an0), not a compute rail"}


def test_ethernet_only_ovh_e810(tmp_path, fixture_text):
    nic = inv.build_nic_facts(_sysfs("ovh-e810", tmp_path), ethtool={"eth0": parse("ethtool", fixture_text("ethtool/ovh-intel-e810-ice-25g-dac-linked.txt"))})
    out = nccl_env.derive(_fleet(nic))
    node = out["hosts"]["node-a"]
    assert out["problems"] == []
    assert node["env"] == {"NCCL_SOCKET_IFNAME": "=eth0", "NCCL_IB_DISABLE": "1"}
    assert node["fabric"] == "socket"
    assert node["why"]["NCCL_SOCKET_IFNAME"].startswith("eth0: the fastest up interface (25000 Mb/s)")
    assert "eth1 (not up (operstate down))" in node["why"]["NCCL_SOCKET_IFNAME"]
    assert node["why"]["NCCL_IB_DISABLE"].startswith("1: not every node has Active RDMA ports on compute rails (none on: node-a, node-b")


def _desktop(tmp_path, fixture_text):
    return inv.build_nic_facts(_sysfs("desktop-docker", tmp_path), ip_addr=parse("ip-addr", fixture_text(DESKTOP_IP)))


def test_desktop_with_docker_shared_subnet(tmp_path, fixture_text):
    nic = _desktop(tmp_path, fixture_text)
    out = nccl_env.derive(_fleet(nic))
    node = out["hosts"]["node-a"]
    assert out["problems"] == [] and node["warnings"] == []
    assert node["env"] == {"NCCL_SOCKET_IFNAME": "=enp8s0", "NCCL_IB_DISABLE": "1"}
    assert node["why"]["NCCL_SOCKET_IFNAME"] == (
        "enp8s0: the fastest up interface (speed unknown) in 192.168.0.0/24, the IPv4 subnet this node shares with its 1 peer; "
        "left out: br-211476fe73de (bridge), docker0 (docker), lo (loopback)")
    inside = nccl_env.derive(_fleet(nic), cluster_cidr="192.168.0.0/16")
    assert inside["hosts"]["node-a"]["env"]["NCCL_SOCKET_IFNAME"] == "=enp8s0"
    assert "gpufleet_cluster_cidr 192.168.0.0/16" in inside["hosts"]["node-a"]["why"]["NCCL_SOCKET_IFNAME"]
    outside = nccl_env.derive(_fleet(nic), cluster_cidr="10.0.0.0/8")
    assert outside["problems"][0] == "node-a: no up interface has an address in gpufleet_cluster_cidr 10.0.0.0/8 (up with IPv4: enp8s0 192.168.0.0/24)"
    assert nccl_env.derive(_fleet(nic), cluster_cidr="10.0.0.300/8")["problems"][0].startswith("gpufleet_cluster_cidr: ")
    solo = nccl_env.derive({"solo": {"nic": nic}})["hosts"]["solo"]
    assert solo["why"]["NCCL_SOCKET_IFNAME"].startswith("enp8s0: the fastest up interface (speed unknown) in 192.168.0.0/24, its fastest IPv4 "
                                                        "subnet (a single node: no peer to share one with)")
    # docker0 exists but is down and has no address: an override naming it is refused.
    refused = nccl_env.derive({"solo": {"nic": nic}}, overrides={"NCCL_SOCKET_IFNAME": "=docker0"})
    assert refused["problems"] == ["solo: override NCCL_SOCKET_IFNAME==docker0 matches only docker0, none of them up with an IP address "
                                   "(lo does not count)"]


def test_no_shared_subnet_and_link_local(tmp_path, fixture_text):
    nic = _desktop(tmp_path, fixture_text)
    # SYNTHETIC peer: the same desktop with its address moved to 192.168.7.6/24.
    peer = copy.deepcopy(nic)
    enp = [iface for iface in peer["interfaces"] if iface["name"] == "enp8s0"][0]
    enp["ipv4"] = [{"address": "192.168.7.6", "prefixlen": 24, "scope": "global", "dynamic": False}]
    out = nccl_env.derive({"a": {"nic": nic}, "b": {"nic": peer}})
    left = "; left out: br-211476fe73de (bridge), docker0 (docker), lo (loopback)"
    assert out["problems"] == [
        "a: no IPv4 subnet is shared by every node; this node's up interfaces: enp8s0 192.168.0.0/24%s. Set gpufleet_cluster_cidr or "
        "override NCCL_SOCKET_IFNAME" % left,
        "b: no IPv4 subnet is shared by every node; this node's up interfaces: enp8s0 192.168.7.0/24%s. Set gpufleet_cluster_cidr or "
        "override NCCL_SOCKET_IFNAME" % left,
    ]
    # SYNTHETIC: only a link-local address left on the peer: never chosen.
    enp["ipv4"] = [{"address": "169.254.3.4", "prefixlen": 16, "scope": "link", "dynamic": False}]
    out = nccl_env.derive({"b": {"nic": peer}})
    assert out["problems"] == [
        "b: no IPv4 subnet is shared by every node; this node's up interfaces: none; left out: br-211476fe73de (bridge), docker0 (docker), "
        "enp8s0 (no IPv4 address (link-local 169.254/16 does not count)), lo (loopback). Set gpufleet_cluster_cidr or override NCCL_SOCKET_IFNAME"]


def test_one_node_without_rails_does_not_disable_ib_for_the_others(tmp_path, fixture_text):
    healthy = inv.build_nic_facts(_sysfs("h100-ndr-ib", tmp_path), ibstat=parse("ibstat", fixture_text(IB_BOND)))
    # ConnectX-3: port 1 InfiniBand Down/Polling, port 2 Ethernet Down/Disabled.
    down = inv.build_nic_facts(_empty(), ibstat=parse("ibstat", fixture_text(MLX4_DOWN)))
    out = nccl_env.derive({"good": {"nic": healthy}, "bad": {"nic": down}}, overrides={"NCCL_SOCKET_IFNAME": None})
    assert out["fleet"]["ib"] is True and out["fleet"]["without_rails"] == ["bad"] and out["fleet"]["rdma_hosts"] == ["good"]
    good, bad = out["hosts"]["good"], out["hosts"]["bad"]
    # the node with its 8 Active NDR rails keeps IB; only the node without rails runs over sockets
    assert good["env"]["NCCL_IB_DISABLE"] == "0" and good["fabric"] == "ib"
    assert good["env"]["NCCL_IB_HCA"].startswith("=") and len(good["rails"]) == 8
    assert good["why"]["NCCL_IB_DISABLE"] == ("0: this node has 8 Active RDMA port(s) on its compute rails; the node(s) without one (bad) "
                                              "run over sockets, left out of the RDMA runs")
    assert bad["env"]["NCCL_IB_DISABLE"] == "1" and "NCCL_IB_HCA" not in bad["env"] and bad["fabric"] == "socket"
    assert bad["why"]["NCCL_IB_DISABLE"].startswith("1: not every node has Active RDMA ports on compute rails (none on: bad; this node has none)")
    assert bad["why"]["NCCL_IB_DISABLE"].endswith("; left out of the RDMA runs of good")
    assert bad["excluded"] == {"mlx4_0:1": "Down / Polling", "mlx4_0:2": "Down / Disabled"}


def test_overrides_checked_with_nccl_rules_before_anything(tmp_path):
    nic = inv.build_nic_facts(_sysfs("ovh-e810", tmp_path))
    fleet = _fleet(nic)
    # A prefix that matches the up eth0: accepted and written as given.
    ok = nccl_env.derive(fleet, overrides={"NCCL_SOCKET_IFNAME": "eth"})
    assert ok["problems"] == [] and ok["hosts"]["node-a"]["env"]["NCCL_SOCKET_IFNAME"] == "eth"
    assert ok["hosts"]["node-a"]["overridden"] == ["NCCL_SOCKET_IFNAME"]
    # eth10 does not exist (the "=" keeps eth1/eth0 from matching).
    bad = nccl_env.derive(fleet, overrides={"NCCL_SOCKET_IFNAME": "=eth10"})
    assert bad["problems"][0] == ("node-a: override NCCL_SOCKET_IFNAME==eth10 matches no interface on the node (NCCL matching rules; "
                                  "interfaces: eth0, eth1, lo)")
    down = nccl_env.derive(fleet, host_overrides={"node-b": {"NCCL_SOCKET_IFNAME": "=eth1"}})
    assert down["problems"] == ["node-b: override NCCL_SOCKET_IFNAME==eth1 matches only eth1, none of them up (lo does not count)"]
    excluded_all = nccl_env.derive(fleet, overrides={"NCCL_SOCKET_IFNAME": "^eth"})
    assert excluded_all["problems"][0] == "node-a: override NCCL_SOCKET_IFNAME=^eth matches only lo, none of them up (lo does not count)"
    # Syntax: not an NCCL variable, or a value a shell would read differently.
    syntax = nccl_env.derive(fleet, overrides={"LD_PRELOAD": "x", "NCCL_DEBUG": "INFO; rm -rf /"})
    assert syntax["problems"] == [
        "nccl_env_overrides: 'LD_PRELOAD' is not an NCCL_* variable name",
        "nccl_env_overrides.NCCL_DEBUG: value 'INFO; rm -rf /' has characters gpufleet will not write into nccl.conf or an env file "
        "(allowed: letters, digits and _ . , : = ^ @ + / % -)",
    ]
    assert syntax["hosts"] == {}


def test_hca_override_refused_when_it_selects_nothing_active(tmp_path, fixture_text):
    nic = inv.build_nic_facts(_sysfs("h100-12ca-3down", tmp_path), ibstat=parse("ibstat", fixture_text(IB_3DOWN)))
    fleet = _fleet(nic, hosts=("node-a",))
    socket = {"NCCL_SOCKET_IFNAME": None}
    down = nccl_env.derive(fleet, overrides=dict(socket, NCCL_IB_HCA="=mlx5_2,mlx5_7"))
    assert down["problems"] == ["node-a: override NCCL_IB_HCA==mlx5_2,mlx5_7 matches only ports that are not Active: mlx5_2:1 (Down), mlx5_7:1 (Down)"]
    none = nccl_env.derive(fleet, overrides=dict(socket, NCCL_IB_HCA="=mlx5_12"))
    assert none["problems"][0].startswith("node-a: override NCCL_IB_HCA==mlx5_12 matches no RDMA device/port on the node")
    # mlx5_1 as a prefix takes mlx5_1, mlx5_10, mlx5_11 (all Active): accepted, it is what was asked for.
    prefix = nccl_env.derive(fleet, overrides=dict(socket, NCCL_IB_HCA="mlx5_1"))
    assert prefix["problems"] == [] and prefix["hosts"]["node-a"]["env"]["NCCL_IB_HCA"] == "mlx5_1"


def test_missing_facts_is_a_problem():
    out = nccl_env.derive({"node-a": {"nic": None}})
    assert out["problems"] == ["node-a: no NIC facts (gpufleet_nic): run the facts role first, or see why nic_facts failed on it"]


# --- fabrics with NCCL net plugins (SYNTHETIC facts: no EFA or gVNIC recording exists) --------


def _net(name, driver, operstate="up", speed="100000"):
    return {"name": name, "attrs": {"operstate": operstate, "speed": speed, "type": "1"}, "device": True, "pci_address": "0000:%s:00.0" % name[-2:],
            "pci": {}, "driver": driver}


def test_aws_efa_reported_not_configured():
    # SYNTHETIC p5-style node: ENA interface + EFA RDMA devices rdmap*, no netdev on them.
    sysfs = {"net": [_net("ens32", "ena")],
             "infiniband": [{"name": "rdmap%ds0" % bus, "attrs": {}, "netdevs": [],
                             "ports": [{"port": "1", "attrs": {"state": "4: ACTIVE", "link_layer": "Unspecified", "rate": "100 Gb/sec (4X EDR)"}}]}
                            for bus in (79, 80)]}
    nic = inv.build_nic_facts(sysfs)
    out = nccl_env.derive(_fleet(nic))
    node = out["hosts"]["node-a"]
    assert out["problems"] == [] and node["fabric"] == "aws-efa" and node["env"] == {}
    assert node["why"]["fabric"].startswith("AWS EFA devices (rdmap79s0, rdmap80s0): NCCL reaches them only through the aws-ofi-nccl net plugin")
    assert out["fleet"]["plugin_fabrics"] == {"node-a": "aws-efa", "node-b": "aws-efa"}
    refused = nccl_env.derive(_fleet(nic), overrides={"NCCL_IB_HCA": "rdmap"})
    assert refused["problems"][0] == "node-a: override NCCL_IB_HCA refused: the node's fabric is aws-efa, configured by its NCCL net plugin"


def test_gcp_tcpx_reported_single_gvnic_is_plain_ethernet():
    # SYNTHETIC A3 High-style node: 5 gVNIC (gve) interfaces.
    nic = inv.build_nic_facts({"net": [_net("eth%d" % i, "gve") for i in range(5)], "infiniband": []})
    node = nccl_env.derive(_fleet(nic))["hosts"]["node-a"]
    assert node["fabric"] == "gcp-tcpx" and node["env"] == {}
    assert node["why"]["fabric"].startswith("5 gVNIC (gve) interfaces (eth0, eth1, eth2, eth3, eth4)")
    mega = inv.build_nic_facts({"net": [_net("eth%d" % i, "gve") for i in range(9)], "infiniband": []})
    assert nccl_env.derive(_fleet(mega))["hosts"]["node-a"]["fabric"] == "gcp-tcpxo"
    # SYNTHETIC ordinary GCE VM: one gVNIC is plain Ethernet, configured as such.
    single = inv.build_nic_facts({"net": [_net("ens4", "gve")], "infiniband": []})
    node = nccl_env.derive(_fleet(single))["hosts"]["node-a"]
    assert node["fabric"] == "socket" and node["env"] == {"NCCL_SOCKET_IFNAME": "=ens4", "NCCL_IB_DISABLE": "1"}


def test_summary_lines():
    chosen = {"fabric": "socket", "env": {"NCCL_IB_DISABLE": "1"}, "why": {"NCCL_IB_DISABLE": "1: because"}, "warnings": ["w"]}
    assert nccl_env.summary_lines("n", chosen) == ["n: fabric socket", "  NCCL_IB_DISABLE=1 - 1: because", "  warning: w"]


def test_derived_settings_pass_the_checks_engine(tmp_path, fixture_text):
    """What nccl_env writes is what network.nccl_env (the checks engine) accepts on the same facts."""
    from gpufleet.checks import network  # pylint: disable=import-outside-toplevel
    from gpufleet.checks.model import PASS, NodeContext  # pylint: disable=import-outside-toplevel

    cases = [
        inv.build_nic_facts(_sysfs("h100-ndr-ib", tmp_path), ibstat=parse("ibstat", fixture_text(IB_BOND))),
        inv.build_nic_facts(_sysfs("dgx-spark-roce", tmp_path), ibv_devinfo=parse("ibv-devinfo", fixture_text(SPARK))),
        _desktop(tmp_path, fixture_text),
    ]
    for nic in cases:
        env = nccl_env.derive(_fleet(nic))["hosts"]["node-a"]["env"]
        results = network.check_nccl_env(NodeContext("node-a", facts={"nic": nic}, settings={"gpufleet_nccl_env": env}))
        assert [result["status"] for result in results] == [PASS], results
