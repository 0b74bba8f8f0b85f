# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu.* checks on ``gpufleet_gpu`` facts built by gpufleet.facts.gpu.build_inventory from recordings
(tests/fixtures/smi, misc; see their SOURCES.md). Where a test says SYNTHETIC, named fields of the
built facts were changed; expected values are read by hand from the recordings."""

from __future__ import annotations

import pytest

from gpufleet.checks import engine
from gpufleet.checks import gpu as checks
from gpufleet.checks import profiles as prof
from gpufleet.checks.model import NodeContext
from gpufleet.facts.gpu import build_inventory
from gpufleet.parsers.lspci import parse_lspci
from gpufleet.parsers.registry import parse

DELLA_H100 = "smi/princeton-della-h100-nvidia-smi-a-text-545.txt"  # 1x H100 80GB HBM3, 81559 MiB, healthy, idle
H100_BRAKE = "smi/gpud-nvidia-smi-q-text-8x-h100-535.183.01-fabric-completed-power-brake-swthermal-ACTIVE.txt"  # GPU 2 braked
H100_HW_SLOWDOWN = "smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt"  # HW Slowdown + HW Power Brake Active on all 8
RTX4090_CAP = "misc/gpud-nvidia-smi-q-text-8x-rtx4090-535.154.05-sw-power-cap-ACTIVE-2gpus.txt"  # GPUs 1, 4 SW Power Cap + a process
RETIRED_BAD = "smi/azure-nvsmi-q-retired-pages-8gpu-bad-EDITED.txt"  # pending on 1, 3, 5, 7 (hand-edited by its authors)
RETIRED_CLEAN = "smi/azure-nvsmi-q-retired-pages-8gpu-clean.txt"
H200_MIG = "smi/exporter-capture-nvidia-smi-q-text-1x-h200-MIG-590-fabric-completed.txt"  # MIG Enabled, 3 processes
A10_REMAP = "smi/gpud-nvidia-smi-q-1x-a10-535.129.03.txt"  # Remapped Rows: 4 uncorrectable, Pending Yes
TITANV = "smi/gpud-nvidia-smi-q-1x-titanv-560.35.03.txt"  # Persistence Mode Disabled
A100_XML = "smi/telegraf-nvidia-smi-q-x-a100-sxm4-80gb-mig-535-v12.xml.txt"  # 1 <gpu> of a 4-GPU machine
AZURE_LSPCI = "misc/gpud-lspci-nn-azure-nd-a100-v4-8gpu-6nvswitch-8cx6vf.txt"  # 8 A100 SXM4 on the bus

H100_CLAIM = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "gpu_memory_gb": 80, "interconnect": "nvswitch", "nvlinks_per_pair": 18}


@pytest.fixture(name="shipped", scope="module")
def shipped_fixture():
    return prof.load_profiles()


@pytest.fixture(name="facts")
def facts_fixture(fixture_text):
    def _facts(relative):
        return build_inventory(text=parse("nvidia-smi-q", fixture_text(relative)))

    return _facts


def _node(shipped, facts, claim=None, profile="generic"):
    chosen = shipped[profile] if isinstance(profile, str) else profile
    return NodeContext("n1", facts={"gpu": facts}, claim=claim, profile=chosen)


def _family(node):
    return engine.run_checks([node], families=["gpu"])["nodes"]["n1"]["checks"]


def _bad(results):
    return [(item["id"], item["status"], item["subject"]) for item in results if item["status"] in ("warn", "fail")]


def test_healthy_h100_yields_no_warning_or_failure(shipped, facts):
    claim = dict(H100_CLAIM, gpu_count=1)
    results = _family(_node(shipped, facts(DELLA_H100), claim))
    assert _bad(results) == []
    by_id = {item["id"]: item for item in results}
    assert (by_id["gpu.count"]["measured"], by_id["gpu.count"]["expected"], by_id["gpu.count"]["threshold_source"]) == (1, 1, "claim")
    # "80 GB" as sold is 80e9 bytes = 76293 MiB; the H100 reports 81559 MiB (less than 80 GiB).
    assert (by_id["gpu.memory"]["status"], by_id["gpu.memory"]["measured"], by_id["gpu.memory"]["expected"]) == ("pass", 81559, 76293)
    for check_id in ("gpu.model", "gpu.ecc", "gpu.mig", "gpu.persistence", "gpu.processes", "gpu.fabric", "gpu.throttle", "gpu.row_remap"):
        assert by_id[check_id]["status"] == "pass", check_id
    assert _bad(_family(_node(shipped, facts(RETIRED_CLEAN)))) == []


def test_retired_pages_pending_fail_on_the_right_gpus(shipped, facts):
    results = checks.retired_pages(_node(shipped, facts(RETIRED_BAD)))
    by_subject = {item["subject"]: item for item in results}
    assert sorted(s for s, item in by_subject.items() if item["status"] == "fail") == ["GPU1", "GPU3", "GPU5", "GPU7"]
    gpu1 = by_subject["GPU1"]
    assert gpu1["measured"] == {"single_bit_ecc": 2, "double_bit_ecc": 61, "pending": True}
    assert gpu1["expected"] == {"pending": False}
    # GPU0: 60 single-bit and 5 double-bit pages retired, nothing pending: a warning.
    assert (by_subject["GPU0"]["status"], by_subject["GPU0"]["measured"]["double_bit_ecc"]) == ("warn", 5)
    assert len(results) == 5


def test_sw_power_cap_warns_and_processes_fail(shipped, facts):
    node = _node(shipped, facts(RTX4090_CAP), profile="pcie-generic")
    throttle = checks.throttle(node)
    assert [(item["status"], item["subject"], item["measured"]) for item in throttle] == [
        ("warn", "GPU1", ["sw_power_cap"]), ("warn", "GPU4", ["sw_power_cap"])]
    assert "SW Power Cap Active" in throttle[0]["message"]
    procs = checks.processes(node)
    assert [(item["status"], item["subject"], item["measured"]) for item in procs] == [("fail", "GPU1", 1), ("fail", "GPU4", 1)]
    assert "pid 1285135 /usr/bin/python" in procs[0]["message"] and "21602 MiB" in procs[0]["message"]
    # Consumer GPUs have no ECC: not judged, never a silent pass.
    assert checks.ecc(node)[0]["status"] == "skip"


def test_power_brake_fails(shipped, facts):
    [gpu2] = checks.throttle(_node(shipped, facts(H100_BRAKE), profile="hgx-h100-8"))
    assert (gpu2["status"], gpu2["subject"]) == ("fail", "GPU2")
    assert gpu2["measured"] == ["hw_power_brake_slowdown", "sw_power_cap", "sw_thermal_slowdown"]
    results = checks.throttle(_node(shipped, facts(H100_HW_SLOWDOWN), profile="hgx-h100-8"))
    assert len(results) == 8 and {item["measured"][0] for item in results} == {"hw_slowdown"}
    assert {item["status"] for item in results} == {"fail"}


def test_mig_enabled_fails(shipped, facts):
    [gpu0] = checks.mig(_node(shipped, facts(H200_MIG)))
    assert (gpu0["id"], gpu0["status"], gpu0["subject"], gpu0["measured"], gpu0["expected"]) == ("gpu.mig", "fail", "GPU0", "Enabled", "Disabled")


def test_row_remap_pending_fails(shipped, facts):
    [gpu0] = checks.row_remap(_node(shipped, facts(A10_REMAP)))
    assert (gpu0["status"], gpu0["subject"]) == ("fail", "GPU0")
    assert gpu0["measured"] == {"correctable": 0, "uncorrectable": 4, "pending": True, "failure": False}
    assert "row remapping pending" in gpu0["message"]


def test_persistence_off_warns(shipped, facts):
    [gpu0] = checks.persistence(_node(shipped, facts(TITANV)))
    assert (gpu0["status"], gpu0["measured"], gpu0["expected"]) == ("warn", False, True)


def test_gpus_fallen_off_the_bus_and_count_against_claim(shipped, fixture_text):
    facts = build_inventory(xml=parse("nvidia-smi-xml", fixture_text(A100_XML)), lspci=parse_lspci(fixture_text(AZURE_LSPCI)))
    node = _node(shipped, facts, {"gpu_model": "NVIDIA A100-SXM4-80GB", "gpu_count": 8, "interconnect": "nvswitch"}, "dgx-a100-8")
    [visible] = checks.visible(node)
    assert (visible["status"], visible["measured"], visible["expected"]) == ("fail", 1, 8)
    assert visible["message"].startswith("lspci lists 8 NVIDIA GPU(s), nvidia-smi sees 1")
    [count] = checks.count(node)
    assert (count["status"], count["measured"], count["expected"], count["threshold_source"]) == ("fail", 1, 8, "claim")


def test_wrong_model_and_memory_against_the_claim(shipped, facts):
    node = _node(shipped, facts(RTX4090_CAP), H100_CLAIM, "pcie-generic")
    models = checks.model(node)
    assert len(models) == 8 and models[3]["message"] == "GPU3 is NVIDIA GeForce RTX 4090, expected NVIDIA H100 80GB HBM3"
    memory = checks.memory(node)
    assert len(memory) == 8 and (memory[0]["measured"], memory[0]["expected"]) == (24564, 76293)
    assert memory[0]["message"] == "GPU0 has 24564 MiB, expected 80 GB claimed (76293 MiB)"
    # Without a claim the profile's regex judges the model.
    [ok] = checks.model(_node(shipped, facts(H100_BRAKE), profile="hgx-h100-8"))
    assert ok["status"] == "pass" and ok["threshold_source"] == "profile hgx-h100-8: expect.gpu_name"


def test_mixed_batch_in_one_node_synthetic(shipped, facts):
    gpu_facts = facts(H100_BRAKE)
    gpu_facts["gpus"][3]["power_limit_w"] = 500.0  # SYNTHETIC: one GPU capped lower than its seven peers
    gpu_facts["gpus"][6]["vbios_version"] = "96.00.61.00.01"  # SYNTHETIC: another VBIOS
    results = checks.consistency(_node(shipped, gpu_facts, profile="hgx-h100-8"))
    assert [(item["subject"], item["measured"], item["expected"]) for item in results] == [
        ("GPU6", "96.00.61.00.01", "96.00.74.00.01"), ("GPU3", 500.0, 700.0)]
    assert results[1]["message"] == "GPU3 power_limit_w is 500.0, the node's other GPUs have 700.0 (mixed batch)"


def test_ecc_off_and_fabric_not_ready_synthetic(shipped, facts):
    gpu_facts = facts(H100_BRAKE)
    gpu_facts["gpus"][1]["ecc_mode_current"] = False  # SYNTHETIC
    # SYNTHETIC, values of smi/azure-fabric-completed-INSUFFICIENT-RESOURCES-cliqueid0-zero-clusteruuid-PR506.txt
    gpu_facts["gpus"][4]["fabric"] = {"state": "Completed", "status": "Insufficient Resources", "clique_id": 0, "cluster_uuid": None}
    node = _node(shipped, gpu_facts, H100_CLAIM, "hgx-h100-8")
    [gpu1] = checks.ecc(node)
    assert (gpu1["status"], gpu1["subject"], gpu1["measured"], gpu1["expected"]) == ("fail", "GPU1", False, True)
    [gpu4] = checks.fabric(node)
    assert (gpu4["status"], gpu4["subject"]) == ("fail", "GPU4")
    assert gpu4["measured"] == {"state": "Completed", "status": "Insufficient Resources"}


def test_fabric_not_completed_fails_across_a_multi_node_nvlink_domain(shipped, facts):
    # GB200 NVL72 trays run no Fabric Manager (profile fabric_manager: false), yet IMEX and multi-node NVLink need
    # every GPU registered with the rack's fabric: Completed / Success, else fail (not the warn of a non-NVSwitch box).
    assert shipped["gb200-nvl72"]["expect"]["fabric_manager"] is False
    gpu_facts = facts(H100_BRAKE)
    # SYNTHETIC, values of smi/azure-fabric-completed-INSUFFICIENT-RESOURCES-cliqueid0-zero-clusteruuid-PR506.txt
    gpu_facts["gpus"][4]["fabric"] = {"state": "Completed", "status": "Insufficient Resources", "clique_id": 0,
                                      "cluster_uuid": None}
    [gpu4] = checks.fabric(_node(shipped, gpu_facts, profile="gb200-nvl72"))
    assert (gpu4["status"], gpu4["subject"]) == ("fail", "GPU4")
    assert gpu4["message"] == ("GPU4 fabric Completed / Insufficient Resources, expected Completed / Success "
                               "(the rack's NVLink fabric, for IMEX / multi-node NVLink)")
    assert gpu4["threshold_source"] == "profile gb200-nvl72: expect.fabric_clique_scope"
    # no Fabric state printed at all: not judged, said why
    for gpu in gpu_facts["gpus"]:
        gpu["fabric"] = None
    [skip] = checks.fabric(_node(shipped, gpu_facts, profile="gb200-nvl72"))
    assert skip["status"] == "skip" and "NVLink spans nodes" in skip["message"]


def test_temperature_against_an_overridden_profile_maximum(shipped, facts):
    profile = prof.apply_overrides(shipped["pcie-generic"], {"host": {"temperature_max": "70 C"}})
    results = checks.temperature(_node(shipped, facts(RTX4090_CAP), profile=profile))
    assert [(item["status"], item["subject"], item["measured"], item["expected"]) for item in results] == [
        ("warn", "GPU1", 72, 70.0), ("warn", "GPU4", 76, 70.0)]
    assert results[0]["threshold_source"].startswith("profile pcie-generic: gpufleet_profile_overrides")
    # No profile maximum and no slowdown temperature printed: not judged.
    assert checks.temperature(_node(shipped, facts(RTX4090_CAP)))[0]["status"] == "skip"


# Health rules: each EDITED recording passed (or only warned) before the rule; its original keeps passing.
RECOVERY_RESET = "smi/exporter-capture-nvidia-smi-q-text-1x-h100-590-recovery-action-gpu-reset-required-EDITED.txt"
RECOVERY_NONE = "smi/exporter-capture-nvidia-smi-q-text-1x-h100-590-fabric-completed-under-load.txt"
DELLA_SRAM = "smi/princeton-della-h100-nvidia-smi-a-text-545-aggregate-sram-uncorrectable-2-EDITED.txt"


def test_gpu_recovery_action_other_than_none_fails(shipped, facts):
    [bad] = checks.recovery_action(_node(shipped, facts(RECOVERY_RESET)))
    assert (bad["status"], bad["subject"], bad["measured"]) == ("fail", "GPU0", "GPU Reset Required")
    assert bad["expected"] == "None"
    assert bad["message"] == "GPU0: the driver asks for a recovery action: GPU Reset Required"
    [good] = checks.recovery_action(_node(shipped, facts(RECOVERY_NONE)))
    assert (good["status"], good["measured"]) == ("pass", "None")
    # 545 driver: no GPU Recovery Action line, not judged
    assert checks.recovery_action(_node(shipped, facts(DELLA_H100)))[0]["status"] == "skip"


def test_sram_uncorrectable_over_the_life_fails_as_aznhc(shipped, facts):
    # Aggregate SRAM Uncorrectable 2, volatile 0: a lifetime-only warning before, a failure as AzNHC judges it.
    [bad] = checks.ecc_errors(_node(shipped, facts(DELLA_SRAM)))
    assert (bad["status"], bad["subject"]) == ("fail", "GPU0")
    assert bad["message"] == "GPU0: 2 aggregate SRAM uncorrectable"
    assert bad["measured"]["aggregate_sram_uncorrectable"] == 2 and bad["measured"]["volatile_sram_uncorrectable"] == 0
    assert bad["threshold_source"].startswith("Azure azurehpc-health-checks check_gpu_ecc 20000000 10000")
    assert checks.ecc_errors(_node(shipped, facts(DELLA_H100)))[0]["status"] == "pass"


def test_sram_correctable_and_dram_limits_synthetic(shipped, facts):
    # SYNTHETIC: counts set on the della facts; AzNHC limits: SRAM correctable > 10000, DRAM > 20000000.
    inventory = facts(DELLA_H100)
    inventory["gpus"][0]["ecc_errors_volatile_sram_correctable"] = 10000
    assert checks.ecc_errors(_node(shipped, inventory))[0]["status"] == "pass"
    inventory["gpus"][0]["ecc_errors_volatile_sram_correctable"] = 10001
    inventory["gpus"][0]["ecc_errors_aggregate_dram_correctable"] = 20000001
    [bad] = checks.ecc_errors(_node(shipped, inventory))
    assert bad["message"] == ("GPU0: 10001 volatile SRAM correctable (limit 10000), "
                              "20000001 aggregate DRAM correctable (limit 20000000)")


def test_pcie_replays_of_one_reading_are_noted_and_growth_fails(shipped, facts):
    # gpud 535.161.08 H100: "Replays Since Reset" 67, 63, 52, 43, 49, 53, 82, 67 on GPU0..GPU7 (read by hand),
    # 0 on the della H100. Before: one warning per GPU; a count since an unknown start has no time base.
    replayed = facts(H100_HW_SLOWDOWN)
    [noted] = checks.pcie_replay(_node(shipped, replayed))
    assert (noted["status"], noted["expected"]) == ("pass", None)
    assert noted["measured"] == {"GPU0": 67, "GPU1": 63, "GPU2": 52, "GPU3": 43, "GPU4": 49, "GPU5": 53, "GPU6": 82,
                                 "GPU7": 67}
    assert noted["message"].startswith("noted, not judged: PCIe replays since the last driver load or GPU reset: "
                                       "GPU0 67, GPU1 63, GPU2 52, GPU3 43, GPU4 49, GPU5 53, GPU6 82, GPU7 67. ")
    assert "no rate to hold against DCGM's 8 per minute" in noted["message"]
    assert noted["threshold_source"].startswith("NVIDIA/DCGM modules/health/DcgmHealthWatch.cpp")
    # SYNTHETIC: GPU1..GPU7 at 0: the one count is named, the others summed up
    for gpu in replayed["gpus"][1:]:
        gpu["replays_since_reset"] = 0
    [noted] = checks.pcie_replay(_node(shipped, replayed))
    assert "reset: GPU0 67; 0 on the other 7 GPU(s). " in noted["message"]
    replayed = facts(H100_HW_SLOWDOWN)
    [clean] = checks.pcie_replay(_node(shipped, facts(DELLA_H100)))
    assert (clean["status"], clean["measured"], clean["message"]) == ("pass", 0, "no PCIe replay on 1 GPU(s)")
    # SYNTHETIC second reading: GPU0 at 70 after stress, the others unchanged.
    before = replayed["gpus"]
    after = [dict(gpu) for gpu in before]
    after[0]["replays_since_reset"] = 70
    grown = checks.pcie_replay_growth(before, after)
    assert [(item["status"], item["subject"], item["measured"]) for item in grown] == [("fail", "GPU0", 3)]
    assert grown[0]["message"] == "GPU0: PCIe replays grew by 3 (67 -> 70)"
    assert grown[0]["per_minute"] is None
    assert [item["status"] for item in checks.pcie_replay_growth(before, before)] == ["pass"]


def _with_uptime(shipped, gpu_facts, uptime_s):
    return NodeContext("n1", facts={"gpu": gpu_facts, "host": {"uptime_s": uptime_s}}, profile=shipped["generic"])


def test_pcie_replays_over_the_hosts_uptime(shipped, facts):
    # SYNTHETIC: GPU0 keeps the gpud H100's 67 replays, GPU1..GPU7 at 0. The counter starts after boot, so
    # 67 / uptime is a lower bound of its rate: 67 in 600 s = 6.7 per minute (within DCGM's 8: noted),
    # 67 in 300 s = 13.4 per minute (above: warns).
    inventory = facts(H100_HW_SLOWDOWN)
    for gpu in inventory["gpus"][1:]:
        gpu["replays_since_reset"] = 0
    [noted] = checks.pcie_replay(_with_uptime(shipped, inventory, 600.0))
    assert (noted["status"], noted["measured"]["GPU0"], noted["per_minute_at_least"]) == ("pass", 67, {"GPU0": 6.7})
    assert noted["message"] == (
        "noted: PCIe replays since the last driver load or GPU reset, at most 10 min ago (the host's uptime): GPU0 67 "
        "(6.7 per minute at least); 0 on the other 7 GPU(s). Even the lower bound is within DCGM's 8 per minute; the "
        "rate now is unknown, growth between two readings is judged after stress")
    [warned] = checks.pcie_replay(_with_uptime(shipped, inventory, 300.0))
    assert (warned["status"], warned["subject"], warned["measured"], warned["expected"]) == ("warn", "GPU0", 13.4, 8)
    assert warned["message"] == ("GPU0: at least 13.4 replays per minute on average since boot: above DCGM's 8 per "
                                 "minute (67 PCIe replays since the last driver load or GPU reset, the host up 5 min)")
    assert (warned["replays"], warned["uptime_s"]) == (67, 300.0)
    assert warned["threshold_source"].startswith("NVIDIA/DCGM modules/health/DcgmHealthWatch.cpp")
    # 80 in 600 s is 8.0 per minute: DCGM warns above 8, not at it
    inventory["gpus"][0]["replays_since_reset"] = 80
    assert checks.pcie_replay(_with_uptime(shipped, inventory, 600.0))[0]["status"] == "pass"


def test_pcie_replays_of_the_recording_over_ten_minutes_warn_on_one_gpu(shipped, facts):
    # gpud H100 counts 67, 63, 52, 43, 49, 53, 82, 67 in 600 s: 6.7, 6.3, 5.2, 4.3, 4.9, 5.3, 8.2, 6.7 per minute at
    # least; only GPU6's 8.2 is above 8
    [warned] = checks.pcie_replay(_with_uptime(shipped, facts(H100_HW_SLOWDOWN), 600.0))
    assert (warned["status"], warned["subject"], warned["measured"]) == ("warn", "GPU6", 8.2)


def test_pcie_replays_without_uptime_are_noted_as_before(shipped, facts):
    # uptime unknown (no /proc/uptime read): the note of one reading without a time base
    [noted] = checks.pcie_replay(_with_uptime(shipped, facts(H100_HW_SLOWDOWN), None))
    assert (noted["status"], noted["expected"]) == ("pass", None)
    assert noted["message"].startswith("noted, not judged: PCIe replays since the last driver load or GPU reset: "
                                       "GPU0 67, GPU1 63, ")
    assert "per_minute_at_least" not in noted
    # no host group at all: still judged from the gpu group (the check requires only it), never skipped
    [through_engine] = [item for item in _family(_node(shipped, facts(H100_HW_SLOWDOWN)))
                        if item["id"] == "gpu.pcie_replay"]
    assert through_engine["status"] == "pass"
    assert through_engine["message"].startswith("noted, not judged: ")


def test_pcie_replay_growth_per_minute_against_dcgms_limit(shipped, facts):
    # SYNTHETIC second readings of the gpud H100 (GPU0 67 before): +3 in 30 s is 6 per minute, within DCGM's 8;
    # +30 in 2 minutes is 15 per minute, above it. Both fail: any growth under our load fails.
    before = facts(H100_HW_SLOWDOWN)["gpus"]
    after = [dict(gpu) for gpu in before]
    after[0]["replays_since_reset"] = 70
    [slow] = checks.pcie_replay_growth(before, after, window_s=30, during="the burn-in")
    assert (slow["status"], slow["measured"], slow["per_minute"]) == ("fail", 3, 6.0)
    assert slow["message"] == ("GPU0: PCIe replays grew by 3 (67 -> 70) during the burn-in: 6 per minute over 0.5 min, "
                               "within DCGM's health-watch limit of 8 per minute")
    after[0]["replays_since_reset"] = 97
    [fast] = checks.pcie_replay_growth(before, after, window_s=120)
    assert (fast["status"], fast["per_minute"]) == ("fail", 15.0)
    assert fast["message"].endswith(": 15 per minute over 2 min, above DCGM's health-watch limit of 8 per minute")


def test_a_matrix_with_another_gpu_count_than_nvml_is_inconsistent_evidence(shipped, facts, fixture_text):
    """SYNTHETIC pairing of two real recordings: the 8-GPU `topo -m` of an HGX H100 with the `nvidia-smi -q` of a
    1-GPU H100 node, claimed as 1 GPU. Before, the claim matched NVML and gpu.count passed on evidence that cannot
    both be this node's. The healthy pairing (that matrix with an 8-GPU `-q`, claimed as 8) stays a pass."""
    from gpufleet.facts.topology import analyse_topology  # pylint: disable=import-outside-toplevel

    parsed = parse("topo", fixture_text("topo/mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt"))
    matrix = dict(parsed, **analyse_topology(parsed))
    assert len(matrix["gpus"]) == 8
    one = NodeContext("n1", facts={"gpu": facts(DELLA_H100), "topology": matrix}, claim=dict(H100_CLAIM, gpu_count=1),
                      profile=shipped["generic"])
    [result] = checks.count(one)
    assert (result["status"], result["measured"], result["expected"]) == ("fail", 1, 8)
    assert result["message"] == ("inconsistent evidence: nvidia-smi topo -m shows 8 GPU(s), nvidia-smi -q lists 1: the "
                                 "two came from different machines or one is damaged; gather both again on the node")
    eight = NodeContext("n1", facts={"gpu": facts(H100_BRAKE), "topology": matrix}, claim=H100_CLAIM,
                        profile=shipped["generic"])
    assert [(item["status"], item["measured"], item["expected"]) for item in checks.count(eight)] == [("pass", 8, 8)]
    # no matrix read: judged on NVML and the claim alone, as before
    assert checks.count(_node(shipped, facts(DELLA_H100), dict(H100_CLAIM, gpu_count=1)))[0]["status"] == "pass"


# --- gpu.app_clocks: application clocks, one row of parsers/gpu_fields.py read from all three outputs -----------------
APP_CLOCKS_LOW = "smi/gpud-nvidia-smi-q-8x-h100-535.161.08-EDITED-gpu3-app-clocks-1755-synthetic.txt"  # GPU 3 at 1755
A10G_XML = "smi/telegraf-nvidia-smi-q-x-a10g-515-v11.xml.txt"  # 1x A10G, applications clocks 1710 / 6251 MHz
# "[Requested functionality has been deprecated]" in the application clocks' cells
H100_590_CSV = "smi/exporter-capture-query-gpu-csv-allfields-h100-590.txt"
H100_590_TEXT = "smi/exporter-capture-nvidia-smi-q-text-1x-h100-590-fabric-completed-under-load.txt"  # "... deprecated"
RTX4090 = "smi/gpud-nvidia-smi-q-8x-rtx4090-535.154.05.txt"  # Applications Clocks: N/A on all 8


def _app_clocks_of(gpus):
    return [(gpu["clocks_applications_graphics_mhz"], gpu["clocks_applications_mem_mhz"]) for gpu in gpus]


def test_application_clocks_read_from_xml_text_and_csv(fixture_text):
    assert _app_clocks_of(parse("nvidia-smi-xml", fixture_text(A10G_XML))["gpus"]) == [(1710, 6251)]
    assert _app_clocks_of(parse("nvidia-smi-q", fixture_text(H100_HW_SLOWDOWN))["gpus"]) == [(1980, 2619)] * 8
    # driver 590 no longer serves them: its words read as "no value", the rest of the GPU is still read
    csv_gpu = parse("query-gpu", fixture_text(H100_590_CSV))["gpus"][0]
    assert (_app_clocks_of([csv_gpu]), csv_gpu["clocks_max_sm_mhz"]) == ([(None, None)], 1980)
    assert _app_clocks_of(parse("nvidia-smi-q", fixture_text(H100_590_TEXT))["gpus"]) == [(None, None)]


def test_eight_gpus_at_one_application_clock_setting_pass(shipped, facts):
    (item,) = checks.app_clocks(_node(shipped, facts(H100_HW_SLOWDOWN)))
    assert (item["status"], item["message"]) == (
        "pass", "8 GPU(s) at one application clock setting: NVIDIA H100 80GB HBM3 1980/2619 MHz")


def test_one_gpu_below_its_peers_application_clocks_fails_by_name(shipped, facts):
    results = _family(_node(shipped, facts(APP_CLOCKS_LOW)))
    (item,) = [item for item in results if item["id"] == "gpu.app_clocks"]
    assert (item["status"], item["subject"], item["measured"], item["expected"]) == (
        "fail", "GPU3", "1755/2619 MHz", "1980/2619 MHz")
    assert item["message"] == ("GPU3 application clocks 1755/2619 MHz (graphics/memory), its other "
                               "NVIDIA H100 80GB HBM3 GPUs 1980/2619 MHz")
    # the same recording without the edit: only the app clocks result differs
    others = [(entry["id"], entry["status"]) for entry in results if entry["id"] != "gpu.app_clocks"]
    assert others == [(entry["id"], entry["status"]) for entry in _family(_node(shipped, facts(H100_HW_SLOWDOWN)))
                      if entry["id"] != "gpu.app_clocks"]


def test_one_gpu_above_its_peers_warns_synthetic(shipped, facts):
    gpu_facts = facts(H100_HW_SLOWDOWN)
    gpu_facts["gpus"][5]["clocks_applications_mem_mhz"] = 2700  # SYNTHETIC: GPU 5's memory clock set above the others
    (item,) = checks.app_clocks(_node(shipped, gpu_facts))
    assert (item["status"], item["subject"], item["measured"]) == ("warn", "GPU5", "1980/2700 MHz")


def test_application_clocks_not_printed_are_not_judged(shipped, facts):
    for recording in (RTX4090, H100_590_TEXT):
        (item,) = checks.app_clocks(_node(shipped, facts(recording)))
        assert (item["status"], item["message"]) == ("skip", "not judged: no GPU prints its application clocks")
