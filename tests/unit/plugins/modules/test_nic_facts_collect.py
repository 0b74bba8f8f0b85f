# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node side of nic_facts: what the collector reads from a sysfs tree and which tools it runs.

The trees are the synthetic ones under tests/fixtures/sysfs/ (rendered into tmp) or raw
``grep -r`` renderings of real sysfs trees from tests/fixtures/ib-sysfs/ (rendered the same
way); values asserted are read by hand from those files.
"""

from __future__ import annotations

import os
import sys

from ansible_collections.gpufleet.acceptance.plugins.modules import nic_facts

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs"))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position
import render_tree  # noqa: E402  pylint: disable=import-error,wrong-import-position

NODE_EXPORTER = "tests/fixtures/ib-sysfs/node-exporter-sys-ttar-i40iw0-NA-no-PMA-and-mlx4_0-qdr-counters_ext-grep-r.txt"
PROCFS = "tests/fixtures/ib-sysfs/procfs-fixtures-hfi1_0-opa100-mlx4_0-qdr-2port-mlx5_0-hw_counters-grep-r.txt"


def render_named(name, tmp_path):
    return render_tree.render(render_tree.named_tree(name), str(tmp_path / name))


def render_manifest(text, tmp_path, name="tree"):
    """Render a manifest written by the test (synthetic, see each caller)."""
    tree = tmp_path / (name + "-manifest")
    tree.mkdir()
    (tree / "tree.txt").write_text(text)
    return render_tree.render(str(tree), str(tmp_path / name))


def by_name(entries, name):
    return [entry for entry in entries if entry["name"] == name][0]


def test_read_net_physical_virtual_and_pci_part(tmp_path):
    root = render_named("h100-ndr-ib", tmp_path)
    net = nic_facts.read_net(root)
    expected = ["lo", "bond0", "enp1s0f0", "enp1s0f1", "ibp26s0", "ibp60s0", "ibp77s0", "ibp94s0", "ibp156s0", "ibp188s0", "ibp204s0", "ibp220s0"]
    assert [entry["name"] for entry in net] == sorted(expected)
    ib = by_name(net, "ibp26s0")
    assert ib["device"] is True
    assert ib["pci_address"] == "0000:1a:00.0"
    assert ib["driver"] == "mlx5_core"
    assert ib["pci"]["current_link_speed"] == "32.0 GT/s PCIe"
    assert ib["pci"]["max_link_width"] == "16"
    assert ib["pci"]["numa_node"] == "0"
    assert ib["rdma_devices"] == ["mlx5_0"]
    assert ib["attrs"]["speed"] == "400000"
    assert ib["sysfs_path"] == "devices/pci0000:00/0000:1a:00.0/net/ibp26s0"
    bond = by_name(net, "bond0")
    assert (bond["device"], bond["bonding"], bond["pci_address"], bond["pci"]) == (False, True, None, None)
    assert by_name(net, "lo")["sysfs_path"] == "devices/virtual/net/lo"
    # A file the tree lacks (like a sysfs attribute that fails to read) is None, not "".
    assert by_name(net, "lo")["attrs"]["speed"] is None


def test_read_infiniband_from_the_gpud_rendering(tmp_path):
    root = render_named("h100-ndr-ib", tmp_path)
    devices = nic_facts.read_infiniband(root)
    assert [dev["name"] for dev in devices] == ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9", "mlx5_bond_0"]
    mlx5_1 = by_name(devices, "mlx5_1")
    assert mlx5_1["attrs"]["fw_ver"] == "28.41.1000"
    assert mlx5_1["attrs"]["node_guid"] is None  # not in the recording
    port = mlx5_1["ports"][0]
    assert port["port"] == "1"
    assert port["attrs"]["state"] == "4: ACTIVE"
    assert port["attrs"]["rate"] == "400 Gb/sec (4X NDR)"
    assert port["counters"]["link_downed"] == "255"
    assert port["counters"]["port_rcv_data"] == "205128687774249"
    assert len(port["counters"]) == 21 and len(port["hw_counters"]) == 26
    assert mlx5_1["pci_address"] == "0000:3c:00.0" and mlx5_1["netdevs"] == ["ibp60s0"]
    bond = by_name(devices, "mlx5_bond_0")
    assert (bond["device"], bond["pci_address"], bond["netdevs"]) == (False, None, [])
    assert bond["ports"][0]["attrs"]["link_layer"] == "Ethernet"


def test_read_infiniband_na_counters_and_multiline_value(tmp_path):
    root = render_manifest("@include %s class/infiniband\n@include %s other/class/infiniband\n" % (NODE_EXPORTER, PROCFS), tmp_path)
    devices = nic_facts.read_infiniband(root)
    i40iw = by_name(devices, "i40iw0")
    assert i40iw["ports"][0]["counters"]["symbol_error"] == "N/A (no PMA)"
    assert i40iw["ports"][0]["attrs"]["rate"] == "10 Gb/sec (4X)"
    assert i40iw["ports"][0]["hw_counters"] == {}
    mlx4 = by_name(devices, "mlx4_0")
    assert [port["port"] for port in mlx4["ports"]] == ["1", "2"]
    assert mlx4["ports"][0]["counters"]["port_xmit_wait"] == "4294967295"
    # counters_ext/ is not collected; port 2 of this rendering has only 8 counters/ files.
    assert len(mlx4["ports"][1]["counters"]) == 8
    procfs = nic_facts.read_infiniband(os.path.join(root, "other"))
    # mlx4_0/ports/2/link_layer holds an empty first line in the procfs fixture.
    assert by_name(procfs, "mlx4_0")["ports"][1]["attrs"]["link_layer"] == "\nInfiniBand"
    assert by_name(procfs, "hfi1_0")["attrs"]["hca_type"] is None
    assert by_name(procfs, "mlx5_0")["ports"][0]["hw_counters"]["req_cqe_error"] == "3481"


def test_gids_skip_all_zero_entries(tmp_path):
    # SYNTHETIC GID table (no recording of gids/ exists yet): index 0 a RoCE v2 GID, index 1 unset.
    root = render_manifest(
        "class/net/lo -> ../../devices/virtual/net/lo\n"
        "devices/virtual/net/lo/operstate = unknown\n"
        "class/infiniband/roce0/ports/1/state = 4: ACTIVE\n"
        "class/infiniband/roce0/ports/1/gids/0 = fe80:0000:0000:0000:4ebb:47ff:fe2d:1a17\n"
        "class/infiniband/roce0/ports/1/gids/1 = 0000:0000:0000:0000:0000:0000:0000:0000\n"
        "class/infiniband/roce0/ports/1/gid_attrs/types/0 = RoCE v2\n"
        "class/infiniband/roce0/ports/1/gid_attrs/ndevs/0 = enp1s0f1np1\n",
        tmp_path,
    )
    port = nic_facts.read_infiniband(root)[0]["ports"][0]
    assert port["gids"] == [{"index": "0", "gid": "fe80:0000:0000:0000:4ebb:47ff:fe2d:1a17", "type": "RoCE v2", "ndev": "enp1s0f1np1"}]


def test_collect_runs_ethtool_for_physical_interfaces_only(tmp_path):
    layout = build_fleet.build_node(os.path.join(REPO_ROOT, "tests", "replay", "nodes", "nic-ovh-e810.yml"), str(tmp_path / "fleet"))
    root = render_named("ovh-e810", tmp_path)
    bin_dir = layout["bin_dir"]
    raw = nic_facts.collect(root, os.path.join(bin_dir, "ethtool"), os.path.join(bin_dir, "ibstat"), os.path.join(bin_dir, "ibv_devinfo"),
                            os.path.join(bin_dir, "ip"), 30)
    assert sorted(raw["ethtool"]) == ["eth0", "eth1"]
    assert raw["ethtool"]["eth0"]["rc"] == 0
    assert raw["ethtool"]["eth0"]["stdout"].startswith("Settings for eth0:")
    assert raw["ethtool"]["eth0"]["cmd"][1:] == ["eth0"]
    assert raw["ethtool_driver"]["eth0"]["cmd"][1:] == ["-i", "eth0"]
    assert raw["ethtool_driver"]["eth0"]["stdout"].startswith("driver: ice")
    # No wrapper for the tools the node file lacks: they read as not installed.
    assert raw["ibstat"]["error"] == "not_found"
    assert raw["ip_addr"]["error"] == "not_found"
    assert raw["skipped_names"] == []


def test_untrusted_interface_names_never_reach_ethtool(tmp_path):
    # SYNTHETIC tree: interfaces with names a hostile node could create (the kernel allows `$`,
    # `(`, `;` in names) and one of 16 characters (longer than IFNAMSIZ allows).
    lines = []
    for name in ("eth0", "x$(reboot)", "a;b", "abcdefghijklmnop", "-e"):
        lines.append("devices/pci0000:00/0000:01:00.0/net/%s/operstate = up" % name)
        lines.append("devices/pci0000:00/0000:01:00.0/net/%s/device -> ../../../0000:01:00.0" % name)
        lines.append("class/net/%s -> ../../devices/pci0000:00/0000:01:00.0/net/%s" % (name, name))
    root = render_manifest("\n".join(lines) + "\n", tmp_path)
    marker = tmp_path / "argv.log"
    tool = tmp_path / "ethtool"
    tool.write_text("#!/bin/sh\nprintf '%%s|' \"$@\" >> %s\necho >> %s\n" % (marker, marker))
    tool.chmod(0o755)
    raw = nic_facts.collect(root, str(tool), "/nonexistent/ibstat", "/nonexistent/ibv_devinfo", "/nonexistent/ip", 10)
    assert sorted(raw["skipped_names"]) == ["-e", "a;b", "abcdefghijklmnop", "x$(reboot)"]
    assert sorted(raw["ethtool"]) == ["eth0"]
    assert marker.read_text().splitlines() == ["eth0|", "-i|eth0|"]


def test_safe_name_pattern():
    assert nic_facts.SAFE_IFNAME.match("enP2p1s0f1np1")
    assert nic_facts.SAFE_IFNAME.match("eth0.100")
    assert nic_facts.SAFE_IFNAME.match("ib0:1")
    # A leading "-" would be read by ethtool as an option.
    assert not nic_facts.SAFE_IFNAME.match("-e")
    assert not nic_facts.SAFE_IFNAME.match("--reset")
    assert not nic_facts.SAFE_IFNAME.match("eth 0")
    assert not nic_facts.SAFE_IFNAME.match("")
    assert not nic_facts.SAFE_IFNAME.match("a/b")


def test_collect_tools_missing_are_reported_not_raised(tmp_path):
    root = render_named("desktop-docker", tmp_path)
    raw = nic_facts.collect(root, "/nonexistent/ethtool", "/nonexistent/ibstat", "/nonexistent/ibv_devinfo", "/nonexistent/ip", 5)
    assert raw["ethtool"]["enp8s0"]["error"] == "not_found"
    assert raw["ethtool_driver"] == {}
    assert raw["sysfs"]["infiniband"] == []
    assert [entry["name"] for entry in raw["sysfs"]["net"]] == ["br-211476fe73de", "docker0", "enp8s0", "lo"]
    assert by_name(raw["sysfs"]["net"], "docker0")["bridge"] is True
