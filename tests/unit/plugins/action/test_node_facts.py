# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_facts' controller half: each group parsed as its own action would, failures per group."""

from __future__ import annotations

import os

from ansible_collections.gpufleet.acceptance.plugins.action import node_facts

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
TOPO = os.path.join(REPO_ROOT, "tests", "fixtures", "topo", "mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt")


def _build(action, reader):
    return action.build_facts(None, reader)


def _entry(cmd, stdout, rc=0):
    return {"cmd": cmd, "rc": rc, "stdout": stdout, "stderr": "", "duration_s": 0.1, "error": None}


def test_each_group_parsed_or_failed_on_its_own():
    with open(TOPO, encoding="utf-8") as handle:
        topo = handle.read()
    module_result = {"changed": False, "groups": {
        "topology": {"raw": {"topo_m": _entry(["nvidia-smi", "topo", "-m"], topo)}, "failed": False, "msg": None},
        "nic": {"raw": {}, "failed": True, "msg": "no class/net under /nosys: is sysfs mounted there?"},
    }}
    groups = node_facts.group_results("h1", ["topology", "nic"], module_result, _build)
    # the recording is NV18 between all 8 H100s
    summary = groups["topology"]["ansible_facts"]["gpufleet_topology"]["summary"]
    assert (summary["gpu_count"], summary["all_pairs_nvlink"], summary["min_nvlinks"]) == (8, True, 18)
    assert groups["topology"]["raw"]["topo_m"]["stdout"] == topo and not groups["topology"].get("failed")
    assert groups["nic"] == {"changed": False, "failed": True, "msg": "no class/net under /nosys: is sysfs mounted there?", "raw": {}}
    assert groups["gpu"]["skipped"] and groups["host"]["skipped"]
    assert groups["gpu"]["skip_reason"] == "gpu is not in groups"


def test_output_that_cannot_be_read_fails_that_group_with_the_parser_message():
    module_result = {"groups": {"topology": {"raw": {"topo_m": _entry(["nvidia-smi", "topo", "-m"], "no matrix here\n")}, "failed": False}}}
    groups = node_facts.group_results("h1", ["topology"], module_result, _build)
    assert groups["topology"]["failed"]
    assert groups["topology"]["msg"].startswith("h1: cannot read `nvidia-smi topo -m` output:")


def test_a_run_that_failed_as_a_whole_fails_every_group_asked_for():
    module_result = {"failed": True, "msg": "MODULE FAILURE\nSee stdout/stderr for the exact error", "module_stderr": "Traceback ..."}
    groups = node_facts.group_results("h1", ["gpu", "host"], module_result, _build)
    assert groups["gpu"] == {"changed": False, "failed": True, "msg": "MODULE FAILURE\nSee stdout/stderr for the exact error"}
    assert groups["host"]["failed"] and groups["topology"]["skipped"] and groups["nic"]["skipped"]
