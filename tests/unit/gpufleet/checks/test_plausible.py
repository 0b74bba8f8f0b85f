# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Implausible figures fail their check by name (checks/plausible.py), and look-alike GPU names fail gpu.model.

GPU facts are built by the real parser from recordings of tests/fixtures/smi; busbw records wrap the real nccl-tests
parse of tests/fixtures/nccl (see SOURCES.md there). Where a test says SYNTHETIC, one named value was changed here;
every expected figure is worked out by hand in the test's comments.
"""

from __future__ import annotations

import pytest

from gpufleet.checks import benchmarks
from gpufleet.checks import gpu as checks
from gpufleet.checks.model import FAIL, PASS, SKIP, NodeContext
from gpufleet.checks.plausible import CEILINGS, busbw_ceiling, implausible
from gpufleet.checks.profiles import load_profiles
from gpufleet.facts.gpu import build_inventory
from gpufleet.parsers.registry import parse

H100_Q = "smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt"  # 8x "NVIDIA H100 80GB HBM3", 81559 MiB each
SINGLE = "nccl/h100-8gpu-1node-nvls-allreduce-128M-4G-issue290.txt"  # 8 ranks, 4 GiB row busbw 473.60
MULTI = "nccl/h100-2node-16rank-ndr-ib-allreduce-RING-PARTIAL-issue290.txt"  # 16 ranks, 8 GiB busbw 89.90
H100_MODEL = "NVIDIA H100 80GB HBM3"


@pytest.fixture(name="profiles", scope="module")
def profiles_fixture():
    loaded = load_profiles()
    return loaded if isinstance(loaded, dict) else {item["name"]: item for item in loaded}


@pytest.fixture(name="h100")
def h100_fixture(fixture_text):
    return build_inventory(text=parse("nvidia-smi-q", fixture_text(H100_Q)))


def _gpu_node(facts, profile, claim=None):
    return NodeContext("n1", facts={"gpu": facts}, claim=claim, profile=profile)


# -- gpu.model: a name with a format or control character ----------------------------------------------------------

def test_a_zero_width_space_after_the_claimed_name_fails_naming_it(h100, profiles):
    h100["gpus"][2]["name"] = H100_MODEL + "\u200b"  # SYNTHETIC: looks like the claim; the substring match passed it
    item, = checks.model(_gpu_node(h100, profiles["generic"], {"gpu_model": H100_MODEL}))
    assert (item["status"], item["subject"]) == (FAIL, "GPU2")
    assert item["message"] == ("GPU2 name contains U+200B ZERO WIDTH SPACE: not a name nvidia-smi prints, never "
                               "compared as a model")
    assert item["measured"] == H100_MODEL + "\u200b"  # kept as given: the report shows it escaped


def test_a_right_to_left_override_fails_the_profile_regex_too(h100, profiles):
    # SYNTHETIC: shown right to left after U+202E, "LVN" reads "NVL"; hgx-h100-8's regex H100(?!.*(PCIe|NVL))
    # found "H100" in it and passed it as an SXM part
    for gpu in h100["gpus"]:
        gpu["name"] = H100_MODEL + " \u202eLVN"
    items = checks.model(_gpu_node(h100, profiles["hgx-h100-8"]))
    assert [(item["status"], item["subject"]) for item in items] == [(FAIL, "GPU%d" % index) for index in range(8)]
    assert "name contains U+202E RIGHT-TO-LEFT OVERRIDE" in items[0]["message"]


def test_a_control_character_is_named_by_its_code_point(h100, profiles):
    h100["gpus"][0]["name"] = "NVIDIA H100\x1b[8m 80GB HBM3"  # SYNTHETIC: ESC (Cc, no Unicode name)
    item, = checks.model(_gpu_node(h100, profiles["hgx-h100-8"]))
    assert "GPU0 name contains U+001B control character" in item["message"]


def test_the_recorded_names_still_pass(h100, profiles):
    item, = checks.model(_gpu_node(h100, profiles["hgx-h100-8"], {"gpu_model": H100_MODEL}))
    assert item["status"] == PASS and item["measured"] == [H100_MODEL]


# -- gpu.temperature, gpu.memory, gpu.count ------------------------------------------------------------------------

def test_a_400_c_gpu_fails_as_implausible_not_a_warning(h100, profiles):
    h100["gpus"][3]["temperature_c"] = 400  # SYNTHETIC: above 150 C, the table's ceiling
    item, = checks.temperature(_gpu_node(h100, profiles["hgx-h100-8"]))
    assert (item["status"], item["subject"], item["measured"], item["expected"]) == (FAIL, "GPU3", 400, 150)
    assert item["message"].startswith("implausible: GPU3 reads 400 C, above the ceiling of 150 C (")


def test_memory_of_2_to_the_63_mib_fails_as_implausible(h100, profiles):
    h100["gpus"][5]["memory_total_mib"] = 2 ** 63  # SYNTHETIC: within the parser's 2^64 bound, far above 1 TiB
    items = checks.memory(_gpu_node(h100, profiles["hgx-h100-8"], {"gpu_memory_gb": 80}))
    assert [(item["status"], item["subject"]) for item in items] == [(FAIL, "GPU5")]
    assert items[0]["message"].startswith("implausible: GPU5 reads 9223372036854775808 MiB, above the ceiling of "
                                          "1048576 MiB")


def test_a_gpu_count_above_32_fails_even_when_claimed(h100, profiles):
    h100["gpu_count"] = 40  # SYNTHETIC: NV_MAX_DEVICES is 32; a claim of 40 matched it before
    item, = checks.count(_gpu_node(h100, profiles["generic"], {"gpu_count": 40}))
    assert (item["status"], item["measured"], item["expected"]) == (FAIL, 40, 32)
    assert item["message"].startswith("implausible: nvidia-smi's GPU count reads 40 GPUs, above the ceiling of 32 GPUs")


# -- benchmarks: busbw against what the GPU's links carry -----------------------------------------------------------

def _record(fixture_text, path, kind, hosts, busbw):
    parsed = parse("nccl", fixture_text(path))
    parsed["rows"] = []  # SYNTHETIC figure on the real envelope
    parsed["busbw_at_largest_size_gbs"] = busbw
    return {"name": "all_reduce_perf", "command": ["all_reduce_perf"], "kind": kind, "hosts": hosts, "outcome": "ok",
            "parsed": parsed, "message_size_bytes": None, "environment": {}}


def _bench_node(name, records, profile):
    return NodeContext(name, facts={}, profile=profile, settings={"benchmarks": records})


def test_the_ceiling_is_the_profiles_nvlink_both_ways(profiles):
    # 18 links x 26.562 GB/s x 2 = 956.2; 18 x 53.125 x 2 = 1912.5; 12 x 25 x 2 = 600; no NVLink keys: NVLink5's 1,800
    assert busbw_ceiling(profiles["hgx-h100-8"])[0] == 956.2
    assert busbw_ceiling(profiles["hgx-b200-8"])[0] == 1912.5
    assert busbw_ceiling(profiles["dgx-a100-8"])[0] == 600.0
    assert busbw_ceiling(profiles["generic"]) == (1800.0, CEILINGS["allreduce_busbw_gbs"].source)
    assert implausible("allreduce_busbw_gbs", 1800.0, "x") is None and implausible("gpu_count", True, "x") is None


def test_a_10_to_the_400_busbw_fails_the_single_node_check(fixture_text, profiles):
    rec = _record(fixture_text, SINGLE, "allreduce_single", ["node005"], 10 ** 400)
    item, = benchmarks.check_allreduce_single(_bench_node("node005", [rec], profiles["hgx-h100-8"]))
    assert (item["status"], item["expected"], item["subject"]) == (FAIL, 956.2, "all_reduce_perf")
    assert item["message"].startswith("implausible: node005 busbw of all_reduce_perf reads 1000000000000000... "
                                      "(401 digits) GB/s, above the ceiling of 956.2 GB/s (profile hgx-h100-8: 18 "
                                      "NVLink links x 26.562 GB/s x 2 directions")


def test_1000_gbs_is_implausible_on_h100_and_judged_on_b200(fixture_text, profiles):
    rec = _record(fixture_text, SINGLE, "allreduce_single", ["node005"], 1000.0)
    item, = benchmarks.check_allreduce_single(_bench_node("node005", [rec], profiles["hgx-h100-8"]))
    assert item["status"] == FAIL and item["message"].startswith("implausible: ")
    item, = benchmarks.check_allreduce_single(_bench_node("node005", [rec], profiles["hgx-b200-8"]))
    assert (item["status"], item["measured"], item["expected"]) == (PASS, 1000.0, 760.0)  # B200 floor 760


def test_an_implausible_repeat_fails_and_the_others_are_still_judged(fixture_text, profiles):
    good = _record(fixture_text, SINGLE, "allreduce_single", ["node005"], 473.6)
    forged = _record(fixture_text, SINGLE, "allreduce_single", ["node005"], 10 ** 400)
    items = benchmarks.check_allreduce_single(_bench_node("node005", [good, forged], profiles["hgx-h100-8"]))
    assert [item["status"] for item in items] == [FAIL, PASS]
    assert items[1]["measured"] == 473.6 and items[1]["expected"] == 460.0


def test_a_10_to_the_400_multi_node_busbw_fails_on_both_hosts(fixture_text, profiles):
    rec = _record(fixture_text, MULTI, "allreduce_multi", ["node005", "node007"], 10 ** 400)
    out = benchmarks.check_allreduce_multi([_bench_node("node005", [rec], profiles["hgx-h100-8"]),
                                            _bench_node("node007", [], profiles["hgx-h100-8"])])
    for host in ("node005", "node007"):
        item, = out[host]
        assert item["status"] == FAIL and item["message"].startswith("implausible: %s busbw of all_reduce_perf" % host)


def test_an_implausible_figure_is_left_out_of_the_fleet_median(fixture_text, profiles):
    h100 = profiles["hgx-h100-8"]
    nodes = [_bench_node(name, [_record(fixture_text, SINGLE, "allreduce_single", [name], value)], h100)
             for name, value in (("n1", 473.6), ("n2", 470.0), ("n3", 475.0), ("n4", 10 ** 400))]
    out = benchmarks.check_allreduce_relative(nodes)
    # median of 470, 473.6, 475 is 473.6; 0.9 x 473.6 = 426.24
    for name in ("n1", "n2", "n3"):
        item, = out[name]
        assert (item["status"], item["expected"]) == (PASS, 426.24)
    item, = out["n4"]  # its own check (allreduce_single) fails the figure by name
    assert (item["status"], item["message"]) == (SKIP, "not judged: no single-node all-reduce busbw for this node")
