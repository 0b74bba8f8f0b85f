# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checks on GPU facts read from ``nvidia-smi nvlink -s`` alone: both ``-q`` queries failed.

The facts are built as the gpu_facts action builds them (gpufleet.facts.gpu.gather on raw collector results) from
real ``nvlink -s`` recordings (tests/fixtures/smi/, see SOURCES.md); the two failing queries are raw entries with a
non-zero exit, as plugins/module_utils/node_collect.run_tool records them. Claims are scenario inputs written here;
expected values are read by hand from the recordings named.
"""

from __future__ import annotations

import pytest

from gpufleet.checks import engine
from gpufleet.checks import profiles as prof
from gpufleet.checks.model import NodeContext
from gpufleet.facts.gpu import gather
from gpufleet.facts.raw import RawReader

A100_8X = "smi/gpud-nvlink-status-8x-a100-sxm4-80gb.txt"  # GPU 0-7: NVIDIA A100-SXM4-80GB, 12 links x 25 GB/s each
RTX2080 = "smi/exporter-capture-nvlink-s-rtx2080super-all-links-inActive.txt"  # a PCIe box: GPU 0, all links inActive
MIG = "smi/exporter-capture-nvlink-s-h100-MIG-not-supported.txt"  # GPU 0: not supported in MIG mode
FAILED = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"
NOT_MEASURED = "not measured: neither `nvidia-smi -q -x` nor `nvidia-smi -q` could be read"


@pytest.fixture(name="shipped", scope="module")
def shipped_fixture():
    return prof.load_profiles()


def _facts(fixture_text, status):
    """gpufleet_gpu of a node whose two -q queries exited 9 and whose `nvlink -s` answered with ``status``."""
    def failing(args):
        return {"cmd": ["nvidia-smi"] + args, "rc": 9, "stdout": "", "stderr": FAILED, "error": None}

    raw = {"query_xml": failing(["-q", "-x"]), "query_text": failing(["-q"]),
           "nvlink_status": {"cmd": ["nvidia-smi", "nvlink", "-s"], "rc": 0, "stdout": fixture_text(status),
                             "stderr": "", "error": None}}
    return gather(RawReader("n1", raw))


def _judged(facts, claim, profile):
    node = NodeContext("n1", facts={"gpu": facts}, claim=claim, profile=profile)
    return engine.run_checks([node], families=["gpu", "nvlink", "pcie"])["nodes"]["n1"]


def _of(report, check_id):
    return [item for item in report["checks"] if item["id"] == check_id]


def test_all_links_active_pass_though_both_queries_failed(shipped, fixture_text):
    facts = _facts(fixture_text, A100_8X)
    # the GPU names and count of nvlink -s choose the profile, as -q's would
    profile, _reason = prof.select_profile({"gpu": facts}, None, None, shipped)
    assert profile["name"] == "dgx-a100-8"
    claim = {"gpu_model": "NVIDIA A100-SXM4-80GB", "gpu_count": 8, "interconnect": "nvswitch", "nvlinks_per_pair": 12}
    report = _judged(facts, claim, profile)
    [active] = _of(report, "nvlink.link_active")
    assert (active["status"], active["measured"], active["expected"]) == ("pass", 96, 96)  # 8 GPUs x 12 links
    [speed] = _of(report, "nvlink.link_speed")
    assert (speed["status"], speed["measured"], speed["expected"]) == ("pass", 25.0, 25.0)
    # the queries' failure is the node's failure, named as such
    [queries] = _of(report, "gpu.queries")
    assert queries["status"] == "fail"
    assert queries["message"] == (
        "could not read the GPUs: neither `nvidia-smi -q -x` nor `nvidia-smi -q` could be read "
        "(n1: `nvidia-smi -q -x` exited 9: %s; n1: `nvidia-smi -q` exited 9: %s): only the NVLink state of "
        "`nvidia-smi nvlink -s` is known" % (FAILED, FAILED))
    assert report["failed"] == ["gpu.queries"] and report["verdict"] == "REJECT"
    # what only -q prints is "not measured", never a pass
    for check_id in ("gpu.count", "gpu.visible", "gpu.model", "gpu.memory", "gpu.ecc", "gpu.ecc_errors",
                     "gpu.pcie_replay", "gpu.row_remap", "gpu.processes", "gpu.throttle", "pcie.gpu_link"):
        [item] = _of(report, check_id)
        assert item["status"] == "skip" and item["message"].startswith(NOT_MEASURED), check_id
    # the claimed model and count stay unverified; the NVLink of each GPU is verified
    status = {item["item"]: item["status"] for item in report["coverage"]["items"]}
    assert (status["gpu.model"], status["gpu.count"]) == ("unverified", "unverified")
    assert {status["nvlink.GPU%d" % index] for index in range(8)} == {"verified"}


def test_a_pcie_box_sold_with_nvlink_fails_though_both_queries_failed(shipped, fixture_text):
    # RTX 2080 SUPER: "NVML: Unable to retrieve Nvlink information as all links are inActive"
    facts = _facts(fixture_text, RTX2080)
    claim = {"gpu_model": "NVIDIA GeForce RTX 2080 SUPER", "gpu_count": 1, "interconnect": "nvswitch"}
    report = _judged(facts, claim, shipped["generic"])
    [active] = _of(report, "nvlink.link_active")
    # sold with NVLink, no link count: before, a warning ("no NVLink expectation")
    assert (active["status"], active["subject"], active["measured"], active["expected"]) == ("fail", "GPU0", 0, 1)
    assert active["message"] == ("GPU0: no active NVLink (NVML: Unable to retrieve Nvlink information as all links "
                                 "are inActive), sold with NVLink")
    assert active["threshold_source"] == "claim"
    assert set(report["failed"]) == {"nvlink.link_active", "gpu.queries"}
    # with a link count in the claim, the count is the expectation
    [active] = _of(_judged(facts, dict(claim, nvlinks_per_pair=4), shipped["generic"]), "nvlink.link_active")
    assert (active["status"], active["expected"]) == ("fail", 4)
    # sold as a PCIe box, the same output passes
    [active] = _of(_judged(facts, dict(claim, interconnect="pcie"), shipped["generic"]), "nvlink.link_active")
    assert (active["status"], active["expected"]) == ("pass", 0)


def test_nvlink_not_supported_fails_a_gpu_sold_with_nvlink(shipped, fixture_text):
    # H100 in MIG mode: "Nvlink queries are not supported for Devices in MIG mode" in place of links
    facts = _facts(fixture_text, MIG)
    claim = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 1, "interconnect": "nvlink_bridge_pairs"}
    [active] = _of(_judged(facts, claim, shipped["generic"]), "nvlink.link_active")
    assert (active["status"], active["measured"], active["expected"]) == ("fail", 0, 1)
    assert "MIG mode" in active["message"] and active["message"].endswith(", sold with NVLink")
    # no claim, no profile expectation: not judged, as before
    [active] = _of(_judged(facts, None, shipped["generic"]), "nvlink.link_active")
    assert active["status"] == "skip"
