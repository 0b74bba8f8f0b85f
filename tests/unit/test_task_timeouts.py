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

import jinja2
import yaml

from ansible_collections.gpufleet.acceptance.plugins.modules import node_facts

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


def _node_facts_task(relative_path):
    with open(os.path.join(REPO_ROOT, relative_path), encoding="utf-8") as handle:
        return next(task for task in _tasks(yaml.safe_load(handle)) if "gpufleet.acceptance.node_facts" in task)


def test_the_fact_tasks_outlast_the_fact_phase_budget_by_a_margin():
    """The module must always answer first: each fact task's timeout is the budget its node_facts run derives + 60 s."""
    defaults = {key: option.get("default") for key, option in node_facts.argument_spec().items()}
    for relative_path in ("roles/facts/tasks/gather.yml", "roles/facts/tasks/after_stress.yml"):
        task = _node_facts_task(relative_path)
        option = task["gpufleet.acceptance.node_facts"]["phase_timeout"]
        assert option == "{{ gpufleet_fact_phase_timeout | default(omit) }}"
        for variables in ({}, {"gpufleet_tool_timeout": 30}, {"gpufleet_tool_timeout": 120},
                          {"gpufleet_fact_phase_timeout": 400},
                          {"gpufleet_tool_timeout": 10, "gpufleet_fact_phase_timeout": 45}):
            task_timeout = int(jinja2.Environment().from_string(task["timeout"]).render(variables))
            params = dict(defaults, timeout=variables.get("gpufleet_tool_timeout"),
                          phase_timeout=variables.get("gpufleet_fact_phase_timeout"))
            assert task_timeout == node_facts.phase_budget_of(params) + 60, (relative_path, variables)
    # with the shipped defaults: 2 x 60 + 30 s of budget, 210 s for the task (it was (60 + 5) x 12 = 780 s)
    shipped = _node_facts_task("roles/facts/tasks/gather.yml")["timeout"]
    assert int(jinja2.Environment().from_string(shipped).render()) == 210


def test_the_shipped_ansible_cfg_keeps_ssh_alive_checks_and_control_persist():
    config = configparser.ConfigParser(interpolation=None)
    config.read(os.path.join(REPO_ROOT, "ansible.cfg"))
    args = config.get("ssh_connection", "ssh_args").split()
    options = dict(args[index + 1].split("=", 1) for index, arg in enumerate(args) if arg == "-o")
    assert options["ServerAliveInterval"] == "15" and options["ServerAliveCountMax"] == "4"
    # setting ssh_args replaces Ansible's default: its connection reuse stays
    assert options["ControlMaster"] == "auto" and options["ControlPersist"] == "60s"
    # [connection]: ssh and the local connection alike (tests/playbooks/test_speed_options.py runs the latter)
    assert config.getboolean("connection", "pipelining") and not config.has_option("ssh_connection", "pipelining")
