# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Profiles: the shipped files load with canonical units and sources; flawed ones are refused
naming the key; selection from real GPU facts (recordings named); overrides re-validated.

Expected numbers are read by hand from gpufleet/profiles/*.yml and docs/baselines.md.
"""

from __future__ import annotations

import copy

import pytest

from gpufleet.checks import profiles as prof
from gpufleet.facts.gpu import build_inventory
from gpufleet.parsers.registry import parse

SHIPPED = {"a100-pcie-bridged-4", "dgx-a100-8", "generic", "hgx-b200-8", "hgx-h100-8", "hgx-h200-8", "pcie-generic",
           "hgx-h800-8", "hgx-a800-8", "hgx-h20-8", "h100-nvl", "h100-nvl-2", "h100-pcie", "gh200-1", "gb200-nvl72"}


@pytest.fixture(name="shipped", scope="module")
def shipped_fixture():
    return prof.load_profiles()


def _doc(shipped, name="hgx-h100-8"):
    return copy.deepcopy(shipped[name]["document"])


def _refused(document, key_in_message):
    with pytest.raises(prof.ProfileError) as err:
        prof.validate_profile(document, origin="test.yml")
    assert key_in_message in str(err.value), str(err.value)
    return str(err.value)


def test_every_shipped_profile_loads_with_canonical_units(shipped):
    assert set(shipped) == SHIPPED
    h100 = shipped["hgx-h100-8"]
    single = h100["thresholds"]["allreduce_single_node"]
    # 460 GB/s at 16 GiB assuming NVLS; warning band up to 465, below the typical ~470-482 (docs/baselines.md 3a, 9).
    assert (single["floor"], single["warn_below"], single["message_size"], single["nvls"], single["unit"]) == (
        460.0, 465.0, 16 * 2 ** 30, True, "GB/s")
    assert "~370 without NVLS" in single["source"]
    assert h100["thresholds"]["ib_write_bw"]["floor"] == 380.0 and h100["thresholds"]["ib_write_bw"]["unit"] == "Gb/s"
    assert h100["thresholds"]["ib_write_bw"]["message_size"] == 8388608
    assert h100["expect"]["nvlink_link_speed"] == 26.562
    assert h100["expect"]["compute_rail"] == {"count": 8, "link_layer": "InfiniBand", "rate": 400.0}
    assert h100["fleet"]["max_below_median"] == 0.1
    a100 = shipped["dgx-a100-8"]
    assert (a100["expect"]["gpu_pair_link"], a100["expect"]["nvlink_links_per_gpu"], a100["expect"]["nvlink_link_speed"]) == ("NV12", 12, 25.0)
    assert a100["thresholds"]["allreduce_single_node"]["floor"] == 228.0
    assert shipped["a100-pcie-bridged-4"]["expect"]["interconnect"] == "nvlink_bridge_pairs"
    assert shipped["hgx-b200-8"]["expect"]["nvlink_link_speed"] == 53.125
    assert "gpu_pair_link" not in shipped["hgx-b200-8"]["expect"]  # docs/baselines.md has no B200 topo NV#


def test_every_number_of_every_shipped_profile_has_a_source(shipped):
    for profile in shipped.values():
        for section in ("expect", "fleet", "host"):
            for key in profile[section]:
                if prof.SCHEMA[section][key][1]:
                    source = profile["sources"][section + "." + key]
                    assert source.startswith("docs/baselines.md"), (profile["name"], key)
        for name, entry in profile["thresholds"].items():
            assert entry["source"].startswith("docs/baselines.md"), (profile["name"], name)
            assert profile["sources"]["thresholds." + name] == entry["source"]


def test_unknown_keys_are_refused_naming_them(shipped):
    doc = _doc(shipped)
    doc["expect"]["gpu_cnt"] = 8
    assert "expect.gpu_cnt: unknown key" in _refused(doc, "expect.gpu_cnt")
    doc = _doc(shipped)
    doc["thresholds"]["allreduce_single_node"]["flor"] = "460 GB/s"
    _refused(doc, "thresholds.allreduce_single_node.flor")
    doc = _doc(shipped)
    doc["thresholds"]["nccl_magic"] = {"floor": "1 GB/s", "source": "x"}
    _refused(doc, "thresholds.nccl_magic")
    doc = _doc(shipped)
    doc["colour"] = "green"
    _refused(doc, "colour: unknown key")


def test_gb_per_s_and_gbit_per_s_are_not_interchangeable(shipped):
    doc = _doc(shipped)
    doc["thresholds"]["ib_write_bw"]["floor"] = "380 GB/s"  # a factor of 8 off
    message = _refused(doc, "thresholds.ib_write_bw.floor")
    assert "network rate" in message and "GPU/NCCL bandwidth" in message
    doc = _doc(shipped)
    doc["thresholds"]["allreduce_single_node"]["floor"] = "460 Gb/s"
    _refused(doc, "thresholds.allreduce_single_node.floor")
    doc = _doc(shipped)
    doc["expect"]["nvlink_link_speed"] = "26.562 Gbps"
    _refused(doc, "expect.nvlink_link_speed")
    doc = _doc(shipped)
    doc["thresholds"]["allreduce_single_node"]["message_size"] = "16 GB/s"
    _refused(doc, "thresholds.allreduce_single_node.message_size")


def test_numbers_without_units_or_of_the_wrong_type_are_refused(shipped):
    doc = _doc(shipped)
    doc["thresholds"]["allreduce_single_node"]["floor"] = 460
    assert "has no unit" in _refused(doc, "thresholds.allreduce_single_node.floor")
    doc = _doc(shipped)
    doc["expect"]["gpu_count"] = "8"
    _refused(doc, "expect.gpu_count")
    doc = _doc(shipped)
    doc["expect"]["gpu_pair_link"] = "18"
    _refused(doc, "expect.gpu_pair_link")
    doc = _doc(shipped)
    doc["expect"]["interconnect"] = "infinityfabric"
    _refused(doc, "expect.interconnect")
    doc = _doc(shipped)
    doc["thresholds"]["allreduce_single_node"]["warn_below"] = "450 GB/s"
    _refused(doc, "thresholds.allreduce_single_node.warn_below")


def test_missing_sources_are_refused(shipped):
    doc = _doc(shipped)
    del doc["sources"]["expect.nvlink_links_per_gpu"]
    assert "missing source" in _refused(doc, "expect.nvlink_links_per_gpu")
    doc = _doc(shipped)
    del doc["thresholds"]["p2p_bandwidth"]["source"]
    _refused(doc, "thresholds.p2p_bandwidth.source")
    doc = _doc(shipped)
    doc["sources"]["expect.gpu_memory_min"] = "docs/baselines.md nowhere"  # a source for a key the profile does not set
    _refused(doc, "sources.expect.gpu_memory_min")


def test_missing_values_are_refused(shipped):
    doc = _doc(shipped)
    del doc["thresholds"]["ib_write_bw"]["floor"]
    assert "missing value" in _refused(doc, "thresholds.ib_write_bw.floor")
    doc = _doc(shipped)
    doc["expect"]["gpu_count"] = None
    _refused(doc, "expect.gpu_count: missing value")
    doc = _doc(shipped)
    del doc["match"]
    _refused(doc, "match: missing value")
    doc = _doc(shipped)
    del doc["expect"]["compute_rail"]["rate"]
    _refused(doc, "expect.compute_rail.rate")


def test_file_name_must_be_the_profile_name(shipped, tmp_path):
    path = tmp_path / "h100.yml"
    path.write_text(open(shipped["hgx-h100-8"]["origin"], encoding="utf-8").read())
    with pytest.raises(prof.ProfileError) as err:
        prof.load_profile_file(str(path))
    assert "name" in str(err.value) and "h100" in str(err.value)


def _gpu_facts(fixture_text, relative):
    return build_inventory(text=parse("nvidia-smi-q", fixture_text(relative)))


def test_selection_from_real_gpu_facts(shipped, fixture_text):
    h100 = _gpu_facts(fixture_text, "smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt")  # 8x NVIDIA H100 80GB HBM3
    profile, reason = prof.select_profile({"gpu": h100}, None, None, shipped)
    assert profile["name"] == "hgx-h100-8" and reason == "matched 8 x NVIDIA H100 80GB HBM3 (from GPU facts)"
    rtx = _gpu_facts(fixture_text, "smi/gpud-nvidia-smi-q-8x-rtx4090-535.154.05.txt")  # 8x NVIDIA GeForce RTX 4090
    assert prof.select_profile({"gpu": rtx}, None, None, shipped)[0]["name"] == "pcie-generic"
    h200 = _gpu_facts(fixture_text, "smi/exporter-capture-nvidia-smi-q-text-1x-h200-MIG-590-fabric-completed.txt")  # 1x H200
    profile, reason = prof.select_profile({"gpu": h200}, None, None, shipped)
    assert profile["name"] == "generic" and "no profile matches 1 x NVIDIA H200" in reason
    # No GPU facts: the claim's model and the topology's GPU count.
    topo = {"summary": {"gpu_count": 4}}
    claim = {"gpu_model": "NVIDIA A100 80GB PCIe", "gpu_count": 4}
    assert prof.select_profile({"topology": topo}, claim, None, shipped)[0]["name"] == "a100-pcie-bridged-4"
    # The override names the profile, whatever the GPUs are; an unknown name is refused.
    assert prof.select_profile({"gpu": rtx}, None, "dgx-a100-8", shipped) == (shipped["dgx-a100-8"], "set by gpufleet_profile")
    with pytest.raises(prof.ProfileError):
        prof.select_profile({"gpu": rtx}, None, "dgx-a100", shipped)


def test_overrides_are_merged_revalidated_and_cited(shipped):
    h100 = shipped["hgx-h100-8"]
    merged = prof.apply_overrides(h100, {"thresholds": {"allreduce_single_node": {"floor": "440 GB/s"}}, "host": {"temperature_max": "85 C"}})
    single = merged["thresholds"]["allreduce_single_node"]
    assert (single["floor"], single["message_size"], single["nvls"]) == (440.0, 16 * 2 ** 30, True)
    assert single["source"].startswith("gpufleet_profile_overrides")
    assert merged["host"]["temperature_max"] == 85.0
    assert merged["sources"]["host.temperature_max"].startswith("gpufleet_profile_overrides")
    assert h100["thresholds"]["allreduce_single_node"]["floor"] == 460.0  # the shipped profile is untouched
    with pytest.raises(prof.ProfileError) as err:
        prof.apply_overrides(h100, {"thresholds": {"ib_write_bw": {"floor": "400 GB/s"}}})
    assert "thresholds.ib_write_bw.floor" in str(err.value)
    with pytest.raises(prof.ProfileError) as err:
        prof.apply_overrides(h100, {"expect": {"gpu_cuont": 4}})
    assert "expect.gpu_cuont" in str(err.value)


# Real name strings as nvidia-smi prints them, GPU count -> the profile a person would pick (by hand).
@pytest.mark.parametrize("name, count, expected", [
    ("NVIDIA H100 80GB HBM3", 8, "hgx-h100-8"),
    ("NVIDIA H100 NVL", 8, "h100-nvl"),
    ("NVIDIA H100 NVL", 2, "h100-nvl-2"),
    ("NVIDIA H100 PCIe", 8, "h100-pcie"),
    ("NVIDIA H800", 8, "hgx-h800-8"),
    ("NVIDIA H800 80GB HBM3", 8, "hgx-h800-8"),
    ("NVIDIA A800-SXM4-80GB", 8, "hgx-a800-8"),
    ("NVIDIA A100-SXM4-80GB", 8, "dgx-a100-8"),
    ("NVIDIA H20", 8, "hgx-h20-8"),
    ("NVIDIA H200", 8, "hgx-h200-8"),
    ("NVIDIA GH200 480GB", 1, "gh200-1"),
    ("NVIDIA GB200", 4, "gb200-nvl72"),
    ("NVIDIA B200", 8, "hgx-b200-8"),
    ("NVIDIA L40S", 8, "pcie-generic"),
    ("NVIDIA L40S", 1, "pcie-generic"),
    # not stolen: a GH200 or GB200 never takes the 8-GPU H200/B200 profile, whatever the count
    ("NVIDIA GH200 480GB", 8, "generic"),
    ("NVIDIA GB200", 8, "generic"),
])
def test_sku_name_strings_pick_their_profile(shipped, name, count, expected):
    facts = {"gpu": {"gpus": [{"name": name} for _index in range(count)], "gpu_count": count}}
    assert prof.select_profile(facts, None, None, shipped)[0]["name"] == expected


def test_sku_profiles_say_what_the_sku_is(shipped):
    # docs/baselines.md 7: NV8 parts, the H100 NVL 12-of-18 pairs, the rack-wide GB200 NVLink domain.
    for name, links, speed in (("hgx-h800-8", 8, 26.562), ("hgx-a800-8", 8, 25.0), ("hgx-h20-8", 18, 26.562)):
        expect = shipped[name]["expect"]
        assert (expect["interconnect"], expect["gpu_pair_link"], expect["nvlink_links_per_gpu"], expect["nvlink_link_speed"]) == (
            "nvswitch", "NV%d" % links, links, speed)
    nvl = shipped["h100-nvl"]["expect"]
    assert (nvl["interconnect"], nvl["gpu_pair_link"], nvl["nvlink_links_per_gpu"], nvl["gpu_pcie_gen"]) == ("nvlink_bridge_pairs", "NV12", 12, 5)
    assert shipped["h100-nvl-2"]["thresholds"]["allreduce_single_node"]["floor"] == 208.0
    assert shipped["h100-pcie"]["expect"]["interconnect"] == "pcie" and "nvlink_links_per_gpu" not in shipped["h100-pcie"]["expect"]
    assert (shipped["gh200-1"]["expect"]["gpu_count"], shipped["gh200-1"]["expect"]["interconnect"]) == (1, "pcie")
    gb200 = shipped["gb200-nvl72"]["expect"]
    assert (gb200["gpu_count"], gb200["nvlink_links_per_gpu"], gb200["nvlink_link_speed"]) == (4, 18, 53.125)
    # the rack-wide domain is the clique scope; its GPU count (72) is no key: no check reads it (test_profile_keys.py)
    assert gb200["fabric_clique_scope"] == "nvlink_domain" and "nvlink_domain_gpus" not in gb200
    b200 = shipped["hgx-b200-8"]["thresholds"]["allreduce_single_node"]
    # 0.9 x ~845 GB/s (NVLink5 all-reduce: 8x B200 in PyTorch's NCCL all_reduce, nccl-tests over a GB200 NVL72 rack)
    assert b200["floor"] == 760.0 and "coreweave/nccl-tests#43" in b200["source"] and "845.7" in b200["source"]


def test_fabric_clique_scope_takes_node_or_nvlink_domain(shipped):
    document = _doc(shipped, "gb200-nvl72")
    document["expect"]["fabric_clique_scope"] = "rack"
    _refused(document, "expect.fabric_clique_scope")
    document = _doc(shipped, "gb200-nvl72")
    document["expect"]["nvlink_domain_gpus"] = 72  # once taken, read by no check: refused, saying so
    assert "no check reads it" in _refused(document, "expect.nvlink_domain_gpus")
