# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the product's playbooks for real, on localhost, against replayed nodes."""

from __future__ import annotations

import functools
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position


def _runs(python):
    try:
        return subprocess.run([python, "-c", "pass"], capture_output=True, timeout=30, check=False).returncode == 0
    except OSError:
        return False


@functools.lru_cache(maxsize=None)
def node_python():
    """The interpreter replayed nodes run modules with: the oldest we support (3.8) where present.

    A pyenv shim on PATH may not run (no version selected), so candidates are tried, not trusted.
    """
    candidates = sorted(glob.glob("/root/.pyenv/versions/3.8*/bin/python3.8")) + [shutil.which("python3.8") or ""]
    for candidate in candidates:
        if candidate and _runs(candidate):
            return candidate
    return sys.executable


class PlaybookRun:
    """A finished ansible-playbook run: its exit code, output and per-host dumped results."""

    def __init__(self, proc, results):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.results = results


def run_playbook(tmp_path, hosts, tasks, extra_args=()):
    """Run ``tasks`` on ``hosts`` ({name: {node_file, vars}}) and return a PlaybookRun.

    Each host gets replay wrappers built from its node file. Every task should register its
    result; the play dumps ``hostvars[host]['dumped']`` to ``<tmp>/<host>.json``.
    """
    fleet_dir = tmp_path / "fleet"
    inventory = {"all": {"hosts": {}}}
    for name, spec in hosts.items():
        layout = build_fleet.build_node(spec["node_file"], str(fleet_dir))
        host_vars = {
            "ansible_connection": "local",
            "ansible_python_interpreter": node_python(),
            "replay_bin": layout["bin_dir"],
            "replay_sysfs": layout["sysfs_root"],
        }
        host_vars.update(spec.get("vars", {}))
        inventory["all"]["hosts"][name] = host_vars
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    play = [
        {
            "name": "Test play",
            "hosts": "all",
            "gather_facts": False,
            "tasks": list(tasks)
            + [
                {
                    "name": "Dump what the test reads",
                    "check_mode": False,
                    "ansible.builtin.copy": {
                        "content": "{{ dumped | default({}) | to_json }}",
                        "dest": str(tmp_path) + "/{{ inventory_hostname }}.json",
                        "mode": "0600",
                    },
                }
            ],
        }
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ)
    env["ANSIBLE_CONFIG"] = os.path.join(REPO_ROOT, "ansible.cfg")
    env["ANSIBLE_COLLECTIONS_PATH"] = os.path.join(REPO_ROOT, "collections")
    env["ANSIBLE_NOCOLOR"] = "1"
    env["ANSIBLE_LOCAL_TEMP"] = str(tmp_path / "ansible-local")
    env["ANSIBLE_REMOTE_TEMP"] = str(tmp_path / "ansible-remote")
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(tmp_path / "inventory.yml"), str(tmp_path / "play.yml")]
    proc = subprocess.run(cmd + list(extra_args), cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    results = {}
    for name in hosts:
        path = tmp_path / ("%s.json" % name)
        if path.exists():
            results[name] = json.loads(path.read_text())
    return PlaybookRun(proc, results)


@pytest.fixture(name="playbook")
def playbook_fixture(tmp_path):
    """``playbook(hosts, tasks)`` runs them and returns a PlaybookRun."""

    def _run(hosts, tasks, extra_args=()):
        return run_playbook(tmp_path, hosts, tasks, extra_args)

    return _run


@pytest.fixture(name="node_python_path")
def node_python_path_fixture():
    """:func:`node_python` for a test module: ``from conftest import`` finds whichever conftest xdist imported last."""
    return node_python()


@pytest.fixture(name="node_file")
def node_file_fixture():
    """``node_file("x.yml")``: path of a test node file under tests/replay/nodes/."""

    def _path(name):
        return os.path.join(REPO_ROOT, "tests", "replay", "nodes", name)

    return _path
