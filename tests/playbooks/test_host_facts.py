# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_facts end to end: ansible-playbook on localhost against replayed nodes.

Tools replay the recordings named in each node file; /sys and /proc are the synthetic trees of
tests/fixtures/sysfs/ rendered into tmp (their READMEs name the recording behind each value).
Expected values are read by hand from those files.
"""

from __future__ import annotations

import os
import sys

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs"))

import render_tree  # noqa: E402  pylint: disable=import-error,wrong-import-position

HOST_TASKS = [
    {
        "name": "Gather host preconditions",
        "gpufleet.acceptance.host_facts": {
            "sysfs_root": "{{ host_root }}/sys",
            "procfs_root": "{{ host_root }}/proc",
            "lspci_path": "{{ replay_bin }}/lspci",
            "journalctl_path": "{{ replay_bin }}/journalctl",
            "dmesg_path": "{{ replay_bin }}/dmesg",
            "ofed_info_path": "{{ replay_bin }}/ofed_info",
            "mpirun_path": "{{ replay_bin }}/mpirun",
            "ldconfig_path": "{{ replay_bin }}/ldconfig",
            "nccl_include_dirs": ["{{ host_root }}/usr/include"],
        },
        "register": "gathered",
        "ignore_errors": True,
    },
    {
        "name": "Keep what the test reads",
        "ansible.builtin.set_fact": {
            "dumped": {"result": "{{ gathered }}", "host": "{{ gpufleet_host | default(None) }}"},
        },
    },
]


def _root(tmp_path, tree=None):
    """A rendered synthetic tree, or an empty directory (a node whose /sys and /proc show nothing)."""
    if tree is None:
        empty = tmp_path / "empty-root"
        empty.mkdir(exist_ok=True)
        return str(empty)
    return render_tree.render(os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs", tree), str(tmp_path / tree))


def _hgx(tmp_path, node_file):
    return {"hgx": {"node_file": node_file("host-hgx-h100-xe9680.yml"), "vars": {"host_root": _root(tmp_path, "host-hgx-h100-xe9680")}}}


def test_hgx_h100_composite_node(playbook, node_file, tmp_path):
    run = playbook(_hgx(tmp_path, node_file), HOST_TASKS)
    assert run.rc == 0, run.stdout + run.stderr
    host = run.results["hgx"]["host"]
    # proc/sys/kernel/osrelease (value of the XE9680 dmesg -T recording)
    assert host["kernel"]["release"] == "5.15.0-112-generic"
    # the open-module banner of the nvsentinel recording
    assert host["driver"]["version"] == "570.158.01"
    assert host["driver"]["open_kernel_module"] is True
    # nvidia_peermem row of the PR39 lsmod values; kernel 5.15 >= 5.12 with the open module
    gdr = host["gpudirect_rdma"]
    assert (gdr["peermem_loaded"], gdr["peermem_module"], gdr["dmabuf_possible"], gdr["ok"], gdr["reasons"]) == (
        True, "nvidia_peermem", True, True, [])
    # lspci -vvv recording: every ACSCtl on the GPU/NIC paths is 'ReqRedir- CmpltRedir-'; the 4 PMC-Sierra ports with
    # redirect on (82:00.0-82:03.0) only lead to the NVSwitches, which are not GPUs
    acs = host["acs"]
    assert acs["state"] == "disabled"
    assert acs["bridges_with_acs_on_path"] == []
    assert "0000:82:00.0" not in acs["bridges_on_path"]
    # 8 GPU paths + 8 CX-7 + CX-6 Dx: root ports XX:01.0 (8), switch upstream ports (8), downstream ports 01.0/02.0 (16)
    # and 03.0 above the CX-6 Dx (17:03.0, 99:03.0)
    assert len(acs["bridges_on_path"]) == 34
    assert len([e for e in host["endpoints"] if e["kind"] == "gpu"]) == 8
    assert len([e for e in host["endpoints"] if e["kind"] == "rdma"]) == 12
    # synthetic IOMMU (no recording): intel_iommu=on iommu=pt, 3 identity groups
    assert host["iommu"]["mode"] == "passthrough"
    assert host["iommu"]["groups"] == 3
    # the trinityx limits row: 65536 bytes soft and hard
    memlock = host["memlock"]
    assert (memlock["soft"], memlock["hard"], memlock["unlimited"], memlock["ok"]) == (65536, 65536, False, False)
    # dmesg --time-format iso recording: Xid 48 x1, 63 x1, 94 x9 on 0000:19:00; 30 nvidia-peermem errors
    xid = host["xid"]
    assert xid["state"] == "read"
    assert xid["source"] == "dmesg"
    assert xid["counts"] == {"48": 1, "63": 1, "94": 9}
    assert [c["xid"] for c in xid["critical"]] == [48, 63, 94]
    assert xid["events_total"] == 11
    assert xid["events"][0]["pci"] == "0000:19:00"
    assert xid["peermem_errors"] == 30
    assert host["versions"] == {"ofed": None, "mpi": None, "nccl": None}
    assert host["summary"] == [
        "memlock: soft limit 65536 bytes, not unlimited (RDMA needs unlimited)",
        "xid: critical 48 x1, 63 x1, 94 x9",
        "nvidia-peermem errors in the kernel log: 30",
    ]
    assert run.results["hgx"]["result"]["raw"]["lspci"]["rc"] == 0


def test_journal_node_with_nothing_else_reports_unknowns(playbook, node_file, tmp_path):
    hosts = {"k8s": {"node_file": node_file("host-k8s-journal-peermem.yml"), "vars": {"host_root": _root(tmp_path)}}}
    run = playbook(hosts, HOST_TASKS)
    assert run.rc == 0, run.stdout + run.stderr
    host = run.results["k8s"]["host"]
    # journalctl recording: 14 nvidia-peermem errors, no Xid
    assert host["xid"]["source"] == "journalctl"
    assert host["xid"]["counts"] == {}
    assert host["xid"]["peermem_errors"] == 14
    # nothing in /sys and /proc, no lspci: unknown with reasons, never "fine"
    assert host["acs"]["state"] == "unknown"
    assert host["acs"]["reason"] == "no NVIDIA GPU or RDMA device found in sysfs"
    assert host["gpudirect_rdma"]["ok"] is None
    assert host["gpudirect_rdma"]["peermem_loaded"] is None
    assert host["driver"]["version"] is None
    assert host["iommu"]["mode"] == "off"
    assert "nvidia-peermem errors in the kernel log: 14" in host["summary"]
    assert any(line.startswith("GPUDirect RDMA unknown: loaded modules unknown: ") for line in host["summary"])


def test_no_kernel_log_tool_is_unreadable_not_clean(playbook, node_file, tmp_path):
    hosts = {"bare": {"node_file": node_file("host-bare-no-tools.yml"), "vars": {"host_root": _root(tmp_path, "host-hgx-h100-xe9680")}}}
    run = playbook(hosts, HOST_TASKS)
    assert run.rc == 0, run.stdout + run.stderr
    host = run.results["bare"]["host"]
    xid = host["xid"]
    assert xid["state"] == "unreadable"
    assert xid["counts"] == {}
    journalctl, dmesg = xid["reason"].split("; ")
    assert journalctl.endswith("/journalctl not found")
    assert dmesg.endswith("/dmesg not found")
    assert any(line.startswith("kernel_log: unreadable (") for line in host["summary"])
    # no lspci on this node: the ACS state is unknown even though sysfs shows 20 devices
    assert host["acs"]["state"] == "unknown"
    assert host["acs"]["reason"].endswith("lspci not found")
    assert len(host["endpoints"]) == 20


def test_damaged_proc_modules_fails_naming_host_file_and_line(playbook, node_file, tmp_path):
    hosts = {"node7": {"node_file": node_file("host-bare-no-tools.yml"), "vars": {"host_root": _root(tmp_path, "host-damaged-proc-modules")}}}
    run = playbook(hosts, HOST_TASKS)
    result = run.results["node7"]["result"]
    assert result["failed"] is True
    assert result["msg"].startswith("node7: cannot read `")
    assert "/proc/modules` output: line 3: " in result["msg"]
    assert "Traceback" not in run.stdout


def test_check_mode_gathers_the_same(playbook, node_file, tmp_path):
    run = playbook(_hgx(tmp_path, node_file), HOST_TASKS, extra_args=("--check",))
    assert run.rc == 0, run.stdout + run.stderr
    assert run.results["hgx"]["host"]["xid"]["counts"]["94"] == 9
    assert run.results["hgx"]["host"]["acs"]["state"] == "disabled"
