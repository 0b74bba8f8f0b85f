# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""installed_tools: the install manifest the provisioning roles write, read back on the node, and the one
all_reduce_perf path every part of the collection agrees on (where roles/nccl_tests builds it)."""

from __future__ import annotations

import json
import os
import re

import yaml

from ansible_collections.gpufleet.acceptance.plugins.modules import installed_tools

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def _yaml(*parts):
    with open(os.path.join(REPO_ROOT, *parts), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _executable(path):
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return str(path)


def test_override_then_manifest_then_default(tmp_path):
    built = _executable(tmp_path / "all_reduce_perf")
    manifest = {"nccl_tests": {"binaries": {"all_reduce_perf": built}}}
    spec = {"manifest": "nccl_tests.binaries.all_reduce_perf", "default": "/nonexistent/build/all_reduce_perf"}
    assert installed_tools.resolve_tool(spec, manifest) == {"path": built, "source": "manifest", "present": True}
    assert installed_tools.resolve_tool(dict(spec, override="/nonexistent/mine"), manifest) == {
        "path": "/nonexistent/mine", "source": "override", "present": False, "reason": "/nonexistent/mine: no such file"}
    assert installed_tools.resolve_tool(spec, {}) == {
        "path": "/nonexistent/build/all_reduce_perf", "source": "default", "present": False,
        "reason": "/nonexistent/build/all_reduce_perf: no such file"}
    not_executable = tmp_path / "plain"
    not_executable.write_text("")
    assert installed_tools.resolve_tool({"default": str(not_executable)}, {})["reason"] == "%s: not an executable file" % not_executable


def test_manifest_files_are_read_by_role_and_bad_ones_named(tmp_path):
    (tmp_path / "nccl_tests.json").write_text(json.dumps({"version": "2.17.1"}))
    (tmp_path / "mpi_fabric.json").write_text("{not json")
    (tmp_path / "notes.txt").write_text("ignored")
    manifest, errors = installed_tools.read_manifest(str(tmp_path))
    assert manifest == {"nccl_tests": {"version": "2.17.1"}}
    assert len(errors) == 1 and errors[0].startswith(str(tmp_path / "mpi_fabric.json") + ": ")
    assert installed_tools.read_manifest(str(tmp_path / "missing")) == ({}, [])


def test_launcher_given_wins_else_the_manifest_and_its_program_is_checked(tmp_path):
    mpirun = _executable(tmp_path / "mpirun")
    srun = _executable(tmp_path / "srun")
    recorded = {"kind": "mpirun", "argv_prefix": [mpirun, "--hostfile", "/opt/gpufleet/mpi/hostfile"], "program": mpirun}
    manifest = {"mpi_fabric": {"launcher": recorded}}
    assert installed_tools.resolve_launcher(None, manifest, "mpi_fabric.launcher") == {
        "value": recorded, "source": "manifest", "program": mpirun, "present": True}
    # an srun launcher without a recorded program: the first word that is not env or NAME=VALUE
    given = {"kind": "srun", "argv_prefix": ["env", "NCCL_IB_DISABLE=1", srun, "--nodes=2"]}
    assert installed_tools.resolve_launcher(given, manifest, "mpi_fabric.launcher") == {
        "value": given, "source": "variable", "program": srun, "present": True}
    none = installed_tools.resolve_launcher(None, {}, "mpi_fabric.launcher")
    assert none["source"] == "none" and none["present"] is False
    assert none["reason"] == "no launcher: gpufleet_launcher is not set and the node has no mpi_fabric.launcher in its install manifest"


def test_the_default_all_reduce_perf_path_is_where_nccl_tests_builds_it():
    defaults = _yaml("roles", "nccl_tests", "defaults", "main.yml")
    build = _yaml("roles", "nccl_tests", "tasks", "build.yml")
    binary = [task for task in build if task.get("ansible.builtin.include_role", {}).get("name") == "gpufleet.acceptance.pinned_build"]
    assert binary[0]["vars"]["pinned_build_binary"] == "build/all_reduce_perf"
    built = "%s/nccl-tests-%s/%s" % (defaults["nccl_tests_prefix"], defaults["nccl_tests_version"], "build/all_reduce_perf")
    assert built == "/opt/gpufleet/nccl-tests-2.17.3/build/all_reduce_perf"
    # the manifest the role writes names that path
    manifest_task = [task for task in build if task.get("name") == "Nccl_tests | Record what was installed in the install manifest"][0]
    assert manifest_task["vars"]["__nccl_tests_manifest"]["binaries"]["all_reduce_perf"] == "{{ __nccl_tests_install_dir }}/build/all_reduce_perf"
    # the benchmark phase's default, when a node has no manifest
    installed = _yaml("playbooks", "benchmark_tasks", "installed.yml")
    assert installed[0]["gpufleet.acceptance.installed_tools"]["tools"]["all_reduce_perf"]["default"] == built
    # the burn-in's default (its last fallback)
    burn_in = _yaml("roles", "burn_in", "defaults", "main.yml")["burn_in_all_reduce_perf_path"]
    assert re.findall(r"default\('(/[^']+)'", burn_in) == [built]
    # no playbook, task file or role names the old guess any more
    for folder in ("playbooks", "roles"):
        for root, _dirs, files in os.walk(os.path.join(REPO_ROOT, folder)):
            for name in files:
                with open(os.path.join(root, name), encoding="utf-8", errors="replace") as handle:
                    assert "nccl-tests-2.17.3/bin/all_reduce_perf" not in handle.read(), os.path.join(root, name)
