# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/benchmark.yml run for real: provision.yml then validate_cluster.yml (with the benchmarks
imported, gpufleet_benchmarks set) in one ansible-playbook run over a 4-host SSH fleet (fleet.sh).

The benchmark is the all_reduce_perf TEST DOUBLE (tests/standin/all_reduce_perf_standin.py): the
playbook's ordinary variable gpufleet_all_reduce_perf_path points at a two-line wrapper this test
writes (the fleet's python running the stand-in). The multi-node run goes through the launcher
role mpi_fabric generated (gpufleet_launcher); the pairs through the same launcher without its
hostfile. Expected values come from the inputs: which host this test throttles with tc.

The pairs of a round run one after the other here (gpufleet_pair_sequential): on this machine's 2
cores two concurrent pairs (4 Python ranks) are bound by the CPU, not the link, and the figures of
the unthrottled pairs then spread by ~40%, more than the search's 25% tolerance. Even one pair at a
time the stand-in is CPU-bound here and unthrottled pairs measured 0.12-0.20 GB/s in one run, so the
test sets the ordinary variable gpufleet_pair_search_tolerance to 0.5: a pair through the throttled
host cannot pass 0.025 GB/s, at least 5x below any unthrottled pair seen.
Bounded: sizes 1M..2M int32, -n 2 -w 1, one run per pair; ~2 x 1.5 min here.
"""

from __future__ import annotations

import glob
import json
import os
import random
import shutil
import subprocess
import sys

import pytest
import yaml

from conftest import REPO_ROOT, fleet_sh, missing_requirements  # pylint: disable=import-error,no-name-in-module

STANDIN = os.path.join(REPO_ROOT, "tests", "standin", "all_reduce_perf_standin.py")
HOSTS = 4
NODE_FILE = os.path.join(REPO_ROOT, "tests", "replay", "nodes", "gpu-h100-590-1gpu.yml")
SWEEP = ["-b", "1M", "-e", "2M", "-f", "2", "-n", "2", "-w", "1", "-d", "int32"]

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI mpirun not installed (apt-get install openmpi-bin)")


@pytest.fixture(scope="module", name="fleet4")
def fleet4_fixture(tmp_path_factory):
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    base = tmp_path_factory.mktemp("benchallreduce")
    state = str(base / "fleet")
    fleet_sh("up", "--hosts", str(HOSTS), "--state", state, "--node-files", NODE_FILE)
    try:
        with open(os.path.join(state, "fleet_id"), "r", encoding="utf-8") as handle:
            number = int(handle.read().strip())
        with open(os.path.join(state, "inventory.yml"), "r", encoding="utf-8") as handle:
            inventory = yaml.safe_load(handle)["all"]["children"]["sshfleet"]["hosts"]
        python = inventory["gf%dh1" % number]["ansible_python_interpreter"]
        wrapper = base / "all_reduce_perf"
        wrapper.write_text("#!/bin/sh\nexec %s %s \"$@\"\n" % (python, STANDIN))
        wrapper.chmod(0o755)
        yield {"state": state, "id": number, "inventory": inventory, "base": base, "wrapper": str(wrapper)}
    finally:
        fleet_sh("down", "--state", state)


def name_of(fleet, host):
    return "gf%dh%d" % (fleet["id"], host)


def run_validate(fleet, label):
    """provision.yml + validate_cluster.yml (benchmarks imported) in one run; returns the results dir."""
    base = fleet["base"]
    run_dir = str(base / ("run-" + label))
    site = base / "site.yml"
    site.write_text(yaml.safe_dump([
        {"name": "Provision", "ansible.builtin.import_playbook": os.path.join(REPO_ROOT, "playbooks", "provision.yml")},
        {"name": "Validate", "ansible.builtin.import_playbook": os.path.join(REPO_ROOT, "playbooks", "validate_cluster.yml")}], sort_keys=False))
    bench_vars = base / ("bench-%s.yml" % label)
    bench_vars.write_text(yaml.safe_dump({
        "gpufleet_results_dir": run_dir,
        "gpufleet_benchmarks": ["allreduce_multi", "allreduce_pairs"],
        "gpufleet_all_reduce_perf_path": fleet["wrapper"],
        "gpufleet_allreduce_sweep": SWEEP,
        "gpufleet_pair_args": SWEEP + ["-g", "1"],
        "gpufleet_pair_sequential": True,
        # rank 0's address for the stand-in's control connection (MPI's part of nccl-tests); the runner
        # forwards every variable of the env to the ranks with mpirun -x
        "gpufleet_allreduce_env": {"NCCL_DEBUG": "INFO", "GPUFLEET_STANDIN_BOOTSTRAP": "{{ mpi_fabric_address_value }}:29741",
                                   "GPUFLEET_STANDIN_TIMEOUT": "60"},
        "gpufleet_benchmark_timeout": 120,
        "gpufleet_pair_search_tolerance": 0.5,
    }, sort_keys=False))
    env = dict(os.environ)
    env.update({"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO_ROOT, "collections"),
                "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(base / "ansible-local"), "GPUFLEET_FLEET_DIR": fleet["state"]})
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", os.path.join(fleet["state"], "inventory.yml"),
           "-e", "@" + os.path.join(REPO_ROOT, "molecule", "provision", "vars", "fleet.yml"), "-e", "@" + str(bench_vars), str(site)]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=400, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    return run_dir


def host_records(run_dir):
    out = {}
    for path in glob.glob(os.path.join(run_dir, "hosts", "*.json")):
        with open(path, "r", encoding="utf-8") as handle:
            record = json.load(handle)
        out[record["host"]] = record
    return out


def pair_figures(records):
    """{(a, b) sorted: (round, busbw at the largest size)} from every host's allreduce_pair records."""
    out = {}
    for record in records.values():
        for bench in record["benchmarks"]:
            if bench["kind"] == "allreduce_pair":
                assert bench["outcome"] == "ok", bench["reason"]
                out[tuple(sorted(bench["hosts"]))] = (bench["round"], bench["parsed"]["busbw_at_largest_size_gbs"])
    return out


def checks_of(records, check_id):
    return {host: [item for item in record["checks"] if item["id"] == check_id] for host, record in records.items()}


def multi_busbw(records):
    (multi,) = [bench for record in records.values() for bench in record["benchmarks"] if bench["kind"] == "allreduce_multi"]
    assert multi["outcome"] == "ok", multi["reason"]
    assert sorted(multi["hosts"]) == sorted(records)
    assert len(set(multi["parsed"]["hosts"])) == HOSTS
    return multi["parsed"]["busbw_at_largest_size_gbs"]


def describe(figures):
    return ", ".join("r%s %s-%s %.2f GB/s" % (rnd, a, b, value) for (a, b), (rnd, value) in sorted(figures.items(), key=lambda kv: kv[1][0]))


def test_control_then_one_throttled_host(fleet4):
    names = [name_of(fleet4, host) for host in range(1, HOSTS + 1)]
    # (1) control: no throttle
    control = host_records(run_validate(fleet4, "control"))
    assert sorted(control) == names
    figures = pair_figures(control)
    print("control pairs: %s" % describe(figures))
    # the round-robin schedule of 4 hosts: 3 rounds of 2 disjoint pairs, every pair once
    assert sorted(figures) == sorted((a, b) for i, a in enumerate(names) for b in names[i + 1:])
    rounds = {}
    for pair, (rnd, _value) in figures.items():
        rounds.setdefault(rnd, []).append(pair)
    assert sorted(rounds) == [0, 1, 2]
    for pairs in rounds.values():
        assert len(pairs) == 2 and len(set(pairs[0]) | set(pairs[1])) == 4
    control_multi = multi_busbw(control)
    print("control multi-node busbw %.2f GB/s" % control_multi)
    for host, items in checks_of(control, "benchmarks.pair_search").items():
        assert [item["status"] for item in items] == ["pass"], (host, items)
    for check_id in ("benchmarks.allreduce_multi", "benchmarks.allreduce_wrong"):
        for host, items in checks_of(control, check_id).items():
            assert all(item["status"] != "fail" for item in items), (host, items)

    # (2) one random host throttled to 200 Mbit/s (25 MB/s) both ways
    seed = random.randrange(1 << 30)
    victim = random.Random(seed).randrange(1, HOSTS + 1)
    print("seed %d: throttling host %d (%s)" % (seed, victim, name_of(fleet4, victim)))
    fleet_sh("throttle", "--state", fleet4["state"], "--host", str(victim), "--rate", "200mbit")
    try:
        throttled = host_records(run_validate(fleet4, "throttled"))
    finally:
        fleet_sh("unthrottle", "--state", fleet4["state"], "--host", str(victim))
    figures = pair_figures(throttled)
    print("throttled pairs: %s" % describe(figures))
    bad = name_of(fleet4, victim)
    # at 200 Mbit/s a 2-rank ring's busbw cannot pass 0.025 GB/s; unthrottled pairs here are > 0.1 GB/s
    for pair, (_rnd, value) in figures.items():
        if bad in pair:
            assert value <= 0.03, (pair, value)
    for host, items in checks_of(throttled, "benchmarks.pair_search").items():
        statuses = [item["status"] for item in items]
        if host == bad:
            assert statuses == ["fail"], items
            assert items[0]["message"].startswith("slow node: every pair with it is slow"), items[0]["message"]
        else:
            assert statuses == ["pass"], (host, items)
    low_multi = multi_busbw(throttled)
    print("throttled multi-node busbw %.2f GB/s (control %.2f)" % (low_multi, control_multi))
    # the ring over all 4 hosts crosses the throttled link: bound by 25 MB/s * 2(n-1)/n
    assert low_multi <= 0.04 < control_multi
