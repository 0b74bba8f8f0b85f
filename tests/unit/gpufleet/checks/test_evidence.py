# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests that can fail: required evidence (gpufleet/checks/evidence.py) and the INCOMPLETE verdict.

Every expected item, verdict and reason is written by hand from the claim and facts built here.
"""

from __future__ import annotations

from gpufleet.checks import engine, evidence, verdict
from gpufleet.checks.model import (
    ACCEPT,
    ACCEPT_WITH_WARNINGS,
    INCOMPLETE,
    REJECT,
    UNREACHABLE,
    NodeContext,
    fleet_verdict,
    node_verdict,
    result,
)
from gpufleet.facts import gpu as gpu_facts
from gpufleet.parsers.nvidia_smi_nvlink import parse_nvlink_status

NVLINK_CLAIM = {
    "gpu_model": "NVIDIA A100-SXM4-80GB",
    "gpu_count": 2,
    "interconnect": "nvswitch",
    "nvlinks_per_pair": 12,
}


def _gpu(index, nvlink, name="NVIDIA A100-SXM4-80GB", memory=81920):
    return {"index": index, "name": name, "memory_total_mib": memory, "nvlink": nvlink}


def _gpu_facts(gpus):
    return {"gpu_count": len(gpus), "gpus": gpus}


def _judge(node, families=("gpu", "nvlink")):
    return engine.run_checks([node], families=list(families))["nodes"][node.name]


def test_required_items_of_an_nvlink_claim():
    node = NodeContext(
        "n",
        facts={"gpu": _gpu_facts([_gpu(0, None), _gpu(1, None)])},
        claim=dict(NVLINK_CLAIM, gpu_memory_gb=80, nics=[{"role": "compute", "type": "ib", "count": 8, "gbps": 200}]),
        settings={"required_benchmarks": ["allreduce_single", "allreduce_pairs"]},
    )
    items = {item["item"]: item for item in evidence.required_items(node)}
    assert sorted(items) == [
        "benchmark.allreduce_pairs",
        "benchmark.allreduce_single",
        "gpu.count",
        "gpu.memory",
        "gpu.model",
        "nic.0",
        "nvlink.GPU0",
        "nvlink.GPU1",
        "rdma",
        "topology.gpu_pairs",
    ]
    assert (
        items["nvlink.GPU1"]["checks"] == ["nvlink.link_active"]
        and items["nvlink.GPU1"]["expected"] == "12 active NVLinks"
    )
    assert (
        items["nic.0"]["checks"] == ["network.nic_speed"]
        and items["nic.0"]["expected"] == "8 up at >= 200 Gb/s, link layer InfiniBand"
    )
    assert items["rdma"]["checks"] == ["network.rdma_port_state"]
    assert items["benchmark.allreduce_pairs"]["checks"] == ["benchmarks.pair_search"]
    assert items["gpu.count"]["expected"] == "2 GPUs" and items["gpu.count"]["source"] == "claim"


def test_an_nvlink_domain_across_nodes_requires_the_fabric_domain_check():
    from gpufleet.checks.profiles import load_profiles  # pylint: disable=import-outside-toplevel

    shipped = load_profiles()
    tray = NodeContext("tray0", profile=shipped["gb200-nvl72"])
    items = {item["item"]: item for item in evidence.required_items(tray)}
    assert items["nvlink.fabric_domain"]["checks"] == ["nvlink.fabric_domain"]
    assert items["nvlink.fabric_domain"]["source"] == "profile gb200-nvl72: expect.fabric_clique_scope"
    # an HGX box: its NVLink ends at the node, no domain item
    hgx = NodeContext("h0", profile=shipped["hgx-h100-8"])
    assert "nvlink.fabric_domain" not in [item["item"] for item in evidence.required_items(hgx)]
    # without a result from the check the tray is not verified (INCOMPLETE names it)
    status, reason = evidence.item_status(items["nvlink.fabric_domain"], [])
    assert status != "verified" and "no result from nvlink.fabric_domain" in reason


def test_a_profile_compute_rail_of_either_link_layer_is_printed_joined():
    profile = {"name": "roce-or-ib", "expect": {"compute_rail": {"count": 8, "link_layer": ["InfiniBand", "Ethernet"],
                                                                 "rate": "400 Gb/sec"}}, "sources": {}}
    [rdma] = [item for item in evidence.required_items(NodeContext("n", profile=profile)) if item["item"] == "rdma"]
    assert rdma["expected"] == "8 InfiniBand/Ethernet port(s) Active at 400 Gb/sec"


def test_a_pcie_claim_requires_no_nvlink_and_a_single_gpu_no_pair():
    node = NodeContext("n", claim={"gpu_count": 1, "interconnect": "pcie"})
    assert [item["item"] for item in evidence.required_items(node)] == ["gpu.count"]


def test_nvlink_claimed_but_not_collected_is_incomplete_naming_the_item():
    # nvidia-smi nvlink was not collected: every GPU's nvlink is None
    node = NodeContext("n", facts={"gpu": _gpu_facts([_gpu(0, None), _gpu(1, None)])}, claim=NVLINK_CLAIM)
    entry = _judge(node)
    assert entry["verdict"] == INCOMPLETE
    # the topology family did not run here: the claimed interconnect is unverified too
    assert entry["coverage"]["incomplete"] == [
        "GPU pair interconnect: no result from topology.gpu_pairs: not run or not recorded",
        "NVLink GPU0: not judged: nvlink status was not collected",
        "NVLink GPU1: not judged: nvlink status was not collected",
    ]
    # required: model, count, pair interconnect, NVLink GPU0 and GPU1; judged: model and count
    assert (entry["coverage"]["required"], entry["coverage"]["judged"], entry["coverage"]["skipped"]) == (5, 2, 3)
    line = verdict.verdict_lines({"nodes": {"n": entry}}, {"n": {"name": "generic"}})["n"]
    assert line == (
        "n: INCOMPLETE (profile generic) - not verified: GPU pair interconnect: no result from "
        "topology.gpu_pairs: not run or not recorded; not verified: NVLink GPU0: not judged: nvlink status "
        "was not collected; not verified: NVLink GPU1: not judged: nvlink status was not collected"
    )


def test_the_same_node_with_evidence_of_no_nvlink_is_rejected():
    # nvlink -s answered for both GPUs: supported, and every link inactive (the RTX 2080 recording's message)
    dead = {
        "supported": True,
        "message": "NVML: Unable to retrieve Nvlink information as all links are inActive",
        "links": [],
        "elided": False,
    }
    node = NodeContext("n", facts={"gpu": _gpu_facts([_gpu(0, dict(dead)), _gpu(1, dict(dead))])}, claim=NVLINK_CLAIM)
    entry = _judge(node)
    assert entry["verdict"] == REJECT
    assert entry["failed"] == ["nvlink.link_active", "nvlink.link_active"]
    # REJECT wins over the interconnect left unverified (no topology family here)
    assert entry["coverage"]["failed"] == 2
    assert entry["coverage"]["incomplete"] == [
        "GPU pair interconnect: no result from topology.gpu_pairs: not run or not recorded"
    ]


def test_single_gpu_sold_with_nvlink_whose_nvlink_s_lists_none_is_not_accepted():
    # nvlink -s on a GPU without NVLink prints its header line only (no link, no message)
    status = parse_nvlink_status("GPU 0: NVIDIA H100 PCIe (UUID: GPU-00000000-0000-0000-0000-000000000000)\n")
    gpus = [{"index": 0, "name": "NVIDIA H100 PCIe", "memory_total_mib": 81559}]
    gpu_facts.merge_nvlink(gpus, status)
    node = NodeContext(
        "one",
        facts={"gpu": _gpu_facts(gpus)},
        claim={"gpu_model": "NVIDIA H100 PCIe", "gpu_count": 1, "interconnect": "nvswitch"},
    )
    entry = _judge(node)
    # sold with NVLink (claim interconnect nvswitch, no link count) and no link listed: a failure (it was an
    # unverified item, INCOMPLETE, before)
    assert entry["verdict"] == REJECT
    [active] = [item for item in entry["checks"] if item["id"] == "nvlink.link_active"]
    assert (active["status"], active["measured"], active["expected"]) == ("fail", 0, 1)
    assert active["message"] == "GPU0: no active NVLink (all links inactive), sold with NVLink"
    assert entry["coverage"]["failed"] == 1


def test_gpu_facts_failed_in_part_are_not_accepted():
    # nvidia-smi -q gave names but no memory figures (the memory part of the query failed):
    # gpu.memory has nothing to judge
    gpus = [
        {"index": index, "name": "NVIDIA H100 80GB HBM3", "memory_total_mib": None, "nvlink": None}
        for index in range(8)
    ]
    node = NodeContext(
        "part",
        facts={"gpu": dict(_gpu_facts(gpus), warnings=["nvidia-smi -q: FB Memory Usage missing"])},
        claim={"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "gpu_memory_gb": 80},
    )
    entry = _judge(node)
    assert entry["verdict"] == INCOMPLETE
    assert [reason.split(":")[0] for reason in entry["coverage"]["incomplete"]] == ["GPU memory"]


def test_a_requested_benchmark_not_run_is_incomplete():
    node = NodeContext(
        "b",
        facts={"gpu": _gpu_facts([_gpu(0, None)])},
        claim={"gpu_count": 1},
        settings={"required_benchmarks": ["allreduce_multi"]},
    )
    entry = engine.run_checks([node], families=["gpu", "benchmarks"])["nodes"]["b"]
    assert entry["verdict"] == INCOMPLETE
    assert entry["coverage"]["incomplete"] == [
        "benchmark multi-node all-reduce: no result from benchmarks.allreduce_multi: not run or not recorded"
    ]


def test_no_claim_is_said_in_the_verdict_line():
    gpus = [dict(_gpu(0, None), processes=[], mig_mode_current="Disabled")]  # judged: gpu.processes and gpu.mig pass
    node = NodeContext("free", facts={"gpu": _gpu_facts(gpus)}, profile={"name": "generic"})
    entry = _judge(node, families=("gpu",))
    assert entry["verdict"] == ACCEPT and entry["coverage"]["claim"] is False and entry["coverage"]["required"] == 0
    assert verdict.verdict_lines({"nodes": {"free": entry}}, {"free": {"name": "generic"}})["free"] == (
        "free: ACCEPT (profile generic; judged against no claim)"
    )


def test_nothing_judged_is_incomplete_even_with_nothing_required():
    node = NodeContext("empty", profile={"name": "generic"})
    entry = _judge(node, families=("gpu",))
    assert entry["verdict"] == INCOMPLETE
    assert entry["coverage"]["incomplete"] == ["nothing was judged: no check found evidence on this node"]


def test_item_status_by_subject():
    item = {"item": "nvlink.GPU3", "label": "NVLink GPU3", "checks": ["nvlink.link_active"], "subject": "GPU3"}
    # only GPU1 named at fault: GPU3 was judged by the same check
    assert evidence.item_status(
        item, [result("nvlink.link_active", "fail", "GPU1/link2 inactive", subject="GPU1/link2")]
    ) == ("verified", None)
    assert (
        evidence.item_status(item, [result("nvlink.link_active", "fail", "GPU3/link0 inactive", subject="GPU3/link0")])[
            0
        ]
        == "failed"
    )
    skipped = [
        result("nvlink.link_active", "skip", "GPU3: NVLink not readable: MIG", subject="GPU3"),
        result("nvlink.link_active", "pass", "all NVLinks active"),
    ]
    assert evidence.item_status(item, skipped) == ("unverified", "GPU3: NVLink not readable: MIG")
    errored = [result("nvlink.link_active", "error", "check raised KeyError: 'links'")]
    assert evidence.item_status(item, errored) == ("unverified", "error: check raised KeyError: 'links'")


def test_node_verdict_order():
    incomplete = {"incomplete": ["GPU count: not judged"]}
    assert node_verdict([result("a", "fail", "x")], coverage=incomplete) == REJECT
    assert node_verdict([result("a", "warn", "x")], coverage=incomplete) == INCOMPLETE
    assert node_verdict([result("a", "warn", "x")], coverage={"incomplete": []}) == ACCEPT_WITH_WARNINGS
    assert node_verdict([], unreachable="ssh refused", coverage=incomplete) == UNREACHABLE


def test_fleet_verdict_worst_first():
    assert fleet_verdict({"a": ACCEPT, "b": INCOMPLETE, "c": ACCEPT_WITH_WARNINGS})["verdict"] == INCOMPLETE
    assert fleet_verdict({"a": INCOMPLETE, "b": UNREACHABLE})["verdict"] == UNREACHABLE
    assert fleet_verdict({"a": INCOMPLETE, "b": REJECT, "c": UNREACHABLE})["verdict"] == REJECT
    assert fleet_verdict({"a": ACCEPT})["counts"] == {
        ACCEPT: 1,
        ACCEPT_WITH_WARNINGS: 0,
        INCOMPLETE: 0,
        REJECT: 0,
        UNREACHABLE: 0,
    }
