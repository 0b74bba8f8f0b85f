# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Phase tags: `ansible-playbook --list-tasks --tags <phase>` on validate_cluster.yml and provision.yml, with the
shipped ansible.cfg and the simulated inventory, lists exactly the tasks of that phase (names written by hand from
the playbooks). Preflight tasks carry the tag of every phase that needs the results directory they open."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
INVENTORY = os.path.join(REPO_ROOT, "inventories", "simulated", "hosts.yml")

VALIDATE_PREFLIGHT = [
    "Preflight | the validation level is quick, standard or full",
    "Preflight | validate every claim and profile choice",
    "Preflight | create or reopen the results directory",
    "Preflight | say what a resumed run skips",
]
# benchmark_tasks/installed.yml: the install manifest, read by benchmark.yml and burn_in.yml
INSTALLED = [
    "Installed | the install manifest and the benchmark tools of this node",
    "Installed | the launcher from the install manifest, when gpufleet_launcher is not given",
]
# burn_in.yml's own verdict, report and exit status (run alone; skipped inside validate_cluster.yml, which judges itself)
BURN_IN_ALONE_REPORT = [
    "Verdict | judge the fleet and write the verdicts",
    "Verdict | one line per node",
    "Report | render the report into the results directory",
    "Verdict | one line per node that left the play",
    "Verdict | fail the run for a node that is not accepted (gpufleet_fail_on_verdict)",
    "Verdict | a report-only run exits 0 (gpufleet_fail_on_verdict false)",
]
# roles/facts entry point after_stress, imported after the benchmarks (validate_cluster.yml) and after the burn-in
AFTER_BENCHMARKS = "gpufleet.acceptance.facts : Health after stress | the health facts read again, one module run per node, recorded beside the first reading"
AFTER_BURN_IN = AFTER_BENCHMARKS
VALIDATE_EXPECTED = {
    "facts": VALIDATE_PREFLIGHT + ["gpufleet.acceptance.facts : Facts | every fact group, one module run per node"],
    "benchmarks": VALIDATE_PREFLIGHT + [
        "Preflight | the level asked for is known",
        "Preflight | the benchmarks asked for are known",
        "Preflight | open the results directory",
        "Preflight | the results directory and the job tag of this run, fixed once",
    ] + INSTALLED + [
        # benchmark_tasks/preflight.yml: once per tool per host, before any benchmark
        "Preflight | NIC facts for the choice of network benchmark, when the facts phase did not run",
        "Preflight | this host's Active RDMA rails (ib_write_bw where there are, iperf3 where not)",
        "Preflight | what this host is to run",
        "Preflight | binaries, launcher and peers of what this host is to run",
        "Preflight | the hosts that run each benchmark",
        "Preflight | a multi-node all-reduce runs only when every host of the launcher can run it",
        "Preflight | record once per benchmark a host cannot run, with the fix",
        "Single node | all_reduce_perf",
        "Multi node | all_reduce_perf via the launcher, from the first host",
        "Pair search | the bad-node search over disjoint pairs",
        "GPU compute | gpubench on each node (GEMM TFLOP/s per precision, HBM GB/s), the NVML sampler alongside",
        "Network and GPU bandwidth | iperf3, perftest, nvbandwidth, IB counters",
    ] + [AFTER_BENCHMARKS],
    "burn_in": VALIDATE_PREFLIGHT + [
        "Preflight | validate every gpufleet variable, claim and profile choice (run alone)",
        "Preflight | open the results directory (run alone)",
        "Preflight | the results directory, and whether this playbook judges the run itself",
        "Facts | GPU, NIC and host facts (run alone)",
        "Results | record this host's facts (run alone)",
    ] + INSTALLED + [
        "Burn-in | GPU load, sampler and interconnect load, recorded",
        AFTER_BURN_IN,
    ] + BURN_IN_ALONE_REPORT,
    # the health re-reads alone (checks/after_stress.py): the preflight that opens the results directory, then the re-read
    "health_after_benchmarks": VALIDATE_PREFLIGHT + [AFTER_BENCHMARKS],
    "health_after_burn_in": VALIDATE_PREFLIGHT + [AFTER_BURN_IN],
    "report": VALIDATE_PREFLIGHT + BURN_IN_ALONE_REPORT + [
        "Verdict | judge the whole fleet and write the verdicts",
        "Verdict | one line per node",
        "Verdict | one line per node that left the play",
        "Verdict | the fleet",
        "Report | render the fleet acceptance report into the results directory",
        "Verdict | fail the run for a node that is not accepted (gpufleet_fail_on_verdict)",
        "Verdict | a report-only run exits 0 (gpufleet_fail_on_verdict false)",
    ],
    "provision": [],
}
PROVISION_FACTS = "Facts | the four fact groups, one module call each"
PROVISION_EXPECTED = {
    "facts": [PROVISION_FACTS],
    # the roles read this run's facts, so the fact gathering carries the provision tag too
    "provision": [
        PROVISION_FACTS,
        "NCCL tests | build the pinned release with MPI for the GPUs found (nccl_tests_enabled false skips it)",
        "GPU compute benchmark | build gpubench with nvcc for the GPUs found (gpu_bench_enabled false skips it)",
        "NCCL networking | derive from the facts and write /etc/nccl.conf and the env file",
        "MPI fabric | SSH between the nodes, hostfile, OpenMPI on the cluster network, launcher (gpufleet_launcher)",
    ],
    "benchmarks": [],
    "burn_in": [],
    "report": [],
}


def listed_tasks(playbook: str, tag: str) -> list[str]:
    """The task names `--list-tasks --tags <tag>` prints, in order (each line: name, a tab, its TAGS)."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO_ROOT, "collections"))
    ansible_playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    run = subprocess.run([ansible_playbook, "-i", INVENTORY, os.path.join(REPO_ROOT, "playbooks", playbook),
                          "--list-tasks", "--tags", tag], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                         check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    names = []
    for line in run.stdout.splitlines():
        hit = re.match(r"^ {6}(\S.*?)\tTAGS: \[(.*)\]$", line)
        if hit:
            assert tag in [word.strip() for word in hit.group(2).split(",")], line
            names.append(hit.group(1))
    return names


@pytest.mark.parametrize("tag", sorted(VALIDATE_EXPECTED))
def test_validate_cluster_lists_the_tasks_of_one_phase(tag):
    assert listed_tasks("validate_cluster.yml", tag) == VALIDATE_EXPECTED[tag]


@pytest.mark.parametrize("tag", sorted(PROVISION_EXPECTED))
def test_provision_lists_the_tasks_of_one_phase(tag):
    assert listed_tasks("provision.yml", tag) == PROVISION_EXPECTED[tag]
