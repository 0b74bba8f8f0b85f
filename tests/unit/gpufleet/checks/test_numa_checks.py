# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NUMA checks on REAL topology facts: ``analyse_topology`` on recorded ``nvidia-smi topo -m`` matrices.

Expected values are read by hand from the matrices named (NUMA Affinity column, NIC legend).
"""

from __future__ import annotations

import os
import sys

from ansible_collections.gpufleet.acceptance.plugins.modules import nic_facts
from gpufleet.checks import numa
from gpufleet.checks.model import PASS, SKIP, WARN, NodeContext
from gpufleet.facts.nic import build_nic_facts
from gpufleet.parsers.registry import parse
from gpufleet.facts.topology import analyse_topology

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs"))

import render_tree  # noqa: E402  pylint: disable=import-error,wrong-import-position


def topology(fixture_text, name):
    """gpufleet_topology as the gpu_topology_facts action builds it."""
    parsed = parse("topo", fixture_text("topo/" + name))
    facts = dict(parsed)
    facts.update(analyse_topology(parsed))
    return facts


def ctx(topo, nic=None):
    return NodeContext("n1", facts={"topology": topo, "nic": nic})


def test_dell_h100_mp_every_gpu_has_a_nic_on_its_switch(fixture_text):
    # dell-8x-h100-topo-mp-...: every GPU PIX to a ConnectX (GPU0: NIC0-2, GPU1: NIC3 ...); NUMA 0,0,0,0,1,1,1,1.
    node = ctx(topology(fixture_text, "dell-8x-h100-topo-mp-pcie-only-12nic-interleaved-cpu-affinity.txt"))
    nearest = numa.check_nearest_nic(node)
    assert [(item["status"], item["measured"]) for item in nearest] == [(PASS, "PIX")]
    spread = numa.check_gpu_spread(node)
    assert [(item["status"], item["measured"]) for item in spread] == [(PASS, [0, 1])]
    assert spread[0]["message"] == "GPUs per NUMA node: node 0: 4, node 1: 4"


def test_dgx_a100_gpu_pairs_share_a_pcie_switch_with_two_nics(fixture_text):
    # gengwg DGX A100: GPU0/1 PXB to mlx5_0/1, ...; NUMA affinity 3,3,1,1,7,7,5,5.
    node = ctx(topology(fixture_text, "gengwg-dgx-a100-nv12-12xmlx5-tabs-numa.txt"))
    assert [(item["status"], item["measured"]) for item in numa.check_nearest_nic(node)] == [(PASS, "PXB")]
    assert [(item["status"], item["measured"]) for item in numa.check_gpu_spread(node)] == [(PASS, [1, 3, 5, 7])]
    legend = ctx(topology(fixture_text, "dgx-a100-nic0-9-nic-legend-no-gpu-numa-id.txt"))
    assert [item["status"] for item in numa.check_nearest_nic(legend)] == [PASS]


def test_polaris_gpus_across_the_socket_from_every_nic_warn(fixture_text):
    # alcf-polaris 4x A100, 2 NICs: GPU0 and GPU2 reach mlx5_0 and mlx5_1 only over SYS; GPU1/GPU3 PHB.
    results = numa.check_nearest_nic(ctx(topology(fixture_text, "alcf-polaris-4x-a100-nv4-2xmlx5-numa4-header-mangled.txt")))
    assert [(item["status"], item["subject"], item["measured"], item["expected"]) for item in results] == [
        (WARN, "GPU0", "SYS", "NODE"), (WARN, "GPU2", "SYS", "NODE")]
    assert results[0]["message"] == "GPU0: nearest NIC mlx5_0, mlx5_1 is SYS (across the CPU interconnect), expected PIX/PXB, or PHB/NODE at worst"


def test_nics_without_a_legend_are_named_by_column(fixture_text):
    # 8x RTX 4090, 2 NICs, no legend: all GPUs SYS to both NICs except GPU6 (PHB to one).
    results = numa.check_nearest_nic(ctx(topology(fixture_text, "8x-rtx4090-pcie-all-SYS-2nic-no-legend.txt")))
    assert [item["subject"] for item in results] == ["GPU0", "GPU1", "GPU2", "GPU3", "GPU4", "GPU5", "GPU7"]
    assert results[0]["message"].startswith("GPU0: nearest NIC NIC0, NIC1 is SYS")


def test_all_gpus_on_one_numa_node(tmp_path, fixture_text):
    # hgx-h100-12nic-numa-off-single-node0-aihub0007: NUMA affinity 0 for all 8 GPUs.
    topo = topology(fixture_text, "hgx-h100-12nic-numa-off-single-node0-aihub0007.txt")
    alone = numa.check_gpu_spread(ctx(topo))
    assert [(item["status"], item["measured"]) for item in alone] == [(PASS, [0])]
    assert alone[0]["message"].endswith("no other NUMA node seen (single socket, or NUMA off in the BIOS)")
    # COMPOSITE: the same matrix with the NIC facts of tests/fixtures/sysfs/h100-ndr-ib (ConnectX-7s on NUMA 0 and 1,
    # from an HGX H100 lspci -vvv): the machine has a second NUMA node that no GPU uses.
    root = render_tree.render(render_tree.named_tree("h100-ndr-ib"), str(tmp_path / "root"))
    nic = build_nic_facts({"net": nic_facts.read_net(root), "infiniband": nic_facts.read_infiniband(root)})
    results = numa.check_gpu_spread(ctx(topo, nic))
    assert [(item["status"], item["measured"], item["expected"]) for item in results] == [(WARN, [0], [0, 1])]
    assert results[0]["message"].startswith("all 8 GPUs on NUMA node 0 while the machine has NUMA nodes 0, 1 (NICs on 0, 1)")


def test_unknown_affinity_and_no_nic_skip(fixture_text):
    node = ctx(topology(fixture_text, "8gpu-pcie-pix-phb-sys-NO-affinity-columns-old-legend.txt"))
    assert [item["status"] for item in numa.check_gpu_spread(node)] == [SKIP]
    assert numa.check_nearest_nic(node)[0]["message"] == "not judged: nvidia-smi topo -m lists no NIC"
