# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The `gpufleet` console script for real: validate (on ansible-runner), --retest-failed, report,
bundle and demo, on replayed nodes of the simulated fleet (inventories/simulated/nodes/).

Expected values, read by hand from the recordings the node files name:
- della-h100-1gpu with its claim (inventories/simulated/host_vars): `nvidia-smi -q` =
  tests/fixtures/smi/princeton-della-h100-nvidia-smi-a-text-545.txt, one NVIDIA H100 80GB HBM3 with 81559 MiB, and
  `topo -m` of one GPU: every item its claim requires (GPU model, count, memory; one PCIe GPU has no pair, no
  NVLink, and it is sold with no NIC) is measured by the topology and gpu checks, so at level quick (facts only) it
  is ACCEPTed: the healthy node of these tests.
- hgx-h100-nv18: topo = tests/fixtures/topo/mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt, NV18
  between all 28 pairs of 8 GPUs: with the topology checks only (gpufleet_check_families) its topology passes, but
  its NV18 NVSwitch claim also names the GPU model, count and memory, which the topology family never judges:
  INCOMPLETE (an ACCEPT means every required item was measured), exit status 3.
- sold-8x-nvlink-rtx4090-pcie: topo = tests/fixtures/topo/8x-rtx4090-pcie-all-SYS-2nic-no-legend.txt,
  every one of the 28 GPU pairs SYS while the claim says NVSwitch: REJECT, 28 x topology.gpu_pairs.
- gone: SSH to 127.0.0.1 port 1 (nothing listens): UNREACHABLE.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import shutil
import re
import signal
import subprocess
import sys
import tarfile
import time

import pytest
import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIM_NODES = os.path.join(REPO_ROOT, "inventories", "simulated", "nodes")
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position

# pylint: disable=wrong-import-position
from ansible_collections.gpufleet.acceptance.plugins.action import fleet_verdict  # noqa: E402
from gpufleet.checks.verdict import Judge  # noqa: E402
from gpufleet.cli import main, validate  # noqa: E402
from gpufleet.results.store import RunDir  # noqa: E402
from gpufleet.results.verdicts import judge_run  # noqa: E402
# pylint: enable=wrong-import-position

GPUFLEET = os.path.join(os.path.dirname(sys.executable), "gpufleet")
SOLD_TOPO = os.path.join(REPO_ROOT, "tests", "fixtures", "topo", "8x-rtx4090-pcie-all-SYS-2nic-no-legend.txt")
H100_CLAIM = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "gpu_memory_gb": 80, "interconnect": "nvswitch", "nvlinks_per_pair": 18}
SOLD_CLAIM = {"gpu_model": "NVIDIA GeForce RTX 4090", "gpu_count": 8, "gpu_memory_gb": 24, "interconnect": "nvswitch"}
with open(os.path.join(REPO_ROOT, "inventories", "simulated", "host_vars", "della-h100-1gpu.yml"), encoding="utf-8") as _handle:
    DELLA_CLAIM = yaml.safe_load(_handle)["gpufleet_claim"]
# The healthy runs: facts only (level quick, no benchmark: the replayed nodes have no binary) judged by the topology
# and gpu checks, which measure every item della-h100-1gpu's claim requires.
MEASURED = {"families": ["topology", "gpu"], "level": "quick"}
PAIRS = ["GPU%d-GPU%d" % (a, b) for a in range(8) for b in range(a + 1, 8)]

pytestmark = pytest.mark.skipif(not os.path.isdir(SIM_NODES) or not os.path.exists(GPUFLEET), reason="simulated nodes or the gpufleet script missing")


def _replayed(tmp_path, node, claim, fact_groups=("topology", "gpu")):
    layout = build_fleet.build_node(os.path.join(SIM_NODES, node + ".yml"), str(tmp_path / "fleet"))
    tools = ("nvidia-smi", "lspci", "ethtool", "ibstat", "ibv_devinfo", "ip", "journalctl", "dmesg", "ofed_info", "mpirun", "ldconfig")
    host = {"gpufleet_%s_path" % tool.replace("-", "_"): os.path.join(layout["bin_dir"], tool) for tool in tools}
    host.update({"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                 "gpufleet_sysfs_root": layout["sysfs_root"], "gpufleet_procfs_root": layout["procfs_root"],
                 "gpufleet_gpu_query_formats": ["text"], "gpufleet_fact_groups": list(fact_groups), "gpufleet_claim": claim})
    return host


def _gone():
    return {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_user": "nobody", "ansible_timeout": 5,
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes", "gpufleet_claim": H100_CLAIM}


def _inventory(tmp_path, name, hosts, families=("topology",), level=None):
    path = tmp_path / name
    # the topology family alone by default: the replayed nodes' other evidence is partial (see inventories/simulated/README.md)
    group_vars = {"gpufleet_check_families": list(families)}
    if level is not None:
        group_vars["gpufleet_level"] = level
    path.write_text(yaml.safe_dump({"all": {"vars": group_vars, "hosts": hosts}}, sort_keys=False))
    return str(path)


def _env(tmp_path, extra=None):
    """The environment the console script runs in: no Ansible configuration of this machine, temporary files under
    ``tmp_path``, and ``extra``."""
    env = dict(os.environ)
    for key in ("ANSIBLE_CONFIG", "ANSIBLE_COLLECTIONS_PATH"):
        env.pop(key, None)
    env.update({"ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
                "ANSIBLE_REMOTE_TEMP": str(tmp_path / "ansible-remote")}, **(extra or {}))
    return env


def _gpufleet(tmp_path, *args):
    return subprocess.run([GPUFLEET] + list(args), cwd=str(tmp_path), env=_env(tmp_path), capture_output=True,
                          text=True, timeout=300, check=False)


def _json(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _table(stdout):
    """{node: (verdict, reasons)} from the summary table, in its order."""
    lines = stdout.split("\n\n", 1)[0].splitlines()
    assert lines[0].split() == ["NODE", "VERDICT", "FIRST", "REASONS"]
    rows = []
    for line in lines[1:]:
        parts = line.split("  ")
        parts = [part.strip() for part in parts if part.strip()]
        rows.append((parts[0], parts[1], parts[2] if len(parts) > 2 else ""))
    return rows


def test_healthy_subset_exits_0_with_progress_per_phase(tmp_path):
    inventory = _inventory(tmp_path, "inv.yml", {"della-a": _replayed(tmp_path, "della-h100-1gpu", DELLA_CLAIM),
                                                 "della-b": _replayed(tmp_path, "della-h100-1gpu", DELLA_CLAIM),
                                                 "pcie-sold": _replayed(tmp_path, "sold-8x-nvlink-rtx4090-pcie", SOLD_CLAIM)}, **MEASURED)
    proc = _gpufleet(tmp_path, "validate", "-i", inventory, "--limit", "della-a,della-b", "--out", "healthy")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # level quick (MEASURED): an accepted node judged on facts alone is labelled so, in its row as in the report
    assert _table(proc.stdout) == [("della-a", "ACCEPT (static checks only)", ""),
                                   ("della-b", "ACCEPT (static checks only)", "")]
    # and so is the accepted fleet
    assert "\nfleet ACCEPT (static checks only): 2 of 2 nodes acceptable; 2 ACCEPT\n" in proc.stdout
    results = tmp_path / "healthy"
    assert "results: %s\n" % results in proc.stdout
    assert sorted(_json(results / "run.json")["hosts"]) == ["della-a", "della-b"]
    progress = [line for line in proc.stderr.splitlines() if line.startswith("gpufleet validate: ")]
    # the fact task records each host itself: there is no separate Results phase
    for phase, task in (("Preflight", "create or reopen the results directory"), ("Facts", "every fact group, one module run per node"),
                        ("Verdict", "judge the whole fleet and write the verdicts")):
        # each line with the phase's elapsed time (Progress)
        line = r"gpufleet validate: %s 2/2 hosts done \((\d+ min )?\d+ s\): %s" % (phase, re.escape(task))
        assert any(re.fullmatch(line, text) for text in progress), proc.stderr
    phases = [line.split()[2] for line in progress]
    assert phases.index("Preflight") < phases.index("Facts") < phases.index("Verdict") < phases.index("Report")


@pytest.fixture(name="topology_only", scope="module")
def topology_only_fixture(tmp_path_factory):
    """One run of hgx-h100-nv18 at level quick, judged on the topology family alone, under a host name with a "/"
    (rack1/node1): its directory and the finished process, shared by the tests below."""
    base = tmp_path_factory.mktemp("topology-only")
    inventory = _inventory(base, "inv.yml", {"rack1/node1": _replayed(base, "hgx-h100-nv18", H100_CLAIM)},
                           level="quick")
    return base, _gpufleet(base, "validate", "-i", inventory, "--out", "topology-only")


def test_a_node_judged_on_topology_only_is_incomplete_and_exits_6(topology_only):
    # hgx-h100-nv18: its topology passes (NV18 on all 28 pairs), but its claim's GPU model, count and memory are never
    # judged by the topology family: not measured, so not ACCEPT; INCOMPLETE alone exits 3 (gpufleet/cli/common.py)
    _base, proc = topology_only
    assert proc.returncode == 6, proc.stdout + proc.stderr
    (node, verdict, reasons), = _table(proc.stdout)
    assert (node, verdict) == ("rack1/node1", "INCOMPLETE")
    assert reasons.startswith("not verified: GPU model: no result from gpu.model: not run or not recorded"), reasons
    assert "\nfleet INCOMPLETE: 0 of 1 node acceptable; 1 INCOMPLETE\n" in proc.stdout


def test_a_host_named_with_a_slash_is_run_as_ansible_playbook_runs_it(topology_only):
    # ansible-runner's default fact cache (jsonfile, a file per host name) could not write rack1/node1
    base, proc = topology_only
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert [row[:2] for row in _table(proc.stdout)] == [("rack1/node1", "INCOMPLETE")]
    # its record under the safe file name (results/store.py safe_name: "/" -> "_" and 8 hex digits of the name's SHA-1)
    records = os.listdir(base / "topology-only" / "hosts")
    assert len(records) == 1 and records[0].startswith("rack1_node1-") and records[0].endswith(".json")
    with open(base / "topology-only" / "hosts" / records[0], encoding="utf-8") as handle:
        assert json.load(handle)["host"] == "rack1/node1"


def test_rejected_and_unreachable_exit_3_then_retest_report_and_bundle(tmp_path):
    # the healthy node is della-h100-1gpu (ACCEPTed: every item of its claim measured); pcie-sold is judged on its
    # topology alone (its gpu facts are not gathered, so the gpu checks skip and its failures are its 28 GPU pairs)
    healthy = _replayed(tmp_path, "della-h100-1gpu", DELLA_CLAIM)
    sold = _replayed(tmp_path, "sold-8x-nvlink-rtx4090-pcie", SOLD_CLAIM, fact_groups=["topology"])
    inventory = _inventory(tmp_path, "inv1.yml", {"della-a": healthy, "pcie-sold": sold, "gone": _gone()}, **MEASURED)
    first = _gpufleet(tmp_path, "validate", "-i", inventory, "--out", "first", "--forks", "3")
    # a REJECT exits 3, also beside an UNREACHABLE node (gpufleet/results/exit_codes.py)
    assert first.returncode == 3, first.stdout + first.stderr
    rows = _table(first.stdout)
    assert [row[:2] for row in rows] == [("pcie-sold", "REJECT"), ("gone", "UNREACHABLE"), ("della-a", "ACCEPT (static checks only)")]
    assert rows[0][2] == "GPU0-GPU1: SYS, expected NVLink; GPU0-GPU2: SYS, expected NVLink; and 26 more"
    assert "port 1" in rows[1][2]
    assert "fleet REJECT: 1 of 3 nodes acceptable; 1 ACCEPT, 1 REJECT, 1 UNREACHABLE" in first.stdout

    # the seller fixed the network of "gone" (now reachable, a healthy node); pcie-sold is unchanged
    inventory = _inventory(tmp_path, "inv2.yml", {"della-a": healthy, "pcie-sold": sold, "gone": healthy}, **MEASURED)
    second = _gpufleet(tmp_path, "validate", "-i", inventory, "--retest-failed", "first", "--out", "second")
    assert second.returncode == 3, second.stdout + second.stderr
    assert "retesting 2 node(s) that failed in %s: gone, pcie-sold" % (tmp_path / "first") in second.stderr
    assert sorted(_json(tmp_path / "second" / "run.json")["hosts"]) == ["gone", "pcie-sold"]  # della-a was not run again
    assert [row[:2] for row in _table(second.stdout)] == [("pcie-sold", "REJECT"), ("gone", "ACCEPT (static checks only)")]
    assert "retest against first: 1 fixed, 1 still failing, 0 newly failing" in second.stdout
    diff = _json(tmp_path / "second" / "retest.json")
    assert (diff["fixed"], diff["still_failing"], diff["newly_failing"]) == (["gone"], ["pcie-sold"], [])
    assert diff["previous"] == {"path": str(tmp_path / "first"), "run_id": "first"}
    assert diff["nodes"]["gone"]["fixed_checks"][0]["id"] == "unreachable"
    still = diff["nodes"]["pcie-sold"]["still_failing_checks"]
    assert {item["id"] for item in still} == {"topology.gpu_pairs"} and sorted(item["subject"] for item in still) == PAIRS

    # report: render again from the directory alone
    os.unlink(tmp_path / "second" / "report.html")
    again = _gpufleet(tmp_path, "report", "second")
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.endswith("report: %s\n" % (tmp_path / "second" / "report.html"))
    assert os.path.getsize(tmp_path / "second" / "report.html") > 0

    # bundle: the rejected node's evidence from the first run
    bundle = _gpufleet(tmp_path, "bundle", "first", "pcie-sold", "--out", "sold.tar.gz")
    assert bundle.returncode == 0, bundle.stdout + bundle.stderr
    with tarfile.open(tmp_path / "sold.tar.gz") as tar:
        names = tar.getnames()
        topo = tar.extractfile("gpufleet-dispute-first/pcie-sold/raw/topology/topo_m.txt").read().decode("utf-8")
        readme = tar.extractfile("gpufleet-dispute-first/README.txt").read().decode("utf-8")
    assert names[:5] == ["gpufleet-dispute-first/README.txt", "gpufleet-dispute-first/run.json", "gpufleet-dispute-first/pcie-sold/host.json",
                         "gpufleet-dispute-first/pcie-sold/failing_checks.json", "gpufleet-dispute-first/pcie-sold/commands.txt"]
    with open(SOLD_TOPO, encoding="utf-8") as handle:
        assert topo == handle.read()
    assert "Node pcie-sold: REJECT" in readme and "Why it fails acceptance (28 failing checks):" in readme
    assert "     check topology.gpu_pairs on GPU0-GPU1: measured SYS, expected NVLink\n" in readme
    refused = _gpufleet(tmp_path, "bundle", "first", "not-a-node")
    assert refused.returncode == 1 and "refused: not in run first: not-a-node" in refused.stderr


def test_a_missing_inventory_exits_64(tmp_path):
    # a refused claim exits 64 too, through both entry points: tests/playbooks/test_exit_codes.py
    missing = _gpufleet(tmp_path, "validate", "-i", "nope.yml")
    assert missing.returncode == 64 and missing.stderr == "gpufleet validate: inventory nope.yml: no such file or directory\n"


def test_demo_runs_from_the_checkout(tmp_path):
    # two hosts that run no benchmark (their host_vars name none): the demo's wiring, not the benchmark phase, which
    # the benchmark fleet below and the shared run of the whole demo fleet (tests/conftest.py) run
    proc = _gpufleet(tmp_path, "demo", "--limit", "della-h100-1gpu,frontend-1g-copper", "--out", "demo")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gpufleet demo: building the replayed fleet in %s" % os.path.join(REPO_ROOT, "tests", "output", "simulated") in proc.stderr
    rows = _table(proc.stdout)
    assert {row[0] for row in rows} == {"della-h100-1gpu", "frontend-1g-copper"}
    # frontend-1g-copper: eth0 linked at 1000Mb/s (ethtool recording) on a port claimed 10G, no nvidia-smi recorded
    assert dict((row[0], row[1]) for row in rows)["frontend-1g-copper"] == "REJECT"
    assert "report: %s" % (tmp_path / "demo" / "report.html") in proc.stdout


# -- interrupted runs: Ctrl-C, then the printed resume command --------------------------------------------
# One run interrupted for real per family of phases: before the verdict in the Facts phase (the facts run below) and
# in the Benchmarks phase (the benchmark run, which holds the second of two repeats: one recorded, one running), and
# after the verdict (the facts run's resume: the printed command, run and interrupted once its verdict is written).
# The facts fleet's results directory is run three times, each run the command the one before printed: ansible-playbook
# killed with SIGKILL in the Facts phase (a fault of the controller side), Ctrl-C in the Facts phase, Ctrl-C after
# the verdict: each run proves its own stop and that the one before it is resumed.
# The run is held where the test interrupts it: by a replayed tool that waits while a flag file exists (its output is
# the recording's, unchanged), or by a test-only callback (pause_callback/pause_at_task.py) that holds
# ansible-playbook at the start of a task. The other interruption points (the Preflight phase, a benchmark running
# or recorded, the Report phase) are proved on the reference run of the benchmark fleet (the `reference` fixture, the
# benchmark run's resume, run once; its records are those of an uninterrupted run): the phase the CLI names from its
# real event stream cut there (Progress), what the results directory keeps there (RunDir), and what
# `gpufleet validate` prints for it.
# Expected verdicts, those of an uninterrupted run, judged on the topology family alone (-e gpufleet_check_families):
# pcie-sold REJECT (its 28 GPU pairs SYS, see the top of this file); h100-a INCOMPLETE: its topology passes (NV18
# on all 28 pairs) but its claim also names the GPU model, count and memory, which the topology family never judges.
EXPECTED = {"pcie-sold": "REJECT", "h100-a": "INCOMPLETE"}
PAUSE_CALLBACK_DIR = os.path.join(os.path.dirname(__file__), "pause_callback")
TOPOLOGY_ONLY = '{"gpufleet_check_families": ["topology"]}'
# the longest a held tool waits for its flag to go (a bound, not a sleep: the test removes the flag once it has
# interrupted the run, and the interrupted run does not wait for the held tool, which runs in a session of its own)
HOLD_BOUND_S = 120


def _held_tool(tmp_path, host, path_var, flag, runs_first=0):
    """``host`` with the tool of ``path_var`` wrapped: each start is logged (its arguments, a line of ``flag``.calls);
    after ``runs_first`` starts, a start while ``flag`` exists creates ``flag``.started and waits for the flag to go
    (at most HOLD_BOUND_S) before running the replayed tool, whose output is the recording's, unchanged."""
    wrapper = tmp_path / ("held-" + os.path.basename(host[path_var]))
    wrapper.write_text(
        '#!/bin/sh\nearlier=$(cat "{flag}.calls" 2>/dev/null | wc -l)\necho "$*" >> "{flag}.calls"\n'
        'if [ -e "{flag}" ] && [ "$earlier" -ge {runs_first} ]; then\n  : > "{flag}.started"; n=0\n'
        '  while [ -e "{flag}" ] && [ $n -lt {polls} ]; do sleep 0.1; n=$((n+1)); done\nfi\n'
        'exec "{tool}" "$@"\n'.format(flag=flag, runs_first=runs_first, polls=HOLD_BOUND_S * 10, tool=host[path_var]))
    wrapper.chmod(0o755)
    return dict(host, **{path_var: str(wrapper)})


def _held_nvidia_smi(tmp_path, host, flag):
    """``host`` with an nvidia-smi held while ``flag`` exists (``_held_tool``)."""
    return _held_tool(tmp_path, host, "gpufleet_nvidia_smi_path", flag)


def _interrupt_when(tmp_path, ready, args, env_extra=None):
    """Start ``gpufleet`` with ``args``, send it SIGINT (as Ctrl-C does: ansible-playbook runs in a session of
    its own) once ``ready()``, and return the finished process with its output."""
    proc = subprocess.Popen([GPUFLEET] + list(args), cwd=str(tmp_path), env=_env(tmp_path, env_extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if proc.poll() is not None or not ready():
        proc.kill()
        stdout, stderr = proc.communicate(timeout=60)
        raise AssertionError("the run was not held where it is interrupted:\n" + stdout + stderr)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    return proc.returncode, stdout, stderr


def _ansible_playbooks_naming(text):
    """Running ansible-playbook processes whose command line holds ``text`` (none may outlive the CLI)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                argv = handle.read().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        if any(os.path.basename(arg) == "ansible-playbook" for arg in argv[:2]) and any(text in arg for arg in argv):
            found.append(pid)
    return found


def _resume_line(stderr):
    lines = [line for line in stderr.splitlines() if line.startswith("gpufleet validate: resume with: ")]
    assert len(lines) == 1, stderr
    return shlex.split(lines[0][len("gpufleet validate: resume with: "):])


class Interrupted:
    """A ``gpufleet`` run stopped by SIGINT: its exit code and output, as it had ended: the ansible-playbook
    processes naming its inventory still running (none may outlive the CLI), and whether its results directory held
    a fleet.json (read before a later run of the directory writes one)."""

    def __init__(self, rc, stdout, stderr, left_running, judged):
        self.rc, self.stdout, self.stderr, self.left_running, self.judged = rc, stdout, stderr, left_running, judged


def _interrupted(tmp_path, ready, args, inventory, env_extra=None):
    """``_interrupt_when`` for a run into ``tmp_path``/run, then what it left (Interrupted)."""
    rc, stdout, stderr = _interrupt_when(tmp_path, ready, args, env_extra)
    judged = (tmp_path / "run" / "fleet.json").exists()
    return Interrupted(rc, stdout, stderr, _ansible_playbooks_naming(inventory), judged)


def _ansible_playbook_processes(text):
    """``{pid: parent pid}`` of the ansible-playbook processes (the main one and its forked workers) whose command
    line holds ``text``."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                argv = handle.read().decode("utf-8", "replace").split("\0")
            with open("/proc/%s/stat" % pid, encoding="utf-8") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if any(os.path.basename(arg) == "ansible-playbook" for arg in argv[:2]) and any(text in arg for arg in argv):
            found[int(pid)] = ppid
    return found


def _ansible_playbook_main(text):
    """The pid of the ansible-playbook process (not one of its forked workers) whose command line holds ``text``."""
    found = _ansible_playbook_processes(text)
    mains = [pid for pid, ppid in found.items() if ppid not in found]
    return mains[0] if len(mains) == 1 else None


@pytest.fixture(name="facts_killed", scope="module")
def facts_killed_fixture(tmp_path_factory):
    """h100-a and pcie-sold, their check families given by -e alone, validated until h100-a's nvidia-smi is held
    in the Facts phase and pcie-sold is recorded (each host is recorded as it answers), then ansible-playbook
    killed with SIGKILL: ``(base, inventory, flag, the finished process)``; ``flag`` holds h100-a's nvidia-smi while
    it exists."""
    base = tmp_path_factory.mktemp("facts-fleet")
    flag = base / "hold-facts"
    flag.write_text("")
    inventory = _inventory(base, "inv.yml", {
        "h100-a": _held_nvidia_smi(base, _replayed(base, "hgx-h100-nv18", H100_CLAIM), flag),
        "pcie-sold": _replayed(base, "sold-8x-nvlink-rtx4090-pcie", SOLD_CLAIM)})
    # the check families come by -e alone (the inventory's own choice is taken out): no check of another family may show
    with open(inventory, encoding="utf-8") as handle:
        without_families = yaml.safe_load(handle)
    del without_families["all"]["vars"]
    with open(inventory, "w", encoding="utf-8") as handle:
        yaml.safe_dump(without_families, handle)
    args = ["validate", "-i", inventory, "--limit", "h100-a,pcie-sold", "--level", "quick", "-e", TOPOLOGY_ONLY,
            "--out", "run"]
    proc = subprocess.Popen([GPUFLEET] + args, cwd=str(base), env=_env(base), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    started, sold_record = base / "hold-facts.started", base / "run" / "hosts" / "pcie-sold.json"
    deadline = time.monotonic() + 240
    while not (started.exists() and sold_record.exists()) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    main_pid = _ansible_playbook_main(inventory)
    if main_pid is None or proc.poll() is not None:
        proc.kill()
        raise AssertionError("the run was not held where it is killed:\n" + "".join(proc.communicate(timeout=60)))
    workers = [pid for pid, ppid in _ansible_playbook_processes(inventory).items() if ppid == main_pid]
    os.kill(main_pid, signal.SIGKILL)
    # and its forked workers: the one in h100-a's fact task would record h100-a once its tool is let go, before or
    # after gpufleet says what is on disk (a race the run's machine decides), and the resume would not gather it again
    for pid in workers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    flag.unlink()  # the held nvidia-smi, in a session of its own, runs its recording and ends
    stdout, stderr = proc.communicate(timeout=120)
    started.unlink()  # the next hold of h100-a's nvidia-smi marks it again
    return base, inventory, flag, subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def _killed_resume(stderr):
    """The resume command a run that failed (ansible-playbook killed) printed."""
    lines = [line for line in stderr.splitlines() if line.startswith("  resume with: ")]
    assert len(lines) == 1, stderr
    return shlex.split(lines[0][len("  resume with: "):])


@pytest.fixture(name="facts_interrupted", scope="module")
def facts_interrupted_fixture(facts_killed):
    """The resume command the killed run printed, run until h100-a's nvidia-smi is held again in the Facts phase and
    interrupted there (SIGINT): ``(base, inventory, the Interrupted run)``."""
    base, inventory, flag, killed = facts_killed
    flag.write_text("")
    interrupted = _interrupted(base, (base / "hold-facts.started").exists, _killed_resume(killed.stderr)[1:], inventory)
    flag.unlink()  # the held nvidia-smi, left behind in a session of its own, runs its recording and ends
    return base, inventory, interrupted


@pytest.fixture(name="resumed_after_the_verdict", scope="module")
def resumed_after_the_verdict_fixture(facts_interrupted):
    """The resume command the interrupted run printed, run and interrupted after its verdict (held at the start of
    the task that follows the verdict by the test-only callback): the Interrupted run. One run proves both that the
    printed command resumes the run and what a Ctrl-C after the verdict does."""
    base, inventory, interrupted = facts_interrupted
    marker = base / "held-after-verdict"
    hold = {"ANSIBLE_CALLBACK_PLUGINS": PAUSE_CALLBACK_DIR, "ANSIBLE_CALLBACKS_ENABLED": "pause_at_task",
            "GPUFLEET_TEST_PAUSE_TASK": "Verdict | one line per node", "GPUFLEET_TEST_PAUSE_MARKER": str(marker)}
    return _interrupted(base, marker.exists, _resume_line(interrupted.stderr)[1:], inventory, hold)


def test_sigkill_of_ansible_playbook_says_what_happened_and_what_is_kept_then_resumes(
        facts_killed, resumed_after_the_verdict):
    base, _inventory_path, _flag, killed = facts_killed
    run_dir = base / "run"
    stdout, stderr = killed.stdout, killed.stderr
    assert killed.returncode == 1, stdout + stderr
    assert stdout == ""
    assert ("gpufleet validate: the run failed (ansible-playbook killed by signal 9 (SIGKILL), not stopped by "
            "gpufleet); nothing was judged") in stderr
    assert ("  on disk in %s: run.json (status running), host records of 1 of 2 host(s): pcie-sold, no fleet.json "
            "(nothing judged)" % run_dir) in stderr
    assert "exit None" not in stderr and "fatal:" not in stderr
    resume = [line for line in stderr.splitlines() if line.startswith("  resume with: ")]
    assert len(resume) == 1, stderr
    # nothing was lost: the printed command (interrupted in turn in its Facts phase, then resumed: the facts test)
    # finishes the run with the verdicts of an uninterrupted one
    resumed = resumed_after_the_verdict
    assert resumed.rc == 3, resumed.stdout + resumed.stderr
    assert {row[0]: row[1] for row in _table(resumed.stdout)} == EXPECTED


def test_ctrl_c_in_the_facts_phase_prints_the_command_that_resumes_it(facts_interrupted, resumed_after_the_verdict):
    base, inventory, interrupted = facts_interrupted
    rc, stdout, stderr = interrupted.rc, interrupted.stdout, interrupted.stderr
    assert rc == 99, stdout + stderr
    assert stdout == ""
    assert "gpufleet validate: SIGINT: stopping ansible-playbook (waiting up to 30s for it to end)" in stderr
    assert ("gpufleet validate: interrupted (SIGINT) in the Facts phase, before the verdict: nothing was judged; "
            "what was gathered is kept in %s" % (base / "run")) in stderr
    resume = _resume_line(stderr)
    assert os.path.realpath(shutil.which(resume[0]) or resume[0]) == os.path.realpath(GPUFLEET)
    assert resume[1:] == ["validate", "-i", inventory, "--limit", "h100-a,pcie-sold", "--level", "quick",
                          "-e", TOPOLOGY_ONLY, "--out", str(base / "run")]
    assert not interrupted.judged
    assert interrupted.left_running == []  # the CLI waited for ansible-playbook to end
    assert "it was killed" not in stderr  # it ended on the forwarded signal, within the grace time

    # the printed command, run (and stopped after its verdict: test_ctrl_c_after_the_verdict_reports_the_finished_run)
    resumed = resumed_after_the_verdict
    assert resumed.rc == 3, resumed.stdout + resumed.stderr
    assert "%s holds an earlier run: resuming it" % (base / "run") in resumed.stderr
    assert {row[0]: row[1] for row in _table(resumed.stdout)} == EXPECTED
    # resumed twice: by the killed run's printed command (the run interrupted above), then by this one
    assert len(_json(base / "run" / "run.json")["resumed"]) == 2
    for host in EXPECTED:
        checks = _json(base / "run" / "hosts" / (host + ".json"))["checks"]
        assert checks and {item["id"].split(".")[0] for item in checks} == {"topology"}


def test_ctrl_c_after_the_verdict_reports_the_finished_run(facts_interrupted, resumed_after_the_verdict):
    base, _inventory_path, _interrupted_run = facts_interrupted
    resumed = resumed_after_the_verdict
    rc, stdout, stderr = resumed.rc, resumed.stdout, resumed.stderr
    assert rc == 3, stdout + stderr
    assert "gpufleet validate: interrupted (SIGINT) after the verdict was written: the run is complete" in stderr
    assert "nothing was judged" not in stderr and "resume with" not in stderr
    assert {row[0]: row[1] for row in _table(stdout)} == EXPECTED
    assert _json(base / "run" / "run.json")["status"] == "finished"
    # the playbook was stopped before its report (no "Report" progress line): the CLI rendered it
    assert "gpufleet validate: Report " not in stderr
    assert "report: %s\n" % (base / "run" / "report.html") in stdout
    assert os.path.getsize(base / "run" / "report.html") > 0
    assert resumed.left_running == [] and "it was killed" not in stderr


# -- the benchmark fleet: a Ctrl-C in its Benchmarks phase, and its resume (the reference) ------------------------
# hgx-h100-rdma-down (its claim, fact groups and single-node sweep from inventories/simulated/host_vars) runs its
# recorded single-node all-reduce (gpufleet_benchmarks: allreduce_single alone) twice: two repeats, so that a Ctrl-C
# can come while the second runs, after the first was recorded. pcie-sold gathers its topology only and runs no
# benchmark. Judged by the topology, gpu, network and benchmarks families. Expected, read by hand
# (inventories/simulated/README.md):
# - h100-down REJECT: network.nic_speed (mlx5_2/1, mlx5_7/1, mlx5_8/1 Down at 40 on ports claimed 100 Gb/s),
#   gpu.throttle (GPU2 power-braked and thermally slowed), gpu.processes (GPU2 runs /usr/bin/python); two
#   allreduce_single records, outcome ok: each repeat of `all_reduce_perf -b 128M -e 4G -f 2 -n 2 -g 8` is answered by
#   nccl/h100-8gpu-1node-nvls-allreduce-128M-4G-issue290.txt, busbw 473.60 GB/s at 4 GiB (the median of two equal
#   repeats), above the floor 460.
# - pcie-sold REJECT: topology.gpu_pairs (its 28 GPU pairs SYS, sold as NVSwitch); no benchmark record.
RDMA_DOWN_HOST_VARS = os.path.join(REPO_ROOT, "inventories", "simulated", "host_vars", "hgx-h100-rdma-down.yml")
with open(RDMA_DOWN_HOST_VARS, encoding="utf-8") as _handle:
    RDMA_DOWN_VARS = yaml.safe_load(_handle)
BENCH_REPEATS = 2
SWEEP = "-b 128M -e 4G -f 2 -n 2 -g 8"
# {host: (verdict, failing check ids, [(benchmark kind, outcome)] in record order)}
BENCH_EXPECTED = {
    "h100-down": ("REJECT", {"network.nic_speed", "gpu.throttle", "gpu.processes"},
                  [("allreduce_single", "ok")] * BENCH_REPEATS),
    "pcie-sold": ("REJECT", {"topology.gpu_pairs"}, []),
}
BENCH_VERDICTS = {host: expected[0] for host, expected in BENCH_EXPECTED.items()}
# the tasks where the interrupted runs of the benchmark fleet were held (validate_cluster.yml, benchmark.yml)
PREFLIGHT_RESULTS_TASK = "Preflight | create or reopen the results directory"
FACTS_TASK = "Facts | every fact group, one module run per node"
SINGLE_NODE_TASK = "Single node | all_reduce_perf"
SINGLE_NODE_CLEANUP_TASK = "Single node | no process of the runs survives"
REPORT_TASK = "Report | render the fleet acceptance report into the results directory"
# what the verdict and the report write into the results directory (a run interrupted before them has none of them)
JUDGED_FILES = ("fleet.json", "report.html", "report.md", "results.json", "junit.xml")


def _benchmark_fleet(tmp_path, flag):
    """The inventory of h100-down (its all_reduce_perf logged, and the second start held while ``flag`` exists) and
    pcie-sold."""
    down = _replayed(tmp_path, "hgx-h100-rdma-down", RDMA_DOWN_VARS["gpufleet_claim"],
                     fact_groups=RDMA_DOWN_VARS["gpufleet_fact_groups"])
    bin_dir = os.path.dirname(down["gpufleet_nvidia_smi_path"])
    down.update({"gpufleet_benchmarks": ["allreduce_single"], "gpufleet_benchmark_repeats": BENCH_REPEATS,
                 "gpufleet_allreduce_env": {}, "gpufleet_allreduce_sweep": RDMA_DOWN_VARS["gpufleet_allreduce_sweep"],
                 "gpufleet_all_reduce_perf_path": os.path.join(bin_dir, "all_reduce_perf"),
                 # no install manifest: the tool paths above are all there is
                 "gpufleet_manifest_dir": str(tmp_path / "no-manifest")})
    hosts = {"h100-down": _held_tool(tmp_path, down, "gpufleet_all_reduce_perf_path", flag, runs_first=1),
             "pcie-sold": _replayed(tmp_path, "sold-8x-nvlink-rtx4090-pcie", SOLD_CLAIM, fact_groups=["topology"])}
    return _inventory(tmp_path, "inv.yml", hosts, families=("topology", "gpu", "network", "benchmarks"), level="quick")


def _assert_uninterrupted_records(run_dir):
    """The results directory holds what an uninterrupted run of the benchmark fleet writes (BENCH_EXPECTED)."""
    assert _json(run_dir / "run.json")["status"] == "finished"
    for host, (verdict, failing, benchmarks) in BENCH_EXPECTED.items():
        record = _json(run_dir / "hosts" / (host + ".json"))
        assert record["verdict"] == verdict
        assert {item["id"] for item in record["checks"] if item["status"] == "fail"} == failing
        # no benchmark run twice or lost: each repeat recorded once, as in an uninterrupted run
        assert [(bench["kind"], bench["outcome"]) for bench in record["benchmarks"]] == benchmarks, record["benchmarks"]
    single, = [item for item in _json(run_dir / "hosts" / "h100-down.json")["checks"]
               if item["id"] == "benchmarks.allreduce_single"]
    assert (single["status"], single["measured"], single["expected"]) == ("pass", 473.6, 460)
    assert os.path.getsize(run_dir / "report.html") > 0


def _job_tag(run_dir):
    """The job tag benchmark.yml derives from the run's first start, the same when the run is resumed."""
    return "gpufleet-" + _json(run_dir / "run.json")["started"].replace("-", "").replace(":", "")


class BenchmarkInterrupted:
    """The benchmark fleet's run interrupted while its second all_reduce_perf runs: ``base``, ``inventory``, the
    Interrupted run, and what it had left when it ended: h100-down's benchmark records, the run's job tag, the
    all_reduce_perf starts logged (``calls``)."""

    def __init__(self, base, inventory, interrupted):
        self.base, self.inventory, self.interrupted = base, inventory, interrupted
        self.kept = _json(base / "run" / "hosts" / "h100-down.json")["benchmarks"]
        self.job_tag = _job_tag(base / "run")
        self.calls = (base / "hold-benchmark.calls").read_text().splitlines()


@pytest.fixture(name="benchmark_interrupted", scope="module")
def benchmark_interrupted_fixture(tmp_path_factory):
    """The benchmark fleet's run, SIGINT while h100-down's second repeat of all_reduce_perf is held (the first ran and
    was recorded): BenchmarkInterrupted."""
    base = tmp_path_factory.mktemp("benchmark-interrupted")
    flag = base / "hold-benchmark"
    flag.write_text("")
    inventory = _benchmark_fleet(base, flag)  # the first all_reduce_perf runs, the second is held
    interrupted = _interrupted(base, (base / "hold-benchmark.started").exists,
                               ["validate", "-i", inventory, "--out", "run"], inventory)
    flag.unlink()  # the held all_reduce_perf, left behind in a session of its own, runs its recording and ends
    return BenchmarkInterrupted(base, inventory, interrupted)


class Reference:
    """The reference run of the benchmark fleet: the resume command its interrupted run printed, run by
    ``gpufleet`` in this process, whose records are those of an uninterrupted run (_assert_uninterrupted_records):
    its exit code, output, results directory, and every ansible-runner event its Progress saw (trimmed to what
    Progress reads)."""

    def __init__(self, base, inventory, rc, stdout, stderr, events):
        self.base, self.inventory, self.rc, self.events = base, inventory, rc, events
        self.stdout, self.stderr = stdout, stderr
        self.run_dir = base / "run"

    def events_until(self, task):
        """The events up to the start of the first task named ``task`` (itself included): what a run interrupted
        at that task's start had sent to the CLI."""
        for index, event in enumerate(self.events):
            if event["event"] == "playbook_on_task_start" and event["event_data"]["task"] == task:
                return self.events[:index + 1]
        raise AssertionError("no task %r in the reference run" % task)


def _trimmed(event):
    """The parts of a runner event Progress reads (the rest, results included, is left out)."""
    data = event.get("event_data") or {}
    kept = {key: data[key] for key in ("task", "play", "name", "host", "ignore_errors") if key in data}
    if isinstance(data.get("res"), dict) and "msg" in data["res"]:
        kept["res"] = {"msg": data["res"]["msg"]}
    return {"event": event.get("event"), "event_data": kept}


@pytest.fixture(name="reference", scope="module")
def reference_fixture(benchmark_interrupted):
    """The resume of the benchmark fleet's interrupted run, once for the module: the printed command run by
    ``gpufleet`` in this process (it runs ansible-playbook through ansible-runner as the console script does), its
    Progress recording the events. A resumed run goes through every phase, as an uninterrupted one does."""
    base = benchmark_interrupted.base
    events = []

    class RecordingProgress(validate.Progress):
        def __call__(self, event):
            events.append(_trimmed(event))
            return super().__call__(event)

    stdout, stderr = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as monkeypatch:
        # the environment _gpufleet gives the console script
        for key in ("ANSIBLE_CONFIG", "ANSIBLE_COLLECTIONS_PATH"):
            monkeypatch.delenv(key, raising=False)
        for key, value in (("ANSIBLE_HOST_KEY_CHECKING", "False"), ("ANSIBLE_LOCAL_TEMP", str(base / "ansible-local")),
                           ("ANSIBLE_REMOTE_TEMP", str(base / "ansible-remote"))):
            monkeypatch.setenv(key, value)
        monkeypatch.chdir(base)
        monkeypatch.setattr(validate, "Progress", RecordingProgress)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            rc = main.main(_resume_line(benchmark_interrupted.interrupted.stderr)[1:])
    return Reference(base, benchmark_interrupted.inventory, rc, stdout.getvalue(), stderr.getvalue(), events)


def test_ctrl_c_while_a_benchmark_runs_keeps_the_recorded_repeat(benchmark_interrupted):
    interrupted, run_dir = benchmark_interrupted.interrupted, benchmark_interrupted.base / "run"
    rc, stdout, stderr = interrupted.rc, interrupted.stdout, interrupted.stderr
    assert interrupted.left_running == [] and "it was killed" not in stderr
    assert rc == 99 and stdout == "", stdout + stderr
    assert ("gpufleet validate: interrupted (SIGINT) in the Benchmarks phase, before the verdict: nothing was judged; "
            "what was gathered is kept in %s" % run_dir) in stderr
    assert not interrupted.judged
    # kept: the first repeat's record (the second was running: no record)
    assert [(bench["kind"], bench["outcome"], bench["job_id"]) for bench in benchmark_interrupted.kept] == [
        ("allreduce_single", "ok", "%s-single-h100-down-0" % benchmark_interrupted.job_tag)]
    # all_reduce_perf started once per repeat, with the recording's arguments: the first ran, the second was held
    assert benchmark_interrupted.calls == [SWEEP] * BENCH_REPEATS
    resume = _resume_line(stderr)
    assert resume[1:] == ["validate", "-i", benchmark_interrupted.inventory, "--out", str(run_dir)]


def test_resuming_the_benchmark_fleet_runs_only_what_was_not_recorded(benchmark_interrupted, reference):
    assert reference.rc == 3, reference.stdout + reference.stderr
    assert "%s holds an earlier run: resuming it" % reference.run_dir in reference.stderr
    assert len(_json(reference.run_dir / "run.json")["resumed"]) == 1
    # the verdicts and records of the uninterrupted run
    assert {row[0]: row[1] for row in _table(reference.stdout)} == BENCH_VERDICTS
    _assert_uninterrupted_records(reference.run_dir)
    # all_reduce_perf started three times: the recorded first repeat once (the resumed run skipped it), the
    # interrupted second repeat twice (the resumed run ran it again)
    assert (reference.base / "hold-benchmark.calls").read_text().splitlines() == [SWEEP] * 3
    # each repeat under its own job id, from the run's job tag (benchmark.yml), which the resume keeps: the first
    # start's, the one the kept record was written under
    assert _job_tag(reference.run_dir) == benchmark_interrupted.job_tag
    jobs = [bench["job_id"] for bench in _json(reference.run_dir / "hosts" / "h100-down.json")["benchmarks"]]
    job_tag = benchmark_interrupted.job_tag
    assert jobs == ["%s-single-h100-down-%d" % (job_tag, repeat) for repeat in range(BENCH_REPEATS)]


# -- the other interruption points, on the reference run ----------------------------------------------------------

def _phase_at(reference, task):
    """The phase a Progress names after the reference run's events up to the start of ``task``."""
    progress = validate.Progress(str(reference.run_dir), once=validate.run_once_tasks(validate.playbook_path()),
                                 write=lambda line: None, plays=validate.imported_play_phases(validate.playbook_path()))
    for event in reference.events_until(task):
        progress(event)
    return progress.phase


@pytest.mark.parametrize("task, phase", [
    pytest.param(PREFLIGHT_RESULTS_TASK, "Preflight", id="preflight"),
    pytest.param(FACTS_TASK, "Facts", id="facts"),
    # benchmark.yml's own "Preflight | ..." tasks come before these: the phase stays Benchmarks (only moves forward)
    pytest.param(SINGLE_NODE_TASK, "Benchmarks", id="benchmark-running"),
    pytest.param(SINGLE_NODE_CLEANUP_TASK, "Benchmarks", id="benchmark-recorded"),
    pytest.param(REPORT_TASK, "Report", id="report"),
])
def test_the_phase_an_interruption_names_is_the_one_its_task_belongs_to(reference, task, phase):
    assert _phase_at(reference, task) == phase


def _kept_before_the_verdict(reference, directory, benchmarks_kept):
    """``directory``: the reference's results directory as a run interrupted in the Benchmarks phase leaves it, the
    first ``benchmarks_kept`` benchmark records of each host kept: no health re-read after the benchmarks, no verdict,
    no report, the run still running. The directory is there already: the CLI holds its run.lock in it."""
    shutil.copytree(reference.run_dir, directory, dirs_exist_ok=True)
    for name in JUDGED_FILES:
        if (directory / name).exists():
            os.unlink(directory / name)
    run = RunDir.open(str(directory))
    run.update_run(status="running", finished=None)
    for record in run.host_records().values():
        record.update(checks=[], failed=[], verdict=None, coverage=None, profile=None, health_after={},
                      benchmarks=record["benchmarks"][:benchmarks_kept])
        record["phases"].pop("checks", None)
        run.write_host(record)


def _interrupted_validate(monkeypatch, reference, task, out, write_state):
    """``gpufleet validate`` on the reference's inventory, in this process, with a run_playbook that replays the
    reference's events up to the start of ``task``, leaves the results directory as ``write_state(path)`` does, and
    is stopped there by SIGINT (as the signal handler is called during a real run); returns its exit code."""

    def run_playbook(inventories, results_dir, progress=None, interruption=None, **_kwargs):
        write_state(results_dir)
        for event in reference.events_until(task):
            progress(event)
        interruption.say = lambda line: None
        interruption.handle(signal.SIGINT)
        return None, "canceled", [], results_dir + ".runner"

    monkeypatch.setattr(validate, "run_playbook", run_playbook)
    monkeypatch.setattr(validate, "program", lambda: [GPUFLEET])
    return validate.validate([reference.inventory], out=str(out))


def test_ctrl_c_in_the_preflight_phase_keeps_nothing_and_resuming_is_the_uninterrupted_run(
        reference, tmp_path, capsys, monkeypatch):
    # held at the start of the task that creates the results directory: nothing of the run is on disk yet
    directory = tmp_path / "interrupted"
    code = _interrupted_validate(monkeypatch, reference, PREFLIGHT_RESULTS_TASK, directory, lambda path: None)
    captured = capsys.readouterr()
    assert code == 99 and captured.out == ""
    assert ("gpufleet validate: interrupted (SIGINT) in the Preflight phase, before the verdict: nothing was judged\n"
            in captured.err)
    assert "kept in" not in captured.err
    resume = _resume_line(captured.err)
    assert resume == [GPUFLEET, "validate", "-i", reference.inventory, "--out", str(directory)]
    # the resumed run finds no directory to resume: it is a run from the start, as the reference's first run was
    assert not directory.exists()


@pytest.mark.parametrize("task, benchmarks_kept", [(SINGLE_NODE_TASK, 0), (SINGLE_NODE_CLEANUP_TASK, BENCH_REPEATS)],
                         ids=["benchmark-running", "benchmark-recorded"])
def test_ctrl_c_in_the_benchmarks_phase_keeps_the_recorded_runs_and_resumes_to_the_same_verdicts(
        reference, tmp_path, capsys, monkeypatch, task, benchmarks_kept):
    directory = tmp_path / "interrupted"
    code = _interrupted_validate(monkeypatch, reference, task, directory,
                                 lambda path: _kept_before_the_verdict(reference, directory, benchmarks_kept))
    captured = capsys.readouterr()
    assert code == 99 and captured.out == ""
    assert ("gpufleet validate: interrupted (SIGINT) in the Benchmarks phase, before the verdict: nothing was judged; "
            "what was gathered is kept in %s\n" % directory) in captured.err
    assert _resume_line(captured.err) == [GPUFLEET, "validate", "-i", reference.inventory, "--out", str(directory)]
    # the resume reopens the directory (the preflight's RunDir.create): each host has a record, read again because
    # it gathered only some fact groups (gpufleet_fact_groups: not a complete facts phase), its benchmark records kept;
    # the run keeps its first start (the job tag) and lists the runs recorded, which the resumed run skips
    hosts = list(BENCH_EXPECTED)
    RunDir.create(str(directory), hosts=hosts)
    outcome = RunDir.open(str(directory)).resume(hosts)
    assert (outcome["complete"], sorted(outcome["incomplete"]), outcome["missing"]) == ([], sorted(hosts), [])
    assert _job_tag(directory) == _job_tag(reference.run_dir)
    recorded = ["%s-single-h100-down-%d" % (_job_tag(directory), repeat) for repeat in range(benchmarks_kept)]
    assert RunDir.open(str(directory)).recorded_benchmark_jobs() == recorded
    # what the resumed run adds (the runs not recorded, run again, and the health re-read after them) makes the
    # reference's records: judged as the verdict task judges them, they are the uninterrupted run's verdicts
    run = RunDir.open(str(directory))
    for bench in _json(reference.run_dir / "hosts" / "h100-down.json")["benchmarks"][benchmarks_kept:]:
        run.add_benchmark("h100-down", bench)
    for host in hosts:
        record = run.read_host(host)
        record["health_after"] = _json(reference.run_dir / "hosts" / (host + ".json")).get("health_after", {})
        run.write_host(record)
    report, fleet, _profiles = judge_run(run, hosts, set(hosts), _choices(reference), Judge(None),
                                         families=["topology", "gpu", "network", "benchmarks"])
    assert {host: entry["verdict"] for host, entry in fleet["node_verdicts"].items()} == BENCH_VERDICTS
    assert {host: set(entry["failed"]) for host, entry in report["nodes"].items()} == {
        host: expected[1] for host, expected in BENCH_EXPECTED.items()}
    assert _unordered(fleet["node_verdicts"]) == _unordered(_json(reference.run_dir / "fleet.json")["node_verdicts"])


def _unordered(node_verdicts):
    """``node_verdicts`` with every list sorted: which failed check or unjudged item comes first follows the order the
    records were read and judged in (a playbook's hosts finish in any order), not what was judged."""
    def walk(value):
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return sorted((walk(item) for item in value), key=json.dumps)
        return value
    return walk(node_verdicts)


def _choices(reference):
    """The claim and check settings of each host, from the reference's inventory (its group's variables, then the
    host's own), as the verdict task takes them from hostvars."""
    with open(reference.inventory, encoding="utf-8") as handle:
        group = yaml.safe_load(handle)["all"]
    hostvars = {host: dict(group["vars"], **variables) for host, variables in group["hosts"].items()}
    return fleet_verdict.host_choices(hostvars, list(hostvars))


def test_ctrl_c_in_the_report_phase_reports_the_finished_run(reference, tmp_path, capsys, monkeypatch):
    directory = tmp_path / "interrupted"

    def verdict_written(path):
        # the verdict wrote fleet.json and finished the run; the report task had not started (the directory is
        # there already: the CLI holds its run.lock in it)
        shutil.copytree(reference.run_dir, path, dirs_exist_ok=True)
        for name in JUDGED_FILES:
            if name != "fleet.json":
                os.unlink(os.path.join(path, name))

    code = _interrupted_validate(monkeypatch, reference, REPORT_TASK, directory, verdict_written)
    captured = capsys.readouterr()
    assert code == 3, captured.out + captured.err
    assert "gpufleet validate: interrupted (SIGINT) after the verdict was written: the run is complete" in captured.err
    assert "resume with" not in captured.err and "nothing was judged" not in captured.err
    assert {row[0]: row[1] for row in _table(captured.out)} == BENCH_VERDICTS
    # the CLI rendered the report the playbook did not
    assert "report: %s\n" % (directory / "report.html") in captured.out
    assert os.path.getsize(directory / "report.html") > 0
