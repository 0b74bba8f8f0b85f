# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verdicts as drains on a real Slurm (fleet.sh --slurm: slurmctld and one slurmd per host), through `gpufleet
validate --slurm-drain` as a user runs it.

Three hosts replay recorded nodes with the demo fleet's claims (inventories/simulated/host_vars): host 1 is
frontend-1g-copper (its eth0 runs at 1 Gb/s, claimed 10 Gb/s: REJECT), hosts 2 and 3 della-h100-1gpu (ACCEPT at
level quick). Before the run an administrator drains host 3 ("admin: bad fan").

1. The controller reaches Slurm: host 1 is drained with "gpufleet: eth0 runs at 1 Gb/s, claimed ...", a job asking
   for it is refused at once (srun --immediate), host 2 is untouched, host 3 stays drained with the administrator's
   reason although it passed; slurm.json names each command.
2. The seller's fix (the claim now says 1 Gb/s) and `--retest-failed`: host 1 passes and is resumed; host 3 still
   keeps the administrator's drain.
3. The quick gate (slurm.conf Prolog: roles/slurm_gate's gpufleet_prolog_gate.py) before a job: the accepted host 1
   matches the baseline its passing retest wrote (eth0 up at 1 Gb/s) and the job runs; host 2's baseline has its GPU,
   which the replayed node cannot show (its nvidia-smi has no recording of the gate's query, as a tool that prints
   nothing), so the job is refused there and the node drained with "gpufleet: gate: ...".
4. The controller reaches no Slurm (its SLURM_CONF names a controller port nothing listens on): the run writes the
   verdict file on each node, and slurmd's own health check (HealthCheckProgram: roles/slurm_gate's program) drains
   the rejected host 1 by itself, with the same reason.

roles/slurm_gate is installed on every host first, as provision.yml does on a Slurm cluster (the role alone here: the
launcher and the builds are the subject of test_bench_allreduce.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest
import yaml

from conftest import REPO_ROOT, fleet_sh, require_fleet  # pylint: disable=import-error,no-name-in-module

pytestmark = pytest.mark.usefixtures("slurm_installed")

NODES = os.path.join(REPO_ROOT, "inventories", "simulated", "nodes")
HOST_VARS = os.path.join(REPO_ROOT, "inventories", "simulated", "host_vars")
NODE_FILES = [os.path.join(NODES, name + ".yml")
              for name in ("frontend-1g-copper", "della-h100-1gpu", "della-h100-1gpu")]
HEALTH = "/usr/local/sbin/gpufleet-slurm-health"
PROLOG = "/usr/local/sbin/gpufleet-prolog-gate"
GPUFLEET = os.path.join(os.path.dirname(sys.executable), "gpufleet")
REJECT_REASON = "gpufleet: eth0 runs at 1 Gb/s, claimed 1x 10 Gb/s frontend ethernet"
# slurmd runs the health check every 5 s (slurm.sh --health-check); a generous bound on the wait for its drain
HEALTH_WAIT_S = 60


@pytest.fixture(scope="module", name="fleet")
def fleet_fixture(tmp_path_factory):
    require_fleet()
    base = tmp_path_factory.mktemp("slurmdrain")
    state = str(base / "fleet")
    fleet_sh("up", "--hosts", "3", "--state", state, "--node-files", ",".join(NODE_FILES), "--slurm-health", HEALTH,
             "--slurm-prolog", PROLOG)
    try:
        with open(os.path.join(state, "fleet_id"), "r", encoding="utf-8") as handle:
            number = int(handle.read().strip())
        names = ["gf%dh%d" % (number, index) for index in (1, 2, 3)]
        os.makedirs(os.path.join(state, "host_vars"))
        for name, source in zip(names, ("frontend-1g-copper", "della-h100-1gpu", "della-h100-1gpu")):
            shutil.copy(os.path.join(HOST_VARS, source + ".yml"), os.path.join(state, "host_vars", name + ".yml"))
        env = dict(os.environ, SLURM_CONF=os.path.join(state, "slurm", "slurm.conf"))
        install_slurm_gate(os.path.join(state, "inventory.yml"), env)
        yield {"state": state, "names": names, "base": base, "env": env}
    finally:
        fleet_sh("down", "--state", state)


def install_slurm_gate(inventory, env):
    """roles/slurm_gate on every host (the nodes are logged into as root: no become)."""
    role = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible"), "all", "-i", inventory, "-m",
                           "ansible.builtin.include_role", "-a", "name=gpufleet.acceptance.slurm_gate",
                           "-e", "gpufleet_become=false"],
                          cwd=REPO_ROOT, env=dict(env, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg")),
                          capture_output=True, text=True, timeout=300, check=False)
    assert role.returncode == 0, role.stdout[-3000:] + role.stderr[-2000:]


def slurm(fleet, *argv, check=True):
    proc = subprocess.run(list(argv), env=fleet["env"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0 or not check, proc.stdout + proc.stderr
    return proc


def node_states(fleet):
    out = slurm(fleet, "sinfo", "--noheader", "--Node", "--Format=NodeList:0|,StateLong:0|,Reason:0").stdout
    return {line.split("|")[0]: tuple(line.split("|", 2)[1:]) for line in out.splitlines() if line.strip()}


def validate(fleet, out, *extra, env=None):
    cmd = [GPUFLEET, "validate", "-i", os.path.join(fleet["state"], "inventory.yml"), "--level", "quick",
           "--slurm-drain", "--out", str(out)] + list(extra)
    return subprocess.run(cmd, cwd=str(fleet["base"]), env=env or fleet["env"], capture_output=True, text=True,
                          timeout=400, check=False)


def test_reject_drained_admin_drain_kept_then_resumed_after_the_fix(fleet):
    first, second, third = fleet["names"]
    slurm(fleet, "scontrol", "update", "NodeName=" + third, "State=DRAIN", "Reason=admin: bad fan")
    run = fleet["base"] / "run-1"
    proc = validate(fleet, run)
    assert proc.returncode == 3, proc.stdout + proc.stderr[-3000:]
    states = node_states(fleet)
    assert states[first] == ("drained", REJECT_REASON), states
    assert states[third] == ("drained", "admin: bad fan"), states
    # a job that asks for the drained node is refused at once, in Slurm's own words
    job = slurm(fleet, "srun", "--nodelist=" + first, "--immediate=3", "true", check=False)
    assert job.returncode != 0 and "srun: error" in job.stderr, job.stderr
    with open(run / "slurm.json", "r", encoding="utf-8") as handle:
        actions = {item["node"]: item for item in json.load(handle)["actions"]}
    assert actions[first]["command"] == ["scontrol", "update", "NodeName=" + first, "State=DRAIN",
                                         "Reason=" + REJECT_REASON] and actions[first]["rc"] == 0
    assert actions[second]["command"] is None and actions[second]["action"] == "keep"
    assert actions[third]["action"] == "keep" and "administrator's reason (admin: bad fan)" in actions[third]["why"]
    # the report names the command it ran, and results.json keeps slurm.json
    with open(run / "results.json", "r", encoding="utf-8") as handle:
        assert json.load(handle)["slurm"]["actions"][0]["node"] == first
    report = (run / "report.md").read_text(encoding="utf-8")
    assert "Slurm: drain: scontrol update NodeName=%s State=DRAIN" % first in report

    # the fix: the seller and the buyer agree on what was measured, a node sold for its 1 Gb/s NIC (no GPU item, which
    # this replayed node's recordings could not verify: with one it would be INCOMPLETE, and an INCOMPLETE node
    # stays drained); the retest runs the REJECT node alone and resumes it
    host_vars = os.path.join(fleet["state"], "host_vars", first + ".yml")
    with open(host_vars, "r", encoding="utf-8") as handle:
        variables = yaml.safe_load(handle)
    variables["gpufleet_claim"] = {"nics": [{"role": "frontend", "type": "ethernet", "count": 1, "gbps": 1}]}
    with open(host_vars, "w", encoding="utf-8") as handle:
        yaml.safe_dump(variables, handle)
    proc = validate(fleet, fleet["base"] / "run-2", "--retest-failed", str(run))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    states = node_states(fleet)
    assert states[first] == ("idle", "none"), states
    assert states[third] == ("drained", "admin: bad fan"), states
    slurm(fleet, "scontrol", "update", "NodeName=" + third, "State=RESUME")


def test_the_prolog_gate_runs_a_matching_node_and_refuses_a_changed_one(fleet):
    first, second, _third = fleet["names"]
    # host 1 passed its retest (the first test): its baseline is its NICs, which match
    job = slurm(fleet, "srun", "--nodelist=" + first, "--immediate=20", "hostname", check=False)
    assert job.returncode == 0 and job.stdout.strip() == first, job.stdout + job.stderr
    # host 2 passed the first run: its baseline names its GPU, which its replayed nvidia-smi cannot show
    job = slurm(fleet, "srun", "--nodelist=" + second, "--immediate=20", "hostname", check=False)
    assert job.returncode != 0 and job.stdout.strip() != second, job.stdout + job.stderr
    state, reason = node_states(fleet)[second]
    assert "drain" in state and reason.startswith("gpufleet: gate: `") and "--query-gpu=index,pci.bus_id" in reason, (
        state, reason)
    # (slurmd's log keeps the gate's line as the prolog's output; a later "Prolog error" drain of slurmctld may follow
    # the resume below: host 2 takes no further part)
    slurm(fleet, "scontrol", "update", "NodeName=" + second, "State=RESUME")


def test_unreachable_slurm_leaves_it_to_the_nodes_health_check(fleet):
    first = fleet["names"][0]    # host 1 fails again (the first test's fix undone)
    host_vars = os.path.join(fleet["state"], "host_vars", first + ".yml")
    shutil.copy(os.path.join(HOST_VARS, "frontend-1g-copper.yml"), host_vars)
    # the controller's Slurm configuration names a controller port nothing listens on: sinfo cannot reach it
    conf = fleet["base"] / "unreachable.conf"
    with open(fleet["env"]["SLURM_CONF"], "r", encoding="utf-8") as handle:
        text = handle.read()
    conf.write_text(re.sub(r"(?m)^SlurmctldPort=\d+$", "SlurmctldPort=9", text))
    shutil.copy(os.path.join(os.path.dirname(fleet["env"]["SLURM_CONF"]), "cgroup.conf"), fleet["base"] / "cgroup.conf")
    run = fleet["base"] / "run-3"
    proc = validate(fleet, run, "--limit", first, env=dict(fleet["env"], SLURM_CONF=str(conf)))
    assert proc.returncode == 3, proc.stdout + proc.stderr[-3000:]
    assert not (run / "slurm.json").exists()
    # slurmd's health check reads the verdict file on host 1 and drains it itself
    deadline = time.monotonic() + HEALTH_WAIT_S
    while node_states(fleet)[first][0] != "drained" and time.monotonic() < deadline:
        time.sleep(1)
    states = node_states(fleet)
    assert states[first] == ("drained", REJECT_REASON), states
