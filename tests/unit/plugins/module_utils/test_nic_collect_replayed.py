# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nic_facts' collection and fact building, in-process, against replayed nodes (tests/replay/nodes/nic-*.yml).

Each test does what one nic_facts task does, without Ansible: the module's ``run(params)``
(plugins/module_utils/nic_collect.py, the module's argument defaults applied) on the node's replay
wrappers and its synthetic sysfs tree (the node file's ``sysfs_tree:``, rendered by build_fleet into the
test's temporary directory), then what the action plugin does with it (gpufleet/adapter/action.py:
``gpufleet.facts.nic.build_facts`` on a RawReader named after the host, a FactError becoming ``failed``).
tests/playbooks/test_node_facts.py runs the module through ansible-playbook (arguments, facts in hostvars,
check mode, failures as the play sees them).

Expected values are read by hand from the recordings named in each node file.
"""

from __future__ import annotations

import os
import sys

import pytest
import yaml

from ansible_collections.gpufleet.acceptance.plugins.module_utils import nic_collect
from gpufleet.facts import nic

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "unit", "doubles"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position
from fact_task import fact_task  # noqa: E402  pylint: disable=import-error,wrong-import-position


@pytest.fixture(name="gathered")
def gathered_fixture(tmp_path):
    """``gathered(host, node file path)``: the nic_facts result on that replayed node (its tools and sysfs tree).

    procfs_root keeps the module's default (/proc), as the playbook tasks these tests replace left it.
    """

    def _gather(host, node_path):
        layout = build_fleet.build_node(node_path, str(tmp_path / "fleet"))
        module_args = {"sysfs_root": layout["sysfs_root"]}
        for tool in ("ethtool", "ibstat", "ibv_devinfo", "ip"):
            module_args[tool + "_path"] = os.path.join(layout["bin_dir"], tool)
        return fact_task(host, nic_collect, nic.build_facts, module_args)

    return _gather


def node_file(name):
    return os.path.join(REPO_ROOT, "tests", "replay", "nodes", name)


def by_name(items, key, name):
    matches = [item for item in items if item[key] == name]
    assert len(matches) == 1, (name, [item[key] for item in items])
    return matches[0]


def test_h100_ndr_rdma_ports_counters_and_pcie(gathered):
    result = gathered("h100", node_file("nic-h100-ndr-ib.yml"))
    assert not result.get("failed"), result.get("msg")
    facts = result["ansible_facts"]["gpufleet_nic"]
    summary = facts["summary"]
    # ibstat and the sysfs rendering both list mlx5_0, mlx5_1, mlx5_4..mlx5_9 and mlx5_bond_0, all ACTIVE.
    assert summary["rdma_device_count"] == 9
    assert summary["rdma_port_count"] == 9
    assert sorted(summary["rdma_active_ports"]) == (
        ["mlx5_%s/1" % n for n in (0, 1, 4, 5, 6, 7, 8, 9)] + ["mlx5_bond_0/1"])
    assert summary["rdma_inactive_ports"] == []
    assert summary["tools_missing"] == ["ethtool", "ibv_devinfo", "ip"]
    mlx5_0 = by_name(facts["rdma"], "device", "mlx5_0")
    port = mlx5_0["ports"][0]
    # sysfs: "400 Gb/sec (4X NDR)", "4: ACTIVE", "5: LinkUp";
    # ibstat: Base lid 128, SM lid 1, Node GUID 0x58a2e10300a7820e.
    assert (port["rate_gbps"], port["rate_text"], port["state"], port["physical_state"]) == (
        400, "4X NDR", "Active", "LinkUp")
    assert (port["lid"], port["sm_lid"]) == (128, 1)
    assert mlx5_0["node_guid"] == "58a2:e103:00a7:820e"
    assert (mlx5_0["fw_ver"], mlx5_0["board_id"], mlx5_0["hca_type"]) == ("28.41.1000", "MT_0000000838", "MT4129")
    assert mlx5_0["sources"] == ["sysfs", "ibstat"]
    # counters: port_rcv_errors 14, excessive_buffer_overrun_errors 15, switch relay 1; hw_counters roce_adp_retrans 3.
    assert port["errors"] == {"port_rcv_errors": 14, "excessive_buffer_overrun_errors": 15,
                              "port_rcv_switch_relay_errors": 1}
    assert port["counters"]["port_xmit_wait"] == 2489603687
    assert port["hw_counters"]["roce_adp_retrans"] == 3
    assert port["hw_counters"]["rx_write_requests"] == 3809045607
    # mlx5_1 is the odd one in the recording: link_downed 255, port_rcv_switch_relay_errors 2.
    mlx5_1 = by_name(facts["rdma"], "device", "mlx5_1")["ports"][0]
    assert mlx5_1["errors"]["link_downed"] == 255
    assert mlx5_1["errors"]["port_rcv_switch_relay_errors"] == 2
    bond = by_name(facts["rdma"], "device", "mlx5_bond_0")
    assert (bond["fw_ver"], bond["hca_type"], bond["board_id"]) == ("32.38.3056", "MT41692", "MT_0000000884")
    bond_port = bond["ports"][0]
    assert (bond_port["rate_gbps"], bond_port["rate_text"], bond_port["link_layer"]) == (200, "2X NDR", "Ethernet")
    # lspci: CX-7 at 1a:00.0 NUMA 0 and 9c:00.0 NUMA 1, LnkSta 32GT/s x16 = LnkCap.
    ib0 = by_name(facts["interfaces"], "name", "ibp26s0")
    assert (ib0["pci_address"], ib0["numa_node"], ib0["driver"], ib0["rdma_device"]) == (
        "0000:1a:00.0", 0, "mlx5_core", "mlx5_0")
    assert ib0["pcie"]["gen_current"] == 5 and ib0["pcie"]["width_current"] == 16
    assert ib0["pcie"]["gen_max"] == 5 and ib0["pcie"]["width_max"] == 16
    assert by_name(facts["interfaces"], "name", "ibp156s0")["numa_node"] == 1
    # lspci: BCM5720 01:00.x LnkCap 5GT/s x2, LnkSta 5GT/s x1 (downgraded).
    lom = by_name(facts["interfaces"], "name", "enp1s0f0")
    assert lom["pcie"]["gen_current"] == 2 and lom["pcie"]["width_current"] == 1 and lom["pcie"]["width_max"] == 2
    assert lom["driver"] == "tg3"
    assert summary["pcie_degraded"] == ["enp1s0f0", "enp1s0f1"]
    lo = by_name(facts["interfaces"], "name", "lo")
    assert (lo["virtual"], lo["virtual_kind"]) == (True, "loopback")
    bond0 = by_name(facts["interfaces"], "name", "bond0")
    assert (bond0["virtual"], bond0["virtual_kind"]) == (True, "bond")
    assert summary["virtual_count"] == 2 and summary["physical_count"] == 10
    assert summary["fastest_mbps"] == 400000
    assert result["raw"]["ibstat"]["rc"] == 0


def test_desktop_virtual_interfaces_and_addresses(gathered):
    result = gathered("desk", node_file("nic-desktop-docker.yml"))
    assert not result.get("failed"), result.get("msg")
    facts = result["ansible_facts"]["gpufleet_nic"]
    kinds = {iface["name"]: (iface["virtual"], iface["virtual_kind"]) for iface in facts["interfaces"]}
    assert kinds == {"lo": (True, "loopback"), "enp8s0": (False, None), "br-211476fe73de": (True, "bridge"),
                     "docker0": (True, "docker")}
    enp = by_name(facts["interfaces"], "name", "enp8s0")
    # ip -j addr: 192.168.0.6/24 dynamic global; fd00:a84e:...:1e56/64 global dynamic;
    # fe80::3d6e:4143:7f56:3bf9/64 link.
    assert enp["ipv4"] == [{"address": "192.168.0.6", "prefixlen": 24, "scope": "global", "dynamic": True}]
    ipv6 = [(a["address"], a["scope"]) for a in enp["ipv6"]]
    assert ipv6 == [("fd00:a84e:3f17:bf12:3d36:34b6:ccc3:1e56", "global"), ("fe80::3d6e:4143:7f56:3bf9", "link")]
    assert (enp["mtu"], enp["mac"], enp["operstate"], enp["carrier"]) == (1500, "70:85:c2:f9:9b:2a", "up", True)
    assert enp["pci_address"] == "0000:08:00.0" and enp["numa_node"] is None
    docker0 = by_name(facts["interfaces"], "name", "docker0")
    assert docker0["carrier"] is False
    assert docker0["ipv4"][0]["address"] == "172.17.0.1" and docker0["ipv4"][0]["prefixlen"] == 16
    assert facts["rdma"] == []
    assert facts["summary"]["physical_up"] == ["enp8s0"]
    assert facts["summary"]["tools_missing"] == ["ethtool", "ibstat", "ibv_devinfo"]


def test_ovh_e810_ethtool_link_and_firmware(gathered):
    result = gathered("ovh", node_file("nic-ovh-e810.yml"))
    assert not result.get("failed"), result.get("msg")
    facts = result["ansible_facts"]["gpufleet_nic"]
    eth0 = by_name(facts["interfaces"], "name", "eth0")
    eth1 = by_name(facts["interfaces"], "name", "eth1")
    # eth0: Speed 25000Mb/s, Link detected: yes; ethtool -i: driver ice, firmware-version 4.20 0x8001b91f 1.3346.0.
    assert eth0["ethtool"]["speed_mbps"] == 25000 and eth0["ethtool"]["link_detected"] is True
    assert eth0["ethtool"]["port"] == "Direct Attach Copper"
    assert eth0["ethtool_driver"]["firmware_version"] == "4.20 0x8001b91f 1.3346.0"
    assert (eth0["driver"], eth0["pci_address"], eth0["speed_mbps"]) == ("ice", "0000:0a:00.0", 25000)
    # eth1: still prints Speed 25000Mb/s but Link detected: no.
    assert eth1["ethtool"]["speed_mbps"] == 25000 and eth1["ethtool"]["link_detected"] is False
    assert eth1["speed_mbps"] is None and eth1["ethtool_error"] is None
    assert eth1["ethtool_driver"] is None
    # ethtool ran for the physical interfaces only, not for lo.
    assert sorted(result["raw"]["ethtool"]) == ["eth0", "eth1"]
    summary = facts["summary"]
    assert (summary["physical_up"], summary["physical_down"], summary["fastest_mbps"]) == (["eth0"], ["eth1"], 25000)
    assert summary["tools_missing"] == ["ibstat", "ibv_devinfo", "ip"]
    assert eth0["ipv4"] is None


def test_dgx_spark_roce_devices_netdevs_and_mtu(gathered):
    result = gathered("spark", node_file("nic-dgx-spark-roce.yml"))
    assert not result.get("failed"), result.get("msg")
    facts = result["ansible_facts"]["gpufleet_nic"]
    # ibdev2netdev: rocep1s0f1 ==> enp1s0f1np1 (Up), roceP2p1s0f1 ==> enP2p1s0f1np1 (Up), the two f0 Down.
    assert sorted(facts["summary"]["rdma_active_ports"]) == ["roceP2p1s0f1/1", "rocep1s0f1/1"]
    assert sorted(facts["summary"]["rdma_inactive_ports"]) == ["roceP2p1s0f0/1", "rocep1s0f0/1"]
    up = by_name(facts["rdma"], "device", "rocep1s0f1")
    # ibv_devinfo: active_mtu 4096 (5) on the ACTIVE ports, 1024 (3) on the DOWN ones; vendor_part_id 4129.
    assert (up["ports"][0]["netdev"], up["ports"][0]["active_mtu"], up["ports"][0]["link_layer"]) == (
        "enp1s0f1np1", 4096, "Ethernet")
    assert up["vendor_part_id"] == 4129 and up["fw_ver"] == "28.45.4028"
    assert up["sources"] == ["sysfs", "ibv_devinfo"]
    down = by_name(facts["rdma"], "device", "roceP2p1s0f0")
    assert (down["ports"][0]["state"], down["ports"][0]["active_mtu"], down["pci_address"]) == (
        "Down", 1024, "0002:01:00.0")
    iface = by_name(facts["interfaces"], "name", "enP2p1s0f1np1")
    assert (iface["rdma_device"], iface["rdma_port"], iface["operstate"]) == ("roceP2p1s0f1", 1, "up")
    assert facts["summary"]["tools_missing"] == ["ethtool", "ibstat", "ip"]


def test_ethtool_crash_marks_only_that_interface(gathered, tmp_path):
    # SYNTHETIC node for this test only: a single switch-port interface `swp1` whose `ethtool swp1`
    # replays ethtool/ethtool-6.10-lanes-segfault-PARTIAL.txt (ethtool crashed after "Speed: 400000Mb/s";
    # replayed with exit 139, the shell's code for SIGSEGV). The sysfs tree is written here.
    tree = tmp_path / "swp1-tree"
    tree.mkdir()
    (tree / "tree.txt").write_text(
        "devices/pci0000:00/0000:01:00.0/net/swp1/operstate = up\n"
        "devices/pci0000:00/0000:01:00.0/net/swp1/device -> ../../../0000:01:00.0\n"
        "class/net/swp1 -> ../../devices/pci0000:00/0000:01:00.0/net/swp1\n"
    )
    node = tmp_path / "nic-swp1-segfault.yml"
    node.write_text(yaml.safe_dump({
        "description": "synthetic: swp1 with the ethtool 6.10 segfault recording",
        "composite": True,
        "sysfs_tree": str(tree),
        "commands": {"ethtool swp1": {"stdout": "tests/fixtures/ethtool/ethtool-6.10-lanes-segfault-PARTIAL.txt",
                                      "rc": 139}},
    }))
    result = gathered("sw", str(node))
    assert not result.get("failed"), result.get("msg")
    swp1 = result["ansible_facts"]["gpufleet_nic"]["interfaces"][0]
    assert "exited 139" in swp1["ethtool_error"]
    assert swp1["ethtool"]["speed_mbps"] == 400000
    assert swp1["ethtool"]["truncated"] is True
    assert result["ansible_facts"]["gpufleet_nic"]["summary"]["ethtool_failed"] == ["swp1"]


def test_rdma_tool_error_exit_is_reported_with_its_message(gathered):
    result = gathered("azure", node_file("nic-azure-a100-ibpanic.yml"))
    assert result["failed"] is True
    assert result["msg"].startswith("azure: `")
    assert "ibstat` exited 255: " in result["msg"]
    # The recording's last line:
    # "ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed: No such file or directory".
    assert "stat of IB device 'mlx5_8' failed" in result["msg"]


def test_damaged_ip_output_fails_naming_host_tool_and_line(gathered, tmp_path):
    # SYNTHETIC damaged input: the desktop's `ip -j addr` recording cut in the middle of its
    # single JSON line (written here, not a recording), replayed on the desktop's sysfs tree.
    recording = os.path.join(REPO_ROOT, "tests", "fixtures", "ethtool",
                             "ip-j-addr-desktop-lo-enp8s0-docker-bridge-NO-CARRIER.json.txt")
    with open(recording, encoding="utf-8") as handle:
        text = handle.read()
    cut = tmp_path / "ip-j-addr-cut.json.txt"
    cut.write_text(text[: len(text) // 2])
    node = tmp_path / "nic-desktop-cut-ip.yml"
    node.write_text(yaml.safe_dump({
        "description": "synthetic: desktop with its ip -j addr output cut in half",
        "composite": True,
        "sysfs_tree": "tests/fixtures/sysfs/desktop-docker",
        "commands": {"ip -j addr": {"stdout": str(cut), "rc": 0}},
    }))
    result = gathered("desk", str(node))
    assert result["failed"] is True
    assert result["msg"].startswith("desk: cannot read `")
    assert "ip -j addr` output: line 1:" in result["msg"]
    # a FactError's one-line message, not a traceback (anything else a builder raised would fail this test)
    assert "Traceback" not in result["msg"]


def test_missing_sysfs_fails_with_the_mount_hint():
    result = fact_task("bare", nic_collect, nic.build_facts, {"sysfs_root": "/nonexistent/sys"})
    assert result["failed"] is True
    assert result["msg"] == "no class/net under /nonexistent/sys: is sysfs mounted there?"
