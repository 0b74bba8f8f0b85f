# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The speed options (ansible.cfg, strategies) change nothing but the speed.

playbooks/validate_cluster.yml runs on three nodes of inventories/simulated/ (--limit) once per
configuration: the shipped ansible.cfg (forks 25, pipelining, one node_facts module run per node),
Ansible's own defaults with the four fact modules (forks 5, no pipelining, gpufleet_fact_collector
separate), the Mitogen strategy (mitogen_linear) and the free strategy. Every configuration must
give every node the verdict written below by hand (the reasons are in
tests/playbooks/test_simulated_verdicts.py and inventories/simulated/README.md) and the same
status for every check as the shipped configuration.

~20 s on 2 cores, up to ~50 s on a loaded machine (four validate_cluster.yml runs of three hosts); the budget
is 90 s.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# host -> (verdict, ids of the failing checks): a failing check in each of the gpu, network and host fact groups and a
# failed fact group (nic). Each host is one more module run per task under every configuration: a fourth node (one with
# only its topology recorded) would add cost and no fact group these three leave out; its INCOMPLETE verdict is
# tests/playbooks/test_simulated_verdicts.py's.
EXPECTED = {
    "hgx-h100-nv18": ("REJECT", {"gpu.throttle", "network.ib_port_errors"}),
    "hgx-h100-xid-peermem": ("REJECT", {"host.memlock", "host.xid"}),
    "azure-a100-nvlink-inactive": ("REJECT", {"facts.nic"}),
}


def _mitogen_strategy_dir():
    try:
        import ansible_mitogen  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    return os.path.join(os.path.dirname(ansible_mitogen.__file__), "plugins", "strategy")


CONFIGS = {
    # name: (environment, extra vars)
    "shipped": ({}, {}),
    "ansible-defaults-four-modules": ({"ANSIBLE_FORKS": "5", "ANSIBLE_PIPELINING": "False"}, {"gpufleet_fact_collector": "separate"}),
    "mitogen_linear": ({"ANSIBLE_STRATEGY": "mitogen_linear"}, {}),
    "free": ({"ANSIBLE_STRATEGY": "free"}, {}),
}


def _validate(tmp, name, inventory):
    env_extra, extra_vars = CONFIGS[name]
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env.update({"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO_ROOT, "collections"),
                "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(tmp / "ansible-local")})
    env.update(env_extra)
    if env.get("ANSIBLE_STRATEGY") == "mitogen_linear":
        strategies = _mitogen_strategy_dir()
        if strategies is None:
            pytest.skip("mitogen is not installed (pip install mitogen): the mitogen_linear configuration is not checked")
        env["ANSIBLE_STRATEGY_PLUGINS"] = strategies
    run_dir = tmp / ("results-" + name)
    # The fact-collection options are compared here, not the benchmark phase: hgx-h100-nv18's recorded two-node
    # all-reduce (host_vars gpufleet_benchmarks) needs hgx-h100-rdma-down in the play, and under the free strategy the
    # multi-node run of playbooks/benchmark.yml (run_once) is started by every host of the play.
    # The report is rendered (its role runs under every strategy) in one format: the comparison reads hosts/*.json only.
    extra = dict(extra_vars, gpufleet_results_dir=str(run_dir), gpufleet_benchmarks=[], report_formats=["md"])
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory, "--limit", ",".join(sorted(EXPECTED)),
           os.path.join(REPO_ROOT, "playbooks", "validate_cluster.yml"), "-e", json.dumps(extra)]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    # every node here is REJECT or INCOMPLETE: the playbook fails the run after writing the verdicts (exit 3: a REJECT)
    assert proc.returncode == 3, name + "\n" + proc.stdout[-4000:] + proc.stderr[-2000:]
    judged = {}
    for path in glob.glob(str(run_dir / "hosts" / "*.json")):
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
        judged[record["host"]] = {"verdict": record["verdict"], "failed": set(record["failed"]),
                                  "checks": sorted((item["id"], str(item.get("subject")), item["status"]) for item in record["checks"])}
    assert sorted(judged) == sorted(EXPECTED), name + "\n" + proc.stdout[-6000:] + proc.stderr[-2000:]
    return judged


@pytest.fixture(name="shipped", scope="module")
def shipped_fixture(simulated_fleet, tmp_path_factory):
    return _validate(tmp_path_factory.mktemp("speed"), "shipped", simulated_fleet["inventory"])


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_same_verdicts_and_checks(name, shipped, tmp_path, simulated_fleet):
    judged = shipped if name == "shipped" else _validate(tmp_path, name, simulated_fleet["inventory"])
    assert sorted(judged) == sorted(EXPECTED), name
    for host, (verdict, failed) in EXPECTED.items():
        assert (judged[host]["verdict"], judged[host]["failed"]) == (verdict, failed), (name, host)
        assert judged[host]["checks"] == shipped[host]["checks"], (name, host)


def _ad_hoc(tmp_path, pipelining, module, args):
    """``ansible localhost -c local -m MODULE -a ARGS -vvv`` with the shipped ansible.cfg (``pipelining``: its
    ANSIBLE_PIPELINING, None to keep the file's); ``(the run's stdout, the steps it took: its EXEC and PUT lines)``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env.update({"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO_ROOT, "collections"),
                "ANSIBLE_LOCAL_TEMP": str(tmp_path / "local"), "ANSIBLE_REMOTE_TEMP": str(tmp_path / "remote")})
    if pipelining:
        env["ANSIBLE_PIPELINING"] = pipelining
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-c", "local", "-e",
           "ansible_python_interpreter=" + sys.executable, "-m", module, "-a", args, "-vvv"]
    proc = subprocess.run(cmd, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    steps = [line for line in proc.stdout.splitlines() if line.startswith(("<127.0.0.1> EXEC ", "<127.0.0.1> PUT "))]
    return proc.stdout, steps


@pytest.mark.parametrize("pipelining, steps", [(None, 1), ("False", 5)])
def test_the_shipped_cfg_pipelines_the_local_connection(tmp_path, pipelining, steps):
    """With the shipped ansible.cfg one module run over the local connection (the controller's own tasks, a fleet of
    ``ansible_connection: local``) is one step: the module piped to the interpreter. Without pipelining Ansible takes
    five: mkdir, the module copied, chmod, run, rm."""
    stdout, taken = _ad_hoc(tmp_path, pipelining, "ansible.builtin.command", "true")
    assert len(taken) == steps, stdout[-3000:]


@pytest.mark.parametrize("pipelining", [None, "False"])
def test_node_facts_runs_its_program_when_pipelining_and_the_module_when_not(tmp_path, pipelining):
    """With the shipped ansible.cfg node_facts' action feeds the node's interpreter its own program (one step, no
    module file: gpufleet/adapter/node_program.py); without pipelining Ansible runs the module. The same facts."""
    topo = os.path.join(REPO_ROOT, "tests", "fixtures", "topo", "gengwg-dgx-a100-nv12-12xmlx5-tabs-numa.txt")
    fake = tmp_path / "nvidia-smi"
    fake.write_text('#!/bin/sh\n[ "$*" = "topo -m" ] && exec cat %s\nexit 127\n' % topo)
    fake.chmod(0o755)
    args = json.dumps({"groups": ["topology"], "nvidia_smi_path": str(fake)})
    stdout, steps = _ad_hoc(tmp_path, pipelining, "gpufleet.acceptance.node_facts", args)
    module_file = [line for line in stdout.splitlines() if line.startswith("Using module file")]
    if pipelining is None:
        assert (len(steps), module_file) == (1, []), stdout[-3000:]
    else:
        assert len(steps) == 5 and module_file[0].endswith("plugins/modules/node_facts.py"), stdout[-3000:]
    # the matrix as recorded, read by the topology group's parser on the controller: 8 GPUs
    assert '"gpu_count": 8' in stdout, stdout[-3000:]
