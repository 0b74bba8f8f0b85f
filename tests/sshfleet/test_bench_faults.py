# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark faults on a 4-host SSH fleet (tests/sshfleet/fleet.sh) under real Open MPI ``mpirun``:
a hung rank, a rank killed mid-run, an unreachable host; and afterwards no process of the run left.

The benchmark is the all_reduce_perf TEST DOUBLE (tests/standin/all_reduce_perf_standin.py), one
rank per host. The runner is the product's node-side code (module_utils/bench_process.run_tagged,
what the bench_run module calls) started from the root namespace, as mpirun is in
test_mpirun_standin.py; the cleanup is the product's bench_cleanup module run by ansible-playbook
over the fleet's SSH; the leftovers check is a shell loop over ``/proc/*/environ`` run over SSH on
each host. The fleet's hosts are network + UTS namespaces sharing this machine's process table, so
each host's check sees every host's processes (and reports the network namespace of each).

Stated grace: the runner's timeout T, then SIGTERM to mpirun's process group and SIGKILL GRACE s
later; the whole run must be over within T + GRACE + 5 s (mpirun's own teardown). T is HANG_TIMEOUT_S, scaled
down to what the bound needs: longer than the hung run takes to print its first row (mpirun over SSH to 4
hosts, 4 Python ranks, one 1 MiB all-reduce: 3-6 s here with the machine loaded), so the timeout, not the
start, is what ends it.

The hung run and the killed run share the fleet at the same time (``fault_runs``): the hung run waits out its
timeout idle (its ranks block or sleep), so the killed run's start and kill happen inside that wait; each run
has its own job tag and bootstrap port. One bench_cleanup playbook then ends what is left of both jobs, and one
sweep over SSH looks for leftovers of each.
Bounded: sizes 1M..8M int32, three mpirun runs and two ansible-playbook runs; ~25 s here (2 shared cores). With two
CPU hogs beside it (`yes > /dev/null` x 2, load 4-6), three runs: 37-39 s, the hung run ended 16.1-17.2 s after its
start (T = 15 s), the killed run's four ranks were up and one killed within 5-6 s.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import pytest
import yaml

from conftest import REPO_ROOT, fleet_sh, require_fleet  # pylint: disable=import-error,no-name-in-module

sys.path.insert(0, os.path.join(REPO_ROOT, "collections"))

from ansible_collections.gpufleet.acceptance.plugins.module_utils.bench_process import run_tagged  # noqa: E402  pylint: disable=wrong-import-position
from gpufleet.parsers.registry import parse  # noqa: E402  pylint: disable=wrong-import-position

STANDIN = os.path.join(REPO_ROOT, "tests", "standin", "all_reduce_perf_standin.py")
MPIRUN = shutil.which("mpirun")
HOSTS = 4
SIZES = ["-b", "1M", "-e", "8M", "-f", "2", "-n", "2", "-w", "1", "-d", "int32"]
GRACE = 5.0
# the hung run's timeout T (see the module docstring)
HANG_TIMEOUT_S = 15.0

pytestmark = pytest.mark.usefixtures("mpirun_installed")


@pytest.fixture(scope="module", name="fleet4")
def fleet4_fixture(tmp_path_factory):
    require_fleet()
    state = str(tmp_path_factory.mktemp("benchfaults") / "fleet")
    fleet_sh("up", "--hosts", str(HOSTS), "--state", state)
    # this file's own Open MPI session directories (see mpirun_argv); short: they hold unix sockets
    orte_tmpdir = tempfile.mkdtemp(prefix="gforte", dir="/tmp")
    try:
        with open(os.path.join(state, "fleet_id"), "r", encoding="utf-8") as handle:
            number = int(handle.read().strip())
        with open(os.path.join(state, "inventory.yml"), "r", encoding="utf-8") as handle:
            inventory = yaml.safe_load(handle)["all"]["children"]["sshfleet"]["hosts"]
        yield {"state": state, "id": number, "inventory": inventory, "orte_tmpdir": orte_tmpdir}
    finally:
        fleet_sh("down", "--state", state)
        shutil.rmtree(orte_tmpdir, ignore_errors=True)


def host_name(fleet, host):
    return "gf%dh%d" % (fleet["id"], host)


def mpirun_argv(fleet, hosts, port, exports=(), args=None):
    """mpirun across fleet hosts (one rank each, rank 0 first), as tests/sshfleet/test_mpirun_standin.py."""
    state, number = fleet["state"], fleet["id"]
    net = "198.18.%d" % number
    agent = ("ssh -i %s -o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o BatchMode=yes -o IdentitiesOnly=yes"
             " -o ConnectTimeout=5" % (os.path.join(state, "fleet_key"), os.path.join(state, "known_hosts")))
    argv = [MPIRUN, "--allow-run-as-root", "--mca", "plm_rsh_agent", agent, "--mca", "oob_tcp_if_include", "%s.0/24" % net,
            "--mca", "btl_tcp_if_include", "%s.0/24" % net, "--mca", "btl", "self,tcp",
            # each run's own session directory (mpirun's and its orteds'): by default every mpirun of this machine
            # shares /tmp/ompi.<node>.<uid>, and one that ends removes it when empty, so a run starting at that
            # moment fails in orte_init ("orte_session_dir failed"; seen once beside other jobs' mpiruns)
            "--mca", "orte_tmpdir_base", os.path.join(fleet["orte_tmpdir"], str(port))]
    env = ["NCCL_SOCKET_IFNAME=eth0", "NCCL_IB_DISABLE=1", "GPUFLEET_STANDIN_BOOTSTRAP=%s.%d:%d" % (net, hosts[0], port),
           "GPUFLEET_STANDIN_TIMEOUT=120"] + list(exports)
    for index, host in enumerate(hosts):
        node = fleet["inventory"][host_name(fleet, host)]
        if index:
            argv.append(":")
        argv += ["-np", "1", "-H", "%s.%d:1" % (net, host)]
        for item in env:
            argv += ["-x", item]
        argv += [node["ansible_python_interpreter"], STANDIN, "--sysfs-root", node["gpufleet_sysfs_root"]] + list(args or SIZES)
    return argv


def clean_env():
    return {key: value for key, value in os.environ.items() if not key.startswith(("NCCL_", "GPUFLEET_", "OMPI_"))}


def netns_of_hosts(fleet):
    """Network namespace inode -> fleet host number."""
    return {os.stat("/run/netns/%s" % host_name(fleet, host)).st_ino: host for host in range(1, HOSTS + 1)}


def tagged_standins(job_id):
    """{pid: network namespace inode} of the stand-in processes carrying ``GPUFLEET_JOB_ID=job_id`` (read here, as root)."""
    needle = ("GPUFLEET_JOB_ID=%s" % job_id).encode()
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as handle:
                if needle not in handle.read().split(b"\0"):
                    continue
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                if b"all_reduce_perf_standin" not in handle.read():
                    continue
            found[int(pid)] = os.stat("/proc/%s/ns/net" % pid).st_ino
        except OSError:
            continue
    return found


def ssh(fleet, host, command, timeout=60):
    state = fleet["state"]
    argv = ["ssh", "-i", os.path.join(state, "fleet_key"), "-o", "UserKnownHostsFile=%s" % os.path.join(state, "known_hosts"),
            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "ConnectTimeout=5",
            "root@198.18.%d.%d" % (fleet["id"], host), command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def leftovers_via_ssh(fleet, job_ids, hosts=range(1, HOSTS + 1)):
    """Per job, per host (over its SSH): the ``pid netns`` of every process whose environ holds the job's tag."""
    for job_id in job_ids:
        assert re.match(r"^[a-z0-9-]+$", job_id)
    script = ("for d in /proc/[0-9]*; do"
              " tags=$(tr '\\0' '\\n' < $d/environ 2>/dev/null | grep '^GPUFLEET_JOB_ID=') || continue;"
              " for job in %s; do if [ \"$tags\" = \"GPUFLEET_JOB_ID=$job\" ]; then"
              " echo \"$job ${d#/proc/} $(readlink $d/ns/net)\"; fi; done; done; echo checked" % " ".join(job_ids))
    found = {job_id: {} for job_id in job_ids}
    for host in hosts:
        proc = ssh(fleet, host, script)
        assert proc.returncode == 0 and proc.stdout.endswith("checked\n"), (host, proc.stdout, proc.stderr)
        # the check's own shell carries no tag: anything listed is a survivor
        lines = [line.split(" ", 1) for line in proc.stdout.splitlines()[:-1] if line.strip()]
        for job_id in job_ids:
            found[job_id][host] = [rest for job, rest in lines if job == job_id]
    return found


def ansible_playbook(fleet, tmp_path, tasks, name="play"):
    play = [{"name": "Benchmark faults", "hosts": "sshfleet", "gather_facts": False, "tasks": tasks}]
    path = tmp_path / ("%s.yml" % name)
    path.write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ)
    env.update({"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO_ROOT, "collections"),
                "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local")})
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", os.path.join(fleet["state"], "inventory.yml"), str(path)]
    return subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def cleanup_everywhere(fleet, tmp_path, job_ids):
    """bench_cleanup of each job on every host over SSH, one playbook; returns {job: {host: its result}}."""
    out = tmp_path / "cleanup"
    out.mkdir()
    tasks = [{"name": "End what is left of the runs", "register": "cleanup", "loop": list(job_ids),
              "gpufleet.acceptance.bench_cleanup": {"job_id": "{{ item }}", "grace": 2}},
             {"name": "Keep it", "delegate_to": "localhost", "ansible.builtin.copy": {
                 "content": "{{ cleanup.results | to_json }}", "dest": str(out) + "/{{ inventory_hostname }}.json",
                 "mode": "0600"}}]
    proc = ansible_playbook(fleet, tmp_path, tasks, name="cleanup")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cleaned = {job_id: {} for job_id in job_ids}
    for host in range(1, HOSTS + 1):
        for entry in json.loads((out / ("%s.json" % host_name(fleet, host))).read_text()):
            cleaned[entry["item"]][host] = entry
    return cleaned


def run_watching(argv, job_id, timeout, on_tagged=None):
    """run_tagged in a thread; meanwhile watch which hosts' namespaces run tagged stand-in ranks."""
    box = {}
    worker = threading.Thread(target=lambda: box.update(result=run_tagged(argv, job_id, env=clean_env(), timeout=timeout, grace=GRACE)))
    seen = set()
    started = time.monotonic()
    worker.start()
    while worker.is_alive():
        tagged = tagged_standins(job_id)
        seen |= set(tagged.values())
        if on_tagged is not None:
            on_tagged(tagged)
        time.sleep(0.3)
    worker.join()
    return box["result"], seen, time.monotonic() - started


@pytest.fixture(scope="module", name="fault_runs")
def fault_runs_fixture(fleet4, tmp_path_factory):
    """The hung run and the killed run at the same time, then one cleanup and one leftovers sweep for both:
    ``{hang: {result, seen, elapsed, job}, kill: {result, elapsed, job, victim}, cleaned, leftovers}``."""
    tmp_path = tmp_path_factory.mktemp("faultruns")
    hang = {"job": "hang-%s" % uuid.uuid4().hex[:8]}
    kill = {"job": "kill-%s" % uuid.uuid4().hex[:8], "victim": {}}
    hosts_of = netns_of_hosts(fleet4)

    def kill_rank_on_host3(tagged):
        on_hosts = {hosts_of.get(inode): pid for pid, inode in tagged.items()}
        if kill["victim"] or sorted(host for host in on_hosts if host) != [1, 2, 3, 4]:
            return
        time.sleep(1.0)  # let the ring start moving data
        pid = on_hosts[3]
        proc = ssh(fleet4, 3, "kill -9 %d" % pid)
        kill["victim"].update(pid=pid, rc=proc.returncode, stderr=proc.stderr)

    def run_hung():
        hang_argv = mpirun_argv(fleet4, [1, 2, 3, 4], 29611,
                                exports=["GPUFLEET_STANDIN_HANG_AFTER_ROWS=1", "GPUFLEET_STANDIN_HANG_RANK=1"])
        hang["result"], hang["seen"], hang["elapsed"] = run_watching(hang_argv, hang["job"], HANG_TIMEOUT_S)

    hung = threading.Thread(target=run_hung)
    hung.start()
    try:
        kill_args = ["-b", "1M", "-e", "8M", "-f", "2", "-n", "20", "-w", "1", "-d", "int32"]
        kill_argv = mpirun_argv(fleet4, [1, 2, 3, 4], 29612, args=kill_args)
        kill["result"], _seen, kill["elapsed"] = run_watching(
            kill_argv, kill["job"], 90.0, on_tagged=kill_rank_on_host3)
    finally:
        hung.join()
    jobs = [hang["job"], kill["job"]]
    return {"hang": hang, "kill": kill, "cleaned": cleanup_everywhere(fleet4, tmp_path, jobs),
            "leftovers": leftovers_via_ssh(fleet4, jobs)}


def test_hung_rank_is_a_hang_and_nothing_survives(fleet4, fault_runs):
    hang = fault_runs["hang"]
    result, seen, elapsed, timeout = hang["result"], hang["seen"], hang["elapsed"], HANG_TIMEOUT_S
    print("hang: %s (%s) in %.1f s" % (result["outcome"], result["reason"], elapsed))
    assert result["outcome"] == "hang", (result["reason"], result["stdout"][-2000:], result["stderr"][-2000:])
    assert timeout <= result["duration_s"] <= timeout + GRACE + 5
    # the tag reached the rank on every host (mpirun -x GPUFLEET_JOB_ID, added by the runner)
    hosts_of = netns_of_hosts(fleet4)
    assert sorted(hosts_of[inode] for inode in seen if inode in hosts_of) == [1, 2, 3, 4]
    # rank 0 printed the first row (1 MiB) and then waited for rank 1, which stopped after it
    res = parse("nccl", result["stdout"])
    assert [row["size_bytes"] for row in res["rows"]] == [1 << 20]
    cleaned = fault_runs["cleaned"][hang["job"]]
    assert all(entry["remaining"] == [] for entry in cleaned.values()), cleaned
    assert fault_runs["leftovers"][hang["job"]] == {host: [] for host in range(1, HOSTS + 1)}


def test_rank_killed_mid_run_is_reported_and_nothing_survives(fault_runs):
    kill = fault_runs["kill"]
    result, victim, elapsed = kill["result"], kill["victim"], kill["elapsed"]
    print("killed rank %s: %s (%s) rc %s in %.1f s" % (victim, result["outcome"], result["reason"], result["rc"], elapsed))
    assert victim and victim["rc"] == 0, victim
    assert result["outcome"] in ("crash", "failed"), (result["outcome"], result["reason"], result["stderr"][-2000:])
    assert result["reason"]
    if result["outcome"] == "crash":
        # mpirun names the rank (rank 2 runs on host 3) and the signal
        assert re.search(r"rank 2 .*exited on signal 9", result["reason"]), result["reason"]
    assert result["duration_s"] < 90.0
    cleaned = fault_runs["cleaned"][kill["job"]]
    assert all(entry["remaining"] == [] for entry in cleaned.values()), cleaned
    assert fault_runs["leftovers"][kill["job"]] == {host: [] for host in range(1, HOSTS + 1)}


def test_unreachable_host_is_reported_and_the_others_still_run(fleet4, tmp_path):
    """Runs last in this file: it stops host 4's sshd (the fleet is torn down after it)."""
    with open(os.path.join(fleet4["state"], "h4", "sshd.pid"), "r", encoding="utf-8") as handle:
        sshd_pid = int(handle.read().strip())
    # host 4's sshd (started by this file's fixture) and its sessions: also those that keep earlier
    # ansible connections (ControlPersist masters) open, else ansible would still get through
    members = subprocess.run(["ip", "netns", "pids", host_name(fleet4, 4)], capture_output=True, text=True, check=True).stdout.split()
    for pid in [sshd_pid] + [int(pid) for pid in members if pid.isdigit()]:
        try:
            with open("/proc/%d/comm" % pid, "r", encoding="utf-8") as handle:
                if handle.read().strip() == "sshd":
                    os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError):
            continue
    deadline = time.monotonic() + 10
    while ssh(fleet4, 4, "true", timeout=15).returncode == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    run_dir = str(tmp_path / "run")
    job = "single-%s" % uuid.uuid4().hex[:6]
    tasks = [
        {"name": "Start the results directory", "run_once": True, "delegate_to": "localhost",
         "gpufleet.acceptance.results_record": {"run_dir": run_dir, "phase": "start"}},
        {"name": "Single-node all-reduce (one rank)", "gpufleet.acceptance.bench_run": {
            "argv": ["{{ ansible_python_interpreter }}", STANDIN, "-b", "1M", "-e", "2M", "-f", "2", "-n", "2", "-w", "1", "-d", "int32"],
            "job_id": "%s-{{ inventory_hostname }}" % job, "timeout": 120, "parse_kind": "nccl", "kind": "allreduce_single", "run_dir": run_dir}},
    ]
    proc = ansible_playbook(fleet4, tmp_path, tasks, name="unreachable")
    print(proc.stdout[-3000:])
    for host in range(1, HOSTS + 1):
        recap = re.search(r"^%s\s+: ok=(\d+)\s+changed=\d+\s+unreachable=(\d+)\s+failed=(\d+)" % host_name(fleet4, host), proc.stdout, re.M)
        assert recap, proc.stdout
        assert (recap.group(2), recap.group(3)) == (("1", "0") if host == 4 else ("0", "0")), recap.group(0)
        with open(os.path.join(run_dir, "hosts", "%s.json" % host_name(fleet4, host)), "r", encoding="utf-8") as handle:
            (bench,) = json.load(handle)["benchmarks"]
        if host == 4:
            assert bench["outcome"] == "unreachable" and bench["parsed"] is None
            assert "198.18.%d.4" % fleet4["id"] in bench["reason"] or "Connection refused" in bench["reason"], bench["reason"]
        else:
            assert bench["outcome"] == "ok", bench
            assert [row["size_bytes"] for row in bench["parsed"]["rows"]] == [1 << 20, 2 << 20]
            assert bench["parsed"]["devices"][0]["host"] == host_name(fleet4, host)
    # a launcher asked to start a rank on the host it cannot reach: a launcher error naming it
    result = run_tagged(mpirun_argv(fleet4, [1, 2, 3, 4], 29613), "launch-%s" % job, env=clean_env(), timeout=60, grace=GRACE)
    print("mpirun with host 4 down: %s (%s)" % (result["outcome"], result["reason"]))
    assert result["outcome"] == "launcher_error", (result["reason"], result["stderr"][-2000:])
    assert "198.18.%d.4" % fleet4["id"] in result["reason"] or "ORTE" in result["reason"], result["reason"]
