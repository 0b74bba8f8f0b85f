# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Link classification and nearest-NIC logic, on small hand-built matrices (synthetic input)."""

from __future__ import annotations

from gpufleet.facts.topology import analyse_topology, classify


def _matrix(names, rows, nics=()):
    """Synthetic parsed matrix: ``rows`` lists each row's codes in ``names`` order."""
    links = {a: dict(zip(names, row)) for a, row in zip(names, rows)}
    gpus = [{"name": n, "cpu_affinity": None, "numa_affinity": str(i // 2)} for i, n in enumerate(names) if n.startswith("GPU")]
    return {"gpus": gpus, "nics": [{"name": n, "device": d} for n, d in nics], "links": links}


def test_classify_codes():
    assert classify("NV18") == ("nvlink", 18)
    assert classify("NV1") == ("nvlink", 1)
    assert classify("PIX") == ("pcie_switch", None)
    assert classify("PXB") == ("pcie_switches", None)
    assert classify("PHB") == ("host_bridge", None)
    assert classify("NODE") == ("numa_node", None)
    assert classify("SYS") == ("cross_numa", None)
    # Drivers before 2018 printed SOC for what is now SYS.
    assert classify("SOC") == ("cross_numa", None)
    assert classify("X") == ("self", None)
    assert classify("??") == ("unknown", None)


def test_bridged_pairs_are_not_all_nvlink():
    # Two NVLink-bridged pairs, SYS between the pairs (the shape of an NC A100 v4 VM).
    names = ["GPU0", "GPU1", "GPU2", "GPU3"]
    rows = [
        ["X", "NV12", "SYS", "SYS"],
        ["NV12", "X", "SYS", "SYS"],
        ["SYS", "SYS", "X", "NV12"],
        ["SYS", "SYS", "NV12", "X"],
    ]
    result = analyse_topology(_matrix(names, rows))
    summary = result["summary"]
    assert summary["pair_count"] == 6
    assert summary["nvlink_pairs"] == 2
    assert summary["all_pairs_nvlink"] is False
    assert summary["min_nvlinks"] == 12
    assert summary["non_nvlink_pairs"] == ["GPU0-GPU2:SYS", "GPU0-GPU3:SYS", "GPU1-GPU2:SYS", "GPU1-GPU3:SYS"]
    assert summary["link_classes"] == {"nvlink": 2, "cross_numa": 4}
    assert result["nearest_nic"] == {}


def test_half_nvlink_minimum_count_and_soc_alias():
    names = ["GPU0", "GPU1", "GPU2"]
    rows = [["X", "NV2", "NV1"], ["NV2", "X", "SOC"], ["NV1", "SOC", "X"]]
    summary = analyse_topology(_matrix(names, rows))["summary"]
    assert summary["min_nvlinks"] == 1
    assert summary["max_nvlinks"] == 2
    assert summary["non_nvlink_pairs"] == ["GPU1-GPU2:SYS"]


def test_nearest_nic_prefers_shortest_path_and_keeps_ties():
    names = ["GPU0", "GPU1", "NIC0", "NIC1", "NIC2"]
    rows = [
        ["X", "NV4", "PXB", "PXB", "SYS"],
        ["NV4", "X", "SYS", "NODE", "PHB"],
        ["PXB", "SYS", "X", "PIX", "SYS"],
        ["PXB", "NODE", "PIX", "X", "SYS"],
        ["SYS", "PHB", "SYS", "SYS", "X"],
    ]
    result = analyse_topology(_matrix(names, rows, nics=[("NIC0", "mlx5_0"), ("NIC1", "mlx5_1"), ("NIC2", None)]))
    assert result["nearest_nic"]["GPU0"] == {"nics": ["NIC0", "NIC1"], "devices": ["mlx5_0", "mlx5_1"], "code": "PXB", "link_class": "pcie_switches"}
    assert result["nearest_nic"]["GPU1"]["nics"] == ["NIC2"]
    assert result["nearest_nic"]["GPU1"]["code"] == "PHB"
    assert result["summary"]["nic_count"] == 3
