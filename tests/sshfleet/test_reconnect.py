# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's ssh connection master killed mid-task: one reconnect, named, and the node is not declared lost.

On a 1-host SSH fleet (tests/sshfleet/fleet.sh, real sshd) with the shipped ansible.cfg (ControlMaster=auto,
ControlPersist=60s), one ``ansible-playbook`` runs two tasks on the host, each writing into a results directory:

1. ``node_facts`` (the facts phase's action, gpu group) while the host's ``nvidia-smi`` (its replay wrapper, slowed on
   its first call only: it notes that it started, then sleeps before replaying the recording) is running;
2. ``bench_run`` (the benchmark phase's action) of a command that, on its first start, notes its pid and sleeps
   (on the second, it prints and exits).

Each time, once the node-side command has started, the test kills the controller's connection master (``ssh:
<control path> [mux]``, SIGKILL): the module's ssh exits 255 and Ansible reports the node unreachable; before this
change, the host was UNREACHABLE at the first kill (`fatal: ... UNREACHABLE`, the play over for it).

Now: each action reconnects once and runs again; the host ends ok; the host record's ``phases.facts.reconnected``
and the benchmark record's ``reconnected`` name the loss; the benchmark's second attempt ended what the first left
on the node (its sleeping command, pid as noted) before it ran. A private ControlPath directory for the run, so the
only master there is this run's.
Bounded: about 10 s (fleet up, one playbook run of two tasks, two kills, each task's rerun).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time

import pytest
import yaml

from conftest import REPO_ROOT, fleet_id, fleet_sh, leftovers, require_fleet  # pylint: disable=import-error

from gpufleet.results.store import RunDir

sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "tools"))

from slow_tool import slow_down  # noqa: E402  pylint: disable=import-error,wrong-import-position

NODE_FILE = "gpu-h100-590-1gpu.yml"  # a replayed node with nvidia-smi recordings
# the first nvidia-smi call sleeps this long: far longer than the test needs to kill the master during it
TOOL_SLEEP_S = 20
BENCH_SLEEP_S = 120
JOB_ID = "reconnect-test-1"


def playbook(path: str, host: str, run_dir: str, bench_marker: str) -> None:
    # the benchmark: its first start notes its pid and sleeps; a second start prints and exits
    command = ("if [ ! -e {m} ]; then echo $$ > {m}; sleep {s}; fi; echo second attempt"
               .format(m=shlex.quote(bench_marker), s=BENCH_SLEEP_S))
    plays = [{
        "hosts": host, "gather_facts": False,
        "tasks": [
            {"name": "facts", "gpufleet.acceptance.node_facts": {
                "groups": ["gpu"], "nvidia_smi_path": "{{ gpufleet_nvidia_smi_path }}",
                "query_formats": "{{ gpufleet_gpu_query_formats }}", "record": {"run_dir": run_dir}},
             "register": "facts_result"},
            {"name": "benchmark", "gpufleet.acceptance.bench_run": {
                "argv": ["/bin/sh", "-c", command], "job_id": JOB_ID, "timeout": 300, "run_dir": run_dir,
                "name": "reconnect test"}, "register": "bench_result"},
            {"name": "results", "ansible.builtin.copy": {
                "content": "{{ {'facts': facts_result, 'bench': bench_result} | to_json }}",
                "dest": os.path.join(os.path.dirname(path), "results.json")}, "delegate_to": "localhost"},
        ]}]
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(plays, handle)


def masters(control_dir: str):
    """Pids of the ssh connection masters on sockets in ``control_dir``."""
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True, check=True).stdout
    return [int(line.split()[0]) for line in out.splitlines()
            if line.split(None, 1)[1:] and line.split(None, 1)[1].startswith("ssh: %s/" % control_dir)
            and line.rstrip().endswith("[mux]")]


def kill_master_once_started(marker: str, control_dir: str, proc: subprocess.Popen, out_path) -> None:
    deadline = time.monotonic() + 120
    while not os.path.exists(marker) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert os.path.exists(marker), "the node-side command never started:\n" + out_path.read_text()[-3000:]
    time.sleep(0.5)  # well inside the module: the command sleeps on
    pids = masters(control_dir)
    assert len(pids) == 1, pids
    os.kill(pids[0], 9)


def test_a_killed_connection_master_gets_one_reconnect_and_the_node_is_not_lost(tmp_path, tmp_path_factory):
    require_fleet()
    # a short state path: ssh's ControlPath socket must fit the 108-byte limit of a unix socket
    base = tmp_path_factory.mktemp("reconn")
    state, control_dir = str(base / "fleet"), str(base / "cp")
    os.makedirs(control_dir)
    fleet_sh("up", "--hosts", "1", "--state", state, "--node-files",
             os.path.join(REPO_ROOT, "tests", "replay", "nodes", NODE_FILE))
    number = fleet_id(state)
    host = "gf%dh1" % number
    proc = None
    try:
        with open(os.path.join(state, "inventory.yml"), "r", encoding="utf-8") as handle:
            inventory = yaml.safe_load(handle)["all"]["children"]["sshfleet"]["hosts"]
        tool_marker, bench_marker = str(tmp_path / "nvidia-smi-started"), str(tmp_path / "bench-started")
        slow_down(inventory[host]["gpufleet_nvidia_smi_path"], tool_marker, TOOL_SLEEP_S, first_call_only=True,
                  by="tests/sshfleet/test_reconnect.py")
        run_dir = str(tmp_path / "run")
        RunDir.create(run_dir, hosts=[host])
        book = str(tmp_path / "play.yml")
        playbook(book, host, run_dir, bench_marker)
        env = dict(os.environ)
        for key in ("ANSIBLE_HOST_KEY_CHECKING", "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_TIMEOUT", "ANSIBLE_SSH_ARGS"):
            env.pop(key, None)  # the shipped ansible.cfg decides
        env.update({"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                    "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local")})
        cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
               os.path.join(state, "inventory.yml"), book, "-e", json.dumps({"ansible_control_path_dir": control_dir})]
        out_path = tmp_path / "playbook.out"
        with open(out_path, "w", encoding="utf-8") as out:
            proc = subprocess.Popen(cmd, cwd=str(tmp_path), env=env, stdout=out,  # pylint: disable=consider-using-with
                                    stderr=subprocess.STDOUT)
            kill_master_once_started(tool_marker, control_dir, proc, out_path)
            kill_master_once_started(bench_marker, control_dir, proc, out_path)
            rc = proc.wait(timeout=240)
        stdout = out_path.read_text()
        assert rc == 0, stdout[-4000:]
        assert "UNREACHABLE" not in stdout, stdout[-4000:]
        with open(tmp_path / "results.json", "r", encoding="utf-8") as handle:
            results = json.load(handle)
        lost = ("the controller's ssh connection to the node ended mid-task (ssh exited 255 without a word: the shared "
                "connection master ended, killed or after the node stopped answering its keepalives)")

        # facts: gathered on the second attempt, the loss named in the task result and the host record
        assert results["facts"]["reconnected"] == lost
        assert not results["facts"].get("failed"), results["facts"]
        assert results["facts"]["ansible_facts"]["gpufleet_gpu"]["gpu_count"] == 1
        with open(os.path.join(run_dir, "hosts", host + ".json"), "r", encoding="utf-8") as handle:
            record = json.load(handle)
        assert record["phases"]["facts"]["reconnected"] == lost
        assert record["unreachable"] is None and record["facts"]["gpu"]["gpu_count"] == 1

        # the benchmark: the first attempt's command ended before the second ran; the record says so
        with open(bench_marker, "r", encoding="utf-8") as handle:
            first_pid = int(handle.read())
        bench = results["bench"]
        assert bench["outcome"] == "ok" and bench["stdout"] == "second attempt\n", bench
        assert [(item["pid"], item["signal"]) for item in bench["earlier_ended"]][:1] == [(first_pid, "SIGTERM")]
        benchmarks = record.get("benchmarks") or []
        assert len(benchmarks) == 1, benchmarks
        assert benchmarks[0]["outcome"] == "ok"
        assert benchmarks[0]["reconnected"].startswith(lost + "; reconnected once and ran it again: ended ")
        assert "(pid %d" % first_pid in benchmarks[0]["reconnected"]
        # the first attempt's sleeper is gone (the tool's first, slowed call ends by itself within TOOL_SLEEP_S)
        assert not os.path.exists("/proc/%d/cmdline" % first_pid) or not open(  # pylint: disable=consider-using-with
            "/proc/%d/cmdline" % first_pid, "rb").read()
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        deadline = time.monotonic() + TOOL_SLEEP_S + 5
        while time.monotonic() < deadline and any(state in line for line in subprocess.run(
                ["ps", "-eo", "args="], capture_output=True, text=True, check=True).stdout.splitlines()
                if "nvidia-smi" in line):
            time.sleep(0.2)
        fleet_sh("down", "--state", state)
    assert leftovers(number, state) == []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-s"]))
