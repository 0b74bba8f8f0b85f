# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SSH fleet for real: namespaces, sshd per host, tc on a link, real iperf3, ansible over SSH.

Bounded: iperf3 runs 1 s omitted + 3 s measured per pair, a handful of pairs.

Load: a shaped rate is asserted with the tolerance iperf3 itself needs (TCP/IP/Ethernet headers), so the rate must be
one the sender reaches whatever else runs. At 1 Gbit/s one run beside `make sanity` measured 0.80 Gbit/s (the CPU,
not the link, was the limit). At the rates used now, with two CPU hogs (`yes > /dev/null`) and other pytest files
beside (load 5-10), four runs measured: the 500 Mbit/s control links 0.468-0.478 Gbit/s (0.94-0.96 of the rate), the
200 Mbit/s throttled host 0.190-0.192 Gbit/s both ways (0.95-0.96), the unthrottled pair 2.5-11.9 Gbit/s.

Processes: `down` ends the fleet's processes and waits until they have died; a dead process that its parent (or init,
for a killed `up`) has not reaped yet is a zombie, which holds nothing, so the tests check for running processes.
"""

from __future__ import annotations

import os
import random
import re
import statistics
import subprocess
import sys
import time

import pytest

from conftest import FLEET_SH, REPO_ROOT, fleet_id, fleet_sh, leftovers  # pylint: disable=import-error
import iperf_pairs  # pylint: disable=import-error

# the tc rate of the throttled host: well under what iperf3 moves over a veth with both cores busy (at 1gbit, one run
# beside `make sanity` measured 0.80 Gbit/s: the sender, not the link, was the limit)
RATE_BPS = 200e6
SECONDS = 3


def ssh(state, host, command):
    argv = ["ssh", "-i", os.path.join(state, "fleet_key"), "-o", "UserKnownHostsFile=%s" % os.path.join(state, "known_hosts"),
            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "ConnectTimeout=10",
            "root@198.18.%d.%d" % (fleet_id(state), host), command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_ssh_reaches_each_host_on_its_own_address(fleet):
    net = "198.18.%d" % fleet["id"]
    for host in range(1, fleet["hosts"] + 1):
        proc = ssh(fleet["state"], host, "hostname; ip -4 -o addr show dev eth0")
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert lines[0] == "gf%dh%d" % (fleet["id"], host)
        addresses = re.findall(r"inet (\S+)", "\n".join(lines[1:]))
        assert addresses == ["%s.%d/24" % (net, host)]


def test_ssh_refuses_without_the_fleet_key(fleet):
    argv = ["ssh", "-o", "UserKnownHostsFile=%s" % os.path.join(fleet["state"], "known_hosts"), "-o", "StrictHostKeyChecking=yes",
            "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "IdentityFile=/dev/null", "-o", "PasswordAuthentication=no",
            "root@198.18.%d.1" % fleet["id"], "true"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 255
    assert "Permission denied" in proc.stderr


def test_inventory_and_hostfile(fleet):
    import yaml  # pylint: disable=import-outside-toplevel

    with open(os.path.join(fleet["state"], "inventory.yml"), "r", encoding="utf-8") as handle:
        hosts = yaml.safe_load(handle)["all"]["children"]["sshfleet"]["hosts"]
    assert sorted(hosts) == ["gf%dh%d" % (fleet["id"], i) for i in (1, 2, 3)]
    first = hosts["gf%dh1" % fleet["id"]]
    assert first["ansible_host"] == "198.18.%d.1" % fleet["id"]
    assert "StrictHostKeyChecking=yes" in first["ansible_ssh_common_args"]
    assert os.path.isabs(first["ansible_python_interpreter"])
    assert first["gpufleet_nvidia_smi_path"].startswith(os.path.join(fleet["state"], "h1", "replay"))
    with open(os.path.join(fleet["state"], "hostfile"), "r", encoding="utf-8") as handle:
        assert handle.read().splitlines() == ["198.18.%d.%d slots=1" % (fleet["id"], i) for i in (1, 2, 3)]


def _measure_alike(state, pairs):
    """Every pair once; a pair below 0.8x the median is measured again (at most twice): this
    machine's CPUs are shared, and one slow second must not pass for a slow link."""
    rates = iperf_pairs.measure_pairs(state, pairs, SECONDS)
    for _attempt in range(2):
        median = statistics.median(rates.values())
        slow = [pair for pair, bps in rates.items() if bps < 0.8 * median]
        if not slow:
            break
        for pair in slow:
            rates[pair] = max(rates[pair], iperf_pairs.measure(state, pair[0], pair[1], SECONDS)["received_bps"])
    return rates


# The fleet's line rate in the control run, every link alike: far below what the shared cores sustain while other
# work loads them (2.5 Gbit/s medians came out at 1.8-1.9 Gbit/s beside one playbook; with two CPU hogs and two
# other pytest workers beside, 500 Mbit/s still holds: see the module docstring).
NOMINAL_BPS = 500e6


def test_unthrottled_control_run_every_pair_alike(fleet):
    """No host singled out: every link at the same nominal line rate, as NICs of one model are.

    A bare veth has no line rate: its speed is whatever the 2 shared cores give the copy at
    that moment (3.7 to 15.9 Gbit/s measured here), so the control run gives every host's link
    the same tbf rate, below what the CPUs sustain, and asserts no pair stands out.
    """
    pairs = [(1, 2), (2, 3), (3, 1)]
    hosts = range(1, fleet["hosts"] + 1)
    for host in hosts:
        fleet_sh("throttle", "--state", fleet["state"], "--host", str(host), "--rate", "%dmbit" % (NOMINAL_BPS / 1e6))
    try:
        rates = _measure_alike(fleet["state"], pairs)
    finally:
        for host in hosts:
            fleet_sh("unthrottle", "--state", fleet["state"], "--host", str(host))
    print("control run (Gbit/s):", {"h%d->h%d" % pair: round(bps / 1e9, 3) for pair, bps in rates.items()})
    median = statistics.median(rates.values())
    assert min(rates.values()) >= 0.8 * median, rates
    assert 0.8 * NOMINAL_BPS <= median <= NOMINAL_BPS, rates


def test_throttled_random_host_measures_the_tc_rate(fleet):
    seed = int(time.time() * 1000) % 100000
    throttled = random.Random(seed).randint(1, fleet["hosts"])
    others = [h for h in range(1, fleet["hosts"] + 1) if h != throttled]
    print("seed %d: throttled host %d at %d Mbit/s" % (seed, throttled, RATE_BPS / 1e6))
    sys.stderr.write("sshfleet: seed %d, throttled host %d\n" % (seed, throttled))
    fleet_sh("throttle", "--state", fleet["state"], "--host", str(throttled), "--rate", "%dmbit" % (RATE_BPS / 1e6))
    try:
        into = iperf_pairs.measure(fleet["state"], others[0], throttled, SECONDS)["received_bps"]
        out_of = iperf_pairs.measure(fleet["state"], throttled, others[1], SECONDS)["received_bps"]
        free = iperf_pairs.measure(fleet["state"], others[0], others[1], SECONDS)["received_bps"]
    finally:
        fleet_sh("unthrottle", "--state", fleet["state"], "--host", str(throttled))
    print("into h%d %.3f, out of h%d %.3f, h%d->h%d %.3f Gbit/s" % (throttled, into / 1e9, throttled, out_of / 1e9, others[0], others[1], free / 1e9))
    # goodput under a tbf: TCP/IP/Ethernet headers take ~4-5 %
    assert 0.85 * RATE_BPS <= into <= 1.0 * RATE_BPS
    assert 0.85 * RATE_BPS <= out_of <= 1.0 * RATE_BPS
    # the link between the two other hosts is not throttled
    assert free > 2 * RATE_BPS
    # and unthrottle really lifts it
    assert iperf_pairs.measure(fleet["state"], others[0], throttled, 2)["received_bps"] > 2 * RATE_BPS


def test_delay_without_netem_fails_cleanly_or_applies(fleet):
    proc = fleet_sh("throttle", "--state", fleet["state"], "--host", "1", "--delay", "5ms", check=False)
    try:
        if proc.returncode != 0:
            assert "no netem qdisc" in proc.stderr
        else:
            ping = subprocess.run(["ip", "netns", "exec", "gf%dh2" % fleet["id"], "ping", "-c", "3", "-i", "0.2", "-W", "2",
                                   "198.18.%d.1" % fleet["id"]], capture_output=True, text=True, timeout=30, check=False)
            rtts = [float(value) for value in re.findall(r"time=([\d.]+) ms", ping.stdout)]
            # 5 ms each way on host 1's link (both ends shaped)
            assert rtts and min(rtts) >= 9.5, ping.stdout
    finally:
        fleet_sh("unthrottle", "--state", fleet["state"], "--host", "1")


def test_ansible_playbook_over_ssh_reaches_each_host(fleet, tmp_path):
    playbook = os.path.join(REPO_ROOT, "playbooks", "gather_facts.yml")
    if not os.path.exists(playbook):
        playbook = str(tmp_path / "ping.yml")
        with open(playbook, "w", encoding="utf-8") as handle:
            handle.write("- name: Ping\n  hosts: all\n  gather_facts: false\n  tasks:\n    - name: Ping\n      ansible.builtin.ping:\n")
    env = dict(os.environ)
    env["ANSIBLE_CONFIG"] = os.path.join(REPO_ROOT, "ansible.cfg")
    env["ANSIBLE_COLLECTIONS_PATH"] = os.path.join(REPO_ROOT, "collections")
    env["ANSIBLE_NOCOLOR"] = "1"
    env["ANSIBLE_LOCAL_TEMP"] = str(tmp_path / "ansible-local")
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", os.path.join(fleet["state"], "inventory.yml"), playbook]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for host in range(1, fleet["hosts"] + 1):
        name = "gf%dh%d" % (fleet["id"], host)
        recap = re.search(r"^%s\s+: ok=(\d+)\s+changed=\d+\s+unreachable=(\d+)\s+failed=(\d+)" % name, proc.stdout, re.M)
        assert recap, proc.stdout
        assert int(recap.group(1)) >= 1 and recap.group(2) == "0" and recap.group(3) == "0"
    if "gather_facts" in playbook:
        # host 2 replays topo/gengwg-dgx-a100-nv12-12xmlx5-tabs-numa.txt: 8 GPUs, NV12 between every pair
        assert "gf%dh2: " % fleet["id"] in proc.stdout
        assert "all 28 pairs NV12" in proc.stdout


def running(pid):
    """Whether process ``pid`` still runs: it exists and is no zombie (state Z/X in /proc/PID/stat)."""
    try:
        with open("/proc/%s/stat" % pid, "r", encoding="utf-8", errors="replace") as handle:
            state = handle.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def test_down_removes_everything_and_is_idempotent(requirements, tmp_path):  # pylint: disable=unused-argument
    state = str(tmp_path / "fleet")
    fleet_sh("up", "--hosts", "2", "--state", state)
    number = fleet_id(state)
    # something running on the fleet that down must stop: an iperf3 server with its pid file
    pid_file = os.path.join(state, "pids", "iperf3-extra.pid")
    subprocess.run(["ip", "netns", "exec", "gf%dh1" % number, "iperf3", "-s", "-D", "-B", "198.18.%d.1" % number, "-I", pid_file],
                   check=True, timeout=30)
    deadline = time.monotonic() + 10
    while not os.path.exists(pid_file) and time.monotonic() < deadline:
        time.sleep(0.05)
    with open(pid_file, "r", encoding="utf-8") as handle:
        server = int(handle.read().strip())
    assert leftovers(number, state) != []
    fleet_sh("down", "--state", state)
    assert leftovers(number, state) == []
    assert not running(server)
    second = fleet_sh("down", "--state", state)
    assert "nothing to tear down" in second.stderr


def test_two_fleets_coexist(fleet, tmp_path):
    state = str(tmp_path / "other")
    fleet_sh("up", "--hosts", "1", "--state", state)
    try:
        other = fleet_id(state)
        assert other != fleet["id"]
        assert ssh(state, 1, "hostname").stdout.strip() == "gf%dh1" % other
    finally:
        fleet_sh("down", "--state", state)
    assert leftovers(other, state) == []
    assert ssh(fleet["state"], 1, "hostname").stdout.strip() == "gf%dh1" % fleet["id"]


def test_failed_up_rolls_back(requirements, tmp_path):  # pylint: disable=unused-argument
    # SYNTHETIC broken node file (test input): it names a recording that does not exist.
    bad = tmp_path / "synthetic-missing-recording.yml"
    bad.write_text("description: synthetic, names a missing recording\ncommands:\n  nvidia-smi -q:\n"
                   "    stdout: tests/fixtures/smi/does-not-exist.txt\n    rc: 0\n")
    state = str(tmp_path / "fleet")
    proc = fleet_sh("up", "--hosts", "2", "--state", state, "--node-files", str(bad), check=False)
    assert proc.returncode != 0
    assert "missing recording" in proc.stderr
    assert "rolling back" in proc.stderr
    assert not os.path.exists(state)
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert state not in namespaces
    fleet_sh("down", "--state", state)


def test_down_after_killed_up(requirements, tmp_path):  # pylint: disable=unused-argument
    # a TEST DOUBLE for sshd that never daemonises: `up` hangs at host 1 and is killed there
    hanging = tmp_path / "hanging_sshd_double.sh"
    hanging.write_text("#!/bin/sh\nexec sleep 60\n")
    hanging.chmod(0o755)
    state = str(tmp_path / "fleet")
    env = dict(os.environ, GPUFLEET_SSHD=str(hanging))
    with subprocess.Popen([FLEET_SH, "up", "--hosts", "3", "--state", state], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as up:
        deadline = time.monotonic() + 20
        number = None
        while time.monotonic() < deadline:
            if os.path.exists(os.path.join(state, "fleet_id")) and number is None:
                number = fleet_id(state)
            if number is not None:
                pids = subprocess.run(["ip", "netns", "pids", "gf%dh1" % number], capture_output=True, text=True, check=False).stdout.split()
                if pids:
                    break
            time.sleep(0.05)
        up.kill()
        up.wait(timeout=10)
    assert number is not None and pids, "up never reached host 1"
    assert leftovers(number, state) != []
    fleet_sh("down", "--state", state)
    assert leftovers(number, state) == []
    # `down` returns once they died; a zombie (dead, its reaping left to init once `up` was killed) runs nothing
    assert [pid for pid in pids if running(pid)] == []


@pytest.mark.parametrize("args, message", [
    (["up", "--hosts", "0"], "--hosts must be"),
    (["throttle", "--host", "1", "--rate", "1gbit"], "holds no fleet"),
])
def test_bad_arguments(requirements, tmp_path, args, message):  # pylint: disable=unused-argument
    proc = fleet_sh(*(args + ["--state", str(tmp_path / "x")]), check=False)
    assert proc.returncode != 0
    assert message in proc.stderr
