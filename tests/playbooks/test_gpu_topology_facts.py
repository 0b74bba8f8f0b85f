# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_topology_facts end to end: ansible-playbook on localhost against replayed nodes.

Expected values are read by hand from the recordings named in each node file.
"""

from __future__ import annotations

TOPOLOGY_TASKS = [
    {
        "name": "Gather topology",
        "gpufleet.acceptance.gpu_topology_facts": {"nvidia_smi_path": "{{ replay_bin }}/nvidia-smi"},
        "register": "gathered",
        "ignore_errors": True,
    },
    {
        "name": "Keep what the test reads",
        "ansible.builtin.set_fact": {
            "dumped": {"result": "{{ gathered }}", "topology": "{{ gpufleet_topology | default(None) }}"},
        },
    },
]


def test_dgx_a100_all_pairs_nv12_and_nearest_nics(playbook, node_file):
    run = playbook({"dgx": {"node_file": node_file("dgx-a100-topo.yml")}}, TOPOLOGY_TASKS)
    assert run.rc == 0, run.stdout + run.stderr
    topo = run.results["dgx"]["topology"]
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
    assert run.results["dgx"]["result"]["raw"]["topo_m"]["rc"] == 0


def test_tool_missing_fails_with_the_driver_hint(playbook, node_file):
    tasks = [dict(TOPOLOGY_TASKS[0], **{"gpufleet.acceptance.gpu_topology_facts": {"nvidia_smi_path": "/nonexistent/nvidia-smi"}})]
    tasks.append(TOPOLOGY_TASKS[1])
    run = playbook({"bare": {"node_file": node_file("dgx-a100-topo.yml")}}, tasks)
    result = run.results["bare"]["result"]
    assert result["failed"] is True
    assert result["msg"] == "/nonexistent/nvidia-smi not found: is the NVIDIA driver installed?"


def test_tool_error_exit_is_reported_with_what_it_printed(playbook, node_file):
    run = playbook({"win": {"node_file": node_file("windows-topo-unsupported.yml")}}, TOPOLOGY_TASKS)
    result = run.results["win"]["result"]
    assert result["failed"] is True
    # The recording's first line: "ERROR: Option -m is missing its value." and exit 255.
    assert "exited 255" in result["msg"]
    assert "Option -m is missing its value" in result["msg"]
    assert result["msg"].startswith("win: ")


def test_damaged_output_fails_naming_host_tool_and_line(playbook, node_file):
    run = playbook({"aihub0008": {"node_file": node_file("pcie-paste-damaged-topo.yml")}}, TOPOLOGY_TASKS)
    result = run.results["aihub0008"]["result"]
    assert result["failed"] is True
    assert result["msg"].startswith("aihub0008: cannot read `")
    assert "topo -m` output: line " in result["msg"]
    assert "Traceback" not in run.stdout


def test_check_mode_gathers_the_same(playbook, node_file):
    run = playbook({"dgx": {"node_file": node_file("dgx-a100-topo.yml")}}, TOPOLOGY_TASKS, extra_args=("--check",))
    assert run.rc == 0, run.stdout + run.stderr
    assert run.results["dgx"]["topology"]["summary"]["min_nvlinks"] == 12
