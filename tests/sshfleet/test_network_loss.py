# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node that drops off the network, or freezes, while its fact module runs does not hold the run: on a 4-host SSH
fleet (tests/sshfleet/fleet.sh), ``ansible-playbook playbooks/validate_cluster.yml`` at level quick with the shipped
ansible.cfg ends by itself, the lost nodes UNREACHABLE at the facts phase, the other two judged and reported.

The faults: the ``nvidia-smi`` of hosts 1 and 4 (their replay wrappers, tests/replay/build_fleet.py) is slowed: it
notes that it started, then sleeps before replaying the recording, so the fact module is mid-run on those nodes when
the test freezes host 1 (SIGSTOP to every process in its network namespace: its sshd, the session, the module and
the tool; the kernel still acknowledges TCP, nothing answers) and takes host 4's link down inside its namespace (``ip
link set eth0 down``: packets to and from the node vanish, nothing answers, no reset). Host 1 is thawed and the link
comes back at teardown. Behind the shared connection master, ssh's client sees only the master gone, as when it is
killed, so each gets the one reconnect a broken connection gets (gpufleet/adapter/connection.py,
tests/sshfleet/test_reconnect.py), bounded by RECONNECT_TIMEOUT_S: the cut node's connect times out, the frozen one's
handshake does (its kernel accepts the connection, its sshd never answers).

The bound: no byte comes back from the node after the cut, so the ssh connection Ansible shares for the node
(ControlMaster) asks ServerAliveInterval s after the last answer and gives up after ServerAliveCountMax unanswered
asks: at most ServerAliveInterval * (ServerAliveCountMax + 1) s after the cut, then the one reconnect's
RECONNECT_TIMEOUT_S, plus the judging and report of the other nodes (JUDGE_S). The run uses the shipped ansible.cfg's
ssh_args with the two keepalive numbers scaled down
(ANSIBLE_SSH_ARGS: KEEPALIVE_INTERVAL_S x (KEEPALIVE_COUNT + 1) = 9 s instead of the shipped 15 x 5 = 75 s, every
other option as shipped): what is proved is the mechanism, that the keepalives end a silent node's task, within the
bound they set; the shipped numbers themselves are asserted by tests/unit/test_task_timeouts.py. 3 s between asks is
far above what a loaded 2-core machine delays an answering sshd by, so the two nodes that still answer never trip
it. The fact task's own timeout (roles/facts/tasks/gather.yml, 210 s at the default tool timeout: the fact phase's
budget plus 60 s) is the fallback behind it and never reached here.
Bounded: about 15 s here (fleet up, the facts phase up to the cut, the keepalive wait, the run's end); with two CPU
hogs beside it (load 5-6 on 2 cores): ssh gave up 7.2-7.3 s after the cut, the run ended 8.9-10.1 s after it, 20-23 s
in all (those figures from the cut alone, before the frozen node was added to the same run).
"""

from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
import time
from typing import Dict, List, Tuple

import pytest
import yaml

from conftest import (  # pylint: disable=import-error
    FLEET_NODES, REPO_ROOT, fleet_id, fleet_sh, leftovers, require_fleet)

from gpufleet.adapter.connection import RECONNECT_TIMEOUT_S

sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "tools"))

from slow_tool import slow_down  # noqa: E402  pylint: disable=import-error,wrong-import-position

HOSTS = 4
# hosts 1 and 4 replay gpu-h100-590-1gpu.yml (node files are used in turn): it has nvidia-smi recordings
LOST = 4  # its link is cut
FROZEN = 1  # every process of it is stopped
# the judging and report of the three other nodes once the lost one has left the play: a few seconds, more on
# 2 busy cores
JUDGE_S = 60.0
# the slowed nvidia-smi sleeps longer than the whole bound: only the network loss can end the node's task
TOOL_SLEEP_S = 600
# the keepalives of this run (the shipped ssh_args' other options kept): 3 s x (2 + 1) = 9 s after the cut
KEEPALIVE_INTERVAL_S = 3
KEEPALIVE_COUNT = 2
REPORT_FILES = ("report.html", "report.md", "results.json", "junit.xml")


def shipped_ssh_args() -> List[str]:
    """The shipped ansible.cfg's ssh_args, split."""
    config = configparser.ConfigParser(interpolation=None)
    config.read(os.path.join(REPO_ROOT, "ansible.cfg"))
    return config.get("ssh_connection", "ssh_args").split()


def scaled_ssh_args() -> Tuple[str, float]:
    """``(ssh_args, seconds)``: the shipped ssh_args with ServerAliveInterval and ServerAliveCountMax replaced by
    KEEPALIVE_INTERVAL_S and KEEPALIVE_COUNT, and the longest ssh then waits on a silent node before it ends the
    connection."""
    args = shipped_ssh_args()
    options = [args[index + 1].split("=", 1)[0] for index, arg in enumerate(args) if arg == "-o"]
    # the shipped config sets both (else there would be nothing to scale: ssh's default never gives up)
    assert "ServerAliveInterval" in options and "ServerAliveCountMax" in options, args
    scaled = {"ServerAliveInterval": KEEPALIVE_INTERVAL_S, "ServerAliveCountMax": KEEPALIVE_COUNT}
    out = list(args)
    for index in range(1, len(args)):
        name = args[index].split("=", 1)[0]
        if args[index - 1] == "-o" and name in scaled:
            out[index] = "%s=%d" % (name, scaled[name])
    return " ".join(out), float(KEEPALIVE_INTERVAL_S * (KEEPALIVE_COUNT + 1))


def signal_namespace(namespace: str, sig: str) -> List[int]:
    """Send ``sig`` (STOP, CONT) to every process in the network namespace ``namespace``; their pids."""
    listed = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True, timeout=30, check=False)
    pids = [int(pid) for pid in listed.stdout.split()]
    if pids:
        subprocess.run(["kill", "-" + sig] + [str(pid) for pid in pids], capture_output=True, timeout=30, check=False)
    return pids


def set_link(namespace: str, state: str, check: bool = True) -> None:
    subprocess.run(["ip", "-n", namespace, "link", "set", "eth0", state], check=check, capture_output=True,
                   timeout=30)


def playbook_env(tmp_path, ssh_args: str) -> Dict[str, str]:
    env = dict(os.environ)
    for key in ("ANSIBLE_HOST_KEY_CHECKING", "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_TIMEOUT"):
        env.pop(key, None)  # the shipped ansible.cfg decides
    env.update({"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"), "ANSIBLE_SSH_ARGS": ssh_args})
    return env


def recap(stdout: str, host: str) -> Dict[str, int]:
    for line in stdout.splitlines():
        if line.startswith(host + " ") and ": ok=" in line:
            return {key: int(value) for key, value in (item.split("=") for item in line.split(":", 1)[1].split())}
    raise AssertionError("no recap line for %s:\n%s" % (host, stdout[-3000:]))


def test_network_loss_mid_module_ends_the_run_in_bounded_time(tmp_path, tmp_path_factory):
    require_fleet()
    ssh_args, keepalive_s = scaled_ssh_args()
    bound_s = keepalive_s + RECONNECT_TIMEOUT_S + JUDGE_S
    # a short state path: ssh's ControlPath socket (state/cp/...) must fit the 108-byte limit of a unix socket, and
    # tmp_path under a pytest-xdist worker (popen-gwN/test_network_loss_...) does not
    state = str(tmp_path_factory.mktemp("netloss") / "fleet")
    nodes = [os.path.join(REPO_ROOT, "tests", "replay", "nodes", name) for name in FLEET_NODES]
    fleet_sh("up", "--hosts", str(HOSTS), "--state", state, "--node-files", ",".join(nodes))
    number = fleet_id(state)
    lost_host = "gf%dh%d" % (number, LOST)  # its inventory name is also its network namespace's
    frozen_host = "gf%dh%d" % (number, FROZEN)
    silent = {lost_host: LOST, frozen_host: FROZEN}
    names: List[str] = ["gf%dh%d" % (number, index) for index in range(1, HOSTS + 1)]
    proc = None
    try:
        with open(os.path.join(state, "inventory.yml"), "r", encoding="utf-8") as handle:
            inventory = yaml.safe_load(handle)["all"]["children"]["sshfleet"]["hosts"]
        markers = {host: str(tmp_path / ("nvidia-smi-started-%s" % host)) for host in silent}
        for host, marker in markers.items():
            slow_down(inventory[host]["gpufleet_nvidia_smi_path"], marker, TOOL_SLEEP_S,
                      by="tests/sshfleet/test_network_loss.py")

        run_dir = str(tmp_path / "run")
        cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
               "-i", os.path.join(state, "inventory.yml"), os.path.join(REPO_ROOT, "playbooks", "validate_cluster.yml"),
               "-e", json.dumps({"gpufleet_results_dir": run_dir, "gpufleet_level": "quick"})]
        out_path, err_path = tmp_path / "playbook.out", tmp_path / "playbook.err"
        with open(out_path, "w", encoding="utf-8") as out, open(err_path, "w", encoding="utf-8") as err:
            started = time.monotonic()
            proc = subprocess.Popen(  # pylint: disable=consider-using-with
                cmd, cwd=str(tmp_path), env=playbook_env(tmp_path, ssh_args), stdout=out, stderr=err)
            # the fact module is running on hosts 1 and 4 once their (slowed) nvidia-smi started
            while (not all(os.path.exists(marker) for marker in markers.values()) and proc.poll() is None
                   and time.monotonic() - started < 120):
                time.sleep(0.2)
            for host, marker in markers.items():
                assert os.path.exists(marker), "%s's nvidia-smi never ran:\n%s" % (host, out_path.read_text()[-3000:])
            time.sleep(1.0)  # well inside the module: the tool sleeps TOOL_SLEEP_S
            assert signal_namespace(frozen_host, "STOP"), "no process in %s to freeze" % frozen_host
            set_link(lost_host, "down")
            cut = time.monotonic()
            given_up: Dict[str, float] = {}  # when Ansible declared each node unreachable (ssh gave up on it)
            while proc.poll() is None and time.monotonic() - cut < bound_s + 120:  # past the bound: a failure below
                text = out_path.read_text()
                for host in silent:
                    if host not in given_up and ("fatal: [%s]: UNREACHABLE!" % host) in text:
                        given_up[host] = time.monotonic()
                time.sleep(0.2)
            if proc.poll() is None:
                proc.kill()
            rc = proc.wait()
            ended = time.monotonic()
        stdout = out_path.read_text()
        took_s, whole_s = ended - cut, ended - started
        print("network loss on %s, frozen %s: ssh gave up %s s after the cut and freeze (keepalives: "
              "ServerAliveInterval %d x (ServerAliveCountMax %d + 1) = %.0f s); the run ended %.1f s after them (bound "
              "%.0f s = %.0f s + %d s reconnect + %.0f s judging); whole run %.1f s, exit %s"
              % (lost_host, frozen_host, ", ".join("%s %.1f" % (host, when - cut) for host, when in given_up.items()),
                 KEEPALIVE_INTERVAL_S, KEEPALIVE_COUNT, keepalive_s, took_s, bound_s, keepalive_s, RECONNECT_TIMEOUT_S,
                 JUDGE_S, whole_s, rc))
        assert took_s <= bound_s, "the run did not end within %.0f s of the cut:\n%s" % (bound_s, stdout[-4000:])
        assert rc != 0, stdout[-3000:]  # a node UNREACHABLE fails the run

        # the lost and the frozen node: unreachable at the fact task after one reconnect that timed out, recorded
        # UNREACHABLE with ssh's words and the facts phase open; ssh gave up within the keepalives and the reconnect
        for host, index in silent.items():
            assert recap(stdout, host)["unreachable"] == 1, stdout[-3000:]
            with open(os.path.join(run_dir, "hosts", host + ".json"), "r", encoding="utf-8") as handle:
                lost = json.load(handle)
            print("%s: verdict %s, unreachable %r, phases %r"
                  % (host, lost["verdict"], lost["unreachable"], lost.get("phases")))
            assert lost["verdict"] == "UNREACHABLE"
            assert lost["unreachable"].startswith("lost during facts (node_facts): "), lost["unreachable"]
            assert "198.18.%d.%d" % (number, index) in lost["unreachable"], lost["unreachable"]
            assert "timed out; one reconnect was tried after the controller's ssh connection to the node ended" in \
                lost["unreachable"], lost["unreachable"]
            assert given_up[host] - cut <= keepalive_s + RECONNECT_TIMEOUT_S + JUDGE_S, given_up
            # lost in the facts phase: it answered no fact group, its facts phase stays open (resume gathers it again)
            assert not lost["phases"]["facts"]["complete"], lost["phases"]
            assert lost["facts"] == {"topology": None, "gpu": None, "nic": None, "host": None}, lost["facts"]
            # its entry in the verdict lines (one list for the fleet: "msg": [..., "<host>: UNREACHABLE - ...", ...])
            assert '\n        "%s: UNREACHABLE - ' % host in stdout, stdout[-3000:]

        # the two others: gathered, judged and reported
        for host in names:
            if host in silent:
                continue
            assert recap(stdout, host)["unreachable"] == 0, stdout[-3000:]
            with open(os.path.join(run_dir, "hosts", host + ".json"), "r", encoding="utf-8") as handle:
                record = json.load(handle)
            assert record["verdict"] not in (None, "UNREACHABLE"), (host, record["verdict"])
            phases = record["phases"]
            assert phases["facts"]["complete"] and phases["checks"]["complete"], (host, phases)
        for name in REPORT_FILES:
            assert os.path.isfile(os.path.join(run_dir, name)), (name, os.listdir(run_dir))
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        set_link(lost_host, "up", check=False)  # restore the link before teardown, whatever happened
        signal_namespace(frozen_host, "CONT")
        fleet_sh("down", "--state", state)
    assert leftovers(number, state) == []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-s"]))
