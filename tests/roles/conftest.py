# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures for the role tests: tests/playbooks' runner (ansible-playbook on localhost against
replayed nodes), loaded from its file so that both directories share one implementation."""

from __future__ import annotations

import importlib.util
import os

import pytest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_SPEC = importlib.util.spec_from_file_location("gpufleet_tests_playbooks_runner", os.path.join(REPO_ROOT, "tests", "playbooks", "conftest.py"))
RUNNER = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(RUNNER)


# session-scoped (the callable keeps no state): a module-scoped fixture that makes one run for several tests uses it too
@pytest.fixture(name="run_playbook", scope="session")
def run_playbook_fixture():
    """``run_playbook(tmp_dir, hosts, tasks, extra_args=())``: see tests/playbooks/conftest.py."""

    def _run(tmp_dir, hosts, tasks, extra_args=()):
        os.makedirs(str(tmp_dir), exist_ok=True)
        return RUNNER.run_playbook(tmp_dir, hosts, tasks, extra_args)

    return _run


@pytest.fixture(name="node_file", scope="session")
def node_file_fixture():
    """``node_file("x.yml")``: path of a test node file under tests/replay/nodes/."""

    def _path(name):
        return os.path.join(REPO_ROOT, "tests", "replay", "nodes", name)

    return _path
