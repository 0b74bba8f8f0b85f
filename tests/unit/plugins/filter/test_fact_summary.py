# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one-line host summary, from hand-built registered results (synthetic input)."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.acceptance.plugins.filter.fact_summary import fact_summary


def _ok(name, facts):
    return {"changed": False, "ansible_facts": {name: facts}}


def test_healthy_node_reads_left_to_right():
    line = fact_summary(
        {
            "topology": _ok("gpufleet_topology", {
                "summary": {"gpu_count": 8, "pair_count": 28, "all_pairs_nvlink": True, "min_nvlinks": 12, "max_nvlinks": 12, "nvlink_pairs": 28}}),
            "gpu": _ok("gpufleet_gpu", {"gpu_count": 8, "missing_from_nvml": 0, "summary": {"names": ["NVIDIA A100-SXM4-80GB"]}}),
            "nic": _ok("gpufleet_nic", {"summary": {"physical_up": ["eth0"], "fastest_mbps": 100000, "rdma_port_count": 8,
                                                    "rdma_active_ports": ["mlx5_%d/1" % i for i in range(8)]}}),
            "host": _ok("gpufleet_host", {"summary": []}),
        }
    )
    assert line == (
        "8x NVIDIA A100-SXM4-80GB | topology: all 28 pairs NV12 | NICs: 1 up (fastest 100.0 Gb/s), RDMA 8/8 ports Active"
        " | host: no precondition findings"
    )


def test_failures_and_findings_are_named():
    line = fact_summary(
        {
            "topology": _ok("gpufleet_topology", {
                "summary": {"gpu_count": 4, "pair_count": 6, "all_pairs_nvlink": False, "nvlink_pairs": 2,
                            "non_nvlink_pairs": ["GPU0-GPU2:SYS", "GPU1-GPU3:SYS"]}}),
            "gpu": _ok("gpufleet_gpu", {"gpu_count": 7, "missing_from_nvml": 1,
                                        "summary": {"names": ["H100"], "throttled_gpus": [2, 5], "nvlink_inactive_links": ["GPU2/link3"]}}),
            "nic": {"failed": True, "msg": "n1: cannot read `ibstat` output:\n line 3: bad rate"},
            "host": _ok("gpufleet_host", {"summary": ["memlock: soft limit 65536 bytes, not unlimited (RDMA needs unlimited)"]}),
        }
    )
    parts = line.split(" | ")
    assert parts[0] == "7x H100, 1 on PCIe but not in NVML, throttled: GPU 2,5, 1 NVLink links inactive"
    assert parts[1] == "topology: 2 of 6 pairs NVLink, others SYS"
    assert parts[2] == "FAILED nic: n1: cannot read `ibstat` output: line 3: bad rate"
    assert parts[3].startswith("host: memlock: soft limit 65536")


def test_groups_not_run_are_left_out_and_bad_input_raises():
    assert fact_summary({}) == "no facts gathered"
    assert fact_summary({"gpu": {"skipped": True}}) == "no facts gathered"
    with pytest.raises(AnsibleFilterError):
        fact_summary(["not", "a", "mapping"])
