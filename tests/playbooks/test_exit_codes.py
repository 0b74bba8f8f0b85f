# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One exit-code table for both entry points (gpufleet/results/exit_codes.py, docs/cli.md "Exit codes"): the codes
that no other test's run already shows, each through ``ansible-playbook playbooks/validate_cluster.yml`` and through
``gpufleet validate``, both run as a user runs them (subprocesses, the checkout's ansible.cfg).

The node is inventories/simulated/nodes/della-h100-1gpu.yml replayed on this machine (tests/replay/build_fleet.py) with
its host_vars, at level quick.
- 2, a refused command line: ``--forks -5`` (before anything runs, ansible-playbook's argparse and gpufleet's).
- 64, a refused input: the claim ``gpu_count: "eight"`` (the preflight refuses it; before, the playbook exited 2,
  the code of a rejected node, and gpufleet validate 1).
- 99 and 143: Ctrl-C (SIGINT to the process group, as a terminal sends it) and SIGTERM while the node's
  ``nvidia-smi`` runs (its replay wrapper, slowed: it notes that it started, then sleeps before replaying).
The verdict codes are shown by the runs that judge: 0 by tests/playbooks/test_validate_cluster.py (della quick) and
test_cli_validate.py; 3 (REJECT), 4 (UNREACHABLE) and 6 (INCOMPLETE) by test_validate_cluster.py, test_cli_validate.py
and tests/report/test_report_browser.py; 1 (the run failed on the controller) by test_results_disk_full.py and
tests/unit/gpufleet/cli/test_controller_failure.py.
Bounded: about 20 s here (six short runs, two interrupted within seconds of their tool's start).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIMULATED = os.path.join(REPO_ROOT, "inventories", "simulated")
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "tools"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position
from slow_tool import slow_down  # noqa: E402  pylint: disable=import-error,wrong-import-position

NODE = "della-h100-1gpu"
BIN = os.path.dirname(sys.executable)
TOOL_SLEEP_S = 60


def inventory(tmp_path, **override) -> str:
    """The della node at level quick, its host_vars with ``override``; the inventory's path."""
    layout = build_fleet.build_node(os.path.join(SIMULATED, "nodes", NODE + ".yml"), str(tmp_path / "fleet"))
    with open(os.path.join(SIMULATED, "host_vars", NODE + ".yml"), encoding="utf-8") as handle:
        host = dict(build_fleet.local_host_vars(layout), gpufleet_level="quick", **yaml.safe_load(handle))
    host["gpufleet_nccl_include_dirs"] = [os.path.join(layout["dir"], "include")]
    host.update(override)
    path = str(tmp_path / "inventory.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"all": {"hosts": {NODE: host}}}, handle, sort_keys=False)
    return path


def env(tmp_path):
    """What a user's shell has in the checkout: its ansible.cfg (and so its collection and callbacks), no colour."""
    out = dict(os.environ)
    out.update({"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO_ROOT, "collections"),
                "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"), "ANSIBLE_HOST_KEY_CHECKING": "False",
                "ANSIBLE_REMOTE_TEMP": str(tmp_path / "ansible-remote")})
    return out


def playbook_cmd(inv, out, *extra):
    book = os.path.join(REPO_ROOT, "playbooks", "validate_cluster.yml")
    extra_vars = json.dumps({"gpufleet_results_dir": out})
    return [os.path.join(BIN, "ansible-playbook"), "-i", inv, book, "-e", extra_vars] + list(extra)


def cli_cmd(inv, out, *extra):
    return [os.path.join(BIN, "gpufleet"), "validate", "-i", inv, "--out", out] + list(extra)


def run(cmd, tmp_path):
    return subprocess.run(cmd, cwd=str(tmp_path), env=env(tmp_path), capture_output=True, text=True, timeout=300,
                          check=False)


def test_a_refused_command_line_is_2_through_both(tmp_path):
    inv = inventory(tmp_path)
    book = run(playbook_cmd(inv, str(tmp_path / "r1"), "--forks", "-5"), tmp_path)
    assert book.returncode == 2, book.stdout[-2000:] + book.stderr[-2000:]
    cli = run(cli_cmd(inv, str(tmp_path / "r2"), "--forks", "-5"), tmp_path)
    assert cli.returncode == 2, cli.stdout + cli.stderr
    assert "--forks -5: the number of hosts Ansible works on at once must be a positive integer" in cli.stderr
    # nothing ran: no results directory
    assert not os.path.exists(tmp_path / "r1") and not os.path.exists(tmp_path / "r2")


def test_a_refused_claim_is_64_through_both(tmp_path):
    with open(os.path.join(SIMULATED, "host_vars", NODE + ".yml"), encoding="utf-8") as handle:
        claim = dict(yaml.safe_load(handle)["gpufleet_claim"], gpu_count="eight")
    inv = inventory(tmp_path, gpufleet_claim=claim)
    book = run(playbook_cmd(inv, str(tmp_path / "r1")), tmp_path)
    assert book.returncode == 64, book.stdout[-3000:] + book.stderr[-3000:]
    assert "gpu_count" in book.stdout and "Preflight | stop the run, naming the input" in book.stdout
    assert not os.path.exists(tmp_path / "r1" / "fleet.json")  # nothing judged
    cli = run(cli_cmd(inv, str(tmp_path / "r2")), tmp_path)
    assert cli.returncode == 64, cli.stdout + cli.stderr
    assert "an input was refused before anything ran; nothing was judged" in cli.stderr
    assert "%s: gpufleet_claim.gpu_count: must be a whole number >= 0, got 'eight'" % NODE in cli.stderr
    assert cli.stdout == "" and not os.path.exists(tmp_path / "r2" / "fleet.json")


def slow_nvidia_smi(inv_path, marker):
    """The node's nvidia-smi, slowed: it creates ``marker``, then sleeps TOOL_SLEEP_S before replaying."""
    with open(inv_path, encoding="utf-8") as handle:
        wrapper = yaml.safe_load(handle)["all"]["hosts"][NODE]["gpufleet_nvidia_smi_path"]
    slow_down(wrapper, marker, TOOL_SLEEP_S, by="tests/playbooks/test_exit_codes.py")


def interrupted(cmd, tmp_path, marker, signum):
    """Start ``cmd`` in a session of its own, send ``signum`` to its process group once the slowed tool runs; its
    code and output."""
    out_path = tmp_path / ("out-%d-%s" % (signum, os.path.basename(cmd[0])))
    with open(out_path, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(  # pylint: disable=consider-using-with
            cmd, cwd=str(tmp_path), env=env(tmp_path), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while not os.path.exists(marker) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            assert os.path.exists(marker), out_path.read_text()[-3000:]
            os.killpg(proc.pid, signum)
            rc = proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    os.unlink(marker)
    return rc, out_path.read_text()


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 99), (signal.SIGTERM, 143)])
def test_an_interrupted_run_is_99_or_143_through_both(tmp_path, signum, code):
    inv = inventory(tmp_path)
    marker = str(tmp_path / "nvidia-smi-started")
    slow_nvidia_smi(inv, marker)
    try:
        rc, output = interrupted(playbook_cmd(inv, str(tmp_path / "r1")), tmp_path, marker, signum)
        # SIGTERM ends ansible-playbook itself: a shell reports 128 + 15, Python's returncode -15
        assert rc == (code if signum == signal.SIGINT else -signal.SIGTERM), output[-3000:]
        rc, output = interrupted(cli_cmd(inv, str(tmp_path / "r2")), tmp_path, marker, signum)
        assert rc == code, output[-3000:]
        assert "before the verdict: nothing was judged" in output and "resume with: " in output
    finally:
        # the slowed tool of an interrupted run sleeps on where its module was left: end it
        subprocess.run(["pkill", "-f", str(tmp_path / "fleet")], check=False)


def test_an_inventory_without_hosts_is_64_through_both(tmp_path):
    empty = tmp_path / "empty.yml"
    empty.write_text("all:\n  hosts: {}\n", encoding="utf-8")
    book = run(playbook_cmd(str(empty), str(tmp_path / "r1")), tmp_path)
    assert book.returncode == 64, book.stdout[-3000:] + book.stderr[-3000:]
    assert "no hosts to validate in the inventory %s" % empty in book.stdout
    assert "No first item" not in book.stdout + book.stderr  # Ansible's words for what was not there
    cli = run(cli_cmd(str(empty), str(tmp_path / "r2")), tmp_path)
    assert cli.returncode == 64, cli.stdout + cli.stderr
    assert "no hosts to validate in the inventory %s" % empty in cli.stderr
