# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvlink.link_active / link_speed / errors on real ``nvidia-smi nvlink -s`` / ``-e`` recordings
(tests/fixtures/smi/, see SOURCES.md), merged by gpufleet.facts.gpu.merge_nvlink into GPU dicts that
carry only the index (no -q of the same machine was recorded). Where a test says SYNTHETIC, named
lines of a recording were changed; expected values are read by hand from the files."""

from __future__ import annotations

import pytest

from gpufleet.checks import nvlink as checks
from gpufleet.checks import profiles as prof
from gpufleet.checks.model import NodeContext
from gpufleet.checks.verdict import SETTINGS_VARS
from gpufleet.facts.gpu import merge_nvlink
from gpufleet.parsers.registry import parse

A100_8X = "smi/gpud-nvlink-status-8x-a100-sxm4-80gb.txt"  # 8 GPUs x 12 links x 25 GB/s
H100_1X = "smi/exporter-capture-nvlink-s-h100-590-18links.txt"  # GPU 0: 18 links x 26.562 GB/s
AZURE_INACTIVE = "smi/azure-nvlink-status-a100-sxm4-80gb-all-inactive.txt"  # GPU 6: all links are inactive
A6000 = "smi/siboehm-3x-rtx-a6000-nvlink-s-4links-and-inActive.txt"  # GPU0/1: 4 x 14.062; GPU2: all inActive
MIG = "smi/exporter-capture-nvlink-s-h100-MIG-not-supported.txt"  # GPU 0: not supported in MIG mode
A100_40_S = "smi/cloudvm-a100-40gb-nvlink-s-i0-12links-25gbs.txt"  # GPU 0: 12 x 25 GB/s
A100_40_E = "smi/cloudvm-a100-40gb-nvlink-e-all-zero-PARTIAL-gpu0.txt"  # GPU 0: 12 links, every counter 0
A100_40_E_BAD = "smi/cloudvm-a100-40gb-nvlink-e-PARTIAL-gpu0-link2-replay-5-crc-12-EDITED.txt"


@pytest.fixture(name="shipped", scope="module")
def shipped_fixture():
    return prof.load_profiles()


def _gpu_facts(status_text=None, errors_text=None, status_failure=None):
    status = parse("nvlink-status", status_text) if status_text else None
    errors = parse("nvlink-errors", errors_text) if errors_text else None
    indexes = sorted({g["index"] for parsed in (status, errors) if parsed for g in parsed["gpus"]}) or list(range(8))
    gpus = [{"index": i, "name": None, "uuid": None, "pci_bus_id": None} for i in indexes]
    merge_nvlink(gpus, status, errors, status_failure=status_failure)
    return {"gpus": gpus, "gpu_count": len(gpus)}


def _node(shipped, facts, claim=None, profile="generic"):
    return NodeContext("n1", facts={"gpu": facts}, claim=claim, profile=shipped[profile])


def _claim(interconnect, nvlinks):
    return {"gpu_model": "x", "gpu_count": 8, "interconnect": interconnect, "nvlinks_per_pair": nvlinks}


def _edit(text, gpu, old, new):
    """SYNTHETIC: replace the first ``old`` line after ``GPU <gpu>:`` with ``new``."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("GPU %d:" % gpu))
    at = next(i for i in range(start + 1, len(lines)) if lines[i].strip() == old)
    lines[at] = lines[at].replace(old, new)
    return "\n".join(lines)


def test_dgx_a100_links_all_active_at_25(shipped, fixture_text):
    node = _node(shipped, _gpu_facts(fixture_text(A100_8X)), profile="dgx-a100-8")
    [active] = checks.link_active(node)
    assert (active["status"], active["measured"], active["expected"]) == ("pass", 96, 96)
    assert active["threshold_source"].startswith("profile dgx-a100-8: docs/baselines.md 2/6")
    [speed] = checks.link_speed(node)
    assert (speed["status"], speed["measured"], speed["expected"]) == ("pass", 25.0, 25.0)


def test_h100_18_links_at_26_562(shipped, fixture_text):
    node = _node(shipped, _gpu_facts(fixture_text(H100_1X)), claim=_claim("nvswitch", 18), profile="hgx-h100-8")
    [active] = checks.link_active(node)
    assert (active["status"], active["measured"], active["expected"], active["threshold_source"]) == ("pass", 18, 18, "claim")
    [speed] = checks.link_speed(node)
    assert (speed["status"], speed["measured"], speed["expected"]) == ("pass", 26.562, 26.562)


def test_a100_links_held_against_the_h100_profile(shipped, fixture_text):
    node = _node(shipped, _gpu_facts(fixture_text(A100_8X)), profile="hgx-h100-8")
    active = checks.link_active(node)
    assert len(active) == 8 and {item["status"] for item in active} == {"fail"}
    assert (active[0]["subject"], active[0]["message"], active[0]["measured"], active[0]["expected"]) == ("GPU0", "GPU0: 12 of 18 NVLinks active", 12, 18)
    speed = checks.link_speed(node)
    assert len(speed) == 96
    assert speed[0]["message"] == "GPU0/link0 runs at 25.0 GB/s, expected 26.562 GB/s"


def test_all_links_inactive_fails(shipped, fixture_text):
    node = _node(shipped, _gpu_facts(fixture_text(AZURE_INACTIVE)), claim=_claim("nvswitch", 12), profile="dgx-a100-8")
    [gpu6] = checks.link_active(node)
    assert (gpu6["id"], gpu6["status"], gpu6["subject"], gpu6["measured"], gpu6["expected"]) == ("nvlink.link_active", "fail", "GPU6", 0, 12)
    assert "all links are inactive" in gpu6["message"]
    assert checks.link_speed(node)[0]["status"] == "skip"


def test_unbridged_workstation_gpu(shipped, fixture_text):
    facts = _gpu_facts(fixture_text(A6000))
    # No claim, no profile count: an unbridged GPU is worth a warning, not a rejection.
    [gpu2] = checks.link_active(_node(shipped, facts))
    assert (gpu2["status"], gpu2["subject"]) == ("warn", "GPU2")
    # Sold as bridged pairs of 4 links: GPU2 has no active link, a failure.
    [gpu2] = checks.link_active(_node(shipped, facts, claim=_claim("nvlink_bridge_pairs", 4)))
    assert (gpu2["status"], gpu2["measured"], gpu2["expected"]) == ("fail", 0, 4)
    # No profile speed: links compared with the node's fastest; all 8 run 14.062.
    [speed] = checks.link_speed(_node(shipped, facts))
    assert (speed["status"], speed["measured"], speed["expected"]) == ("pass", 14.062, 14.062)


def test_one_inactive_and_one_slow_link_synthetic(shipped, fixture_text):
    text = _edit(fixture_text(A100_8X), 2, "Link 5: 25 GB/s", "Link 5: <inactive>")
    text = _edit(text, 3, "Link 7: 25 GB/s", "Link 7: 12.5 GB/s")
    node = _node(shipped, _gpu_facts(text), profile="dgx-a100-8")
    by_subject = {item["subject"]: item for item in checks.link_active(node)}
    assert sorted(by_subject) == ["GPU2", "GPU2/link5"]
    assert (by_subject["GPU2/link5"]["status"], by_subject["GPU2/link5"]["measured"]) == ("fail", "inactive")
    assert (by_subject["GPU2"]["measured"], by_subject["GPU2"]["expected"]) == (11, 12)
    [slow] = checks.link_speed(node)
    assert (slow["status"], slow["subject"], slow["measured"], slow["expected"]) == ("fail", "GPU3/link7", 12.5, 25.0)


def test_mig_and_not_collected_are_skips(shipped, fixture_text):
    # Without an NVLink expectation a GPU in MIG mode is not judged; sold with 18 links it fails
    # (test_gpu_reporting_no_nvlink_fails_in_every_wording).
    [mig] = checks.link_active(_node(shipped, _gpu_facts(fixture_text(MIG))))
    assert mig["status"] == "skip" and "MIG" in mig["message"]
    facts = _gpu_facts(status_failure="no recording for `nvidia-smi nvlink -s`")
    [skip] = checks.link_active(_node(shipped, facts, profile="hgx-h100-8"))
    assert skip["status"] == "skip" and "8 GPU(s) without NVLink readings" in skip["message"]
    assert checks.errors(_node(shipped, facts))[0]["status"] == "skip"


def test_error_counters_zero_nonzero_and_saturated(shipped, fixture_text):
    status, errors = fixture_text(A100_40_S), fixture_text(A100_40_E)
    [ok] = checks.errors(_node(shipped, _gpu_facts(status, errors)))
    assert (ok["status"], ok["message"]) == ("pass", "12 NVLinks, every error counter 0")
    # SYNTHETIC: link 3 CRC counter pinned at 65535, link 4 with 7 replays, link 9 recovery at 2^32-1.
    errors = _edit(errors, 0, "Link 3: CRC Errors: 0", "Link 3: CRC Errors: 65535")
    errors = _edit(errors, 0, "Link 4: Replay Errors: 0", "Link 4: Replay Errors: 7")
    errors = _edit(errors, 0, "Link 9: Recovery Errors: 0", "Link 9: Recovery Errors: 4294967295")
    by_subject = {item["subject"]: item for item in checks.errors(_node(shipped, _gpu_facts(status, errors)))}
    assert sorted(by_subject) == ["GPU0/link3", "GPU0/link4", "GPU0/link9"]
    crc = by_subject["GPU0/link3"]
    assert crc["status"] == "fail" and "crc errors SATURATED at 65535" in crc["message"]
    assert crc["measured"]["crc_errors"] == 65535 and crc["threshold_source"].startswith("docs/baselines.md 6")
    replay = by_subject["GPU0/link4"]
    # Non-zero fails at facts time (Meta GCM's default thresholds are 0): it warned before the consolidation.
    assert (replay["status"], replay["measured"]["replay_errors"]) == ("fail", 7)
    assert replay["message"] == "GPU0/link4: 7 replay errors since the counters were reset, expected 0"
    assert replay["threshold_source"].startswith("Meta GCM check-dcgmi nvlink")
    assert by_subject["GPU0/link9"]["status"] == "fail" and "SATURATED at 4294967295" in by_subject["GPU0/link9"]["message"]


def test_error_counters_non_zero_fail_at_facts_time(shipped, fixture_text):
    # EDITED cloud-VM A100 recording: GPU0 link 2 prints "Replay Errors: 5" and "CRC Errors: 12", every other 0.
    status = fixture_text(A100_40_S)
    [bad] = checks.errors(_node(shipped, _gpu_facts(status, fixture_text(A100_40_E_BAD))))
    assert (bad["status"], bad["subject"]) == ("fail", "GPU0/link2")
    assert bad["measured"] == {"crc_errors": 12, "recovery_errors": 0, "replay_errors": 5}
    assert bad["message"] == "GPU0/link2: 12 crc errors, 5 replay errors since the counters were reset, expected 0"
    [good] = checks.errors(_node(shipped, _gpu_facts(status, fixture_text(A100_40_E))))
    assert (good["status"], good["measured"]) == ("pass", 0)


def _h100_nvl_12_of_18(text):
    """SYNTHETIC (edited copy of the H100 18-link recording): links 12-17 printed <inactive>, as an H100 NVL
    bridged pair wires 12 of its 18 links (docs/baselines.md 7)."""
    for link in range(12, 18):
        text = _edit(text, 0, "Link %d: 26.562 GB/s" % link, "Link %d: <inactive>" % link)
    return text


def test_links_inactive_by_design_pass_when_the_expected_count_is_active(shipped, fixture_text):
    facts = _gpu_facts(_h100_nvl_12_of_18(fixture_text(H100_1X)))
    # Before: 6 FAILs (one per inactive link) although the 12 links sold are active.
    [only] = checks.link_active(_node(shipped, facts, claim=_claim("nvlink_bridge_pairs", 12), profile="h100-nvl"))
    assert (only["status"], only["measured"], only["expected"], only["threshold_source"]) == ("pass", 12, 12, "claim")
    assert only["message"] == "all NVLinks active: 1 GPU(s) x 12 links (12); 6 more link(s) inactive by design"
    [only] = checks.link_active(_node(shipped, facts, profile="h100-nvl"))
    assert (only["status"], only["expected"]) == ("pass", 12)
    assert only["threshold_source"].startswith("profile h100-nvl: docs/baselines.md 7")
    # Short of the count: every inactive link is named, and the count fails.
    short = _edit(_h100_nvl_12_of_18(fixture_text(H100_1X)), 0, "Link 11: 26.562 GB/s", "Link 11: <inactive>")
    judged = checks.link_active(_node(shipped, _gpu_facts(short), profile="h100-nvl"))
    subjects = {item["subject"]: item["status"] for item in judged}
    assert subjects == dict([("GPU0/link%d" % n, "fail") for n in range(11, 18)] + [("GPU0", "fail")])
    # Sold as 18 (the H100 SXM profile): the 6 inactive links fail as before.
    failing = checks.link_active(_node(shipped, facts, profile="hgx-h100-8"))
    assert len(failing) == 7 and {item["status"] for item in failing} == {"fail"}


NVML_NOT_SUPPORTED = "NVML: Unable to retrieve NVLink information: Not Supported"


@pytest.mark.parametrize("how", ["mig", "all-inactive", "nvml-not-supported", "exit-not-supported", "gpu-line-alone"])
def test_gpu_reporting_no_nvlink_fails_in_every_wording(shipped, fixture_text, how):
    if how == "mig":  # recording: "Nvlink queries are not supported for Devices in MIG mode"
        facts, wording = _gpu_facts(fixture_text(MIG)), "MIG mode"
    elif how == "all-inactive":  # recording: "NVML: Unable to retrieve Nvlink information as all links are inActive"
        facts = _gpu_facts(fixture_text("smi/exporter-capture-nvlink-s-rtx2080super-all-links-inActive.txt"))
        wording = "inActive"
    elif how == "nvml-not-supported":  # SYNTHETIC: the Azure recording's NVML line with NVML's Not Supported reason
        text = fixture_text(AZURE_INACTIVE).replace(
            "NVML: Unable to retrieve NVLink information as all links are inactive", NVML_NOT_SUPPORTED)
        facts, wording = _gpu_facts(text), "Not Supported"
    elif how == "exit-not-supported":  # the tool exited non-zero saying so (merge_nvlink's status_failure)
        facts = {"gpus": [{"index": 0, "name": None, "uuid": None, "pci_bus_id": None}], "gpu_count": 1}
        merge_nvlink(facts["gpus"], None, None, status_failure="`nvidia-smi nvlink -s` exited 3: " + NVML_NOT_SUPPORTED)
        wording = "exited 3"
    else:  # SYNTHETIC: the MIG recording's GPU line with nothing under it
        facts, wording = _gpu_facts(fixture_text(MIG).split("\n")[0] + "\n"), "all links inactive"
    [only] = checks.link_active(_node(shipped, facts, profile="hgx-h100-8"))
    assert (only["status"], only["measured"], only["expected"]) == ("fail", 0, 18), only
    assert wording in only["message"]
    # Sold without NVLink (an H100 PCIe box), the same GPU passes.
    [only] = checks.link_active(_node(shipped, facts, profile="h100-pcie"))
    assert (only["status"], only["expected"]) == ("pass", 0)


def _fabric_node(shipped, name, cluster, cliques, rack=None, profile="gb200-nvl72"):
    gpus = [{"index": i, "name": "NVIDIA GB200",
             "fabric": {"state": "Completed", "status": "Success", "cluster_uuid": cluster, "clique_id": clique}}
            for i, clique in enumerate(cliques)]
    return NodeContext(name, facts={"gpu": {"gpus": gpus, "gpu_count": len(gpus)}},
                       claim={"rack": rack} if rack else None, profile=shipped[profile])


CLUSTER_A = "7a2d8f3c-1b4e-4c6d-9e0f-123456789abc"  # SYNTHETIC ids: no multi-tray GB200 recording is public
CLUSTER_B = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9"
ZERO = "00000000-0000-0000-0000-000000000000"


def test_fabric_domain_one_clique_per_nvlink_domain_not_per_node(shipped):
    healthy = [_fabric_node(shipped, "tray%d" % n, CLUSTER_A, [32766] * 4, rack="r1") for n in range(3)]
    outcome = checks.fabric_domain(healthy)
    assert {name: [item["status"] for item in items] for name, items in outcome.items()} == {
        "tray0": ["pass"], "tray1": ["pass"], "tray2": ["pass"]}
    assert outcome["tray0"][0]["message"] == "rack r1: 3 tray(s) in one clique (cluster %s, clique 32766)" % CLUSTER_A
    # Each tray consistent on its own (a per-node rule passes all three), but tray2 sits in another clique.
    mixed = healthy[:2] + [_fabric_node(shipped, "tray2", CLUSTER_A, [7] * 4, rack="r1")]
    outcome = checks.fabric_domain(mixed)
    assert [item["status"] for item in outcome["tray2"]] == ["fail"] and outcome["tray0"][0]["status"] == "pass"
    assert ("cluster %s clique 7, the other trays in cluster %s clique 32766 x2" % (CLUSTER_A, CLUSTER_A)
            in outcome["tray2"][0]["message"])
    # One rack, another ClusterUUID: fails; unlabelled trays group by ClusterUUID.
    outcome = checks.fabric_domain(healthy[:2] + [_fabric_node(shipped, "tray2", CLUSTER_B, [32766] * 4, rack="r1")])
    assert outcome["tray2"][0]["status"] == "fail"
    outcome = checks.fabric_domain([_fabric_node(shipped, "u%d" % n, CLUSTER_A, [32766] * 4) for n in range(2)]
                                   + [_fabric_node(shipped, "u%d" % n, CLUSTER_A, [5] * 4) for n in (2, 3)])
    # a tie (2 trays each): nobody is right, every tray fails
    assert {name: items[0]["status"] for name, items in outcome.items()} == {
        "u0": "fail", "u1": "fail", "u2": "fail", "u3": "fail"}
    # the domain label from the inventory (gpufleet_nvlink_domain) groups trays as the rack does
    labelled = [_fabric_node(shipped, "tray%d" % n, CLUSTER_A, [32766] * 4) for n in range(2)]
    for tray in labelled:
        tray.settings["gpufleet_nvlink_domain"] = "nvl72-a"
    outcome = checks.fabric_domain(labelled)
    assert outcome["tray1"][0]["message"] == ("NVLink domain nvl72-a (gpufleet_nvlink_domain): 2 tray(s) in one clique "
                                              "(cluster %s, clique 32766)" % CLUSTER_A)


def test_fabric_domain_named_by_the_inventory_rack(shipped):
    # SYNTHETIC hand-written facts: three trays, none with a claim rack or gpufleet_nvlink_domain; the inventory's
    # gpufleet_rack puts tray0 and tray1 in rack r7 and tray2 in rack r8, and it reaches the checks as a setting.
    assert "gpufleet_rack" in SETTINGS_VARS
    trays = [_fabric_node(shipped, "tray%d" % n, CLUSTER_A, [32766] * 4) for n in range(2)]
    trays.append(_fabric_node(shipped, "tray2", CLUSTER_A, [9] * 4))
    for tray, rack in zip(trays, ("r7", "r7", "r8")):
        tray.settings["gpufleet_rack"] = rack
    assert checks.domain_label(trays[0]) == ("r7", "rack r7")
    outcome = checks.fabric_domain(trays)
    # grouped by rack, tray2 is alone in its own domain (another clique is no fault); grouped by the one
    # ClusterUUID instead, it would fail as the odd one of three
    assert {name: [item["status"] for item in items] for name, items in outcome.items()} == {
        "tray0": ["pass"], "tray1": ["pass"], "tray2": ["pass"]}
    assert outcome["tray0"][0]["message"] == "rack r7: 2 tray(s) in one clique (cluster %s, clique 32766)" % CLUSTER_A
    # the claim's rack comes before the inventory's
    claimed = _fabric_node(shipped, "tray3", CLUSTER_A, [32766] * 4, rack="r1")
    claimed.settings["gpufleet_rack"] = "r7"
    assert checks.domain_label(claimed) == ("r1", "rack r1")


def test_fabric_domain_inside_one_tray_and_out_of_scope(shipped):
    outcome = checks.fabric_domain([_fabric_node(shipped, "t", CLUSTER_A, [32766, 32766, 9, 32766])])
    assert [item["status"] for item in outcome["t"]] == ["fail"] and "in 2 NVLink cliques" in outcome["t"][0]["message"]
    # The Azure PR506 shape: CliqueId 0 and an all-zero ClusterUUID, the GPU in no domain.
    outcome = checks.fabric_domain([_fabric_node(shipped, "t", ZERO, [0] * 4)])
    assert outcome["t"][0]["status"] == "fail" and "in no NVLink domain" in outcome["t"][0]["message"]
    # An 8-GPU HGX box (per-node scope) is not judged by this rule at all.
    assert not checks.fabric_domain([_fabric_node(shipped, "h", CLUSTER_A, [1] * 8, profile="hgx-b200-8")])
