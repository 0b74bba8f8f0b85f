# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validation levels (gpufleet_level) and the benchmark preflight, through validate_cluster.yml on replayed nodes.

Nodes are two of the simulated fleet's node files (inventories/simulated/nodes/): hgx-h100-nv18 (8 Active IB rails in
its ibstat recording) and frontend-1g-copper (only `ethtool eth0`: no RDMA rail). Neither has a benchmark binary: every
benchmark tool path points into an empty folder of the test, and the install manifest
directory is an empty folder of the test - so nothing of this machine (its iperf3, an /opt/gpufleet, a /var/lib/gpufleet
a provisioning test wrote) is seen. Expected values are read from those inputs:
- level quick: no benchmark task at all, on della-h100-1gpu alone (the run tests/conftest.py shares with
  tests/playbooks/test_validate_cluster.py): no benchmark record, the level in run.json.
- level standard, two hosts, one with rails: allreduce_single, the pair search (2 hosts), iperf3 (a host has no rail; only
  one has rails, so no ib_write_bw), nvbandwidth only where built (nowhere: no item), gpu_compute (gpubench) on every
  node -> per host exactly one missing_binary record for allreduce_single, allreduce_pair, iperf3 and gpu_compute, never
  one per round or repeat.
- a multi-node all-reduce asked for without a launcher: one launcher_error record per host.
- the binary and the launcher in the install manifest (written by this test as roles nccl_tests and mpi_fabric write
  them) are what the runs start, with no gpufleet_all_reduce_perf_path, no gpufleet_launcher and no fact cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIM_NODES = os.path.join(REPO_ROOT, "inventories", "simulated", "nodes")
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position

PROVISION_HINT = "provision first: `ansible-playbook gpufleet.acceptance.provision`"
BENCH_TOOLS = ("all_reduce_perf", "iperf3", "ib_write_bw", "ib_write_lat", "nvbandwidth", "gpubench")

pytestmark = pytest.mark.skipif(not os.path.isdir(SIM_NODES), reason="inventories/simulated/nodes/ not present")


def _replayed(tmp_path, node, bench_paths=True):
    layout = build_fleet.build_node(os.path.join(SIM_NODES, node + ".yml"), str(tmp_path / "fleet"))
    host = build_fleet.local_host_vars(layout)
    # a folder of the test with nothing in it: the node has no benchmark binary (its replay directory may hold a wrapper
    # for one, as hgx-h100-nv18's does for all_reduce_perf, the ranks of its recorded two-node run)
    no_tools = tmp_path / "no-bench-tools" / node
    if bench_paths:
        host.update({"gpufleet_%s_path" % tool: str(no_tools / tool) for tool in BENCH_TOOLS})
    else:
        host.update({"gpufleet_%s_path" % tool: str(no_tools / tool) for tool in BENCH_TOOLS if tool != "all_reduce_perf"})
    manifest_dir = tmp_path / "manifest" / node
    manifest_dir.mkdir(parents=True)
    host["gpufleet_manifest_dir"] = str(manifest_dir)
    return host


def _run(tmp_path, hosts, **extra):
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": hosts}}, sort_keys=False))
    results = tmp_path / "results"
    extra_vars = dict({"gpufleet_results_dir": str(results), "gpufleet_benchmark_repeats": 2, "gpufleet_fail_on_verdict": False}, **extra)
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env.update({"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO_ROOT, "collections"),
                "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
                "ANSIBLE_REMOTE_TEMP": str(tmp_path / "ansible-remote")})
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory),
           os.path.join(REPO_ROOT, "playbooks", "validate_cluster.yml"), "-e", json.dumps(extra_vars)]
    proc = subprocess.run(cmd, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    records = {}
    for name in hosts:
        with open(results / "hosts" / (name + ".json"), encoding="utf-8") as handle:
            records[name] = json.load(handle)
    with open(results / "run.json", encoding="utf-8") as handle:
        run = json.load(handle)
    return proc, run, records


def _test_double(path, words):
    """An executable that is NOT the tool: it says so and fails (the test reads only which path a run started)."""
    path.write_text("#!/bin/sh\necho 'TEST DOUBLE: %s' >&2\nexit 3\n" % words)
    path.chmod(0o755)
    return str(path)


def test_level_quick_runs_no_benchmark_task_and_is_recorded(della_quick_validate_run):
    # the run tests/playbooks/test_validate_cluster.py's exit status tests read too (tests/conftest.py runs it once)
    results = della_quick_validate_run["results_dir"]
    output = della_quick_validate_run["stdout"]
    assert della_quick_validate_run["rc"] == 0, output[-6000:] + della_quick_validate_run["stderr"][-2000:]
    with open(os.path.join(results, "run.json"), encoding="utf-8") as handle:
        run = json.load(handle)
    with open(os.path.join(results, "hosts", "della-h100-1gpu.json"), encoding="utf-8") as handle:
        record = json.load(handle)
    # reference_job: the cost to train's job (gpufleet_reference_job), none given: the defaults
    assert run["settings"] == {"level": "quick", "benchmarks": None, "burn_in": None, "reference_job": None}
    for task in ("TASK [Installed |", "TASK [Preflight | binaries", "TASK [Single node |", "TASK [Pair search |", "TASK [Network"):
        assert task not in output
    assert record.get("benchmarks", []) == []


def test_level_standard_without_binaries_records_each_tool_once_per_host_with_the_fix(tmp_path):
    hosts = {name: _replayed(tmp_path, name) for name in ("hgx-h100-nv18", "frontend-1g-copper")}
    _proc, run, records = _run(tmp_path, hosts)  # no gpufleet_level: the default, standard
    assert run["settings"]["level"] == "standard"
    for name in hosts:
        benchmarks = records[name]["benchmarks"]
        assert sorted((item["kind"], item["outcome"]) for item in benchmarks) == [
            ("allreduce_pair", "missing_binary"), ("allreduce_single", "missing_binary"), ("gpu_compute", "missing_binary"),
            ("iperf3", "missing_binary")], benchmarks
        by_kind = {item["kind"]: item for item in benchmarks}
        for kind in ("allreduce_single", "allreduce_pair"):
            assert PROVISION_HINT in by_kind[kind]["reason"]
            assert "all_reduce_perf is not on this node (%s: no such file)" % hosts[name]["gpufleet_all_reduce_perf_path"] in by_kind[kind]["reason"]
        assert "iperf3 is not on this node (%s: no such file)" % hosts[name]["gpufleet_iperf3_path"] in by_kind["iperf3"]["reason"]
        assert "gpubench is not on this node (%s: no such file)" % hosts[name]["gpufleet_gpubench_path"] in by_kind["gpu_compute"]["reason"]
        assert "role gpu_bench builds it" in by_kind["gpu_compute"]["reason"]


def test_multi_node_all_reduce_without_a_launcher_is_a_named_item(tmp_path):
    hosts = {name: _replayed(tmp_path, name) for name in ("hgx-h100-nv18", "frontend-1g-copper")}
    binary = _test_double(tmp_path / "all_reduce_perf", "not all_reduce_perf")
    for values in hosts.values():
        values["gpufleet_all_reduce_perf_path"] = binary
    _proc, _run_json, records = _run(tmp_path, hosts, gpufleet_benchmarks=["allreduce_multi"])
    for name in hosts:
        benchmarks = records[name]["benchmarks"]
        assert [(item["kind"], item["outcome"]) for item in benchmarks] == [("allreduce_multi", "launcher_error")], benchmarks
        assert benchmarks[0]["reason"].startswith("no launcher for the multi-node all-reduce (no launcher: gpufleet_launcher is not set")
        assert PROVISION_HINT in benchmarks[0]["reason"]


def test_binary_and_launcher_come_from_the_install_manifest(tmp_path):
    names = ("hgx-h100-nv18", "frontend-1g-copper")
    hosts = {name: _replayed(tmp_path, name, bench_paths=False) for name in names}
    binary = _test_double(tmp_path / "built-all_reduce_perf", "not all_reduce_perf")
    mpirun = _test_double(tmp_path / "provisioned-mpirun", "not mpirun")
    launcher = {"kind": "mpirun", "argv_prefix": [mpirun, "--hostfile", "/nonexistent/hostfile"], "program": mpirun,
                "addresses": {name: "127.0.0.1" for name in names}}
    for name in names:
        manifest_dir = hosts[name]["gpufleet_manifest_dir"]
        with open(os.path.join(manifest_dir, "nccl_tests.json"), "w", encoding="utf-8") as handle:
            json.dump({"role": "gpufleet.acceptance.nccl_tests", "binaries": {"all_reduce_perf": binary}}, handle)
        with open(os.path.join(manifest_dir, "mpi_fabric.json"), "w", encoding="utf-8") as handle:
            json.dump({"role": "gpufleet.acceptance.mpi_fabric", "launcher": launcher}, handle)
    _proc, _run_json, records = _run(tmp_path, hosts, gpufleet_benchmarks=["allreduce_single", "allreduce_multi"],
                                     gpufleet_allreduce_sweep=["-b", "1K", "-e", "1K"])
    # every run starts the manifest's launcher program (the single-node run too: one rank per GPU through mpirun) and the
    # manifest's binary; which arguments and hosts is the business of tests/sshfleet and the checks' tests
    single = [item for item in records["hgx-h100-nv18"]["benchmarks"] if item["kind"] == "allreduce_single"]
    assert len(single) == 2 and all(item["command"][0] == mpirun and binary in item["command"] for item in single), single
    multi = [item for item in records["hgx-h100-nv18"]["benchmarks"] if item["kind"] == "allreduce_multi"]
    assert len(multi) == 1 and multi[0]["command"][0] == mpirun and binary in multi[0]["command"], multi
