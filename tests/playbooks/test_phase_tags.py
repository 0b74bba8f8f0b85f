# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Phase tags: `ansible-playbook --list-tasks --tags <phase>` on validate_cluster.yml and provision.yml, with the
shipped ansible.cfg and the simulated inventory, lists exactly the tasks of that phase (names written by hand from
the playbooks). Preflight tasks carry the tag of every phase that needs the results directory they open.

Every phase is checked in-process: the playbook is loaded once by Ansible's own PlaybookExecutor in listing mode (as
`--list-tasks` loads it: imports resolved, roles and their tasks compiled, tags inherited), and each tag selects
tasks through Ansible's own Block.filter_tagged_tasks, walked as the `--list-tasks` listing walks them
(ansible/cli/playbook.py). One real `ansible-playbook --list-tasks --tags benchmarks` process proves the in-process
listing is the one the command prints."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys

import pytest
from ansible import constants as C
from ansible import context
from ansible.cli.playbook import PlaybookCLI
from ansible.executor.playbook_executor import PlaybookExecutor
from ansible.parsing.vault import VaultSecretsContext
from ansible.playbook.block import Block
from ansible.plugins.loader import init_plugin_loader
from ansible.utils.collection_loader import AnsibleCollectionConfig
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
from ansible.utils.context_objects import CLIArgs

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
INVENTORY = os.path.join(REPO_ROOT, "inventories", "simulated", "hosts.yml")

VALIDATE_PREFLIGHT = [
    "Preflight | the run's exit code until it is judged",
    "Preflight | the validation level is quick, standard or full",
    "Preflight | validate every claim and profile choice",
    "Preflight | create or reopen the results directory",
    "Preflight | say what a resumed run skips",
    # the fact play's first tasks, on the controller: its nodes, once; an inventory with no host to validate
    "Preflight | the nodes of the play, once",
    "Preflight | no host to validate",
    "Preflight | stop the run, naming the input",
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
    "Verdict | the run's exit code, from the verdicts (gpufleet/results/exit_codes.py)",
    "Verdict | fail the run for a node that is not accepted (gpufleet_fail_on_verdict)",
    "Verdict | a report-only run exits 0 (gpufleet_fail_on_verdict false)",
]
# roles/facts entry point after_stress, imported after the benchmarks (validate_cluster.yml) and after the burn-in
# each fact task is followed by the task that stops the run when the controller could not record what it gathered
CONTROLLER_STOP = "the controller could not record, the run stops (not the node's fault)"
AFTER_BENCHMARKS = ["gpufleet.acceptance.facts : Health after stress | the health facts read again, one module run per "
                    "node, recorded beside the first reading",
                    "gpufleet.acceptance.facts : Health after stress | " + CONTROLLER_STOP]
AFTER_BURN_IN = AFTER_BENCHMARKS
VALIDATE_EXPECTED = {
    "facts": VALIDATE_PREFLIGHT + ["gpufleet.acceptance.facts : Facts | every fact group, one module run per node",
                                   "gpufleet.acceptance.facts : Facts | " + CONTROLLER_STOP],
    "benchmarks": VALIDATE_PREFLIGHT + [
        "Preflight | the level asked for is known",
        "Preflight | the benchmarks asked for are known",
        "Preflight | open the results directory",
        "Preflight | the results directory and the job tag of this run, fixed once",
    ] + INSTALLED + [
        # benchmark_tasks/preflight.yml: once per tool per host, before any benchmark
        "Preflight | NIC facts for the choice of network benchmark, when the facts phase did not run",
        "Preflight | this host's Active RDMA rails (ib_write_bw where there are, iperf3 where not)",
        "Preflight | the hosts with and without rails, once for the play",
        "Preflight | what this host is to run",
        "Preflight | the hosts that have the tool of each benchmark they are to run, once for the play",
        "Preflight | binaries, launcher and peers of what this host is to run",
        "Preflight | the hosts that run each benchmark",
        "Preflight | a multi-node all-reduce runs only when every host of the launcher can run it",
        "Preflight | record once per benchmark a host cannot run, with the fix",
        "Single node | all_reduce_perf",
        "Multi node | all_reduce_perf via the launcher, from the first host",
        "Pair search | the bad-node search over disjoint pairs",
        "GPU compute | gpubench on each node (GEMM TFLOP/s per precision, HBM GB/s), the NVML sampler alongside",
        "Network and GPU bandwidth | iperf3, perftest, nvbandwidth, IB counters",
    ] + AFTER_BENCHMARKS,
    "burn_in": VALIDATE_PREFLIGHT + [
        "Preflight | validate every gpufleet variable, claim and profile choice (run alone)",
        "Preflight | open the results directory (run alone)",
        "Preflight | the results directory, and whether this playbook judges the run itself",
        "Facts | GPU, NIC and host facts (run alone)",
        "Results | record this host's facts (run alone)",
    ] + INSTALLED + [
        "Burn-in | GPU load, sampler and interconnect load, recorded",
        *AFTER_BURN_IN,
    ] + BURN_IN_ALONE_REPORT,
    # the health re-reads alone (checks/after_stress.py): the preflight that opens the results directory, then the re-read
    "health_after_benchmarks": VALIDATE_PREFLIGHT + AFTER_BENCHMARKS,
    "health_after_burn_in": VALIDATE_PREFLIGHT + AFTER_BURN_IN,
    "report": VALIDATE_PREFLIGHT + BURN_IN_ALONE_REPORT + [
        "Preflight | the nodes of the play, once",
        "Verdict | judge the whole fleet and write the verdicts",
        "Verdict | one line per node",
        "Verdict | the fleet",
        "Verdict | drain the REJECT nodes, resume the ones gpufleet drained that pass (scontrol on the controller)",
        "Verdict | the gate baselines of the accepted nodes",
        "Report | render the fleet acceptance report into the results directory",
        "Verdict | the run's exit code, from the verdicts (gpufleet/results/exit_codes.py)",
        "Verdict | a report-only run exits 0 (gpufleet_fail_on_verdict false)",
        # plays of their own, on the nodes that get a file, then on the nodes not accepted
        "Verdict | the verdict file on each node for its health check program (Slurm not reached from here)",
        "Verdict | the gate baseline on each accepted node",
        "Verdict | fail the run for a node that is not accepted (gpufleet_fail_on_verdict)",
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
        "Slurm | the health check program for HealthCheckProgram (role slurm_gate)",
    ],
    "benchmarks": [],
    "burn_in": [],
    "report": [],
}


COLLECTIONS = os.path.join(REPO_ROOT, "collections")


def _ansible_playbook_args(playbook: str, *extra: str) -> list[str]:
    return ["ansible-playbook", "-i", INVENTORY, os.path.join(REPO_ROOT, "playbooks", playbook), "--list-tasks", *extra]


def _collection_modules() -> dict:
    return {name: module for name, module in sys.modules.items() if name.split(".")[0] == "ansible_collections"}


@contextlib.contextmanager
def ansible_collection_loader():
    """Ansible's collection loader installed for the block, as ansible-playbook installs it (CLI.run), and what it
    changed put back after: other tests of this process import the collection's Python as plain packages
    (tests/conftest.py puts collections/ on sys.path), which Ansible's finder neither serves nor should replace."""
    if AnsibleCollectionConfig.collection_finder is not None:
        yield  # installed already, and whatever it loaded is its own
        return
    plain = _collection_modules()
    for name in plain:
        del sys.modules[name]
    init_plugin_loader([COLLECTIONS])
    try:
        yield
    finally:
        _AnsibleCollectionFinder._remove()  # pylint: disable=protected-access
        for name in _collection_modules():
            del sys.modules[name]
        sys.modules.update(plain)


def _walk(block, play_tags, listed):
    """Append (name, sorted tags) of each task in ``block`` as --list-tasks prints them (implicit meta tasks left out)."""
    for task in block.block:
        if isinstance(task, Block):
            _walk(task, play_tags, listed)
        elif not (task.action in C._ACTION_META and task.implicit):  # pylint: disable=protected-access
            name = task.get_name() if task.name else task.action
            listed.append((name, sorted(play_tags | set(task.tags))))


def listings(playbook: str, tags, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[tuple[str, list[str]]]]:
    """{tag: [(name, TAGS), ...]}: what `ansible-playbook --list-tasks --tags <tag>` lists for each tag, computed in
    this process as that command does. The playbook is loaded once by PlaybookExecutor in listing mode (the plays
    post-validated against the inventory), then each tag selects its tasks through Block.filter_tagged_tasks, walked
    as ansible/cli/playbook.py walks them."""
    cli = PlaybookCLI(_ansible_playbook_args(playbook))
    cli.init_parser()
    options = cli.post_process_args(cli.parser.parse_args(cli.args[1:]))
    # the command-line arguments as ansible-playbook's CLI.parse sets them, but not as the process-wide singleton
    # (GlobalCLIArgs keeps its first value for good): a plain CLIArgs, put back after the module
    monkeypatch.setattr(context, "CLIARGS", CLIArgs.from_options(options))
    # the vault secrets are set once per ansible-playbook process (CLI.setup_vault_secrets): once per load here
    monkeypatch.setattr(VaultSecretsContext, "_current", None)
    loader, inventory, variables = cli._play_prereqs()  # pylint: disable=protected-access
    executor = PlaybookExecutor(playbooks=context.CLIARGS["args"], inventory=inventory, variable_manager=variables,
                                loader=loader, passwords={})
    (entry,) = executor.run()
    found = {}
    for tag in tags:
        listed = found[tag] = []
        for play in entry["plays"]:
            # what Play.__init__ reads from --tags/--skip-tags, and Block.filter_tagged_tasks from the play
            play.only_tags, play.skip_tags = {tag}, set()
            if play._included_path is not None:  # pylint: disable=protected-access
                loader.set_basedir(play._included_path)  # pylint: disable=protected-access
            all_vars = variables.get_vars(play=play)
            for block in play.compile():
                block = block.filter_tagged_tasks(all_vars)
                if block.has_tasks():
                    _walk(block, set(play.tags), listed)
    return found


@pytest.fixture(name="listed", scope="module")
def listed_fixture():
    """{playbook: {tag: [(name, TAGS), ...]}} for every tag of the tests, each playbook loaded once.

    Of the shipped ansible.cfg only its collections path bears on a listing: given to the collection loader here; the
    command run with that ansible.cfg lists the same (the end-to-end test below)."""
    # PlaybookExecutor.run sets the default collection of the playbook it loads: put back after
    default_collection = AnsibleCollectionConfig.default_collection
    try:
        with pytest.MonkeyPatch.context() as monkeypatch, ansible_collection_loader():
            return {"validate_cluster.yml": listings("validate_cluster.yml", VALIDATE_EXPECTED, monkeypatch),
                    "provision.yml": listings("provision.yml", PROVISION_EXPECTED, monkeypatch)}
    finally:
        AnsibleCollectionConfig.default_collection = default_collection


def listed_tasks(listing: list[tuple[str, list[str]]], tag: str) -> list[str]:
    """The task names `--list-tasks --tags <tag>` lists, each of them carrying the tag."""
    names = []
    for name, tags in listing:
        assert tag in tags, (name, tags)
        names.append(name)
    return names


@pytest.mark.parametrize("tag", sorted(VALIDATE_EXPECTED))
def test_validate_cluster_lists_the_tasks_of_one_phase(listed, tag):
    assert listed_tasks(listed["validate_cluster.yml"][tag], tag) == VALIDATE_EXPECTED[tag]


@pytest.mark.parametrize("tag", sorted(PROVISION_EXPECTED))
def test_provision_lists_the_tasks_of_one_phase(listed, tag):
    assert listed_tasks(listed["provision.yml"][tag], tag) == PROVISION_EXPECTED[tag]


def test_ansible_playbook_lists_the_same_tasks_as_the_in_process_listing(listed):
    """The end-to-end proof: the real command, with the shipped ansible.cfg, prints the in-process listing."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS)
    ansible_playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    argv = [ansible_playbook] + _ansible_playbook_args("validate_cluster.yml", "--tags", "benchmarks")[1:]
    run = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    printed = []
    for line in run.stdout.splitlines():
        hit = re.match(r"^ {6}(\S.*?)\tTAGS: \[(.*)\]$", line)
        if hit:
            printed.append((hit.group(1), [word.strip() for word in hit.group(2).split(",")]))
    assert [name for name, _tags in printed] == VALIDATE_EXPECTED["benchmarks"]
    assert printed == listed["validate_cluster.yml"]["benchmarks"]
