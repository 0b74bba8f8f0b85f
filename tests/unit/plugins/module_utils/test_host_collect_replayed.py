# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_facts' collection and fact building, in-process, against replayed nodes (tests/replay/nodes/host-*.yml).

Each test does what one host_facts task does, without Ansible: the module's ``run(params)``
(plugins/module_utils/host_collect.py, the module's argument defaults applied) with the node's replay
wrappers as tools and a synthetic tree of tests/fixtures/sysfs/ as /sys and /proc (rendered into tmp;
their READMEs name the recording behind each value), then what the action plugin does with it
(gpufleet/adapter/action.py: ``gpufleet.facts.host.build_facts`` on a RawReader named after the host, a
FactError becoming ``failed``). tests/playbooks/test_node_facts.py runs the module through ansible-playbook
(arguments, facts in hostvars, check mode, failures as the play sees them).

Expected values are read by hand from those files.
"""

from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.gpufleet.acceptance.plugins.module_utils import host_collect
from gpufleet.facts import host as host_facts

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "unit", "doubles"))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position
from fact_task import fact_task  # noqa: E402  pylint: disable=import-error,wrong-import-position
import render_tree  # noqa: E402  pylint: disable=import-error,wrong-import-position


@pytest.fixture(name="gathered")
def gathered_fixture(tmp_path):
    """``gathered(host, node file, tree)``: the host_facts result on that replayed node.

    ``tree`` names the synthetic tree of tests/fixtures/sysfs/ whose sys/, proc/ and usr/include are the node's;
    None gives an empty directory (a node whose /sys and /proc show nothing). ``proc_files`` (``{"uptime": text}``)
    are written under its proc/ after rendering.
    """

    def _gather(host, node, tree, proc_files=None):
        node_path = os.path.join(REPO_ROOT, "tests", "replay", "nodes", node)
        layout = build_fleet.build_node(node_path, str(tmp_path / "fleet"))
        if tree is None:
            root = str(tmp_path / "empty-root")
            os.makedirs(root)
        else:
            root = render_tree.render(os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs", tree), str(tmp_path / tree))
        for name, text in (proc_files or {}).items():
            os.makedirs(os.path.join(root, "proc"), exist_ok=True)
            with open(os.path.join(root, "proc", name), "w", encoding="utf-8") as handle:
                handle.write(text)
        module_args = {"sysfs_root": root + "/sys", "procfs_root": root + "/proc",
                       "nccl_include_dirs": [root + "/usr/include"]}
        for tool in ("lspci", "journalctl", "dmesg", "ofed_info", "mpirun", "ldconfig"):
            module_args[tool + "_path"] = os.path.join(layout["bin_dir"], tool)
        return fact_task(host, host_collect, host_facts.build_facts, module_args)

    return _gather


def test_hgx_h100_composite_node(gathered):
    result = gathered("hgx", "host-hgx-h100-xe9680.yml", "host-hgx-h100-xe9680")
    assert not result.get("failed"), result.get("msg")
    host = result["ansible_facts"]["gpufleet_host"]
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
    assert result["raw"]["lspci"]["rc"] == 0
    # the tree has no proc/uptime (no recording of one): uptime unknown, the group still built
    assert result["raw"]["files"]["uptime"]["error"] == "not_found"
    assert host["uptime_s"] is None


def test_proc_uptime_read_under_procfs_root(gathered):
    # "350735.47 234388.90": the `cat /proc/uptime` example of Wikipedia's "Uptime" article, written into the tree
    result = gathered("hgx", "host-hgx-h100-xe9680.yml", "host-hgx-h100-xe9680", {"uptime": "350735.47 234388.90\n"})
    assert not result.get("failed"), result.get("msg")
    entry = result["raw"]["files"]["uptime"]
    assert (entry["rc"], entry["stdout"], entry["error"]) == (0, "350735.47 234388.90\n", None)
    assert entry["cmd"][0].endswith("/host-hgx-h100-xe9680/proc/uptime")
    assert result["ansible_facts"]["gpufleet_host"]["uptime_s"] == 350735.47


def test_journal_node_with_nothing_else_reports_unknowns(gathered):
    result = gathered("k8s", "host-k8s-journal-peermem.yml", None)
    assert not result.get("failed"), result.get("msg")
    host = result["ansible_facts"]["gpufleet_host"]
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
    assert host["uptime_s"] is None
    assert host["iommu"]["mode"] == "off"
    assert "nvidia-peermem errors in the kernel log: 14" in host["summary"]
    assert any(line.startswith("GPUDirect RDMA unknown: loaded modules unknown: ") for line in host["summary"])


def test_no_kernel_log_tool_is_unreadable_not_clean(gathered):
    result = gathered("bare", "host-bare-no-tools.yml", "host-hgx-h100-xe9680")
    assert not result.get("failed"), result.get("msg")
    host = result["ansible_facts"]["gpufleet_host"]
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


def test_damaged_proc_modules_fails_naming_host_file_and_line(gathered):
    result = gathered("node7", "host-bare-no-tools.yml", "host-damaged-proc-modules")
    assert result["failed"] is True
    assert result["msg"].startswith("node7: cannot read `")
    assert "/proc/modules` output: line 3: " in result["msg"]
    # a FactError's one-line message, not a traceback (anything else a builder raised would fail this test)
    assert "Traceback" not in result["msg"]
