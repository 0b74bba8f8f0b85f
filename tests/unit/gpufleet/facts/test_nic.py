# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.facts.nic: sysfs value formats, interface classification and the merged NIC fact.

sysfs values are the spellings the recordings under tests/fixtures/ib-sysfs/ hold (and the
kernel's PCIe ``current_link_speed`` formats); merged facts are built from the recordings'
sysfs renderings and parsed tool outputs, with expected values read by hand from them.
"""

from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.gpufleet.acceptance.plugins.modules import nic_facts
from gpufleet.facts import nic as inv
from gpufleet.parsers.registry import parse

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs"))

import render_tree  # noqa: E402  pylint: disable=import-error,wrong-import-position


@pytest.mark.parametrize(
    "value, expected",
    [
        ("4: ACTIVE", (4, "ACTIVE")),
        ("5: LinkUp", (5, "LinkUp")),
        ("1: DOWN", (1, "DOWN")),
        ("3: Disabled", (3, "Disabled")),
        ("7: Phy Test", (7, "Phy Test")),
        ("ACTIVE", (None, None)),
        ("", (None, None)),
        (None, (None, None)),
    ],
)
def test_parse_port_state(value, expected):
    assert inv.parse_port_state(value) == expected


def test_port_state_words_share_ibstats_vocabulary():
    assert inv.port_state_word("ACTIVE") == "Active"
    assert inv.port_state_word("PORT_ACTIVE") == "Active"
    assert inv.port_state_word("DOWN") == "Down"
    assert inv.port_state_word("PORT_DOWN") == "Down"
    assert inv.port_state_word("INIT") == "Initializing"
    assert inv.port_state_word("Odd") == "Odd"


@pytest.mark.parametrize(
    "value, expected",
    [
        ("400 Gb/sec (4X NDR)", {"gbps": 400, "text": "4X NDR", "width": "4X", "speed": "NDR"}),
        ("200 Gb/sec (2X NDR)", {"gbps": 200, "text": "2X NDR", "width": "2X", "speed": "NDR"}),
        ("25 Gb/sec (1X EDR)", {"gbps": 25, "text": "1X EDR", "width": "1X", "speed": "EDR"}),
        ("10 Gb/sec (4X)", {"gbps": 10, "text": "4X", "width": "4X", "speed": None}),
        ("2.5 Gb/sec (1X SDR)", {"gbps": 2.5, "text": "1X SDR", "width": "1X", "speed": "SDR"}),
        ("40 Gb/sec", {"gbps": 40, "text": None, "width": None, "speed": None}),
        ("fast", None),
        (None, None),
    ],
)
def test_parse_rate(value, expected):
    assert inv.parse_rate(value) == expected


@pytest.mark.parametrize(
    "value, gen",
    [
        ("2.5 GT/s", 1),
        ("2.5 GT/s PCIe", 1),
        ("5 GT/s", 2),
        ("5.0 GT/s PCIe", 2),
        ("8 GT/s", 3),
        ("8.0 GT/s PCIe", 3),
        ("16.0 GT/s PCIe", 4),
        ("32.0 GT/s PCIe", 5),
        ("64.0 GT/s PCIe", 6),
        ("Unknown", None),
        ("Unknown speed", None),
        ("12 GT/s", None),
        (None, None),
    ],
)
def test_pcie_generation(value, gen):
    assert inv.pcie_generation(value) == gen


def test_small_value_parsers():
    assert inv.parse_int("0x80") == 128
    assert inv.parse_int("-1") == -1
    assert inv.parse_int("N/A (no PMA)") is None
    assert inv.normalise_guid("0x58a2e10300a7820e") == "58a2:e103:00a7:820e"
    assert inv.normalise_guid("4cbb:4703:002d:1a16") == "4cbb:4703:002d:1a16"
    assert inv.normalise_guid("0x0") == "0000:0000:0000:0000"
    assert inv.text_value("\nInfiniBand") == "InfiniBand"
    assert inv.text_value("  ") is None
    assert inv.parse_counters({"symbol_error": "0", "link_downed": "N/A (no PMA)"}) == {"link_downed": None, "symbol_error": 0}


@pytest.mark.parametrize(
    "entry, expected",
    [
        ({"name": "lo", "attrs": {"type": "772"}}, (True, "loopback")),
        ({"name": "docker0", "bridge": True}, (True, "docker")),
        ({"name": "veth1a2b3c"}, (True, "veth")),
        ({"name": "br-211476fe73de", "bridge": True}, (True, "bridge")),
        ({"name": "virbr0"}, (True, "bridge")),
        ({"name": "cni0", "bridge": True}, (True, "bridge")),
        ({"name": "bond0", "bonding": True}, (True, "bond")),
        ({"name": "tap0", "tun": True}, (True, "virtual")),
        ({"name": "eth0.100"}, (True, "virtual")),
        ({"name": "eth0", "device": True}, (False, None)),
        ({"name": "ibp26s0", "device": True, "attrs": {"type": "32"}}, (False, None)),
    ],
)
def test_classify_interface(entry, expected):
    virtual, kind, reason = inv.classify_interface(entry)
    assert (virtual, kind) == expected
    assert (reason is None) == (not virtual)


def _sysfs(tree_text, tmp_path):
    tree = tmp_path / "manifest"
    tree.mkdir()
    (tree / "tree.txt").write_text(tree_text)
    root = render_tree.render(str(tree), str(tmp_path / "root"))
    return {"net": nic_facts.read_net(root), "infiniband": nic_facts.read_infiniband(root)}


def test_procfs_rendering_ports_counters_and_quirks(tmp_path):
    sysfs = _sysfs("@include tests/fixtures/ib-sysfs/procfs-fixtures-hfi1_0-opa100-mlx4_0-qdr-2port-mlx5_0-hw_counters-grep-r.txt "
                   "class/infiniband\nclass/net/\n", tmp_path)
    facts = inv.build_nic_facts(sysfs)
    rdma = {dev["device"]: dev for dev in facts["rdma"]}
    assert sorted(rdma) == ["hfi1_0", "mlx4_0", "mlx5_0"]
    hfi = rdma["hfi1_0"]
    assert hfi["hca_type"] is None
    assert hfi["board_id"] == "HPE 100Gb 1-port OP101 QSFP28 x16 PCIe Gen3 with Intel Omni-Path Adapter"
    assert (hfi["ports"][0]["rate_gbps"], hfi["ports"][0]["rate_text"]) == (100, "4X EDR")
    mlx4 = rdma["mlx4_0"]
    assert [port["port"] for port in mlx4["ports"]] == [1, 2]
    # link_layer of port 2 has an empty first line in the recording: read as "InfiniBand".
    assert mlx4["ports"][1]["link_layer"] == "InfiniBand"
    assert (mlx4["ports"][0]["counters"]["port_xmit_wait"], mlx4["ports"][1]["counters"]["port_xmit_wait"]) == (3599, 3846)
    mlx5 = rdma["mlx5_0"]
    port = mlx5["ports"][0]
    # QUIRK kept from the source: phys_state reads "4: ACTIVE".
    assert (port["physical_state"], port["physical_state_code"], port["state"]) == ("ACTIVE", 4, "Active")
    assert (port["rate_gbps"], port["rate_text"]) == (25, "1X EDR")
    assert mlx5["node_guid"] == "0a7f:bc12:45ef:d23b"
    hw = port["hw_counters"]
    assert (hw["local_ack_timeout_err"], hw["req_cqe_error"], hw["resp_cqe_error"], hw["roce_adp_retrans"], hw["out_of_sequence"]) == (
        131, 3481, 8109, 99, 1)
    assert port["errors"] == {}
    assert facts["summary"]["rdma_ports_with_errors"] == []
    assert len(facts["summary"]["rdma_active_ports"]) == 4


def test_node_exporter_rendering_na_counters_and_discards(tmp_path):
    sysfs = _sysfs("@include tests/fixtures/ib-sysfs/node-exporter-sys-ttar-i40iw0-NA-no-PMA-and-mlx4_0-qdr-counters_ext-grep-r.txt "
                   "class/infiniband\nclass/net/\n", tmp_path)
    facts = inv.build_nic_facts(sysfs)
    rdma = {dev["device"]: dev for dev in facts["rdma"]}
    i40iw = rdma["i40iw0"]["ports"][0]
    # Every counter reads "N/A (no PMA)": None, never 0, and no error is claimed.
    assert i40iw["counters"]["symbol_error"] is None
    assert all(value is None for value in i40iw["counters"].values())
    assert i40iw["errors"] == {}
    assert (i40iw["rate_gbps"], i40iw["rate_text"]) == (10, "4X")
    mlx4 = rdma["mlx4_0"]["ports"][0]
    assert mlx4["errors"] == {"port_xmit_discards": 5}
    assert mlx4["counters"]["port_rcv_packets"] == 6825908347
    assert facts["summary"]["rdma_ports_with_errors"] == ["mlx4_0/1"]


def test_ibstat_fills_and_adds_devices_sysfs_lacks():
    ibstat = parse("ibstat", _read("tests/fixtures/ib/ibstat-mlx4-dualport-ib-polling-eth-disabled.txt"))
    facts = inv.build_nic_facts({"net": [], "infiniband": []}, ibstat=ibstat)
    assert [dev["device"] for dev in facts["rdma"]] == ["mlx4_0"]
    dev = facts["rdma"][0]
    assert dev["sources"] == ["ibstat"] and dev["hca_type"] == "MT4099"
    # Port 1: InfiniBand Down / Polling / Rate 10; port 2: Ethernet Down / Disabled / Rate 40.
    assert [(p["port"], p["state"], p["physical_state"], p["rate_gbps"], p["link_layer"]) for p in dev["ports"]] == [
        (1, "Down", "Polling", 10, "InfiniBand"), (2, "Down", "Disabled", 40, "Ethernet")]
    assert facts["summary"]["rdma_inactive_ports"] == ["mlx4_0/1", "mlx4_0/2"]


def test_ibv_devinfo_fills_mtu_and_part_id():
    devinfo = parse("ibv-devinfo", _read("tests/fixtures/ib/tensorflow-gdr-ibv_devinfo-mlx4-connectx3-dualport-roce.txt"))
    facts = inv.build_nic_facts({"net": [], "infiniband": []}, ibv_devinfo=devinfo)
    dev = facts["rdma"][0]
    assert (dev["device"], dev["vendor_part_id"], dev["fw_ver"]) == ("mlx4_0", 4099, "2.40.7000")
    assert [(p["state"], p["link_layer"]) for p in dev["ports"]] == [("Active", "Ethernet"), ("Active", "Ethernet")]


def _read(relative):
    with open(os.path.join(REPO_ROOT, relative), "r", encoding="utf-8") as handle:
        return handle.read()


def _iface(name, **kw):
    entry = {"name": name, "attrs": {}, "device": True, "pci_address": "0000:01:00.0", "pci": {}}
    entry.update(kw)
    return entry


def test_interface_values_and_summary():
    net = [
        _iface("eth0", attrs={"operstate": "up", "speed": "25000", "carrier": "1", "mtu": "9000"},
               pci={"numa_node": "1", "current_link_speed": "8.0 GT/s PCIe", "current_link_width": "8", "max_link_speed": "16.0 GT/s PCIe",
                    "max_link_width": "16"}),
        _iface("eth1", attrs={"operstate": "down", "speed": "-1", "carrier": "0"}, pci={"numa_node": "-1"}),
        _iface("eth2", attrs={"operstate": "up", "speed": "4294967295"}),
        {"name": "lo", "attrs": {"operstate": "unknown", "type": "772"}},
    ]
    facts = inv.build_nic_facts({"net": net, "infiniband": []}, ethtool_errors={"eth2": "`ethtool eth2` exited 1: no"},
                                tools_missing=["ip", "ibstat"])
    ifaces = {iface["name"]: iface for iface in facts["interfaces"]}
    assert ifaces["eth0"]["pcie"]["gen_current"] == 3 and ifaces["eth0"]["pcie"]["gen_max"] == 4
    assert (ifaces["eth0"]["numa_node"], ifaces["eth0"]["mtu"], ifaces["eth0"]["carrier"]) == (1, 9000, True)
    assert ifaces["eth1"]["numa_node"] is None and ifaces["eth1"]["speed_mbps"] is None
    assert ifaces["eth2"]["speed_mbps"] is None
    # ip not installed: addresses unknown (None), not "none" ([]).
    assert ifaces["eth0"]["ipv4"] is None and ifaces["lo"]["virtual_kind"] == "loopback"
    with_ip = inv.build_nic_facts({"net": net, "infiniband": []}, ip_addr={"interfaces": []})
    assert with_ip["interfaces"][0]["ipv4"] == [] and with_ip["interfaces"][0]["ipv6"] == []
    summary = facts["summary"]
    assert summary["physical_up"] == ["eth0", "eth2"]
    assert summary["physical_down"] == ["eth1"]
    assert summary["fastest_mbps"] == 25000
    assert summary["pcie_degraded"] == ["eth0"]
    assert summary["ethtool_failed"] == ["eth2"]
    assert summary["tools_missing"] == ["ibstat", "ip"]


def test_port_netdev_from_gids_then_dev_port():
    # Dual-port mlx4 with one PCI function: both netdevs under device/net; dev_port picks the port.
    net = [_iface("ib0", attrs={"dev_port": "0"}), _iface("ib1", attrs={"dev_port": "1"})]
    gids = [{"index": "0", "gid": "fe80:0000:0000:0000:0000:0000:0000:0001", "ndev": "bond0"}, {"index": "1", "gid": inv.ZERO_GID, "ndev": None}]
    dev = {"name": "mlx4_0", "attrs": {}, "netdevs": ["ib0", "ib1"],
           "ports": [{"port": "1", "attrs": {}}, {"port": "2", "attrs": {}}, {"port": "3", "attrs": {}, "gids": gids}]}
    facts = inv.build_nic_facts({"net": net, "infiniband": [dev]})
    assert [port["netdev"] for port in facts["rdma"][0]["ports"]] == ["ib0", "ib1", "bond0"]
    assert [gid["index"] for gid in facts["rdma"][0]["ports"][2]["gids"]] == [0]
    ifaces = {iface["name"]: iface for iface in facts["interfaces"]}
    assert (ifaces["ib1"]["rdma_device"], ifaces["ib1"]["rdma_port"]) == ("mlx4_0", 2)


def test_hca_part_is_the_board_and_firmware_line_not_the_generic_vf_id():
    # Azure ND H200 v5: mlx5_ib0..7 ConnectX-7 VFs, vendor_part_id 4126 (the generic mlx5Gen VF id), board MSF0000000047,
    # fw 28.40.1702; mlx5_an0 part 4122, board MSF0000000041, fw 16.30.5000.
    devinfo = parse("ibv-devinfo", _read("tests/fixtures/ib/azure-nd-h200-v5-ibv_devinfo-8x-ndr-vf-plus-an0-ethernet.txt"))
    facts = inv.build_nic_facts({"net": [], "infiniband": []}, ibv_devinfo=devinfo)
    groups = {dev["device"]: (dev["vendor_part_id"], dev["part"], dev["firmware_family"], dev["firmware_group"]) for dev in facts["rdma"]}
    assert groups["mlx5_ib0"] == (4126, "MSF0000000047", 28, "MSF0000000047 (firmware 28.x)")
    assert groups["mlx5_an0"] == (4122, "MSF0000000041", 16, "MSF0000000041 (firmware 16.x)")
    # SYNTHETIC: a ConnectX-6 Dx VF shows the same generic id 4126, but another board and firmware line: another group.
    cx6dx_vf = {"vendor_part_id": 4126, "board_id": "MT_0000000359", "fw_ver": "22.39.1002"}
    assert inv.hca_part(cx6dx_vf)["firmware_group"] == "MT_0000000359 (firmware 22.x)"
    assert inv.hca_part({"vendor_part_id": 4126, "fw_ver": None}) == {"part": "part 4126", "firmware_family": None,
                                                                      "firmware_group": "part 4126"}


def test_bond_members_from_proc_net_bonding(tmp_path):
    # bonding/proc-net-bonding-bond0-lacp-2x1g-one-member-down.txt read by the collector under procfs_root.
    sysfs = tmp_path / "sys"
    (sysfs / "class" / "net" / "bond0" / "bonding").mkdir(parents=True)
    (sysfs / "class" / "net" / "bond0" / "operstate").write_text("up\n")
    proc = tmp_path / "proc" / "net" / "bonding"
    proc.mkdir(parents=True)
    (proc / "bond0").write_text(_read("tests/fixtures/bonding/proc-net-bonding-bond0-lacp-2x1g-one-member-down.txt"))
    net = nic_facts.read_net(str(sysfs), str(tmp_path / "proc"))
    [bond] = inv.build_nic_facts({"net": net})["interfaces"]
    assert (bond["virtual_kind"], bond["bond"]["mode"], bond["bond"]["active_aggregator"]) == (
        "bond", "IEEE 802.3ad Dynamic link aggregation", 2)
    assert [(m["name"], m["active"], m["link_failure_count"], m["duplex"]) for m in bond["bond"]["members"]] == [
        ("enp1s0f0", False, 2, "Unknown"), ("enp1s0f1", True, 2, "full")]
    assert nic_facts.read_net(str(sysfs))[0].get("bonding_status") is None  # without procfs_root: not read
