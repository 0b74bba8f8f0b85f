# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the all_reduce_perf test double (tests/standin/all_reduce_perf_standin.py).

The stand-in runs as real processes talking TCP on loopback (127.0.0.1 only); its output is
read with the product's own nccl-tests and NCCL_DEBUG parsers.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys

import pytest

from gpufleet.parsers.registry import parse

HERE = os.path.dirname(os.path.abspath(__file__))
STANDIN = os.path.join(HERE, "all_reduce_perf_standin.py")
PY38 = "/root/.pyenv/versions/3.8.18/bin/python3.8"
RUN_TIMEOUT = 180

_SPEC = importlib.util.spec_from_file_location("all_reduce_perf_standin", STANDIN)
standin = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(standin)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools"))

from system_programs import require_programs  # noqa: E402  pylint: disable=import-error,wrong-import-position


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def standin_env(**extra):
    env = {key: value for key, value in os.environ.items() if not key.startswith(("NCCL_", "GPUFLEET_STANDIN_", "OMPI_"))}
    env["GPUFLEET_STANDIN_TIMEOUT"] = "30"
    env["GPUFLEET_STANDIN_MAX_SECONDS"] = "120"
    env.update(extra)
    return env


def run_ranks(nranks, args, env, python=sys.executable):
    """Start ``nranks`` processes with --rank/--nranks; return [(rc, stdout, stderr)]."""
    port = free_port()
    procs = []
    for rank in range(nranks):
        cmd = [python, STANDIN, "--rank", str(rank), "--nranks", str(nranks), "--bootstrap", "127.0.0.1:%d" % port] + args
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=RUN_TIMEOUT)
            results.append((proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results


def check_row_arithmetic(result, nranks):
    """algbw = bytes/time and busbw = algbw * 2(n-1)/n, within the printed rounding."""
    factor = 2.0 * (nranks - 1) / nranks
    busbws = []
    for row in result["rows"]:
        for half in (row["out_of_place"], row["in_place"]):
            assert half["time_us"] > 0
            algbw = row["size_bytes"] / (half["time_us"] * 1.0e3)
            assert abs(half["algbw_gbs"] - algbw) <= 0.006 + 0.01 * algbw, row
            assert abs(half["busbw_gbs"] - half["algbw_gbs"] * factor) <= 0.011 + 0.01 * algbw, row
            busbws.append(half["busbw_gbs"])
    assert abs(result["avg_busbw_gbs"] - sum(busbws) / len(busbws)) <= 0.006 + 0.01 * result["avg_busbw_gbs"]


# ---------------------------------------------------------------------------------------
# NCCL_SOCKET_IFNAME matching (pure functions; synthetic interface lists)
# ---------------------------------------------------------------------------------------
IFS = [
    ("lo", "127.0.0.1"),
    ("eth0", "198.18.0.1"),
    ("eth1", "198.18.1.1"),
    ("eth10", "198.18.10.1"),
    ("veth7", "198.18.7.1"),
    ("docker0", "198.19.0.1"),
    ("ib0", "198.19.1.1"),
]


def names(found):
    return [name for name, _addr in found]


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("eth", ["eth0", "eth1", "eth10"]),  # prefix
        ("eth1", ["eth1", "eth10"]),  # a prefix also matches eth10
        ("=eth1", ["eth1"]),  # exact
        ("=eth", []),  # exact: no interface is called "eth"
        ("^docker,lo", ["eth0", "eth1", "eth10", "veth7", "ib0"]),  # exclude prefixes
        ("^eth", ["lo", "veth7", "docker0", "ib0"]),
        ("^=eth1", ["lo", "eth0", "eth10", "veth7", "docker0", "ib0"]),  # exclude exact
        ("ib,eth0", ["eth0", "ib0"]),  # comma list: system order, not list order
        ("eth0:5000,=ib0", ["eth0"]),  # ':PORT' dropped; '=' only counts at the start
        ("=eth0,ib0", ["eth0", "ib0"]),
        ("nosuch", []),
        ("=nosuch", []),
    ],
)
def test_ifname_rules(spec, expected):
    assert names(standin.find_interfaces(spec, IFS)) == expected


def test_ifname_parse_spec():
    assert standin.parse_ifname_spec("^=eth1,lo") == (True, True, ["eth1", "lo"])
    assert standin.parse_ifname_spec("eth0:29500,,ib") == (False, False, ["eth0", "ib"])


@pytest.mark.parametrize(
    "interfaces, expected",
    [
        (IFS, ["ib0"]),  # unset: ib* first
        ([item for item in IFS if item[0] != "ib0"], ["eth0", "eth1", "eth10", "veth7"]),  # then not docker/lo
        ([("lo", "127.0.0.1"), ("docker0", "198.19.0.1")], ["docker0"]),  # then docker
        ([("lo", "127.0.0.1")], ["lo"]),  # lo last
        ([], []),
    ],
)
def test_ifname_unset_default_order(interfaces, expected):
    assert names(standin.find_interfaces(None, interfaces)) == expected
    # A one-character value counts as unset, as in NCCL ("strlen(env) > 1").
    assert names(standin.find_interfaces("e", interfaces)) == expected


def test_ifname_max_ifs_and_duplicates():
    doubled = [("eth0", "198.18.0.1"), ("eth0", "198.18.0.2"), ("eth1", "198.18.1.1")]
    assert standin.find_interfaces("eth", doubled) == [("eth0", "198.18.0.1"), ("eth1", "198.18.1.1")]
    assert names(standin.find_interfaces("eth", IFS, max_ifs=1)) == ["eth0"]


def test_system_interfaces_include_loopback():
    assert ("lo", "127.0.0.1") in standin.system_ipv4_interfaces()


# ---------------------------------------------------------------------------------------
# Ring arithmetic (pure)
# ---------------------------------------------------------------------------------------
def test_chunk_bounds_cover_uneven_counts():
    assert standin.chunk_bounds(10, 3, 4) == [(0, 16), (16, 28), (28, 40)]


@pytest.mark.parametrize("dtype", ["float", "int32", "uint8", "int64", "double"])
def test_reduce_and_expected_agree(dtype):
    count, nranks = 5000, 3
    total = standin.make_input(dtype, count, nranks, 0, 2)
    for rank in (1, 2):
        standin.reduce_into(dtype, total, standin.make_input(dtype, count, nranks, rank, 2))
    assert bytes(total) == standin.make_expected(dtype, count, nranks, 2)
    assert standin.count_wrong(dtype, total, standin.make_expected(dtype, count, nranks, 2)) == 0
    total[4 * standin.TYPES[dtype][1]] ^= 0x01
    assert standin.count_wrong(dtype, total, standin.make_expected(dtype, count, nranks, 2)) == 1


# ---------------------------------------------------------------------------------------
# Real runs on loopback
# ---------------------------------------------------------------------------------------
def test_two_ranks_float_loopback():
    env = standin_env(NCCL_SOCKET_IFNAME="lo", NCCL_DEBUG="INFO", NCCL_IB_DISABLE="1")
    results = run_ranks(2, ["-b", "256K", "-e", "1M", "-f", "2", "-n", "3", "-w", "1"], env)
    for rc, _out, err in results:
        assert rc == 0, err
    out0 = results[0][1]
    res = parse("nccl", out0)
    assert res["failed"] is False and res["complete"] is True
    assert res["ranks"] == 2 and res["collective"] == "all_reduce_perf"
    assert res["params"]["min_bytes"] == 262144 and res["params"]["max_bytes"] == 1048576
    assert [row["size_bytes"] for row in res["rows"]] == [262144, 524288, 1048576]
    assert [row["count"] for row in res["rows"]] == [65536, 131072, 262144]
    assert {row["type"] for row in res["rows"]} == {"float"} and {row["root"] for row in res["rows"]} == {-1}
    assert res["wrong_total"] == 0 and res["out_of_bounds"] == 0 and res["out_of_bounds_status"] == "OK"
    assert [dev["device"] for dev in res["devices"]] == [0, 1]
    assert res["devices"][0]["name"] == "CPU stand-in"
    check_row_arithmetic(res, 2)
    # NCCL_IB_DISABLE=1: no IB probe at all, straight to sockets.
    assert "NET/IB" not in out0 and "NCCL_IB_DISABLE set by environment to 1." in out0
    assert res["using_network"] == "Socket" and res["transports"] == {"NET/Socket": 2}
    # Rank 1 logs its own NCCL lines; the table is rank 0's alone.
    assert "rank 1 nranks 2" in results[1][1] and "# Avg bus bandwidth" not in results[1][1]


def test_three_ranks_int32_uneven_chunks():
    env = standin_env(NCCL_SOCKET_IFNAME="=lo")
    # 3 does not divide the element counts: the ring's chunks are uneven.
    results = run_ranks(3, ["-b", "1M", "-e", "4M", "-f", "2", "-n", "3", "-w", "1", "-d", "int32"], env)
    for rc, _out, err in results:
        assert rc == 0, err
    res = parse("nccl", results[0][1])
    assert res["failed"] is False and res["ranks"] == 3
    assert [row["size_bytes"] for row in res["rows"]] == [1048576, 2097152, 4194304]
    assert {row["type"] for row in res["rows"]} == {"int32"}
    assert res["wrong_total"] == 0
    assert res["max_busbw_gbs"] > 0
    check_row_arithmetic(res, 3)
    assert res["debug"] is None  # NCCL_DEBUG unset: no NCCL lines, as NCCL


def test_corrupted_link_is_counted_wrong():
    env = standin_env(NCCL_SOCKET_IFNAME="lo", GPUFLEET_STANDIN_CORRUPT_RANK="1")
    results = run_ranks(2, ["-b", "64K", "-e", "128K", "-f", "2", "-n", "2", "-w", "0", "-d", "int32"], env)
    assert [rc for rc, _out, _err in results] == [1, 1]
    res = parse("nccl", results[0][1])
    # Rank 1 damages one element of each of its 2 sends: rank 0 reduces one bad element and
    # hands it back to rank 1, and receives one bad element in the all-gather: 3 per test.
    for row in res["rows"]:
        assert row["out_of_place"]["wrong"] == 3 and row["in_place"]["wrong"] == 3
    assert res["out_of_bounds"] == 12 and res["out_of_bounds_status"] == "FAILED"
    assert res["failed"] is True


def test_no_matching_interface_fails_like_nccl():
    env = standin_env(NCCL_SOCKET_IFNAME="=nosuch0", NCCL_DEBUG="WARN")
    results = run_ranks(2, ["-b", "1K", "-e", "1K"], env)
    assert results[0][0] == 3  # nccl-tests' testNcclError
    assert results[1][0] != 0
    out = results[0][1]
    assert "bootstrap.cc:45 NCCL WARN Bootstrap : no socket interface found" in out
    assert "Test NCCL failure common.cu:" in out
    assert "'internal error - please report this issue to the NCCL developers / Bootstrap : no socket interface found'" in out
    res = parse("nccl", out)
    assert res["failed"] is True and res["rows"] == []
    assert [warn["text"].split("NCCL WARN ")[1] for warn in res["warnings"]] == ["Bootstrap : no socket interface found"]
    assert any("Test NCCL failure" in err["text"] for err in res["errors"])
    assert out.count("Rank ") == 2  # the device lines come first, as in nccl-tests


def test_no_matching_interface_without_debug_still_names_the_cause():
    env = standin_env(NCCL_SOCKET_IFNAME="=nosuch0")
    results = run_ranks(1, ["-b", "1K", "-e", "1K"], env)
    rc, out, _err = results[0]
    assert rc == 3
    assert "NCCL WARN" not in out
    assert out.rstrip().endswith("Test failure common.cu:891")
    assert "/ Bootstrap : no socket interface found'" in out


@pytest.mark.parametrize("hcas, evidence", [([], []), (["mlx5_0"], ["RDMA device mlx5_0 present but could not be opened"])])
def test_ib_probe_falls_back_to_sockets(tmp_path, hcas, evidence):
    (tmp_path / "class" / "infiniband").mkdir(parents=True)
    for hca in hcas:
        (tmp_path / "class" / "infiniband" / hca).mkdir()
    env = standin_env(NCCL_SOCKET_IFNAME="lo", NCCL_DEBUG="INFO", NCCL_IB_DISABLE="0", GPUFLEET_STANDIN_SYSFS_ROOT=str(tmp_path))
    results = run_ranks(2, ["-b", "64K", "-e", "64K", "-n", "2", "-w", "0", "-d", "int32"], env)
    for rc, _out, err in results:
        assert rc == 0, err
    out = results[0][1]
    for line in (
        "NCCL INFO NCCL_IB_DISABLE set by environment to 0.",
        "NCCL INFO NET/IB : No device found.",
        "NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>",
        "NCCL INFO Using network Socket",
        "NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0",
        "NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0",
    ):
        assert line in out
    assert out.index("NET/IB : No device found.") < out.index("NET/Socket : Using")
    debug = parse("nccl-debug", out)
    assert debug["using_network"] == "Socket"
    assert "NET/IB : No device found." in [item["text"] for item in debug["ib_disabled_or_absent"]]
    assert [(dev["name"], dev["address"]) for dev in debug["net_devices"]] == [("lo", "127.0.0.1")]
    assert debug["bootstrap_interfaces"] == ["lo"]
    assert debug["hca_evidence"] == evidence
    assert debug["fallback_to_socket"] is bool(hcas)
    assert debug["nccl_version"] == "2.18.3" and debug["nranks"] == 2


@pytest.mark.skipif(not os.path.exists(PY38), reason="no Python 3.8 at %s" % PY38)
def test_runs_on_python38():
    env = standin_env(NCCL_SOCKET_IFNAME="lo")
    results = run_ranks(2, ["-b", "64K", "-e", "64K", "-n", "2", "-w", "0", "-d", "uint8"], env, python=PY38)
    for rc, _out, err in results:
        assert rc == 0, err
    res = parse("nccl", results[0][1])
    assert res["wrong_total"] == 0 and res["rows"][0]["type"] == "uint8"


# ---------------------------------------------------------------------------------------
# Under real Open MPI mpirun
# ---------------------------------------------------------------------------------------
MPIRUN = shutil.which("mpirun")


@pytest.fixture(name="mpirun_installed")
def mpirun_installed_fixture():
    require_programs(["mpirun"], "Open MPI launches the stand-in's ranks")


def mpirun(nranks, env_args, args, timeout=RUN_TIMEOUT):
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(nranks)]
    for item in env_args:
        cmd += ["-x", item]
    cmd += [sys.executable, STANDIN] + args
    return subprocess.run(cmd, env=standin_env(), capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.usefixtures("mpirun_installed")
def test_mpirun_two_ranks():
    port = free_port()
    proc = mpirun(
        2,
        ["NCCL_SOCKET_IFNAME=lo", "NCCL_DEBUG=INFO", "GPUFLEET_STANDIN_BOOTSTRAP=127.0.0.1:%d" % port, "GPUFLEET_STANDIN_TIMEOUT=30"],
        ["-b", "1M", "-e", "2M", "-f", "2", "-n", "3", "-w", "1", "-g", "1", "-d", "int32"],
    )
    assert proc.returncode == 0, proc.stderr
    res = parse("nccl", proc.stdout)
    assert res["failed"] is False and res["complete"] is True
    assert res["ranks"] == 2 and len(res["devices"]) == 2
    assert len({dev["pid"] for dev in res["devices"]}) == 2  # two processes started by mpirun
    assert [row["size_bytes"] for row in res["rows"]] == [1048576, 2097152]
    assert res["wrong_total"] == 0
    check_row_arithmetic(res, 2)
    debug = parse("nccl-debug", proc.stdout)
    assert debug["nranks"] == 2 and debug["using_network"] == "Socket"
    assert debug["via"] == {"NET/Socket/0": 4}


@pytest.mark.usefixtures("mpirun_installed")
def test_mpirun_no_matching_interface():
    port = free_port()
    proc = mpirun(
        2,
        ["NCCL_SOCKET_IFNAME==nosuch0", "NCCL_DEBUG=WARN", "GPUFLEET_STANDIN_BOOTSTRAP=127.0.0.1:%d" % port,
         "GPUFLEET_STANDIN_TIMEOUT=30"],
        ["-b", "1K", "-e", "1K"],
        timeout=60,
    )
    assert proc.returncode != 0
    assert "bootstrap.cc:45 NCCL WARN Bootstrap : no socket interface found" in proc.stdout
    assert "Exit code:    3" in proc.stderr + proc.stdout  # Open MPI reports testNcclError
    res = parse("nccl", proc.stdout + proc.stderr)
    assert res["failed"] is True
