# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every node-side fact or benchmark task has a task timeout, and the shipped ansible.cfg keeps ssh alive-checks on.

A node that stops answering while a module runs must end as a failed (timed out) or UNREACHABLE task for that node,
never hold the play: the task timeout bounds the module, the ssh keepalives notice a lost network.
"""

from __future__ import annotations

import configparser
import glob
import os

import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NODE_MODULES = ("gpufleet.acceptance.node_facts", "gpufleet.acceptance.bench_run")


def _tasks(items):
    for task in items or []:
        if not isinstance(task, dict):
            continue
        yield task
        for section in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks"):
            yield from _tasks(task.get(section))


def test_every_fact_and_benchmark_task_has_a_task_timeout():
    files = sorted(glob.glob(os.path.join(REPO_ROOT, "playbooks", "**", "*.yml"), recursive=True)
                   + glob.glob(os.path.join(REPO_ROOT, "roles", "facts", "tasks", "*.yml")))
    found = []
    for path in files:
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
        for task in _tasks(document if isinstance(document, list) else []):
            module = next((name for name in NODE_MODULES if name in task), None)
            if module is None:
                continue
            found.append((os.path.relpath(path, REPO_ROOT), task.get("name")))
            assert "timeout" in task, "%s: task %r runs %s without a task timeout" % (path, task.get("name"), module)
    # the fact task and the benchmark runs: single node, multi node, pairs, nvbandwidth, perftest, iperf3
    assert ("roles/facts/tasks/gather.yml", "Facts | every fact group, one module run per node") in found
    assert len(found) >= 7, found


def test_the_shipped_ansible_cfg_keeps_ssh_alive_checks_and_control_persist():
    config = configparser.ConfigParser(interpolation=None)
    config.read(os.path.join(REPO_ROOT, "ansible.cfg"))
    args = config.get("ssh_connection", "ssh_args").split()
    options = dict(args[index + 1].split("=", 1) for index, arg in enumerate(args) if arg == "-o")
    assert options["ServerAliveInterval"] == "15" and options["ServerAliveCountMax"] == "4"
    # setting ssh_args replaces Ansible's default: its connection reuse stays
    assert options["ControlMaster"] == "auto" and options["ControlPersist"] == "60s"
    assert config.getboolean("ssh_connection", "pipelining")
