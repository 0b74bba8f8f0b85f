# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node side of host_facts: what the collector reads from procfs/sysfs trees and which tools it runs.

The trees are the synthetic ones under tests/fixtures/sysfs/ (rendered into tmp; their READMEs
name the recording behind each value) or small synthetic ones written here. Tools are replay
wrappers of recordings, or tiny scripts written here and labelled synthetic.
"""

from __future__ import annotations

import os
import resource
import stat
import sys

from ansible_collections.gpufleet.acceptance.plugins.modules import host_facts

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs"))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position
import render_tree  # noqa: E402  pylint: disable=import-error,wrong-import-position

HGX_TREE = os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs", "host-hgx-h100-xe9680")
NODES = os.path.join(REPO_ROOT, "tests", "replay", "nodes")


def _render_hgx(tmp_path):
    return render_tree.render(HGX_TREE, str(tmp_path / "root"))


def _script(tmp_path, name, body):
    """A synthetic tool: a shell script printing ``body`` (the module never runs it through a shell)."""
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _params(root, bin_dir, **overrides):
    params = {
        "sysfs_root": os.path.join(root, "sys"),
        "procfs_root": os.path.join(root, "proc"),
        "lspci_path": os.path.join(bin_dir, "lspci"),
        "journalctl_path": os.path.join(bin_dir, "journalctl"),
        "dmesg_path": os.path.join(bin_dir, "dmesg"),
        "ofed_info_path": os.path.join(bin_dir, "ofed_info"),
        "mpirun_path": os.path.join(bin_dir, "mpirun"),
        "ldconfig_path": os.path.join(bin_dir, "ldconfig"),
        "nccl_include_dirs": [os.path.join(root, "usr", "include")],
        "timeout": 30,
        "kernel_log_lines": 20000,
    }
    params.update(overrides)
    return params


def test_endpoints_of_the_hgx_tree(tmp_path):
    root = _render_hgx(tmp_path)
    endpoints = host_facts.read_endpoints(os.path.join(root, "sys"))
    gpus = [e for e in endpoints if e["kind"] == "gpu"]
    rdma = [e for e in endpoints if e["kind"] == "rdma"]
    # 8 GPUs of class 0x030200; the 4 NVSwitches are NVIDIA (0x10de) but class 0x068000: not GPUs
    assert [g["address"] for g in gpus] == [
        "0000:19:00.0", "0000:3b:00.0", "0000:4c:00.0", "0000:5d:00.0", "0000:9b:00.0", "0000:bb:00.0", "0000:cb:00.0", "0000:db:00.0"]
    assert gpus[0]["bridges"] == ["0000:15:01.0", "0000:16:00.0", "0000:17:01.0"]
    assert gpus[0]["path"] == "devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0"
    # 8 ConnectX-7 + 2x2 ConnectX-6 Dx functions
    assert len(rdma) == 12
    by_name = dict((e["name"], e) for e in rdma)
    assert by_name["mlx5_0"]["address"] == "0000:1a:00.0"
    assert by_name["mlx5_0"]["bridges"] == ["0000:15:01.0", "0000:16:00.0", "0000:17:02.0"]
    assert by_name["mlx5_2"]["address"] == "0000:1b:00.1"
    assert by_name["mlx5_2"]["bridges"][-1] == "0000:17:03.0"


def test_iommu_of_the_hgx_tree(tmp_path):
    root = _render_hgx(tmp_path)
    assert host_facts.read_iommu(os.path.join(root, "sys")) == {"units": ["dmar0", "dmar1"], "groups": 3, "group_types": {"identity": 3}}


def test_read_entry_kinds(tmp_path):
    root = _render_hgx(tmp_path)
    entry = host_facts.read_entry(os.path.join(root, "proc", "sys", "kernel", "osrelease"))
    assert (entry["rc"], entry["stdout"], entry["error"]) == (0, "5.15.0-112-generic\n", None)
    assert entry["cmd"] == [os.path.join(root, "proc", "sys", "kernel", "osrelease")]
    assert host_facts.read_entry(os.path.join(root, "proc", "nothing"))["error"] == "not_found"
    assert host_facts.read_entry(os.path.join(root, "proc"))["error"].startswith("unreadable: ")


def test_memlock_rlimit_is_the_process_own():
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    got = host_facts.read_memlock_rlimit()
    assert got["soft"] == (None if soft == resource.RLIM_INFINITY else soft)
    assert got["hard"] == (None if hard == resource.RLIM_INFINITY else hard)
    assert got["error"] is None


def test_collect_on_the_replayed_hgx_node(tmp_path):
    root = _render_hgx(tmp_path)
    layout = build_fleet.build_node(os.path.join(NODES, "host-hgx-h100-xe9680.yml"), str(tmp_path / "fleet"))
    raw = host_facts.collect(_params(root, layout["bin_dir"]))
    assert raw["files"]["modules"]["stdout"].startswith("nvidia_peermem 16384 0 - Live")
    assert "Open Kernel Module" in raw["files"]["nvidia_version"]["stdout"]
    assert raw["files"]["self_limits"]["stdout"].startswith("Max locked memory         65536")
    assert raw["lspci"]["rc"] == 0
    assert raw["lspci"]["cmd"][1:] == ["-vvv"]
    # no journalctl on this node: dmesg --time-format iso is read instead
    assert raw["journalctl"]["error"] == "not_found"
    dmesg = raw["dmesg"] or {}
    assert dmesg["cmd"][1:] == ["--time-format", "iso"]
    assert dmesg["stdout"].count("NVRM: Xid") == 11
    assert dmesg["dropped_lines"] == 0
    assert raw["ofed_info"]["error"] == "not_found"
    assert raw["nccl_libraries"] == [] and raw["nccl_headers"] == []
    assert len(raw["endpoints"]) == 20


def test_kernel_log_cap_keeps_the_last_lines(tmp_path):
    root = _render_hgx(tmp_path)
    layout = build_fleet.build_node(os.path.join(NODES, "host-hgx-h100-xe9680.yml"), str(tmp_path / "fleet"))
    raw = host_facts.collect(_params(root, layout["bin_dir"], kernel_log_lines=5))
    # the recording has 41 lines (the last without a newline): 36 dropped, the last 5 are peermem errors
    dmesg = raw["dmesg"] or {}
    assert dmesg["dropped_lines"] == 36
    assert dmesg["stdout"].splitlines()[-1].startswith("2024-11-15T12:02:15,950445+00:00 nvidia-peermem")
    assert len(dmesg["stdout"].splitlines()) == 5


def test_journal_with_kernel_lines_skips_dmesg(tmp_path):
    layout = build_fleet.build_node(os.path.join(NODES, "host-k8s-journal-peermem.yml"), str(tmp_path / "fleet"))
    raw = host_facts.collect(_params(str(tmp_path / "empty"), layout["bin_dir"]))
    assert raw["journalctl"]["cmd"][1:] == ["-k", "--no-pager", "-o", "short-iso"]
    assert raw["journalctl"]["rc"] == 0
    assert raw["dmesg"] is None
    assert raw["files"]["modules"]["error"] == "not_found"
    assert raw["endpoints"] == []
    assert raw["iommu"] == {"units": [], "groups": 0, "group_types": {}}


def test_empty_journal_falls_back_to_dmesg(tmp_path):
    # synthetic tools: journalctl answering "-- No entries --" (no permission), dmesg refusing (dmesg_restrict)
    _script(tmp_path, "journalctl", "echo '-- No entries --'")
    _script(tmp_path, "dmesg", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1")
    raw = host_facts.collect(_params(str(tmp_path / "empty"), str(tmp_path / "bin")))
    assert raw["journalctl"]["stdout"] == "-- No entries --\n"
    dmesg = raw["dmesg"] or {}
    assert dmesg["rc"] == 1
    assert "Operation not permitted" in dmesg["stderr"]


def test_nccl_from_ldconfig_link_resolved_on_the_node(tmp_path):
    # synthetic: a library directory with the soname link, and an ldconfig -p printing it
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "libnccl.so.2.18.3").write_text("")
    os.symlink("libnccl.so.2.18.3", str(lib / "libnccl.so.2"))
    lines = ["echo '1234 libs found in cache'",
             "printf '\\tlibnccl.so.2 (libc6,x86-64) => %s\\n' " + str(lib / "libnccl.so.2"),
             "printf '\\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\\n'"]
    _script(tmp_path, "ldconfig", "\n".join(lines))
    raw = host_facts.collect(_params(str(tmp_path / "empty"), str(tmp_path / "bin")))
    assert raw["nccl_libraries"] == [{"soname": "libnccl.so.2", "path": str(lib / "libnccl.so.2"), "target": "libnccl.so.2.18.3"}]
    assert "libc.so.6" not in raw["ldconfig"]["stdout"]
    assert raw["nccl_headers"] == []


def test_nccl_header_defines(tmp_path):
    # synthetic nccl.h fragment in NCCL's own layout
    include = tmp_path / "usr" / "include"
    include.mkdir(parents=True)
    (include / "nccl.h").write_text("#ifndef NCCL_H_\n#define NCCL_H_\n#define NCCL_MAJOR 2\n#define NCCL_MINOR 21\n#define NCCL_PATCH 5\n"
                                    "#define NCCL_SUFFIX \"\"\n\n#define NCCL_VERSION_CODE 22105\n")
    found = host_facts.nccl_headers([str(tmp_path / "nowhere"), str(include)])
    defines = ["#define NCCL_MAJOR 2", "#define NCCL_MINOR 21", "#define NCCL_PATCH 5", "#define NCCL_SUFFIX \"\"", "#define NCCL_VERSION_CODE 22105"]
    assert found == [{"path": str(include / "nccl.h"), "defines": "\n".join(defines)}]
