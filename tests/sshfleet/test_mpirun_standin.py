# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The all_reduce_perf TEST DOUBLE (tests/standin/all_reduce_perf_standin.py) across two SSH
fleet hosts under real Open MPI ``mpirun``, on a normal and on a ``tc``-throttled link.

mpirun runs in the root namespace (its out-of-band channel uses the bridge address
198.18.X.254), starts one ``orted`` per host over the fleet's own SSH (fleet key, strict host
key checking) and one rank per host; each rank is the node's Python (the inventory's
``ansible_python_interpreter``: the namespaces share this machine's file system) running the
stand-in, which moves the data over the hosts' ``eth0``. Its output is read with the product's
``nccl`` parser.

The pair always holds host 3 (its replay node, nic-h100-ndr-ib, has 8 IB HCAs in its sysfs
tree, so its rank probes them, cannot open them and falls back to sockets, as NCCL does) and
one of hosts 1 and 2; which one, and which of the pair is throttled, is drawn at random on
each run (the seed is printed).

The throttled link is shaped to 100 Mbit/s (12.5 MB/s): low enough that the stand-in moves it with
CPU to spare, so the throttled figure is the link's whatever else runs, and the unthrottled pair
(CPU-bound, 0.10-0.29 GB/s) stays far above it. Measured with two CPU hogs beside the file (`yes >
/dev/null` x 2, load 5-6 on 2 cores shared with other jobs), three runs: throttled busbw 0.0103-0.0120
GB/s = 0.82-0.96 x R/8 (the bounds are 0.5 and 1.05 x R/8), unthrottled 0.10-0.29 GB/s (the bound is
1.7 x R/8 = 0.021).
At 200 Mbit/s and 16 MiB the throttled run was 0.72-0.81 x R/8 and the unthrottled 0.044 GB/s at
worst, near its 1.7 x R/8 = 0.0425 bound.

Bounded: sizes 1M..4M, 3 iterations + 1 warmup (77 MiB through the throttled link: ~7 s); each
mpirun has a timeout and is killed with its process group; the throttle is lifted in ``finally``.
~16-20 s in all here (2 shared cores; two CPU hogs beside it: 21-30 s).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import REPO_ROOT, fleet_sh  # pylint: disable=import-error

sys.path.insert(0, os.path.join(REPO_ROOT, "collections"))

from gpufleet.parsers.registry import parse  # noqa: E402  pylint: disable=wrong-import-position

STANDIN = os.path.join(REPO_ROOT, "tests", "standin", "all_reduce_perf_standin.py")
MPIRUN = shutil.which("mpirun")
SIZES = ["-b", "1M", "-e", "4M", "-f", "2", "-n", "3", "-w", "1", "-d", "int32"]
LARGEST = 4 * 1024 * 1024
RATE = "100mbit"
RATE_BPS = 100e6  # tc's "mbit" is 10^6 bit/s
RUN_TIMEOUT = 90
IB_HOST = 3  # tests/replay/nodes/nic-h100-ndr-ib.yml (the session fleet's host 3): sysfs lists mlx5_*

pytestmark = pytest.mark.usefixtures("mpirun_installed")


@pytest.fixture(scope="module", name="orte_tmpdir")
def orte_tmpdir_fixture():
    """This file's own Open MPI session directories (see mpirun_argv); short: they hold unix sockets."""
    path = tempfile.mkdtemp(prefix="gforte", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _inventory_hosts(state):
    import yaml  # pylint: disable=import-outside-toplevel

    with open(os.path.join(state, "inventory.yml"), "r", encoding="utf-8") as handle:
        return yaml.safe_load(handle)["all"]["children"]["sshfleet"]["hosts"]


def mpirun_argv(fleet, orte_tmpdir, hosts, env_args, port, args=None):
    """mpirun across ``hosts`` (fleet host numbers, rank 0 first), one rank per host.

    One app context per host (``-np 1 -H ADDR:1 ...``, joined by ``:``) so that each rank
    gets its own node's sysfs root; Open MPI 4.1 applies ``-x`` per app context, so every
    context carries the same ``-x`` list.
    """
    state, number = fleet["state"], fleet["id"]
    net = "198.18.%d" % number
    inventory = _inventory_hosts(state)
    agent = ("ssh -i %s -o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o BatchMode=yes -o IdentitiesOnly=yes"
             " -o ConnectTimeout=10" % (os.path.join(state, "fleet_key"), os.path.join(state, "known_hosts")))
    argv = [MPIRUN, "--allow-run-as-root", "--mca", "plm_rsh_agent", agent,
            "--mca", "oob_tcp_if_include", "%s.0/24" % net, "--mca", "btl_tcp_if_include", "%s.0/24" % net,
            "--mca", "btl", "self,tcp",
            # each run's own session directory (mpirun's and its orteds'): by default every mpirun of this machine
            # shares /tmp/ompi.<node>.<uid>, and one that ends removes it when empty, so a run starting at that
            # moment fails in orte_init ("orte_session_dir failed"; seen beside other jobs' mpiruns)
            "--mca", "orte_tmpdir_base", os.path.join(orte_tmpdir, str(port))]
    exports = list(env_args) + ["GPUFLEET_STANDIN_BOOTSTRAP=%s.%d:%d" % (net, hosts[0], port), "GPUFLEET_STANDIN_TIMEOUT=20",
                                "GPUFLEET_STANDIN_MAX_SECONDS=%d" % (RUN_TIMEOUT - 10)]
    for index, host in enumerate(hosts):
        node = inventory["gf%dh%d" % (number, host)]
        if index:
            argv.append(":")
        argv += ["-np", "1", "-H", "%s.%d:1" % (net, host)]
        for item in exports:
            argv += ["-x", item]
        argv += [node["ansible_python_interpreter"], STANDIN, "--sysfs-root", node["gpufleet_sysfs_root"]]
        argv += SIZES if args is None else args
    return argv


def run_mpirun(argv, timeout=RUN_TIMEOUT):
    """(rc, stdout, stderr); mpirun and its ssh children are killed as a group on timeout."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("NCCL_", "GPUFLEET_STANDIN_", "OMPI_"))}
    with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                out, err = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
            raise AssertionError("mpirun ran past %d s:\n%s\n%s" % (timeout, out, err)) from None
    return proc.returncode, out, err


def busbw_at_largest(res):
    """busbw (bytes/s) of the largest size, out-of-place, from the printed time (the printed
    GB/s has two decimals: 0.02 cannot tell 0.015 from 0.025)."""
    row = [row for row in res["rows"] if row["size_bytes"] == LARGEST][-1]
    values = []
    for half in (row["out_of_place"], row["in_place"]):
        algbw = LARGEST / (half["time_us"] * 1e-6)
        busbw = algbw * 2.0 * (res["ranks"] - 1) / res["ranks"]
        # the printed busbw agrees with the time, within its rounding
        assert abs(half["busbw_gbs"] - busbw / 1e9) <= 0.006, row
        values.append(busbw)
    return values[0], values[1]


def check_run(fleet, hosts, rc, out, err):
    """What every successful cross-host run must show; returns the parsed result."""
    assert rc == 0, out + err
    res = parse("nccl", out)
    assert res["failed"] is False and res["complete"] is True, res["errors"]
    assert res["ranks"] == 2
    names = ["gf%dh%d" % (fleet["id"], host) for host in hosts]
    # one rank on each host, rank 0 on the first: two distinct hosts (own UTS namespaces)
    assert [(dev["rank"], dev["host"]) for dev in res["devices"]] == [(0, names[0]), (1, names[1])]
    assert len(set(res["hosts"])) == 2
    assert [row["size_bytes"] for row in res["rows"]] == [1 << 20, 2 << 20, 4 << 20]
    assert {row["type"] for row in res["rows"]} == {"int32"}
    assert res["wrong_total"] == 0 and res["out_of_bounds"] == 0 and res["out_of_bounds_status"] == "OK"
    # NCCL's choice of network: each rank uses its host's eth0 address, over sockets
    debug = res["debug"]
    assert res["using_network"] == "Socket" and debug["nranks"] == 2
    assert sorted((dev["host"], dev["name"], dev["address"]) for dev in debug["net_devices"]) == sorted(
        (name, "eth0", "198.18.%d.%d" % (fleet["id"], host)) for name, host in zip(names, hosts))
    assert debug["via"] == {"NET/Socket/0": 4}
    # host 3's replayed sysfs lists HCAs the stand-in cannot open: RDMA hardware present, TCP used
    assert "RDMA device mlx5_0 present but could not be opened" in debug["hca_evidence"]
    assert res["fallback_to_socket"] is True
    assert any(warn["host"] == names[hosts.index(IB_HOST)] and warn["text"].endswith("NET/IB : Unable to open device mlx5_0")
               for warn in res["warnings"]), res["warnings"]
    return res


def test_standin_busbw_normal_vs_throttled(fleet, orte_tmpdir):
    seed = int(time.time() * 1000) % 100000
    draw = random.Random(seed)
    other = draw.choice([1, 2])
    hosts = [IB_HOST, other] if draw.random() < 0.5 else [other, IB_HOST]
    throttled = draw.choice(hosts)
    print("seed %d: ranks on hosts %s, throttled host %d at %s" % (seed, hosts, throttled, RATE))
    env_args = ["NCCL_SOCKET_IFNAME=eth0", "NCCL_DEBUG=INFO", "NCCL_IB_DISABLE=0"]

    bound = RATE_BPS / 8  # see below
    normal = check_run(fleet, hosts, *run_mpirun(mpirun_argv(fleet, orte_tmpdir, hosts, env_args, 29501)))
    normal_bw = busbw_at_largest(normal)
    for attempt in range(2):
        if normal_bw[0] >= 3 * bound:
            break
        # the unthrottled run is CPU-bound and this machine's cores are shared (0.044 to 0.29
        # GB/s measured here): one busy moment must not pass for a slow link, so a slow control
        # run is measured again, at most twice, and the best run counts
        print("normal run slow (%.4f GB/s): measured again" % (normal_bw[0] / 1e9))
        again = check_run(fleet, hosts, *run_mpirun(mpirun_argv(fleet, orte_tmpdir, hosts, env_args, 29505 + attempt)))
        if busbw_at_largest(again)[0] > normal_bw[0]:
            normal, normal_bw = again, busbw_at_largest(again)
    fleet_sh("throttle", "--state", fleet["state"], "--host", str(throttled), "--rate", RATE)
    try:
        slow = check_run(fleet, hosts, *run_mpirun(mpirun_argv(fleet, orte_tmpdir, hosts, env_args, 29502)))
    finally:
        fleet_sh("unthrottle", "--state", fleet["state"], "--host", str(throttled))
    slow_bw = busbw_at_largest(slow)
    print("busbw at 4 MiB (GB/s, out-of-place / in-place): normal %.4f / %.4f, throttled %.4f / %.4f"
          % (normal_bw[0] / 1e9, normal_bw[1] / 1e9, slow_bw[0] / 1e9, slow_bw[1] / 1e9))
    print("avg busbw (GB/s): normal %s, throttled %s" % (normal["avg_busbw_gbs"], slow["avg_busbw_gbs"]))

    # The bound, by hand. A ring all-reduce of S bytes over n ranks is a reduce-scatter then an
    # all-gather, n-1 steps each, every step sending one chunk of S/n bytes to the next rank:
    # each rank sends 2(n-1)/n * S bytes, and receives as much, per all-reduce. The throttled
    # host's link is shaped (tbf) at R bit/s in each direction, so one all-reduce takes at least
    #     t >= 2(n-1)/n * S / (R/8)
    # algbw = S/t <= (R/8) * n / (2(n-1)), and busbw = algbw * 2(n-1)/n <= R/8.
    # n = 2, S = 4 MiB, R = 100e6 bit/s: busbw <= 12.5e6 B/s = 0.0125 GB/s (algbw likewise, as
    # 2(n-1)/n = 1); a 4 MiB all-reduce then takes >= 0.34 s. Headers (~4-5 % of the wire) push
    # the payload below that; the only excess is tbf's 256 KB burst, 2 % of the 3 x 4 MiB
    # timed (and the untimed collective just before them drains it), so 5 % slack is generous.
    for value in slow_bw:
        assert value <= 1.05 * bound, (slow_bw, bound)
        # and the link, not the CPU, is what slows it: near the rate (4 MiB takes ~0.34 s on the
        # wire, the integer reduction a few ms; measured 0.82-0.96 x R/8 with two CPU hogs beside
        # it: each ring step waits for the previous one, and TCP restarts slowly after each pause)
        assert value >= 0.5 * bound, (slow_bw, bound)
    # The unthrottled pair is bounded by the CPUs (0.044-0.29 GB/s measured here), well above
    # the throttled rate: the ratio falls below 0.6 (measured 0.04-0.07).
    assert slow_bw[0] / normal_bw[0] < 0.6, (slow_bw, normal_bw)
    assert normal_bw[0] > 1.7 * bound, normal_bw


def test_no_matching_interface_fails_like_nccl(fleet, orte_tmpdir):
    hosts = [IB_HOST, 1]
    env_args = ["NCCL_SOCKET_IFNAME==eth9", "NCCL_DEBUG=WARN"]
    argv = mpirun_argv(fleet, orte_tmpdir, hosts, env_args, 29503, ["-b", "1K", "-e", "1K"])
    rc, out, err = run_mpirun(argv, timeout=60)
    assert rc != 0
    assert "bootstrap.cc:45 NCCL WARN Bootstrap : no socket interface found" in out
    assert "Exit code:    3" in out + err  # mpirun names testNcclError, rank 0's status
    res = parse("nccl", out + err)
    assert res["failed"] is True and res["rows"] == []
    assert res["devices"][0]["host"] == "gf%dh%d" % (fleet["id"], IB_HOST)
    assert any("no socket interface found" in item["text"] for item in res["errors"])


def test_excluding_eth0_leaves_only_loopback(fleet, orte_tmpdir):
    """``^eth0`` on hosts with only lo and eth0: NCCL's rules select ``lo`` (not "no interface
    found"); as with NCCL, each rank then offers 127.0.0.1, which the other host cannot reach,
    so the run fails (here at once: the ring's connect is refused) instead of measuring."""
    hosts = [IB_HOST, 2]
    env_args = ["NCCL_SOCKET_IFNAME=^eth0", "NCCL_DEBUG=INFO", "NCCL_IB_DISABLE=1"]
    started = time.monotonic()
    argv = mpirun_argv(fleet, orte_tmpdir, hosts, env_args, 29504, ["-b", "1K", "-e", "1K"])
    rc, out, err = run_mpirun(argv, timeout=60)
    assert rc != 0
    assert time.monotonic() - started < 50
    assert "no socket interface found" not in out
    # the stand-in's own words for the refused ring connection (NCCL would print a
    # "NCCL WARN Net : Connect to 127.0.0.1<port> failed" line instead; not asserted as NCCL's)
    assert "Connection refused" in err
    for host in hosts:
        assert "gf%dh%d:" % (fleet["id"], host) in out
    debug = parse("nccl-debug", out)
    assert sorted({(dev["name"], dev["address"]) for dev in debug["net_devices"]}) == [("lo", "127.0.0.1")]
    assert sorted(debug["hosts"]) == sorted("gf%dh%d" % (fleet["id"], host) for host in hosts)
    assert debug["bootstrap_interfaces"] == ["lo"]
    res = parse("nccl", out + err)
    assert res["failed"] is True and res["rows"] == []


def test_ranks_are_processes_times_gpus_across_hosts(fleet, orte_tmpdir):
    """One process per host with ``-g 2``: nccl-tests counts 2 x 2 = 4 ranks, numbers each host's GPUs
    from 0 and scales busbw by 2(n-1)/n = 1.5."""
    hosts = [IB_HOST, 1]
    args = ["-b", "1M", "-e", "2M", "-f", "2", "-n", "2", "-w", "1", "-g", "2", "-d", "int32"]
    rc, out, err = run_mpirun(mpirun_argv(fleet, orte_tmpdir, hosts, ["NCCL_SOCKET_IFNAME=eth0", "NCCL_IB_DISABLE=1"], 29506,
                                          args))
    assert rc == 0, out + err
    res = parse("nccl", out)
    assert res["failed"] is False and res["complete"] is True, res["errors"]
    names = ["gf%dh%d" % (fleet["id"], host) for host in hosts]
    assert res["ranks"] == 4 and res["params"]["ngpus"] == 2
    assert [(dev["rank"], dev["host"], dev["device"]) for dev in res["devices"]] == [
        (0, names[0], 0), (1, names[0], 1), (2, names[1], 0), (3, names[1], 1)]
    assert res["wrong_total"] == 0
    for row in res["rows"]:
        for half in (row["out_of_place"], row["in_place"]):
            algbw = row["size_bytes"] / (half["time_us"] * 1.0e3)
            assert abs(half["busbw_gbs"] - algbw * 1.5) <= 0.011 + 0.01 * algbw, row
