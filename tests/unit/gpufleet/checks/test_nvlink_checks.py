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
from gpufleet.facts.gpu import merge_nvlink
from gpufleet.parsers.registry import parse

A100_8X = "smi/gpud-nvlink-status-8x-a100-sxm4-80gb.txt"  # 8 GPUs x 12 links x 25 GB/s
H100_1X = "smi/exporter-capture-nvlink-s-h100-590-18links.txt"  # GPU 0: 18 links x 26.562 GB/s
AZURE_INACTIVE = "smi/azure-nvlink-status-a100-sxm4-80gb-all-inactive.txt"  # GPU 6: all links are inactive
A6000 = "smi/siboehm-3x-rtx-a6000-nvlink-s-4links-and-inActive.txt"  # GPU0/1: 4 x 14.062; GPU2: all inActive
MIG = "smi/exporter-capture-nvlink-s-h100-MIG-not-supported.txt"  # GPU 0: not supported in MIG mode
A100_40_S = "smi/cloudvm-a100-40gb-nvlink-s-i0-12links-25gbs.txt"  # GPU 0: 12 x 25 GB/s
A100_40_E = "smi/cloudvm-a100-40gb-nvlink-e-all-zero-PARTIAL-gpu0.txt"  # GPU 0: 12 links, every counter 0


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
    [mig] = checks.link_active(_node(shipped, _gpu_facts(fixture_text(MIG)), profile="hgx-h100-8"))
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
    assert (replay["status"], replay["measured"]["replay_errors"]) == ("warn", 7)
    assert replay["message"] == "GPU0/link4: 7 replay errors since the counters were reset, expected 0"
    assert by_subject["GPU0/link9"]["status"] == "fail" and "SATURATED at 4294967295" in by_subject["GPU0/link9"]["message"]
