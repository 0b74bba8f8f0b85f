# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""topology.gpu_pairs on real ``nvidia-smi topo -m`` recordings (tests/fixtures/topo/, see its
SOURCES.md); the expected pairs and codes are read by hand from each matrix."""

from __future__ import annotations

import pytest

from gpufleet.checks import profiles as prof
from gpufleet.checks import topology as checks
from gpufleet.checks.model import NodeContext
from gpufleet.parsers.registry import parse
from gpufleet.facts.topology import analyse_topology

DGX_A100 = "topo/gengwg-dgx-a100-nv12-12xmlx5-tabs-numa.txt"  # NV12 on all 28 pairs
NC_A100_V4 = "topo/azure-ncads-a100-v4-style-4x-a100-pcie-nv12-bridge-pairs-4numa.txt"  # GPU0-1, GPU2-3 NV12; SYS across
RTX4090 = "topo/8x-rtx4090-pcie-all-SYS-2nic-no-legend.txt"  # SYS on all 28 pairs
H100 = "topo/mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt"  # NV18 on all 28 pairs
DGX1_V100 = "topo/pytorch-ddp-bench-dgx1-v100-hybrid-cubemesh-4xmlx5-old-legend.txt"  # hybrid cube mesh: NV1/NV2/SYS
MINSKY = "topo/power8-minsky-4x-p100-nv2-SOC-legend-cuda8.txt"  # GPU0-1, GPU2-3 NV2; SOC across


@pytest.fixture(name="shipped", scope="module")
def shipped_fixture():
    return prof.load_profiles()


@pytest.fixture(name="judge")
def judge_fixture(fixture_text, shipped):
    def _judge(relative, claim=None, profile="generic"):
        parsed = parse("topo", fixture_text(relative))
        topology = dict(parsed)
        topology.update(analyse_topology(parsed))
        return checks.gpu_pairs(NodeContext("n1", facts={"topology": topology}, claim=claim, profile=shipped[profile]))

    return _judge


def _claim(interconnect, nvlinks=None):
    return {"gpu_model": "x", "gpu_count": 8, "interconnect": interconnect, "nvlinks_per_pair": nvlinks}


def _by_subject(results):
    return {item["subject"]: item for item in results}


def test_dgx_a100_passes_its_profile_and_its_claim(judge):
    [only] = judge(DGX_A100, profile="dgx-a100-8")
    assert (only["id"], only["status"], only["measured"], only["expected"]) == ("topology.gpu_pairs", "pass", "NV12", "NV12")
    assert only["threshold_source"].startswith("profile dgx-a100-8: docs/baselines.md 6")
    [only] = judge(DGX_A100, claim=_claim("nvswitch", 12), profile="dgx-a100-8")
    assert (only["status"], only["threshold_source"]) == ("pass", "claim")


def test_h100_nv18_passes_hgx_h100(judge):
    [only] = judge(H100, profile="hgx-h100-8")
    assert (only["status"], only["measured"], only["expected"]) == ("pass", "NV18", "NV18")
    assert only["message"] == "all 28 GPU pairs NVLink, at least NV18 (expected NV18)"


def test_dgx_a100_sold_as_nv18_fails_every_pair(judge):
    results = judge(DGX_A100, claim=_claim("nvswitch", 18), profile="dgx-a100-8")
    assert len(results) == 28 and {item["status"] for item in results} == {"fail"}
    first = _by_subject(results)["GPU0-GPU1"]
    assert (first["measured"], first["expected"], first["message"]) == ("NV12", "NV18", "GPU0-GPU1: NV12, expected NV18")


def test_bridged_pairs_sold_as_nvswitch_fail_naming_the_sys_pairs(judge):
    results = judge(NC_A100_V4, claim=_claim("nvswitch", 12), profile="a100-pcie-bridged-4")
    failed = _by_subject(results)
    assert sorted(failed) == ["GPU0-GPU2", "GPU0-GPU3", "GPU1-GPU2", "GPU1-GPU3"]
    assert {item["status"] for item in results} == {"fail"}
    pair = failed["GPU0-GPU2"]
    assert (pair["message"], pair["measured"], pair["expected"], pair["threshold_source"]) == ("GPU0-GPU2: SYS, expected NV12", "SYS", "NV12", "claim")


def test_bridged_pairs_as_sold_pass(judge):
    [only] = judge(NC_A100_V4, profile="a100-pcie-bridged-4")  # no claim: the profile's expectation
    assert (only["status"], only["measured"], only["expected"]) == ("pass", ["GPU0-GPU1", "GPU2-GPU3"], "NV12")
    # POWER8 Minsky: NV2 pairs, SOC (old spelling of SYS) between them.
    [only] = judge(MINSKY, claim=_claim("nvlink_bridge_pairs", 2))
    assert (only["status"], only["measured"]) == ("pass", ["GPU0-GPU1", "GPU2-GPU3"])
    failed = _by_subject(judge(MINSKY, claim=_claim("nvswitch", 2)))
    assert failed["GPU0-GPU2"]["message"] == "GPU0-GPU2: SYS, expected NV2"


def test_all_sys_box_sold_as_nvlink_fails_all_28_pairs(judge):
    results = judge(RTX4090, claim=_claim("nvswitch"), profile="pcie-generic")
    assert len(results) == 28 and {item["status"] for item in results} == {"fail"}
    pair = _by_subject(results)["GPU0-GPU4"]
    assert (pair["message"], pair["measured"], pair["expected"]) == ("GPU0-GPU4: SYS, expected NVLink", "SYS", "NVLink")
    results = judge(RTX4090, claim=_claim("nvlink_bridge_pairs", 4))
    assert sorted(item["subject"] for item in results) == ["GPU%d" % i for i in range(8)]
    assert _by_subject(results)["GPU3"]["message"] == "GPU3 has no NVLink partner (every link SYS), expected one NV4 bridge partner"


def test_half_nvlink_cube_mesh_sold_as_full_nvlink(judge):
    results = judge(DGX1_V100, claim=_claim("nvswitch", 2))
    failed = _by_subject(results)
    # 12 SYS pairs and the 8 NV1 pairs of the hybrid cube mesh; the 8 NV2 pairs pass.
    assert len(failed) == 20
    assert sorted(s for s, item in failed.items() if item["measured"] == "NV1") == [
        "GPU0-GPU1", "GPU0-GPU2", "GPU1-GPU3", "GPU2-GPU6", "GPU3-GPU7", "GPU4-GPU5", "GPU4-GPU6", "GPU5-GPU7"]
    assert failed["GPU0-GPU5"]["message"] == "GPU0-GPU5: SYS, expected NV2"
    assert "GPU0-GPU3" not in failed


def test_full_mesh_sold_as_bridged_pairs_warns_per_gpu(judge):
    results = judge(DGX_A100, claim=_claim("nvlink_bridge_pairs", 12))
    assert {item["status"] for item in results} == {"warn"} and len(results) == 8
    assert _by_subject(results)["GPU0"]["measured"] == 7


def test_pcie_claim_and_no_expectation(judge):
    [only] = judge(RTX4090, claim=_claim("pcie"))
    assert (only["status"], only["measured"], only["expected"]) == ("pass", ["SYS"], "pcie")
    [only] = judge(RTX4090)  # generic profile, no claim: nothing to hold the links against
    assert only["status"] == "skip" and "no claim" in only["message"]


# topo -mp: NODE/SYS only, no NV# legend
DELL_MP = "topo/dell-8x-h100-topo-mp-pcie-only-12nic-interleaved-cpu-affinity.txt"


def test_topo_mp_never_judges_nvlink(judge):
    # Before: a FAIL per pair on PCIe cells (GPU0-GPU4: SYS, expected NV18) of a matrix that cannot show NVLink.
    [only] = judge(DELL_MP, profile="hgx-h100-8")
    assert (only["status"], only["measured"], only["expected"]) == ("skip", "topo -mp", "nvswitch")
    assert only["message"].startswith("NVLink not verified: the matrix is `nvidia-smi topo -mp`")
    [only] = judge(DELL_MP, claim=_claim("nvlink_bridge_pairs", 12))
    assert only["status"] == "skip" and "NVLink not verified" in only["message"]
    # Sold as PCIe, -mp shows all that is expected.
    [only] = judge(DELL_MP, claim=_claim("pcie"))
    assert only["status"] == "pass"
    # The same H100 box read with topo -m still passes on its NV18 cells.
    [only] = judge(H100, profile="hgx-h100-8")
    assert only["status"] == "pass"
