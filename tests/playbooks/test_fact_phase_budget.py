# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fact phase's budget through ansible-playbook: the module answers first, with what it had.

One replayed node (inventories/simulated/nodes/hgx-h100-nv18.yml) whose ``ethtool`` answers, slowly: each run
sleeps 1.5 s (far within its 30 s timeout), then runs the node's own (replayed) ethtool. node_facts runs with a 12 s
phase budget: the topology and GPU groups answer (a few seconds even on a loaded machine: a budget of 3 s with a 1 s
tool timeout left them no room under load), ethtool's 32 runs (48 s) take what is left, and every run after the
budget is skipped naming it; the task ends well within its own timeout, the facts that could be built set. Then
the role's set_fact of roles/facts/tasks/main.yml (read from the file) meets a fact task that Ansible timed out with
only ``gpu`` asked for: the groups not asked for are skipped, ``gpu`` says the task ran out of time in the words the
verdict reads as an overrun (gpufleet/facts/raw.py TASK_TIMED_OUT). ~15 s (~45 s on a loaded machine).
"""

from __future__ import annotations

import os

import yaml

from gpufleet.facts.raw import TASK_TIMED_OUT, is_overrun

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HOST = "hgx-h100-nv18"
TOOLS = {
    "nvidia_smi_path": "{{ replay_bin }}/nvidia-smi",
    "lspci_path": "{{ replay_bin }}/lspci",
    "query_formats": ["text"],
    "sysfs_root": "{{ replay_sysfs }}",
    "ethtool_path": "{{ replay_bin | dirname }}/slow-ethtool",
    "ibstat_path": "{{ replay_bin }}/ibstat",
    "ibv_devinfo_path": "{{ replay_bin }}/ibv_devinfo",
    "ip_path": "{{ replay_bin }}/ip",
    "procfs_root": "{{ replay_sysfs | dirname }}/procfs",
    "journalctl_path": "{{ replay_bin }}/journalctl",
    "dmesg_path": "{{ replay_bin }}/dmesg",
    "ofed_info_path": "{{ replay_bin }}/ofed_info",
    "mpirun_path": "{{ replay_bin }}/mpirun",
    "ldconfig_path": "{{ replay_bin }}/ldconfig",
    "nccl_include_dirs": ["{{ replay_bin | dirname }}/include"],
}
SPENT = "skipped: the fact phase's budget of 12 s was spent ("


def _role_set_fact_task():
    with open(os.path.join(REPO_ROOT, "roles", "facts", "tasks", "main.yml"), encoding="utf-8") as handle:
        tasks = yaml.safe_load(handle)
    return next(task for task in tasks if "ansible.builtin.set_fact" in task)


def _tasks():
    role_task = dict(_role_set_fact_task(), no_log=False)
    role_task["vars"] = dict(role_task["vars"], gpufleet_fact_groups=["gpu"])
    return [
        {"name": "A slow ethtool", "ansible.builtin.copy": {
            "content": '#!/bin/sh\nsleep 1.5\nexec "{{ replay_bin }}/ethtool" "$@"\n',
            "dest": "{{ replay_bin | dirname }}/slow-ethtool", "mode": "0755"}},
        {"name": "Every group within a 12 s phase", "register": "budgeted", "ignore_errors": True, "timeout": 60,
         "gpufleet.acceptance.node_facts": dict(TOOLS, timeout=30, phase_timeout=12)},
        {"name": "A fact task Ansible timed out", "ansible.builtin.set_fact": {"facts_node_result": {
            "changed": False, "failed": True, "msg": "Timed out after 210 second(s).", "timedout": {"period": 210}}}},
        role_task,
        {"name": "Keep what the test reads", "ansible.builtin.set_fact": {"dumped": {
            "budgeted": "{{ budgeted }}",
            "role": {group: "{{ facts_%s_result }}" % group for group in ("topology", "gpu", "nic", "host")}}}},
    ]


def test_the_module_answers_within_its_budget_and_the_role_names_only_groups_asked_for(playbook):
    node_file = os.path.join(REPO_ROOT, "inventories", "simulated", "nodes", HOST + ".yml")
    run = playbook({HOST: {"node_file": node_file}}, _tasks())
    assert run.rc == 0, run.stdout[-4000:] + run.stderr[-2000:]
    budgeted = run.results[HOST]["budgeted"]
    assert "timedout" not in budgeted and not budgeted.get("failed"), budgeted.get("msg")
    groups = budgeted["groups"]
    # before the budget ran out: NV18 between all 8 GPUs, 8 GPUs in `nvidia-smi -q`
    assert groups["topology"]["ansible_facts"]["gpufleet_topology"]["summary"]["min_nvlinks"] == 18
    assert groups["gpu"]["ansible_facts"]["gpufleet_gpu"]["gpu_count"] == 8
    # ethtool answered until the budget was spent; every run after it is skipped naming the budget
    runs = [entry for kind in ("ethtool", "ethtool_driver") for entry in groups["nic"]["raw"][kind].values()]
    skipped = [entry for entry in runs if (entry["error"] or "").startswith(SPENT)]
    assert skipped and len(skipped) < len(runs), [entry["error"] for entry in runs]
    # the tools after it too: the node has RDMA devices, whose facts cannot be built without `ibstat`; the group
    # says why, naming the tool that took the budget
    assert groups["nic"]["failed"] and is_overrun(groups["nic"]["msg"]), groups["nic"]["msg"]
    assert groups["nic"]["msg"].startswith("%s: `" % HOST)
    assert "/ibstat` " + SPENT + "slow-ethtool ran " in groups["nic"]["msg"]
    role = run.results[HOST]["role"]
    assert role["gpu"] == {"changed": False, "failed": True, "msg": TASK_TIMED_OUT % 210}
    for group in ("topology", "nic", "host"):
        assert role[group] == {"changed": False, "skipped": True, "skip_reason": "%s is not in groups" % group}
