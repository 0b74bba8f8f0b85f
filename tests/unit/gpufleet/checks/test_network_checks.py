# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Network checks on REAL nic facts: sysfs trees of tests/fixtures/sysfs/ and recorded tool outputs.

Facts are built as the nic_facts action builds them (collector reads the rendered tree, the
parsers read the recordings, ``build_nic_facts`` merges). Claims are scenario inputs written here;
expected values are read by hand from the recordings named.
"""

from __future__ import annotations

import os
import sys

from ansible_collections.gpufleet.acceptance.plugins.modules import nic_facts
from gpufleet.checks import engine
from gpufleet.checks import network
from gpufleet.checks.model import FAIL, PASS, REJECT, SKIP, WARN, NodeContext
from gpufleet.facts.nic import build_nic_facts
from gpufleet.parsers.registry import parse

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs"))

import render_tree  # noqa: E402  pylint: disable=import-error,wrong-import-position

IBSTAT_NDR = "ib/gpud-ibstat-h100-8x-ndr400-ib-plus-bf3-bond-roce200-SPACES.txt"
IBSTAT_3DOWN = "ib/gpud-ibstat-h100-ndr-ib-3ports-down-disabled.txt"
IBSTAT_POLLING = "ib/ibstat-mlx4-dualport-ib-polling-eth-disabled.txt"
IB_COMPUTE_8X400 = {"role": "compute", "type": "ib", "count": 8, "gbps": 400}


def nic_from_tree(tmp_path, tree, fixture_text, ibstat=None, ethtool=None):
    """gpufleet_nic of a rendered synthetic tree plus recorded tool outputs (``ethtool``: {iface: recording})."""
    root = render_tree.render(render_tree.named_tree(tree), str(tmp_path / tree))
    sysfs = {"net": nic_facts.read_net(root), "infiniband": nic_facts.read_infiniband(root)}
    parsed_ethtool = {name: parse("ethtool", fixture_text(path)) for name, path in (ethtool or {}).items()}
    return build_nic_facts(sysfs, ethtool=parsed_ethtool, ibstat=parse("ibstat", fixture_text(ibstat)) if ibstat else None)


def node(nic, nics=None, profile=None, settings=None, name="n1"):
    claim = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "nics": nics} if nics is not None else None
    return NodeContext(name, facts={"nic": nic}, claim=claim, profile=profile, settings=settings)


def by_status(results, status):
    return [item for item in results if item["status"] == status]


def test_healthy_ndr_node_claimed_nics_and_rails_pass(tmp_path, fixture_text):
    nic = nic_from_tree(tmp_path, "h100-ndr-ib", fixture_text, ibstat=IBSTAT_NDR)
    # The simulated inventory's claim for hgx-h100-nv18: 8x 400G IB compute + 1x 200G frontend.
    ctx = node(nic, [IB_COMPUTE_8X400, {"role": "frontend", "type": "ethernet", "count": 1, "gbps": 200}])
    speed = network.check_nic_speed(ctx)
    assert [item["status"] for item in speed] == [PASS]
    # The 200G frontend is the BlueField-3 bond's RDMA port (Ethernet, Active, Rate 200 in ibstat).
    assert "8 of 8x 400 Gb/s compute ib" in speed[0]["message"] and "1 of 1x 200 Gb/s frontend ethernet" in speed[0]["message"]
    state = network.check_rdma_port_state(ctx)
    assert [item["status"] for item in state] == [PASS]
    assert state[0]["message"] == "8 of 8 InfiniBand ports Active at >= 400 Gb/s (8 wanted)"
    assert state[0]["threshold_source"] == "claim"


def test_saturated_counters_of_the_gpud_sysfs_recording_fail(tmp_path, fixture_text):
    # ib-sysfs/gpud-h100-8x-cx7-...-CLONED-COUNTERS.txt: every port port_rcv_errors 14,
    # port_rcv_switch_relay_errors 1 (mlx5_1: 2), excessive_buffer_overrun_errors 15 (a 4-bit counter:
    # saturated), and mlx5_1 link_downed 255 (an 8-bit counter: saturated).
    nic = nic_from_tree(tmp_path, "h100-ndr-ib", fixture_text, ibstat=IBSTAT_NDR)
    results = network.check_ib_port_errors(node(nic))
    assert len(results) == 9 and {item["status"] for item in results} == {FAIL}
    mlx5_1 = [item for item in results if item["subject"] == "mlx5_1/1"][0]
    assert mlx5_1["measured"] == {"link_downed": 255, "port_rcv_errors": 14, "port_rcv_switch_relay_errors": 2, "excessive_buffer_overrun_errors": 15}
    assert mlx5_1["expected"] == 0
    assert "link_downed 255 (SATURATED: the counter is pinned at its 8-bit maximum, the real count is 255 or more)" in mlx5_1["message"]
    assert "excessive_buffer_overrun_errors 15 (SATURATED: the counter is pinned at its 4-bit maximum" in mlx5_1["message"]
    assert "port_rcv_errors 14," in mlx5_1["message"]


def test_non_saturated_counter_is_noted_and_no_pma_is_not_zero(tmp_path):
    # ib-sysfs/node-exporter-...-i40iw0-NA-no-PMA-and-mlx4_0-qdr-counters_ext: mlx4_0 port 1 port_xmit_discards 5;
    # i40iw0 counters all "N/A (no PMA)" (unreadable, never counted as 0 or as errors).
    tree = tmp_path / "manifest"
    tree.mkdir()
    (tree / "tree.txt").write_text("@include tests/fixtures/ib-sysfs/node-exporter-sys-ttar-i40iw0-NA-no-PMA-and-mlx4_0-qdr-counters_ext-grep-r.txt "
                                   "class/infiniband\nclass/net/\n")
    root = render_tree.render(str(tree), str(tmp_path / "root"))
    nic = build_nic_facts({"net": nic_facts.read_net(root), "infiniband": nic_facts.read_infiniband(root)})
    results = network.check_ib_port_errors(node(nic))
    # one reading of a count since the counters were cleared has no time base: noted (it warned before)
    assert [(item["status"], item["subject"], item["measured"]) for item in results] == [
        (PASS, "mlx4_0/1", {"port_xmit_discards": 5})]
    assert results[0]["message"] == ("noted, not judged: mlx4_0/1 error counters: port_xmit_discards 5 since the "
                                     "counters were last cleared (one reading, no time base)")
    assert results[0]["expected"] is None


def test_ibqueryerrors_saturated_symbol_errors_fail():
    # SYNTHETIC port, values transcribed from ib-sysfs/homelab-ibqueryerrors-...-saturated-counters: SX6036 port 5
    # [SymbolErrorCounter == 65535] [LinkErrorRecoveryCounter == 8] [LinkDownedCounter == 2]
    # [PortRcvSwitchRelayErrors == 149] [PortXmitDiscards == 649], written as sysfs counter files of an HCA port.
    counters = {"symbol_error": "65535", "link_error_recovery": "8", "link_downed": "2", "port_rcv_switch_relay_errors": "149",
                "port_xmit_discards": "649", "port_rcv_errors": "0", "VL15_dropped": "0"}
    sysfs = {"net": [], "infiniband": [{"name": "mlx4_0", "attrs": {}, "ports": [
        {"port": "1", "attrs": {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": "56 Gb/sec (4X FDR)", "link_layer": "InfiniBand"},
         "counters": counters}]}]}
    results = network.check_ib_port_errors(node(build_nic_facts(sysfs)))
    assert [(item["status"], item["subject"]) for item in results] == [(FAIL, "mlx4_0/1")]
    assert results[0]["measured"] == {"symbol_error": 65535, "link_error_recovery": 8, "link_downed": 2, "port_rcv_switch_relay_errors": 149,
                                      "port_xmit_discards": 649}
    assert results[0]["message"].startswith("mlx4_0/1 error counters: symbol_error 65535 (SATURATED: the counter is pinned at its 16-bit maximum")
    # The dl380g7 HCA port of the same output: [VL15Dropped == 14] only -> noted with the value (it warned before).
    sysfs["infiniband"][0]["ports"][0]["counters"] = {"VL15_dropped": "14", "symbol_error": "0"}
    results = network.check_ib_port_errors(node(build_nic_facts(sysfs)))
    assert [(item["status"], item["measured"]) for item in results] == [(PASS, {"VL15_dropped": 14})]


def test_three_ports_down_fail_as_rails_not_the_active_ones(tmp_path, fixture_text):
    # ib/gpud-ibstat-h100-ndr-ib-3ports-down-disabled.txt: 8x MT4129 InfiniBand Active 400; MT4125 Ethernet mlx5_1 Active 100,
    # mlx5_2, mlx5_7, mlx5_8 Down / Disabled / Rate 40.
    nic = nic_from_tree(tmp_path, "h100-12ca-3down", fixture_text, ibstat=IBSTAT_3DOWN)
    ctx = node(nic, [IB_COMPUTE_8X400, {"role": "storage", "type": "roce", "count": 4, "gbps": 100}])
    state = network.check_rdma_port_state(ctx)
    failed = by_status(state, FAIL)
    assert [item["subject"] for item in failed] == ["mlx5_2/1", "mlx5_7/1", "mlx5_8/1"]
    assert {(item["measured"], item["expected"]) for item in failed} == {("Down", "Active")}
    assert failed[0]["message"] == "mlx5_2/1 is Down (physical state Disabled), expected Active / LinkUp"
    assert len(state) == 3  # no InfiniBand port is named
    speed = network.check_nic_speed(ctx)
    assert [(item["status"], item["subject"], item["measured"], item["expected"]) for item in speed] == [
        (FAIL, "mlx5_2/1", 40, 100), (FAIL, "mlx5_7/1", 40, 100), (FAIL, "mlx5_8/1", 40, 100)]
    assert speed[0]["message"] == "mlx5_2/1 is Down (physical state Disabled), 40 Gb/s, claimed 4x 100 Gb/s storage roce"


def test_three_ports_down_claimed_as_plain_ethernet_storage(tmp_path, fixture_text):
    # The simulated inventory's claim for hgx-h100-rdma-down: the storage NICs as ethernet. The RDMA rail check
    # judges only the InfiniBand compute rail (all Active); the claim check fails the 3 down storage ports.
    nic = nic_from_tree(tmp_path, "h100-12ca-3down", fixture_text, ibstat=IBSTAT_3DOWN)
    ctx = node(nic, [IB_COMPUTE_8X400, {"role": "storage", "type": "ethernet", "count": 4, "gbps": 100}])
    assert [item["status"] for item in network.check_rdma_port_state(ctx)] == [PASS]
    speed = network.check_nic_speed(ctx)
    assert [item["subject"] for item in by_status(speed, FAIL)] == ["mlx5_2/1", "mlx5_7/1", "mlx5_8/1"]
    # Only the InfiniBand compute rail is claimed: the Ethernet ports are extra, nothing fails.
    only_ib = node(nic, [IB_COMPUTE_8X400])
    assert [item["status"] for item in network.check_rdma_port_state(only_ib)] == [PASS]
    assert [item["status"] for item in network.check_nic_speed(only_ib)] == [PASS]


def test_polling_port_fails(fixture_text):
    # ib/ibstat-mlx4-dualport-ib-polling-eth-disabled.txt: port 1 InfiniBand Down / Polling / Rate 10; port 2 Ethernet Down / Disabled.
    nic = build_nic_facts({"net": [], "infiniband": []}, ibstat=parse("ibstat", fixture_text(IBSTAT_POLLING)))
    ctx = node(nic, [{"role": "compute", "type": "ib", "count": 1, "gbps": 56}])
    state = network.check_rdma_port_state(ctx)
    assert [(item["status"], item["subject"], item["measured"]) for item in state] == [(FAIL, "mlx4_0/1", "Down")]
    assert state[0]["message"] == "mlx4_0/1 is Down (physical state Polling), expected Active / LinkUp"


def test_speed_unknown_and_no_link_fail_against_the_claim(tmp_path, fixture_text):
    # ethtool/intel-i40e-unsupported-sfp-speed-unknown-link-no.txt: net03 Speed: Unknown!, Link detected: no.
    nic = nic_from_tree(tmp_path, "i40e-unsupported-sfp", fixture_text, ethtool={"net03": "ethtool/intel-i40e-unsupported-sfp-speed-unknown-link-no.txt"})
    results = network.check_nic_speed(node(nic, [{"role": "storage", "type": "ethernet", "count": 1, "gbps": 100}]))
    assert [(item["status"], item["subject"], item["measured"], item["expected"]) for item in results] == [(FAIL, "net03", None, 100)]
    assert results[0]["message"] == "net03 is without link (Link detected: no), speed unknown, claimed 1x 100 Gb/s storage ethernet"


def test_one_gigabit_link_sold_as_100g_fails(tmp_path, fixture_text):
    # ethtool/node-exporter-eth0-1g-netlink-error-not-permitted.txt: eth0 Speed 1000Mb/s, Link detected: yes.
    nic = nic_from_tree(tmp_path, "node-exporter-1g-copper", fixture_text, ethtool={"eth0": "ethtool/node-exporter-eth0-1g-netlink-error-not-permitted.txt"})
    results = network.check_nic_speed(node(nic, [{"role": "frontend", "type": "ethernet", "count": 1, "gbps": 100}]))
    assert [(item["status"], item["subject"], item["measured"], item["expected"]) for item in results] == [(FAIL, "eth0", 1.0, 100)]
    assert results[0]["message"] == "eth0 runs at 1 Gb/s, claimed 1x 100 Gb/s frontend ethernet"
    assert results[0]["threshold_source"] == "claim"
    # Claimed as 1G it passes.
    assert [item["status"] for item in network.check_nic_speed(node(nic, [{"role": "frontend", "type": "ethernet", "count": 1, "gbps": 1}]))] == [PASS]


def test_link_detected_no_on_a_second_port(tmp_path, fixture_text):
    # ovh-e810: eth0 25000Mb/s linked; eth1 "Link detected: no" (ethtool/ovh-intel-e810-ice-25g-NO-LINK-but-speed-25000.txt).
    ethtool = {"eth0": "ethtool/ovh-intel-e810-ice-25g-dac-linked.txt", "eth1": "ethtool/ovh-intel-e810-ice-25g-NO-LINK-but-speed-25000.txt"}
    nic = nic_from_tree(tmp_path, "ovh-e810", fixture_text, ethtool=ethtool)
    assert [item["status"] for item in network.check_nic_speed(node(nic, [{"role": "frontend", "type": "ethernet", "count": 1, "gbps": 25}]))] == [PASS]
    two = network.check_nic_speed(node(nic, [{"role": "frontend", "type": "ethernet", "count": 2, "gbps": 25}]))
    assert [(item["status"], item["subject"]) for item in two] == [(FAIL, "eth1")]
    assert two[0]["message"].startswith("eth1 is without link (Link detected: no)")


def test_roce_ports_down_and_rates_unknown(tmp_path, fixture_text):
    # dgx-spark-roce: rocep1s0f1 and roceP2p1s0f1 Active, the other two Down; no rate recorded.
    nic = nic_from_tree(tmp_path, "dgx-spark-roce", fixture_text)
    results = network.check_rdma_port_state(node(nic, [{"role": "compute", "type": "roce", "count": 4, "gbps": 200}]))
    assert sorted((item["status"], item["subject"]) for item in results) == [
        (FAIL, "roceP2p1s0f0/1"), (FAIL, "rocep1s0f0/1"), (WARN, "roceP2p1s0f1/1"), (WARN, "rocep1s0f1/1")]
    warned = [item for item in results if item["status"] == WARN][0]
    assert warned["message"].endswith("is Active but reports no rate: could not verify 200 Gb/s")
    # The same claim through network.nic_speed: the two Down ports fail, the two Active ports
    # whose rate nothing reported cannot be verified and warn (no speed is invented for them).
    speed = network.check_nic_speed(node(nic, [{"role": "compute", "type": "roce", "count": 4, "gbps": 200}]))
    assert sorted((item["status"], item["subject"]) for item in speed) == [
        (FAIL, "roceP2p1s0f0/1"), (FAIL, "rocep1s0f0/1"), (WARN, "roceP2p1s0f1/1"), (WARN, "rocep1s0f1/1")]
    unverified = [item for item in speed if item["status"] == WARN][0]
    assert unverified["measured"] is None and unverified["expected"] == 200
    assert unverified["message"].endswith("is up but reports no speed, claimed 4x 200 Gb/s compute roce: could not verify")


def test_profile_compute_rail_without_a_claim_and_skips(tmp_path, fixture_text):
    nic = nic_from_tree(tmp_path, "h100-12ca-3down", fixture_text, ibstat=IBSTAT_3DOWN)
    profile = {"name": "hgx-h100-8gpu", "expect": {"compute_rail": {"count": 8, "link_layer": "InfiniBand", "rate": 400.0}},
               "sources": {"expect.compute_rail": "docs/baselines.md 2 (NDR 400); 6 ibstat Active/LinkUp"}}
    state = network.check_rdma_port_state(node(nic, profile=profile))
    assert [item["status"] for item in state] == [PASS]
    assert state[0]["threshold_source"] == ("profile hgx-h100-8gpu: docs/baselines.md 2 (NDR 400); "
                                            "6 ibstat Active/LinkUp")
    bare = node(nic)
    assert [item["status"] for item in network.check_rdma_port_state(bare)] == [SKIP]
    assert [item["status"] for item in network.check_nic_speed(bare)] == [SKIP]
    # A claim that lists NICs but no RDMA: the rail check has nothing to judge.
    assert network.check_rdma_port_state(node(nic, [{"role": "frontend", "type": "ethernet", "count": 1, "gbps": 100}]))[0]["status"] == SKIP


def test_missing_claimed_nics_are_counted(tmp_path, fixture_text):
    nic = nic_from_tree(tmp_path, "h100-ndr-ib", fixture_text, ibstat=IBSTAT_NDR)
    results = network.check_nic_speed(node(nic, [{"role": "compute", "type": "ib", "count": 16, "gbps": 400}]))
    assert [(item["status"], item["subject"], item["measured"], item["expected"]) for item in results] == [(FAIL, "compute ib", 8, 16)]


def test_nccl_env_against_interfaces_and_ports(tmp_path, fixture_text):
    nic = nic_from_tree(tmp_path, "h100-ndr-ib", fixture_text, ibstat=IBSTAT_NDR)
    assert network.check_nccl_env(node(nic))[0]["status"] == SKIP

    def judge(env):
        return network.check_nccl_env(node(nic, settings={"gpufleet_nccl_env": env}))

    assert [item["status"] for item in judge({"NCCL_SOCKET_IFNAME": "enp1s0f0", "NCCL_IB_HCA": "mlx5_0:1,mlx5_1:1"})] == [PASS]
    assert [item["status"] for item in judge({"NCCL_SOCKET_IFNAME": "^docker,lo"})] == [PASS]
    down = judge({"NCCL_SOCKET_IFNAME": "=enp1s0f1"})
    assert [(item["status"], item["subject"], item["measured"]) for item in down] == [(FAIL, "NCCL_SOCKET_IFNAME", ["enp1s0f1"])]
    assert down[0]["message"].startswith("NCCL_SOCKET_IFNAME entry =enp1s0f1 matches enp1s0f1, none up")
    assert judge({"NCCL_SOCKET_IFNAME": "eth"})[0]["message"].startswith("NCCL_SOCKET_IFNAME entry eth matches no interface on the node")
    assert judge({"NCCL_IB_HCA": "mlx5_3"})[0]["message"] == "NCCL_IB_HCA entry mlx5_3 names no RDMA port on the node"
    nic_down = nic_from_tree(tmp_path, "h100-12ca-3down", fixture_text, ibstat=IBSTAT_3DOWN)
    bad = network.check_nccl_env(node(nic_down, settings={"gpufleet_nccl_env": {"NCCL_IB_HCA": "=mlx5_2,mlx5_7:1,mlx5_0"}}))
    assert [(item["status"], item["subject"], item["measured"]) for item in bad] == [(FAIL, "mlx5_2/1", "Down"), (FAIL, "mlx5_7/1", "Down")]
    # "mlx5_1" is a prefix in NCCL's syntax: mlx5_1, mlx5_10, mlx5_11, all Active.
    ok = network.check_nccl_env(node(nic_down, settings={"gpufleet_nccl_env": {"NCCL_IB_HCA": "mlx5_1"}}))
    assert [item["status"] for item in ok] == [PASS]


def test_engine_runs_the_network_family(tmp_path, fixture_text):
    nic = nic_from_tree(tmp_path, "node-exporter-1g-copper", fixture_text, ethtool={"eth0": "ethtool/node-exporter-eth0-1g-netlink-error-not-permitted.txt"})
    report = engine.run_checks([node(nic, [{"role": "frontend", "type": "ethernet", "count": 1, "gbps": 10}], name="frontend-1g")],
                               families=["network"])
    entry = report["nodes"]["frontend-1g"]
    assert entry["verdict"] == REJECT
    assert entry["failed"] == ["network.nic_speed"]


def test_nccl_list_equals_sign_makes_the_whole_list_exact():
    # NCCL reads "=" once, before the list: every entry is then exact (mlx5_1 never takes mlx5_10).
    assert network.nccl_list("=mlx5_0:1,mlx5_1:1") == (False, [(True, "mlx5_0", 1), (True, "mlx5_1", 1)])
    assert network.nccl_list("^docker,lo") == (True, [(False, "docker", -1), (False, "lo", -1)])
    assert network.nccl_list("mlx5_1") == (False, [(False, "mlx5_1", -1)])


# --- compute rails of either link layer, bonds, the ports blamed ---------------------------------------

IBSTAT_ROCE = "ib/gpud-ibstat-h100-8xcx7-roce400-4xcx6dx-100g-all-active.txt"
BOND_DOWN = "bonding/proc-net-bonding-bond0-lacp-2x1g-one-member-down.txt"
BOND_UP_EDITED = "bonding/EDITED-proc-net-bonding-bond0-lacp-2x100g-both-up.txt"


def _rail_profile(link_layer):
    return {"name": "hgx-h100-8", "expect": {"compute_rail": {"count": 8, "link_layer": link_layer, "rate": 400.0}},
            "sources": {"expect.compute_rail": "docs/baselines.md 11"}}


def test_roce_rail_passes_a_profile_that_allows_either_link_layer(fixture_text):
    # ib/gpud-ibstat-h100-8xcx7-roce400-...: 8x MT4129 'Rate: 400' 'Link layer: Ethernet' + 4x MT4125 100G Ethernet, all Active.
    nic = build_nic_facts({}, ibstat=parse("ibstat", fixture_text(IBSTAT_ROCE)))
    # An InfiniBand-only profile still refuses the RoCE rail: the SKU was described as IB.
    ib_only = network.check_rdma_port_state(node(nic, profile=_rail_profile("InfiniBand")))
    assert [(item["status"], item["message"]) for item in ib_only] == [(FAIL, "no InfiniBand RDMA port on the node; 8 wanted")]
    either = network.check_rdma_port_state(node(nic, profile=_rail_profile(["InfiniBand", "Ethernet"])))
    # The 4 CX-6 Dx 100G ports are another part, up at their own rate: not named.
    assert [(item["status"], item["message"]) for item in either] == [
        (PASS, "8 of 12 InfiniBand/Ethernet ports Active at >= 400 Gb/s (8 wanted)")]
    claim = network.check_rdma_port_state(node(nic, [{"role": "compute", "type": "roce", "count": 8, "gbps": 400}]))
    assert [item["status"] for item in claim] == [PASS]


def test_rail_shortfall_blames_the_down_port_not_the_storage_nics(fixture_text):
    # EDITED in memory from the RoCE recording: mlx5_0 (a CX-7 rail port) Down / Disabled.
    nic = build_nic_facts({}, ibstat=parse("ibstat", fixture_text(IBSTAT_ROCE)))
    down = [dev for dev in nic["rdma"] if dev["device"] == "mlx5_0"][0]["ports"][0]
    down["state"], down["physical_state"] = "Down", "Disabled"
    ctx = node(nic, [{"role": "compute", "type": "roce", "count": 8, "gbps": 400}])
    state = network.check_rdma_port_state(ctx)
    # Before: the four Active 100G CX-6 Dx ports failed too ("Active at 100 Gb/s, expected 400 Gb/s").
    assert [(item["status"], item["subject"], item["measured"]) for item in state] == [(FAIL, "mlx5_0/1", "Down")]
    assert state[0]["message"] == "mlx5_0/1 is Down (physical state Disabled), expected Active / LinkUp"
    speed = network.check_nic_speed(ctx)
    # Before: an up link was blamed first (mlx5_1, a 100G CX-6 Dx storage port); now the rail's own down port.
    assert [(item["status"], item["subject"]) for item in speed] == [(FAIL, "mlx5_0/1")]
    assert speed[0]["message"] == "mlx5_0/1 is Down (physical state Disabled), 400 Gb/s, claimed 8x 400 Gb/s compute roce"


def _bond_nic(text):
    bond = {"name": "bond0", "attrs": {"operstate": "up", "carrier": "1", "speed": "2000", "type": "1"}, "bonding": True,
            "bonding_status": text}
    members = [{"name": name, "device": True, "pci_address": "0000:01:00.%d" % index, "driver": "ixgbe",
                "attrs": {"operstate": "up", "carrier": "1", "type": "1"}} for index, name in enumerate(("enp1s0f0", "enp1s0f1"))]
    return build_nic_facts({"net": [bond] + members})


def test_lacp_bond_with_a_member_down_is_judged_through_its_members(fixture_text):
    # bonding/proc-net-bonding-bond0-lacp-2x1g-one-member-down.txt: enp1s0f0 MII down (aggregator 1), enp1s0f1 up 1000 Mbps
    # in the active aggregator 2. Sold as one 2 Gb/s front-end link: the bond carries 1 Gb/s.
    nic = _bond_nic(fixture_text(BOND_DOWN))
    bond = [iface for iface in nic["interfaces"] if iface["name"] == "bond0"][0]["bond"]
    assert (bond["lacp"], bond["active_aggregator"]) == (True, 2)
    assert [(m["name"], m["mii_status"], m["speed_mbps"], m["aggregator_id"], m["active"]) for m in bond["members"]] == [
        ("enp1s0f0", "down", None, 1, False), ("enp1s0f1", "up", 1000, 2, True)]
    results = network.check_nic_speed(node(nic, [{"role": "frontend", "type": "ethernet", "count": 1, "gbps": 2}]))
    assert [(item["status"], item["subject"], item["measured"]) for item in results] == [(FAIL, "bond0", 1)]
    assert results[0]["message"] == (
        "bond0 runs at 1 Gb/s (bond IEEE 802.3ad Dynamic link aggregation: the sum of its active members; "
        "enp1s0f0 speed unknown (MII status down); enp1s0f1 up 1 Gb/s), claimed 1x 2 Gb/s frontend ethernet")


def test_healthy_lacp_bond_passes_as_one_link(fixture_text):
    nic = _bond_nic(fixture_text(BOND_UP_EDITED))
    results = network.check_nic_speed(node(nic, [{"role": "frontend", "type": "ethernet", "count": 1, "gbps": 200}]))
    assert [item["status"] for item in results] == [PASS]
    assert "1 of 1x 200 Gb/s frontend ethernet" in results[0]["message"]
