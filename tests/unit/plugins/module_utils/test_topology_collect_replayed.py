# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_topology_facts' collection and fact building, in-process, against replayed nodes.

Each test does what one gpu_topology_facts task does, without Ansible: the module's ``run(params)``
(plugins/module_utils/topology_collect.py, the module's argument defaults applied) on the node's replay
wrappers, then what the action plugin does with it (gpufleet/adapter/action.py:
``gpufleet.facts.topology.build_facts`` on a RawReader named after the host, a FactError becoming
``failed``). tests/playbooks/test_node_facts.py runs the module through ansible-playbook (arguments, facts
in hostvars, check mode, failures as the play sees them).

Expected values are read by hand from the recordings named in each node file.
"""

from __future__ import annotations

import os
import sys

from ansible_collections.gpufleet.acceptance.plugins.module_utils import topology_collect
from gpufleet.facts import topology

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "unit", "doubles"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position
from fact_task import fact_task  # noqa: E402  pylint: disable=import-error,wrong-import-position


def gathered(tmp_path, host, node):
    """The gpu_topology_facts result on a replayed node (its nvidia-smi wrapper)."""
    layout = build_fleet.build_node(os.path.join(REPO_ROOT, "tests", "replay", "nodes", node), str(tmp_path))
    nvidia_smi = os.path.join(layout["bin_dir"], "nvidia-smi")
    return fact_task(host, topology_collect, topology.build_facts, {"nvidia_smi_path": nvidia_smi})


def test_dgx_a100_all_pairs_nv12_and_nearest_nics(tmp_path):
    result = gathered(tmp_path, "dgx", "dgx-a100-topo.yml")
    assert not result.get("failed"), result.get("msg")
    topo = result["ansible_facts"]["gpufleet_topology"]
    summary = topo["summary"]
    # gengwg-dgx-a100-nv12-12xmlx5-tabs-numa.txt: 8 GPUs, 12 mlx5 columns, NV12 in every GPU cell.
    assert summary["gpu_count"] == 8
    assert summary["nic_count"] == 12
    assert summary["pair_count"] == 28
    assert summary["all_pairs_nvlink"] is True
    assert summary["min_nvlinks"] == 12
    assert summary["non_nvlink_pairs"] == []
    # GPU0 row: PXB to mlx5_0 and mlx5_1, SYS to the rest; GPU6 row: PXB to mlx5_8, mlx5_9.
    assert topo["nearest_nic"]["GPU0"]["devices"] == ["mlx5_0", "mlx5_1"]
    assert topo["nearest_nic"]["GPU0"]["code"] == "PXB"
    assert topo["nearest_nic"]["GPU6"]["devices"] == ["mlx5_8", "mlx5_9"]
    # NUMA Affinity column: 3,3,1,1,7,7,5,5.
    assert summary["numa_nodes"] == ["1", "3", "5", "7"]
    assert topo["gpus"][4]["cpu_affinity"] == "112-127,240-255"
    # The raw output travels with the result for the results directory.
    assert result["raw"]["topo_m"]["rc"] == 0


def test_tool_missing_fails_with_the_driver_hint():
    result = fact_task("bare", topology_collect, topology.build_facts, {"nvidia_smi_path": "/nonexistent/nvidia-smi"})
    assert result["failed"] is True
    assert result["msg"] == "/nonexistent/nvidia-smi not found: is the NVIDIA driver installed?"


def test_tool_error_exit_is_reported_with_what_it_printed(tmp_path):
    result = gathered(tmp_path, "win", "windows-topo-unsupported.yml")
    assert result["failed"] is True
    # The recording's first line: "ERROR: Option -m is missing its value." and exit 255.
    assert "exited 255" in result["msg"]
    assert "Option -m is missing its value" in result["msg"]
    assert result["msg"].startswith("win: ")


def test_damaged_output_fails_naming_host_tool_and_line(tmp_path):
    result = gathered(tmp_path, "aihub0008", "pcie-paste-damaged-topo.yml")
    assert result["failed"] is True
    assert result["msg"].startswith("aihub0008: cannot read `")
    assert "topo -m` output: line " in result["msg"]
    # a FactError's one-line message, not a traceback (anything else a builder raised would fail this test)
    assert "Traceback" not in result["msg"]
