# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl_env: compute-rate HCAs off the GPUs' PCIe paths stay out of NCCL_IB_HCA.

Topologies are RECORDED ``nvidia-smi topo -m`` matrices (tests/fixtures/topo/), NIC facts are built
from RECORDED ibstat / ibv_devinfo output (tests/fixtures/ib/). No recording holds both the matrix
and the ibstat of one 12-NIC node, so the 12-CA ibstat below has its port rates edited in the test
(SYNTHETIC, said where it is done) to stand for the aihub0007 host type, whose NCCL log
(tests/fixtures/nccl-debug/, tpgds-aihub0008) shows the 8 RoCE rails mlx5_0,1,2,5,6,7,8,11: the
same 8 the matrix puts PIX to a GPU. Expected values are written by hand from the recordings.
"""

from __future__ import annotations

import copy

from ansible_collections.gpufleet.acceptance.plugins.action import nccl_env_derive
from gpufleet.facts import nic as inv
from gpufleet.facts.topology import analyse_topology
from gpufleet.parsers.registry import parse
from gpufleet.plan import nccl_env

ROCE_12CA = "ib/gpud-ibstat-h100-8xcx7-roce400-4xcx6dx-100g-all-active.txt"
TF_GDR_IB = "ib/tensorflow-gdr-ibv_devinfo-mlx4-connectx3-dualport-roce.txt"
HGX_12NIC = "topo/hgx-h100-12nic-numa-off-single-node0-aihub0007.txt"
DGX_A100_12NIC = "topo/gengwg-dgx-a100-nv12-12xmlx5-tabs-numa.txt"
TF_GDR_TOPO = "topo/tensorflow-gdr-4x-k40m-phb-soc-mlx4-old-legend.txt"

# aihub0007: NIC0-2, NIC5-8 and NIC11 are PIX to one GPU each; NIC3, 4, 9 and 10 are NODE to all 8.
HGX_RAILS = "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_8:1,mlx5_11:1"
HGX_OFF_PATH = ["mlx5_3:1", "mlx5_4:1", "mlx5_9:1", "mlx5_10:1"]
OFF_PATH_NODE = ("400 Gb/s Ethernet at the compute rate, but not on a GPU's PCIe path: NODE at best (to every GPU) in "
                 "nvidia-smi topo -m, the rails are PIX/PXB to a GPU: storage/front-end")
CHECKED = "PCIe path checked with nvidia-smi topo -m: each rail is PIX/PXB to a GPU"
NOT_CHECKED = "PCIe path to the GPUs not checked: no nvidia-smi topo -m facts (gpufleet_topology)"


def _topology(fixture_text, name):
    """gpufleet_topology as gpufleet.facts.topology.build_facts makes it: the parsed matrix plus its analysis."""
    parsed = parse("topo", fixture_text(name))
    topology = dict(parsed)
    topology.update(analyse_topology(parsed))
    return topology


def _rates(nic, rate_of):
    """SYNTHETIC: the recording's port rates replaced by ``rate_of(device)``."""
    nic = copy.deepcopy(nic)
    for dev in nic["rdma"]:
        for port in dev["ports"]:
            port["rate_gbps"] = rate_of(dev["device"])
    return nic


def _roce_12ca(fixture_text, rate_of):
    nic = inv.build_nic_facts({"net": [], "infiniband": []}, ibstat=parse("ibstat", fixture_text(ROCE_12CA)))
    return _rates(nic, rate_of)


def _derive(nic, topology):
    nodes = {"node-a": {"nic": nic, "nccl_version": "2.21.5", "claim": None, "topology": topology}}
    out = nccl_env.derive(nodes, overrides={"NCCL_SOCKET_IFNAME": None})
    assert out["problems"] == []
    return out["hosts"]["node-a"]


def test_nic_legend_names_map_to_rdma_devices(fixture_text):
    paths = nccl_env.nic_gpu_paths(_topology(fixture_text, HGX_12NIC))
    # NIC Legend: NIC0 -> mlx5_0 ... NIC11 -> mlx5_11; NIC3 and NIC5 are not mlx5_5 and mlx5_3.
    assert paths["mlx5_0"] == ("PIX", "GPU0")
    assert paths["mlx5_5"] == ("PIX", "GPU3")
    assert paths["mlx5_11"] == ("PIX", "GPU7")
    assert paths["mlx5_3"] == ("NODE", "every GPU")
    assert sorted(paths, key=lambda name: int(name.split("_")[1])) == ["mlx5_%d" % index for index in range(12)]
    # Old drivers name the NIC rows by device and print SOC for SYS.
    assert nccl_env.nic_gpu_paths(_topology(fixture_text, TF_GDR_TOPO)) == {"mlx4_0": ("PHB", "GPU2, GPU3")}
    assert nccl_env.nic_gpu_paths(None) == {}


def test_twelve_nics_at_the_compute_rate_keep_the_eight_gpu_local_ones(fixture_text):
    # SYNTHETIC rates: all 12 ports at 400 Gb/s (the recording's 4 CX-6 Dx, mlx5_1, 2, 7 and 8, say 100).
    nic = _roce_12ca(fixture_text, lambda device: 400)
    node = _derive(nic, _topology(fixture_text, HGX_12NIC))
    assert node["env"]["NCCL_IB_HCA"] == HGX_RAILS
    assert node["rails"] == ["mlx5_0:1", "mlx5_1:1", "mlx5_2:1", "mlx5_5:1",
                             "mlx5_6:1", "mlx5_7:1", "mlx5_8:1", "mlx5_11:1"]
    assert node["excluded"] == {"mlx5_3:1": OFF_PATH_NODE, "mlx5_4:1": OFF_PATH_NODE,
                                "mlx5_9:1": OFF_PATH_NODE, "mlx5_10:1": OFF_PATH_NODE}
    why = node["why"]["NCCL_IB_HCA"]
    assert why.startswith(HGX_RAILS + ": the Active 400 Gb/s Ethernet ports")
    assert CHECKED in why
    assert "left out: mlx5_3:1 (%s), mlx5_4:1 (%s), mlx5_9:1 (%s), mlx5_10:1 (%s)" % ((OFF_PATH_NODE,) * 4) in why
    assert node["env"]["NCCL_IB_DISABLE"] == "0" and node["fabric"] == "roce"


def test_without_topology_every_port_at_the_rate_stays_and_the_path_is_not_checked(fixture_text):
    nic = _roce_12ca(fixture_text, lambda device: 400)  # SYNTHETIC rates, as above
    node = _derive(nic, None)
    assert node["env"]["NCCL_IB_HCA"] == "=" + ",".join("mlx5_%d:1" % index for index in range(12))
    assert node["excluded"] == {}
    assert NOT_CHECKED in node["why"]["NCCL_IB_HCA"]
    # Unchanged recording (no topology): the 4 CX-6 Dx at 100 Gb/s are left out by rate, as before.
    recorded = inv.build_nic_facts({"net": [], "infiniband": []}, ibstat=parse("ibstat", fixture_text(ROCE_12CA)))
    plain = _derive(recorded, None)
    assert plain["env"]["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1"
    assert sorted(plain["excluded"]) == ["mlx5_1:1", "mlx5_2:1", "mlx5_7:1", "mlx5_8:1"]
    assert NOT_CHECKED in plain["why"]["NCCL_IB_HCA"]


def test_all_compute_nics_pix_keeps_all(fixture_text):
    # SYNTHETIC rates: the 4 devices aihub0007 puts NODE to every GPU at 100 Gb/s, the 8 PIX ones at 400.
    nic = _roce_12ca(fixture_text, lambda device: 100 if device in ("mlx5_3", "mlx5_4", "mlx5_9", "mlx5_10") else 400)
    node = _derive(nic, _topology(fixture_text, HGX_12NIC))
    assert node["env"]["NCCL_IB_HCA"] == HGX_RAILS
    rate = "100 Gb/s Ethernet, the compute rails are 400 Gb/s Ethernet: storage/front-end"
    assert node["excluded"] == {"mlx5_3:1": rate, "mlx5_4:1": rate, "mlx5_9:1": rate, "mlx5_10:1": rate}
    assert CHECKED in node["why"]["NCCL_IB_HCA"]


def test_pxb_rails_kept_and_sys_storage_left_out_with_device_named_rows(fixture_text):
    # DGX A100 matrix (rows named mlx5_N, no NIC Legend): mlx5_0-3 and 6-9 PXB to two GPUs each,
    # mlx5_4, 5, 10, 11 SYS to every GPU. SYNTHETIC NIC facts: the 12-CA ibstat, all 12 at 400.
    node = _derive(_roce_12ca(fixture_text, lambda device: 400), _topology(fixture_text, DGX_A100_12NIC))
    assert node["env"]["NCCL_IB_HCA"] == ("=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,"
                                          "mlx5_6:1,mlx5_7:1,mlx5_8:1,mlx5_9:1")
    sys_path = OFF_PATH_NODE.replace("NODE at best", "SYS at best")
    assert node["excluded"] == {"mlx5_4:1": sys_path, "mlx5_5:1": sys_path,
                                "mlx5_10:1": sys_path, "mlx5_11:1": sys_path}


def test_matrix_without_any_gpu_local_nic_cannot_tell_rails_apart(fixture_text):
    # The TensorFlow GDR README's machine: its ibv_devinfo (mlx4_0, 2 RoCE ports, rate not printed) and
    # its topo -m (mlx4_0 PHB to GPU2/GPU3, SOC to GPU0/GPU1). Nothing is PIX/PXB: both ports stay.
    nic = inv.build_nic_facts({"net": [], "infiniband": []}, ibv_devinfo=parse("ibv-devinfo", fixture_text(TF_GDR_IB)))
    node = _derive(nic, _topology(fixture_text, TF_GDR_TOPO))
    assert node["env"]["NCCL_IB_HCA"] == "=mlx4_0:1,mlx4_0:2"
    assert node["excluded"] == {}
    assert ("PCIe path to the GPUs not told apart: nvidia-smi topo -m shows none of these ports PIX/PXB to a GPU "
            "(nearest: PHB)") in node["why"]["NCCL_IB_HCA"]


def test_matrix_without_nic_devices_is_not_a_check(fixture_text):
    # A matrix whose NIC rows name no RDMA device cannot place any port.
    topology = _topology(fixture_text, HGX_12NIC)
    topology["nics"] = [dict(row, device=None) for row in topology["nics"]]
    node = _derive(_roce_12ca(fixture_text, lambda device: 400), topology)  # SYNTHETIC rates, as above
    assert len(node["rails"]) == 12 and node["excluded"] == {}
    assert "PCIe path to the GPUs not checked: nvidia-smi topo -m names no NIC" in node["why"]["NCCL_IB_HCA"]


def test_action_reads_the_topology_fact_from_hostvars():
    hostvars = {"a": {"gpufleet_nic": {"rdma": []}, "gpufleet_topology": {"gpus": [], "nics": [], "links": {}}},
                "b": {"gpufleet_nic": {"rdma": []}}}
    nodes = nccl_env_derive.fleet_nodes(hostvars, ["a", "b"])
    assert nodes["a"]["topology"] == {"gpus": [], "nics": [], "links": {}}
    assert nodes["b"]["topology"] is None
