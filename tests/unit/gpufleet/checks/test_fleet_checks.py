# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet-wide consistency on REAL gpu/nic facts: fleets made of several recorded machines.

GPU facts are ``build_inventory`` on recorded ``nvidia-smi -q`` (values read by hand from them);
NIC facts are ``build_nic_facts`` on recorded ibstat / ibv_devinfo. Where a node mixes two
recordings (an A10 in an H100 node) or edits one, the test says so (COMPOSITE / SYNTHETIC).
"""

from __future__ import annotations

import copy

from gpufleet.checks import engine
from gpufleet.checks import fleet
from gpufleet.checks.model import FAIL, PASS, REJECT, SKIP, WARN, NodeContext
from gpufleet.facts.gpu import build_inventory
from gpufleet.facts.nic import build_nic_facts, hca_part
from gpufleet.parsers.registry import parse

H100_161 = "smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt"  # 8x H100 80GB HBM3, VBIOS 96.00.74.00.0D, 700 W, 1980 MHz
H100_183 = "smi/gpud-nvidia-smi-q-text-8x-h100-535.183.01-fabric-completed-power-brake-swthermal-ACTIVE.txt"  # VBIOS 96.00.74.00.01
H100_DELLA = "smi/princeton-della-h100-nvidia-smi-a-text-545.txt"  # 1x H100, VBIOS 96.00.74.00.0D
A10 = "smi/gpud-nvidia-smi-q-1x-a10-535.129.03.txt"  # NVIDIA A10, 23028 MiB, 150 W, 1695 MHz, 900-2G133-0020-100, 94.02.5C.00.04
PROFILE = {"name": "hgx-h100-8gpu", "fleet": {"max_below_median": 0.10, "consistent_gpu_fields": list(fleet.DEFAULT_GPU_FIELDS)},
           "sources": {"fleet.max_below_median": "docs/baselines.md 1: NCCL_TESTS_MIN_BW fails below 0.9 x",
                       "fleet.consistent_gpu_fields": "site consistency list"}}


def gpu(fixture_text, path, nvlink=None):
    status = parse("nvlink-status", fixture_text(nvlink)) if nvlink else None
    return build_inventory(text=parse("nvidia-smi-q", fixture_text(path)), nvlink_status=status)


def node(name, gpu_facts=None, nic=None, profile=None, settings=None):
    return NodeContext(name, facts={"gpu": gpu_facts, "nic": nic}, profile=PROFILE if profile is None else profile, settings=settings)


def results_of(outcome, name, status=None):
    return [item for item in outcome[name] if status is None or item["status"] == status]


def test_mixed_vbios_batch_is_named_with_the_fleet_majority(fixture_text):
    # 8 + 1 GPUs at 96.00.74.00.0D, 8 at 96.00.74.00.01.
    nodes = [node("a", gpu(fixture_text, H100_161)), node("della", gpu(fixture_text, H100_DELLA)), node("c", gpu(fixture_text, H100_183))]
    outcome = fleet._gpu_consistency("vbios_version", nodes)  # pylint: disable=protected-access
    odd = results_of(outcome, "c")
    assert [(item["status"], item["subject"], item["measured"], item["expected"]) for item in odd] == [
        (WARN, "GPU%d" % i, "96.00.74.00.01", "96.00.74.00.0D") for i in range(8)]
    assert odd[5]["message"] == "GPU5 VBIOS 96.00.74.00.01, fleet majority 96.00.74.00.0D (9 of 17 GPUs in profile hgx-h100-8gpu)"
    assert odd[0]["threshold_source"] == "profile hgx-h100-8gpu: site consistency list"
    assert [item["status"] for item in results_of(outcome, "a")] == [PASS]
    assert results_of(outcome, "a")[0]["message"] == "8 GPU(s) VBIOS 96.00.74.00.0D, as the fleet majority"
    # Model, memory, power limit and clocks agree on all 17 GPUs.
    for field in ("name", "memory_total_mib", "power_limit_w", "clocks_max_sm_mhz", "board_part_number"):
        outcome = fleet._gpu_consistency(field, nodes)  # pylint: disable=protected-access
        assert {item["status"] for name in ("a", "della", "c") for item in outcome[name]} == {PASS}


def test_inference_card_in_a_training_node(fixture_text):
    # COMPOSITE: the 8x H100 recording with GPU7 replaced by the A10 of another recording (an inference card in a training node).
    mixed = gpu(fixture_text, H100_161)
    card = copy.deepcopy(gpu(fixture_text, A10)["gpus"][0])
    card["index"] = 7
    mixed["gpus"][7] = card
    report = engine.run_checks([node("mixed", mixed)], families=["fleet"])
    checks = report["nodes"]["mixed"]["checks"]
    assert report["nodes"]["mixed"]["verdict"] == REJECT
    flagged = [(item["id"], item["status"], item["subject"], item["measured"], item["expected"]) for item in checks if item["status"] in (FAIL, WARN)]
    assert flagged == [
        ("fleet.gpu_model", FAIL, "GPU7", "NVIDIA A10", "NVIDIA H100 80GB HBM3"),
        ("fleet.gpu_memory", FAIL, "GPU7", 23028, 81559),
        ("fleet.gpu_vbios", WARN, "GPU7", "94.02.5C.00.04", "96.00.74.00.0D"),
        ("fleet.gpu_board_part", WARN, "GPU7", "900-2G133-0020-100", "692-2G520-0200-000"),
        ("fleet.gpu_power_limit", FAIL, "GPU7", 150.0, 700.0),
        ("fleet.gpu_max_sm_clock", FAIL, "GPU7", 1695, 1980),
    ]
    model = [item for item in checks if item["id"] == "fleet.gpu_model"][0]
    assert model["message"] == "GPU7 model NVIDIA A10, node majority NVIDIA H100 80GB HBM3 (7 of 8 GPUs in profile hgx-h100-8gpu)"
    # One node: the fleet-relative rules cannot judge.
    assert {item["status"] for item in checks if item["id"] in fleet.RELATIVE_FIGURES} == {SKIP}


def test_consumer_cards_among_h100s_and_cohorts(fixture_text):
    rtx = gpu(fixture_text, "smi/gpud-nvidia-smi-q-8x-rtx4090-535.154.05.txt")
    nodes = [node("a", gpu(fixture_text, H100_161)), node("b", gpu(fixture_text, H100_161)), node("rtx", rtx)]
    outcome = fleet._gpu_consistency("name", nodes)  # pylint: disable=protected-access
    assert {(item["status"], item["measured"], item["expected"]) for item in outcome["rtx"]} == {(FAIL, "NVIDIA GeForce RTX 4090", "NVIDIA H100 80GB HBM3")}
    assert len(outcome["rtx"]) == 8
    # Held against its own profile it is its own cohort: nothing to flag.
    apart = [nodes[0], nodes[1], node("rtx", rtx, profile={"name": "rtx4090-8gpu"})]
    assert {item["status"] for item in fleet._gpu_consistency("name", apart)["rtx"]} == {PASS}  # pylint: disable=protected-access
    # The inventory may group nodes explicitly.
    grouped = [node(n.name, n.group("gpu"), settings={"gpufleet_fleet_group": "rack-%s" % n.name}) for n in nodes]
    assert {item["status"] for item in fleet._gpu_consistency("name", grouped)["rtx"]} == {PASS}  # pylint: disable=protected-access
    # The power-limit rule: 450 W is 36% below the 700 W median of three nodes.
    power = fleet._relative("fleet.power_limit", nodes)  # pylint: disable=protected-access
    assert [(item["status"], item["measured"], item["expected"]) for item in power["rtx"]] == [(FAIL, 450.0, 630.0)]
    assert power["rtx"][0]["message"] == "lowest GPU power limit 450 W is 36% below the fleet median 700 W (more than 10% below fails)"
    # a spread around the fleet's own median is labelled policy (docs/baselines.md 9), the profile's citation kept
    assert power["rtx"][0]["threshold_source"] == (
        "policy (docs/baselines.md 9): profile hgx-h100-8gpu: docs/baselines.md 1: NCCL_TESTS_MIN_BW fails below 0.9 x")
    assert [item["status"] for item in power["a"]] == [PASS]


def test_fleet_relative_rule():
    outcome = fleet.fleet_relative({"a": 144, "b": 144, "c": 140, "d": 100, "e": None}, 0.10, "src", check_id="x.links", what="links")
    # median of 100, 140, 144, 144 = 142; floor 142 x 0.9 = 127.8; (142 - 100) / 142 = 29.6%
    assert [(item["status"], item["measured"], item["expected"]) for item in outcome["d"]] == [(FAIL, 100, 127.8)]
    assert outcome["d"][0]["message"] == "links 100 is 30% below the fleet median 142 (more than 10% below fails)"
    assert [item["status"] for item in outcome["c"]] == [PASS]
    assert outcome["e"][0]["status"] == SKIP
    assert {item["status"] for items in fleet.fleet_relative({"a": 1, "b": 2}, 0.10, "src").values() for item in items} == {SKIP}
    assert fleet.fleet_relative({"a": 1, "b": 2, "c": 3}, None, "src")["a"][0]["message"] == "not judged: the profile sets no fleet.max_below_median"


def test_nvlink_active_links_relative(fixture_text):
    # Three nodes with the exporter 1x H100 -q and its 18-link nvlink -s; COMPOSITE fourth: the same -q with the
    # RTX 2080 SUPER "all links are inActive" nvlink -s (0 active links). A node without nvlink output is not judged.
    good = "smi/exporter-capture-nvlink-s-h100-590-18links.txt"
    base = "smi/exporter-capture-nvidia-smi-q-text-1x-h100-590-fabric-completed-under-load.txt"
    nodes = [node(name, gpu(fixture_text, base, good)) for name in ("a", "b", "c")]
    nodes.append(node("dead", gpu(fixture_text, base, "smi/exporter-capture-nvlink-s-rtx2080super-all-links-inActive.txt")))
    nodes.append(node("unread", gpu(fixture_text, base)))
    outcome = fleet._relative("fleet.nvlink_active_links", nodes)  # pylint: disable=protected-access
    assert [(item["status"], item["measured"], item["expected"]) for item in outcome["dead"]] == [(FAIL, 0, 16.2)]
    assert [(item["status"], item["measured"]) for item in outcome["a"]] == [(PASS, 18)]
    assert outcome["unread"][0]["status"] == SKIP


def test_hca_firmware_and_mtu(fixture_text):
    empty = {"net": [], "infiniband": []}
    ndr = build_nic_facts(empty, ibstat=parse("ibstat", fixture_text("ib/gpud-ibstat-h100-8x-ndr400-ib-plus-bf3-bond-roce200-SPACES.txt")))
    down = build_nic_facts(empty, ibstat=parse("ibstat", fixture_text("ib/gpud-ibstat-h100-ndr-ib-3ports-down-disabled.txt")))
    nodes = [node("a", nic=ndr), node("b", nic=ndr), node("c", nic=down)]
    outcome = fleet.check_hca_firmware(nodes)
    # MT4129 (ConnectX-7): 28.41.1000 on a and b (16 HCAs), 28.39.1002 on c (8 HCAs). c's MT4125 are the only ones of their type.
    odd = results_of(outcome, "c")
    assert [item["subject"] for item in odd] == ["mlx5_0", "mlx5_10", "mlx5_11", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9"]
    assert {(item["status"], item["measured"], item["expected"]) for item in odd} == {(WARN, "28.39.1002", "28.41.1000")}
    # grouped by part and firmware line (ibstat prints no board id: the CA type is the part)
    assert odd[0]["message"] == ("mlx5_0 firmware 28.39.1002, fleet majority 28.41.1000 for MT4129 (firmware 28.x) "
                                 "(16 of 24 in profile hgx-h100-8gpu)")
    assert [item["status"] for item in results_of(outcome, "a")] == [PASS]
    # MTU: ibv_devinfo of an Azure ND H200 v5 (8 IB ports active_mtu 4096, an0 Ethernet 1024); c is SYNTHETIC: one port edited to 2048.
    devinfo = build_nic_facts(empty, ibv_devinfo=parse("ibv-devinfo", fixture_text("ib/azure-nd-h200-v5-ibv_devinfo-8x-ndr-vf-plus-an0-ethernet.txt")))
    edited = copy.deepcopy(devinfo)
    edited["rdma"][3]["ports"][0]["active_mtu"] = 2048
    mtu = fleet.check_mtu([node("a", nic=devinfo), node("b", nic=devinfo), node("c", nic=edited)])
    assert [(item["status"], item["subject"], item["measured"], item["expected"]) for item in mtu["c"]] == [(WARN, "mlx5_ib3/1", 2048, 4096)]
    assert [item["status"] for item in mtu["a"]] == [PASS]


def test_vf_firmware_is_compared_within_its_own_part_and_firmware_line(fixture_text):
    # Azure ND H200 v5 ibv_devinfo: mlx5_ib0..7 ConnectX-7 VFs (vendor_part_id 4126, board MSF0000000047, fw 28.40.1702)
    # and mlx5_an0 (board MSF0000000041, fw 16.30.5000).
    empty = {"net": [], "infiniband": []}
    devinfo = build_nic_facts(empty, ibv_devinfo=parse("ibv-devinfo", fixture_text(
        "ib/azure-nd-h200-v5-ibv_devinfo-8x-ndr-vf-plus-an0-ethernet.txt")))
    assert devinfo["rdma"][0]["firmware_group"] == "MSF0000000047 (firmware 28.x)"

    def edited(board, firmware):
        # SYNTHETIC: every VF given one generic CA type (a VF's PCI id is shared by ConnectX-6 Dx, ConnectX-7 and
        # BlueField VFs), and node c's VFs another board and firmware line (ConnectX-6 Dx VFs on 22.x)
        facts = copy.deepcopy(devinfo)
        for dev in facts["rdma"]:
            if dev["vendor_part_id"] == 4126:
                dev["hca_type"] = "MT4126"
                dev.update(board_id=board or dev["board_id"], fw_ver=firmware or dev["fw_ver"])
                dev.update(hca_part(dev))
        return facts

    nodes = [node("a", nic=edited(None, None)), node("b", nic=edited(None, None)),
             node("c", nic=edited("MT_0000000359", "22.39.1002"))]
    outcome = fleet.check_hca_firmware(nodes)
    # by hca_type all 24 VFs were one kind and c's 8 warned against 28.40.1702; by firmware group they are their
    # own part
    assert {name: [item["status"] for item in items] for name, items in outcome.items()} == {
        "a": [PASS], "b": [PASS], "c": [PASS]}
    # within one group a VF on another firmware still warns
    odd = edited(None, None)
    odd["rdma"][2]["fw_ver"] = "28.39.1000"  # SYNTHETIC: one CX7 VF a release behind (same 28.x line)
    outcome = fleet.check_hca_firmware([node("a", nic=edited(None, None)), node("b", nic=edited(None, None)),
                                        node("d", nic=odd)])
    [warned] = results_of(outcome, "d")
    assert (warned["status"], warned["subject"], warned["measured"], warned["expected"]) == (
        WARN, odd["rdma"][2]["device"], "28.39.1000", "28.40.1702")
    assert "for MSF0000000047 (firmware 28.x) (23 of 24" in warned["message"]


def test_every_field_a_profile_may_name_has_a_check():
    from gpufleet.checks import profiles  # pylint: disable=import-outside-toplevel
    assert set(profiles.GPU_FIELDS) == set(fleet.GPU_FIELDS)
