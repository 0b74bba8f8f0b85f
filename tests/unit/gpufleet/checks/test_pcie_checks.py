# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pcie.gpu_link and pcie.nic_link on facts built from recordings: ``nvidia-smi -q`` / ``-q -x``
(tests/fixtures/smi, misc) and the SYNTHETIC sysfs tree tests/fixtures/sysfs/h100-ndr-ib (its
README names the recordings behind each value). Where a test says SYNTHETIC, named fields of the
built facts were changed; expected values are read by hand from the recordings."""

from __future__ import annotations

import copy
import os
import sys

import pytest

from ansible_collections.gpufleet.acceptance.plugins.modules import nic_facts
from gpufleet.facts import nic as nic_inventory
from gpufleet.checks import pcie as checks
from gpufleet.checks import profiles as prof
from gpufleet.checks.model import NodeContext
from gpufleet.facts.gpu import build_inventory
from gpufleet.parsers.registry import parse

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs"))

import render_tree  # noqa: E402  pylint: disable=import-error,wrong-import-position

H100_8X = "smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt"  # 8x Gen5 x16 of Gen5 x16
RTX4090 = "misc/gpud-nvidia-smi-q-text-8x-rtx4090-535.154.05-sw-power-cap-ACTIVE-2gpus.txt"  # GPUs 0,2,3,5,6,7 Gen1 of 4 idle; 1,4 Gen4
A10G_XML = "smi/telegraf-nvidia-smi-q-x-a10g-515-v11.xml.txt"  # GPU 0: x8 Gen1, max x16 Gen4, idle
RETIRED = "smi/azure-nvsmi-q-retired-pages-8gpu-clean.txt"  # -q -d PAGE_RETIREMENT: no PCIe block


@pytest.fixture(name="shipped", scope="module")
def shipped_fixture():
    return prof.load_profiles()


@pytest.fixture(name="gpu_facts")
def gpu_facts_fixture(fixture_text):
    def _facts(relative):
        if relative.endswith(".xml.txt"):
            return build_inventory(xml=parse("nvidia-smi-xml", fixture_text(relative)))
        return build_inventory(text=parse("nvidia-smi-q", fixture_text(relative)))

    return _facts


def _node(shipped, group, facts, profile="generic"):
    return NodeContext("n1", facts={group: facts}, profile=shipped[profile])


def test_h100_at_gen5_x16_passes(shipped, gpu_facts):
    [only] = checks.gpu_link(_node(shipped, "gpu", gpu_facts(H100_8X), "hgx-h100-8"))
    assert (only["id"], only["status"], only["message"]) == ("pcie.gpu_link", "pass", "8 GPU(s) at full PCIe width")


def test_idle_gpus_trained_down_are_not_warnings(shipped, gpu_facts):
    [only] = checks.gpu_link(_node(shipped, "gpu", gpu_facts(RTX4090), "pcie-generic"))
    assert only["status"] == "pass"
    assert only["message"] == "8 GPU(s) at full PCIe width; GPU0, GPU2, GPU3, GPU5, GPU6, GPU7 below max Gen at idle (power saving, normal)"


def test_gen_below_max_while_busy_warns_synthetic(shipped, gpu_facts):
    facts = gpu_facts(RTX4090)
    facts["gpus"][0]["clock_event_reasons"]["idle"] = False  # SYNTHETIC: GPU0 not idle at Gen1
    [gpu0] = checks.gpu_link(_node(shipped, "gpu", facts, "pcie-generic"))
    assert (gpu0["status"], gpu0["subject"]) == ("warn", "GPU0")
    assert gpu0["message"] == "GPU0 runs x16 Gen1, capable of x16 Gen4 while not idle: check it under load"
    assert (gpu0["measured"], gpu0["expected"]) == ({"width": 16, "gen": 1}, {"width": 16, "gen": 4})


def test_width_below_max_fails(shipped, gpu_facts):
    [gpu0] = checks.gpu_link(_node(shipped, "gpu", gpu_facts(A10G_XML), "pcie-generic"))
    assert (gpu0["status"], gpu0["subject"]) == ("fail", "GPU0")
    assert gpu0["message"].startswith("GPU0 runs x8 Gen1, capable of x16 Gen4")
    assert (gpu0["measured"], gpu0["expected"]) == ({"width": 8, "gen": 1}, {"width": 16, "gen": 4})


def test_gpu_max_below_the_profile_fails(shipped, gpu_facts):
    results = checks.gpu_link(_node(shipped, "gpu", gpu_facts(RTX4090), "hgx-h100-8"))  # Gen4 cards held against Gen5
    assert len(results) == 8 and {item["status"] for item in results} == {"fail"}
    assert (results[0]["message"], results[0]["measured"], results[0]["expected"]) == ("GPU0 capable of Gen4 only, expected Gen5", 4, 5)
    assert results[0]["threshold_source"].startswith("profile hgx-h100-8: docs/baselines.md 5")


def test_no_pcie_block_is_a_skip(shipped, gpu_facts):
    [only] = checks.gpu_link(_node(shipped, "gpu", gpu_facts(RETIRED)))
    assert only["status"] == "skip"


@pytest.fixture(name="nic_facts_h100")
def nic_facts_h100_fixture(tmp_path):
    root = render_tree.render(os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs", "h100-ndr-ib"), str(tmp_path / "root"))
    return nic_inventory.build_nic_facts({"net": nic_facts.read_net(root), "infiniband": nic_facts.read_infiniband(root)})


def test_rdma_nics_at_full_link_and_the_lom_listed(shipped, nic_facts_h100):
    results = checks.nic_link(_node(shipped, "nic", nic_facts_h100, "hgx-h100-8"))
    assert [item["status"] for item in results] == ["pass", "skip"]
    assert results[0]["message"] == "8 RDMA NIC(s) at their maximum PCIe width and generation"
    # The BCM5720 LOM (recorded LnkSta 5GT/s x1 of LnkCap x2) carries no RDMA: listed, not judged.
    assert "enp1s0f0 runs x1 Gen2, capable of x2 Gen2" in results[1]["message"]


def test_degraded_rdma_nic_fails_synthetic(shipped, nic_facts_h100):
    facts = copy.deepcopy(nic_facts_h100)
    iface = next(i for i in facts["interfaces"] if i["rdma_device"] == "mlx5_0")
    iface["pcie"].update({"width_current": 8, "gen_current": 4})  # SYNTHETIC
    results = checks.nic_link(_node(shipped, "nic", facts, "hgx-h100-8"))
    failed = [item for item in results if item["status"] == "fail"]
    assert len(failed) == 1
    assert (failed[0]["subject"], failed[0]["message"]) == ("mlx5_0", "mlx5_0 runs x8 Gen4, capable of x16 Gen5")
    assert (failed[0]["measured"], failed[0]["expected"]) == ({"width": 8, "gen": 4}, {"width": 16, "gen": 5})


def _sku(shipped, base, key, width):
    # A profile for a VM size whose devices get fewer lanes than the card has (a scenario input).
    profile = copy.deepcopy(shipped[base])
    profile["expect"][key] = width
    profile.setdefault("sources", {})["expect.%s" % key] = "docs/baselines.md 11: VM size built with x%d" % width
    return profile


def test_gpu_width_lower_by_design_passes_against_the_sku(shipped, gpu_facts):
    # A10G recording: GPU 0 x8 Gen1 of x16 Gen4, idle. A SKU built at x8 passes; one built at x16 keeps failing.
    node = NodeContext("n1", facts={"gpu": gpu_facts(A10G_XML)}, profile=_sku(shipped, "pcie-generic", "gpu_pcie_width", 8))
    [only] = checks.gpu_link(node)
    expected = ("1 GPU(s) at the SKU's PCIe width; GPU0 below max Gen at idle (power saving, normal); "
                "below the card's maximum by design: GPU0 x8 (the SKU's width)")
    assert (only["status"], only["message"]) == ("pass", expected)
    full = NodeContext("n1", facts={"gpu": gpu_facts(A10G_XML)}, profile=_sku(shipped, "pcie-generic", "gpu_pcie_width", 16))
    assert [item["status"] for item in checks.gpu_link(full)] == ["fail"]


def test_nic_width_lower_by_design_passes_against_the_sku_synthetic(shipped, nic_facts_h100):
    facts = copy.deepcopy(nic_facts_h100)
    iface = next(i for i in facts["interfaces"] if i["rdma_device"] == "mlx5_0")
    iface["pcie"].update({"width_current": 8})  # SYNTHETIC: a VF given x8 of the card's x16
    sku = NodeContext("n1", facts={"nic": facts}, profile=_sku(shipped, "hgx-h100-8", "nic_pcie_width", 8))
    assert [item["status"] for item in checks.nic_link(sku)] == ["pass", "skip"]
    card = NodeContext("n1", facts={"nic": facts}, profile=shipped["hgx-h100-8"])
    assert [item["subject"] for item in checks.nic_link(card) if item["status"] == "fail"] == ["mlx5_0"]
