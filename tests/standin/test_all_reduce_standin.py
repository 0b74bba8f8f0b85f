# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the all_reduce_perf test double (tests/standin/all_reduce_perf_standin.py).

The stand-in runs as real processes talking TCP on loopback (127.0.0.1 only); its output is
read with the product's own nccl-tests and NCCL_DEBUG parsers.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

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


@pytest.mark.parametrize("dtype", ["float", "double"])
def test_reduce_adds_a_damaged_operand_element_by_element(dtype):
    # 10000 elements span two periods of the input (4093): a changed element breaks the repetition, so the sum is
    # not one period repeated. Element 5000 is 907 of its period: rank 0 (rep 2) holds (907*3 + 2) % 1000 = 723,
    # rank 1 (907*3 + 7 + 2) % 1000 = 730; rank 1's is replaced by 1000.
    code, size, _limit = standin.TYPES[dtype]
    total = standin.make_input(dtype, 10000, 2, 0, 2)
    damaged = standin.make_input(dtype, 10000, 2, 1, 2)
    damaged[5000 * size:5001 * size] = standin.array.array(code, [1000.0]).tobytes()
    standin.reduce_into(dtype, total, damaged)
    summed = memoryview(total).cast(code)
    assert summed[5000] == 1723.0 and summed[907] == 1453.0 and summed[907 + 2 * 4093] == 1453.0
    assert standin.count_wrong(dtype, total, standin.make_expected(dtype, 10000, 2, 2)) == 1


def test_float_reduction_keeps_up_with_a_link():
    # 16 MiB of floats: a 1 Gbit/s link moves them in 134 ms; element by element in Python they took 1.7 s to add
    # (about 10 MB/s on a loaded 2-core machine). Compared with that, on the same machine at the same moment, rather
    # than with a fixed time, so that the machine's load does not decide.
    count = 4 * 1024 * 1024
    total = standin.make_input("float", count, 2, 0, 1)
    other = standin.make_input("float", count, 2, 1, 1)
    started = time.monotonic()
    standin.reduce_into("float", total, other)
    fast = time.monotonic() - started
    assert bytes(total) == standin.make_expected("float", count, 2, 1)
    started = time.monotonic()
    standin.reduce_into("float", total, standin.make_input("float", count, 2, 1, 3)[:-4] + b"\0\0\0\0")
    slow = time.monotonic() - started
    assert fast * 10 < slow, (fast, slow)


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
    # nccl-tests 2.17.3: run() returns testNumResults (6) and main's TESTCHECK says so on every process
    assert [rc for rc, _out, _err in results] == [6, 6]
    for _rc, out, _err in results:
        assert re.search(r"(^|\n) \.\. \S+ pid \d+: Test failure common\.cu:1126\n$", out), out[-300:]
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
    assert out.rstrip().endswith("Test failure common.cu:1126")  # main's TESTCHECK in 2.17.3
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


# ---------------------------------------------------------------------------------------
# Faithful to nccl-tests: its options, its rank count, its printed format
# ---------------------------------------------------------------------------------------
FIXTURES = os.path.join(os.path.dirname(HERE), "fixtures", "nccl")
# Recordings of real runs in the format with redop/root/#wrong columns of the widths nccl-tests
# 2.17.1 prints (tests/fixtures/nccl/SOURCES.md says where each comes from). The stand-in prints 2.17.3's: its
# units line and N/A cells are 2.17.1's; its #wrong title and cells are widened by one, as in NEW_LAYOUT.
RECORDINGS = [
    "rtx3090-1rank-allreduce-busbw0-inplace-bogus-algbw.txt",
    "azure-nd-h200-v5-8gpu-single-size-8G-allreduce.txt",
    "h100-8gpu-1node-nvls-allreduce-128M-4G-issue290.txt",
    "h100-2node-16rank-ndr-ib-allreduce-srun-prefix-validation0-issue290.txt",
]
# Recordings in the later layout (src/util.cu's writeResultHeader and writeBenchmarkLineBody, since 2.17.3):
# `  #wrong` titles, `%6g` #wrong cells, getFloatStr's time and bandwidths. 2.17.9 widened the units line too.
NEW_LAYOUT = [
    "oci-2node-bm-gpu-b4.8-a100-40gb-16rank-nccltests-2.17.9-compact-devices-no-avg-line.txt",
    "oci-32node-gb200-v3.4-128rank-allreduce-mnnvl-2racks-PARTIAL-no-header.txt",
]
DEVICE_LINE = re.compile(
    r"^#  Rank +\d+ Group +\d+ Pid +\d+ on +\S+ device +\d+ "
    r"\[(0x[0-9a-f]{2}|[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2})\] \S.*$"
)


def run_one(args, env=None, timeout=RUN_TIMEOUT):
    """The stand-in as one process, without a launcher; (rc, stdout, stderr)."""
    proc = subprocess.run(
        [sys.executable, STANDIN] + args,
        env=env or standin_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr


def run_as_launched(nprocs, args, rank_var, size_var, extra=None):
    """``nprocs`` processes with the rank/size variables a launcher sets (no --rank/--nranks)."""
    port = free_port()
    procs = []
    for proc in range(nprocs):
        env = standin_env(NCCL_SOCKET_IFNAME="lo", GPUFLEET_STANDIN_BOOTSTRAP="127.0.0.1:%d" % port, **(extra or {}))
        env[rank_var] = str(proc)
        env[size_var] = str(nprocs)
        procs.append(
            subprocess.Popen(
                [sys.executable, STANDIN] + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        )
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


def recorded_lines(name):
    """The recording's lines without a launcher's rank prefix (`` 0: ``)."""
    with open(os.path.join(FIXTURES, name), "r", encoding="utf-8") as handle:
        return [re.sub(r"^ ?\d+: ", "", line.rstrip("\n")) for line in handle]


def column_titles(lines):
    """The three column-title lines (``out-of-place``, ``size``, ``(B)``), trailing blanks dropped."""
    start = next(index for index, line in enumerate(lines) if "out-of-place" in line)
    return [line.rstrip() for line in lines[start : start + 3]]


def cell_ends(line):
    """Column where each cell of a table row ends: the layout of right-aligned printf fields."""
    return [match.end() for match in re.finditer(r"\S+", line)]


def test_one_rank_default_run_shows_busbw_zero():
    """No options, no launcher: nccl-tests' defaults and one rank, so busbw = algbw * 2(1-1)/1 = 0."""
    rc, out, err = run_one([])
    assert rc == 0, err
    res = parse("nccl", out)
    # nccl-tests 2.17.1 defaults: -b 32M -e 32M -i 1M -f 1 -w 1 -n 20 -m 1 -c 1 -G 0, float, sum
    assert res["params"] == {
        "nthread": 1,
        "ngpus": 1,
        "min_bytes": 33554432,
        "max_bytes": 33554432,
        "step": 1048576,
        "step_kind": "bytes",
        "warmup_iters": 1,
        "iters": 20,
        "agg_iters": 1,
        "validation": 1,
        "graph": 0,
    }
    assert res["ranks"] == 1 and len(res["devices"]) == 1
    assert [(row["size_bytes"], row["count"], row["type"], row["redop"], row["root"]) for row in res["rows"]] == [
        (33554432, 8388608, "float", "sum", -1)
    ]
    for half in (res["rows"][0]["out_of_place"], res["rows"][0]["in_place"]):
        assert half["algbw_gbs"] > 0 and half["busbw_gbs"] == 0 and half["wrong"] == 0
    assert res["avg_busbw_gbs"] == 0 and res["busbw_at_largest_size_gbs"] == 0
    assert res["single_rank"] is True
    assert "# Avg bus bandwidth    : 0 \n" in out


@pytest.mark.usefixtures("mpirun_installed")
def test_mpirun_one_rank_shows_busbw_zero():
    """``mpirun -np 1 all_reduce_perf -g 1``: one rank in all, busbw 0 (what a single-node run without
    one rank per GPU measures)."""
    proc = mpirun(
        1, ["GPUFLEET_STANDIN_TIMEOUT=30"], ["-b", "1M", "-e", "2M", "-f", "2", "-n", "2", "-g", "1", "-d", "int32"]
    )
    assert proc.returncode == 0, proc.stderr
    res = parse("nccl", proc.stdout)
    assert res["ranks"] == 1 and res["single_rank"] is True
    assert [row["out_of_place"]["busbw_gbs"] for row in res["rows"]] == [0, 0]
    assert [row["in_place"]["busbw_gbs"] for row in res["rows"]] == [0, 0]
    assert res["avg_busbw_gbs"] == 0


def test_one_process_with_gpus_counts_every_gpu_as_a_rank():
    """``-g 4`` in one process: 4 ranks (nccl-tests' nProcs * nThreads * nGpus), one pid, devices 0..3."""
    rc, out, err = run_one(["-g", "4", "-b", "64K", "-e", "128K", "-f", "2", "-n", "2", "-w", "0", "-d", "int32"])
    assert rc == 0, err
    res = parse("nccl", out)
    assert res["ranks"] == 4 and res["params"]["ngpus"] == 4
    assert [(dev["rank"], dev["device"]) for dev in res["devices"]] == [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert len({dev["pid"] for dev in res["devices"]}) == 1
    assert res["wrong_total"] == 0 and res["single_rank"] is False
    check_row_arithmetic(res, 4)  # busbw = algbw * 2 * 3 / 4
    assert all(row["out_of_place"]["busbw_gbs"] > 0 for row in res["rows"])


@pytest.mark.parametrize(
    "rank_var, size_var",
    [("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS")],
)
def test_ranks_are_launcher_processes_times_gpus(rank_var, size_var):
    """2 processes of a launcher (Open MPI, Hydra, srun variables) with ``-g 2`` each: 4 ranks; process 1's
    ranks are 2 and 3 and, on the same host, its devices 2 and 3 (local rank 1 times 2 GPUs)."""
    results = run_as_launched(
        2, ["-g", "2", "-b", "64K", "-e", "64K", "-n", "2", "-w", "0", "-d", "int32"], rank_var, size_var
    )
    for rc, _out, err in results:
        assert rc == 0, err
    res = parse("nccl", results[0][1])
    assert res["ranks"] == 4
    assert [(dev["rank"], dev["device"]) for dev in res["devices"]] == [(0, 0), (1, 1), (2, 2), (3, 3)]
    pids = [dev["pid"] for dev in res["devices"]]
    assert pids[0] == pids[1] != pids[2] == pids[3]
    assert res["wrong_total"] == 0
    check_row_arithmetic(res, 4)
    assert "# nThread" not in results[1][1]  # only MPI rank 0 prints


def test_header_and_columns_match_recorded_real_output():
    """Column titles, header keys, device and footer lines as in recordings of real nccl-tests runs."""
    rc, out, err = run_one(["-b", "64K", "-e", "128K", "-f", "2", "-n", "2", "-w", "1", "-d", "float"])
    assert rc == 0, err
    mine = out.split("\n")
    for name in NEW_LAYOUT:  # the group title and the widened #wrong title, as 2.17.3 and later print them
        assert column_titles(mine)[:2] == column_titles(recorded_lines(name))[:2], name
    for name in RECORDINGS:
        theirs = recorded_lines(name)
        # 2.17.3 kept 2.17.1's units line; only the #wrong title moved
        assert column_titles(mine)[0::2] == column_titles(theirs)[0::2], name
        assert column_titles(mine)[1].replace("  #wrong", " #wrong") == column_titles(theirs)[1], name
        header = [line for line in theirs if line.startswith("# nThread")]
        if header:  # same keys in the same order: only the numbers differ
            assert re.sub(r"\d+", "N", header[0]) == re.sub(
                r"\d+", "N", next(line for line in mine if line.startswith("# nThread"))
            ), name
        for line in theirs:
            if line.startswith("#  Rank"):
                assert DEVICE_LINE.match(line.rstrip()), (name, line)
    devices = [line for line in mine if line.startswith("#  Rank")]
    assert len(devices) == 1 and DEVICE_LINE.match(devices[0])
    # a table row lays its cells out as a recorded row of the later layout (right-aligned: each cell ends where it does)
    row = next(line for line in mine if line.strip().startswith("65536 "))
    recorded_row = next(line for line in recorded_lines(NEW_LAYOUT[0]) if line.strip().startswith("1073741824 "))
    assert cell_ends(row) == cell_ends(recorded_row)
    # the footer: as recorded, then nccl-tests' own ending (ncclGetLastError's empty line)
    assert "# Out of bounds values : 0 OK" in recorded_lines(RECORDINGS[0]) and "# Out of bounds values : 0 OK" in mine
    assert out.endswith("# Avg bus bandwidth    : 0 \n#\n# Collective test concluded: all_reduce_perf\n\n")
    assert out.startswith(
        "# Collective test starting: all_reduce_perf\n"
        "# nThread 1 nGpus 1 minBytes 65536 maxBytes 131072 step: 2(factor)"
        " warmup iters: 1 iters: 2 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n"
    )


def test_check_zero_prints_wrong_as_not_available():
    """``-c 0``: every #wrong cell reads N/A and the footer still says 0 OK, as the recording with validation 0 (2.17.3
    prints N/A where 2.17.1 did: four blanks before it, not %6s)."""
    rc, out, err = run_one(["-c", "0", "-b", "64K", "-e", "128K", "-f", "2", "-n", "2", "-d", "int32"])
    assert rc == 0, err
    res = parse("nccl", out)
    assert res["params"]["validation"] == 0
    assert [(row["out_of_place"]["wrong"], row["in_place"]["wrong"]) for row in res["rows"]] == [
        (None, None),
        (None, None),
    ]
    assert res["wrong_total"] is None and res["out_of_bounds"] == 0 and res["out_of_bounds_status"] == "OK"
    recorded = [line for line in recorded_lines(RECORDINGS[3]) if "N/A" in line]
    mine = [line for line in out.split("\n") if "N/A" in line]
    assert len(mine) == 2 and all(line.split()[8] == line.split()[12] == "N/A" for line in recorded + mine)
    # N/A sits where the recording has it
    assert cell_ends(mine[0])[8] == cell_ends(recorded[0])[8] and cell_ends(mine[0])[12] == cell_ends(recorded[0])[12]


def test_long_options_and_prefixes():
    rc, out, err = run_one(
        [
            "--minbytes=64K",
            "--maxbytes",
            "128K",
            "--stepfactor",
            "2",
            "--ngpus",
            "1",
            "--check",
            "0",
            "--iters",
            "2",
            "--warmup_iters",
            "0",
            "--datatype",
            "int32",
            "--op",
            "sum",
            "--agg_iters",
            "2",
            "--nthreads",
            "1",
        ]
    )
    assert rc == 0, err
    res = parse("nccl", out)
    assert res["params"] == {
        "nthread": 1,
        "ngpus": 1,
        "min_bytes": 65536,
        "max_bytes": 131072,
        "step": 2,
        "step_kind": "factor",
        "warmup_iters": 0,
        "iters": 2,
        "agg_iters": 2,
        "validation": 0,
        "graph": 0,
    }
    assert {row["type"] for row in res["rows"]} == {"int32"}
    # getopt_long takes any unambiguous prefix, attached values and clustered short options
    opts = standin.parse_options(["--minb", "1K", "--maxb=2K", "-f2", "-n", "0x10", "-w010", "--warm", "3"])
    assert (opts.minbytes, opts.maxbytes, opts.stepfactor, opts.iters, opts.warmup_iters) == (1024, 2048, 2, 16, 3)


@pytest.mark.parametrize(
    "argv, stderr",
    [
        (["-q"], "all_reduce_perf: invalid option -- 'q'\n"),
        (["--bogus", "1"], "all_reduce_perf: unrecognized option '--bogus'\n"),
        (["-b"], "all_reduce_perf: option requires an argument -- 'b'\n"),
        (["--minbytes"], "all_reduce_perf: option '--minbytes' requires an argument\n"),
        (["--m", "1"], "all_reduce_perf: option '--m' is ambiguous; possibilities: '--minbytes' '--maxbytes'\n"),
        # 2.17.3's table: output_file after report_cputime, so glibc lists it after op
        (["--o", "x"], "all_reduce_perf: option '--o' is ambiguous; possibilities: '--op' '--output_file'\n"),
        (["-J"], "all_reduce_perf: option requires an argument -- 'J'\n"),
    ],
)
def test_unknown_options_are_refused_as_nccl_tests_does(argv, stderr):
    """getopt's message on stderr, nccl-tests' ``invalid option '?'`` and usage on stdout, exit 0, no run."""
    rc, out, err = run_one(argv)
    assert rc == 0
    assert err == stderr
    assert out.startswith("invalid option '?'\nUSAGE: all_reduce_perf \n\t[-t,--nthreads <num threads>] \n\t")
    assert out.endswith("\t[-h,--help]\n") and "# nThread" not in out


def test_help_and_argument_errors():
    rc, out, err = run_one(["-h"])
    assert (rc, err) == (0, "") and out.startswith("USAGE: all_reduce_perf \n")
    # the line 2.17.3 added, between -C and -a (what the benchmark runner looks for)
    assert ("\t[-C,--report_cputime <0/1>] \n\t[-J,--output_file <file> write output to filepath, if accessible. "
            "Infer type from suffix (only json supported presently.)] \n\t[-a,--average ") in out
    assert run_one(["-b", "1X"])[::2] == (255, "invalid size specified for 'minbytes'\n")
    assert run_one(["-e", "abc"])[::2] == (255, "invalid size specified for 'maxbytes'\n")
    assert run_one(["-b", "2K", "-e", "1K"])[::2] == (255, "invalid sizes for 'minbytes' and 'maxbytes': 2048 > 1024\n")
    assert run_one(["-D", "1"])[::2] == (255, "Option -D (device implementation) requires NCCL >= 2.28.0\n")
    rc, out, err = run_one(["-d", "fp32", "-o", "add", "-R", "1", "-b", "1K", "-e", "1K", "-n", "1"])
    assert rc == 0, err
    assert out.startswith(
        "invalid type fp32, defaulting to float .. \ninvalid op add, defaulting to sum .. \n"
        "Option -R (register) is not supported before NCCL 2.19. Ignoring\n# Collective test starting"
    )
    assert parse("nccl", out)["rows"][0]["type"] == "float"


def test_what_the_standin_cannot_do_is_refused_by_name():
    rc, _out, err = run_one(["-o", "max", "-b", "1K", "-e", "1K"])
    assert rc == 2 and "-o sum only" in err
    rc, _out, err = run_one(["-d", "half", "-b", "1K", "-e", "1K"])
    assert rc == 2 and "'half' not supported by the stand-in" in err


def test_sizes_below_one_element_print_zero_rows():
    """nccl-tests prints size 0 for sizes below the element size (the recording with minBytes 1 does)."""
    rc, out, err = run_one(["-b", "1", "-e", "8", "-f", "2", "-n", "1", "-w", "0"])
    assert rc == 0, err
    assert [row["size_bytes"] for row in parse("nccl", out)["rows"]] == [0, 0, 4, 8]
    recorded = standin_rows_of("superbench-a100-sxm4-40gb-8gpu-single-node-allreduce-oldheader.txt")
    assert recorded[:4] == [0, 0, 4, 8]


def standin_rows_of(name):
    return [row["size_bytes"] for row in parse("nccl", "\n".join(recorded_lines(name)))["rows"]]


def test_max_bytes_reduced_to_the_declared_device_memory():
    """nccl-tests' rule: (memory - 1 GiB per 16 GiB - 1 GiB) / 3 buffers (2 with -c 0)."""
    rc, out, err = run_one(["-b", "16M", "-e", "16G", "-f", "2", "-n", "1", "-w", "0", "-c", "0", "-d", "int32"])
    assert rc == 0, err
    # default 2144 MiB: (2144 - 1024 - 1024) MiB / 2 = 48 MiB
    assert "#\n# Reducing maxBytes to 50331648 due to memory limitation\n" in out
    res = parse("nccl", out)
    assert res["reduced_max_bytes"] == 50331648 and res["params"]["max_bytes"] == 17179869184
    assert [row["size_bytes"] for row in res["rows"]] == [16777216, 33554432]
    assert standin.memory_max_bytes(80 << 30, 1) == ((80 << 30) - (4 << 30) - (1 << 30)) // 3
    assert standin.memory_max_bytes(2144 << 20, 1) == 32 << 20


@pytest.mark.parametrize(
    "text, value",
    [
        ("8", 8.0),
        ("1K", 1024.0),
        ("1.5m", 1572864.0),
        ("8G", 8589934592.0),
        ("8GB", 8589934592.0),
        (" 2 K", 2048.0),
        ("1X", -1.0),
        ("abc", -1.0),
        ("", -1.0),
    ],
)
def test_parse_size_as_nccl_tests(text, value):
    assert standin.parse_size(text) == value


@pytest.mark.parametrize(
    "text, value", [("10", 10), ("0x10", 16), ("010", 8), ("08", 0), (" -3", -3), ("7abc", 7), ("abc", 0)]
)
def test_c_strtol(text, value):
    assert standin.c_strtol(text) == value


# ---------------------------------------------------------------------------------------
# -J FILE: nccl-tests 2.17.3's JSON document (src/util.cu, version 1)
# ---------------------------------------------------------------------------------------
JSON_TOP_KEYS = ["version", "start_time", "args", "env", "nccl_version", "config", "results", "out_of_bounds",
                 "average_bus_bandwidith", "errors", "end_time"]
TIME_STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")


def table_cells(out):
    """The 13 cells of each table row as printed."""
    return [line.split() for line in out.split("\n")
            if line.strip() and not line.startswith("#") and len(line.split()) == 13]


def load_document(path):
    with open(path, "r", encoding="ascii") as handle:
        text = handle.read()
    return text, json.loads(text)


def test_json_document_holds_the_table_it_printed(tmp_path):
    """One process, 64K and 128K floats: the document's fields, types and order as util.cu writes them, and each
    printed cell is the document's figure in getFloatStr's format."""
    path = str(tmp_path / "run.json")
    argv = ["-b", "64K", "-e", "128K", "-f", "2", "-n", "2", "-w", "0", "-J", path]
    rc, out, err = run_one(argv, env=standin_env(NCCL_TESTS_MIN_BW="0"))
    assert rc == 0, err
    assert out.startswith("# Writing JSON output to %s\n# Collective test starting: all_reduce_perf\n" % path)
    text, doc = load_document(path)
    assert list(doc) == JSON_TOP_KEYS
    assert doc["version"] == 1 and doc["nccl_version"] == 21803  # NCCL 2.18.3
    assert doc["args"] == ["all_reduce_perf"] + argv
    assert "NCCL_TESTS_MIN_BW=0" in doc["env"] and "GPUFLEET_STANDIN_TIMEOUT=30" in doc["env"]
    assert TIME_STAMP.match(doc["start_time"]) and TIME_STAMP.match(doc["end_time"])
    assert doc["config"] == {
        "nthreads": 1, "ngpus": 1, "minimum_bytes": 65536, "maximum_bytes": 131072, "step_factor": 2, "warmup_iters": 0,
        "iterations": 2, "aggregated_iterations": 1, "validation": 1, "graph": 0, "blocking_collectives": "false",
        "parallel_init": "false",
        "devices": [{"rank": 0, "group": 0, "pid": doc["config"]["devices"][0]["pid"],
                     "hostname": socket.gethostname().split(".")[0], "device": 0, "device_hex": "0000:00:00",
                     "device_info": "CPU stand-in"}]}
    assert [(row["size"], row["count"], row["type"], row["redop"], row["root"], row["actual_iterations"],
             row["experiment_name"]) for row in doc["results"]] == [(65536, 16384, "float", "sum", "    -1", 2, ""),
                                                                    (131072, 32768, "float", "sum", "    -1", 2, "")]
    assert doc["out_of_bounds"] == {"count": 0, "okay": "true"}
    # NCCL_TESTS_MIN_BW=0: checked, and 0 >= 0 * 0.9
    assert doc["average_bus_bandwidith"] == {"bandwidith": 0.0, "okay": "true"} and doc["errors"] == [""]
    # %lf doubles (nwrong too), no blanks, no final newline
    tail = text[text.index('"nccl_version"'):]  # after the environment's own strings
    assert '"nwrong":0.000000}' in tail and '"bus_bw":0.000000,' in tail and '": ' not in tail and ", " not in tail
    assert text.endswith('"}') and "\n" not in text
    cells = table_cells(out)
    assert len(cells) == 2
    for row, printed in zip(doc["results"], cells):
        for half, at in (("out_of_place", 5), ("in_place", 9)):
            figures = row[half]
            assert list(figures) == ["time", "alg_bw", "bus_bw", "nwrong"] and figures["nwrong"] == 0.0
            assert printed[at + 3] == "0"
            for cell, key, width in zip(printed[at:at + 3], ("time", "alg_bw", "bus_bw"), (7, 6, 6)):
                # the cell prints the figure in getFloatStr's format: its decimals, and its value to half a unit of
                # the last one (the document's %lf is rounded too: a tie may print either way)
                decimals = len(standin.float_str(figures[key], width).strip().partition(".")[2])
                assert len(cell.partition(".")[2]) == decimals, (cell, figures)
                assert abs(float(cell) - figures[key]) <= 0.5 * 10 ** -decimals + 1e-6, (cell, figures)


def test_json_without_validation_and_with_cpu_time(tmp_path):
    """``-c 0``: nwrong null (the table's N/A); ``-C 1``: the time key is cpu_time."""
    path = str(tmp_path / "run.JSON")  # the suffix is compared without case
    rc, _out, err = run_one(["-b", "64K", "-e", "64K", "-n", "2", "-w", "0", "-c", "0", "-C", "1", "-d", "int32",
                             "-J", path])
    assert rc == 0, err
    _text, doc = load_document(path)
    row = doc["results"][0]
    assert list(row["out_of_place"]) == ["cpu_time", "alg_bw", "bus_bw", "nwrong"]
    assert row["out_of_place"]["nwrong"] is None
    assert row["in_place"]["nwrong"] is None and row["type"] == "int32"
    assert doc["config"]["validation"] == 0 and doc["config"]["step_bytes"] == 1048576
    assert "step_factor" not in doc["config"]
    assert doc["average_bus_bandwidith"]["okay"] == "unchecked"


def test_json_written_by_rank_zero_only_one_device_per_process(tmp_path):
    """2 processes of 2 GPUs each: rank 0 alone prints the line and writes; ``devices`` holds each process's first
    device line (rank 0 device 0, rank 2 device 2), as util.cu's sscanf reads the gathered lines."""
    path = str(tmp_path / "run.json")
    env = standin_env(NCCL_SOCKET_IFNAME="lo")
    results = run_ranks(2, ["-g", "2", "-b", "64K", "-e", "64K", "-n", "2", "-w", "0", "-d", "int32", "-J", path], env)
    for rc, _out, err in results:
        assert rc == 0, err
    assert results[0][1].startswith("# Writing JSON output to %s\n" % path) and "JSON" not in results[1][1]
    assert sorted(os.listdir(str(tmp_path))) == ["run.json"]
    _text, doc = load_document(path)
    assert [(dev["rank"], dev["device"], dev["device_hex"]) for dev in doc["config"]["devices"]] == [
        (0, 0, "0000:00:00"), (2, 2, "0000:02:00")]
    assert doc["config"]["ngpus"] == 2
    half = doc["results"][0]["out_of_place"]
    assert half["bus_bw"] == pytest.approx(half["alg_bw"] * 2 * 3 / 4, rel=1e-5, abs=2e-6)  # 4 ranks
    res = parse("nccl-json", json.dumps(doc))
    assert res["ranks"] == 4 and res["failed"] is False and res["complete"] is True


def test_json_file_taken_other_suffix_or_no_directory(tmp_path):
    """An existing file: FILE.0, then FILE.1 (opened exclusively); a suffix other than .json: nothing at all; a
    directory that is not there: the skip line. The run goes on in every case."""
    taken = tmp_path / "run.json"
    taken.write_text("mine")
    (tmp_path / "run.json.0").write_text("mine too")
    args = ["-b", "1K", "-e", "1K", "-n", "1", "-w", "0"]
    rc, out, err = run_one(args + ["-J", str(taken)])
    assert rc == 0, err
    assert out.startswith("# Writing JSON output to %s.1\n" % taken) and taken.read_text() == "mine"
    assert json.loads((tmp_path / "run.json.1").read_text())["results"][0]["size"] == 1024
    rc, out, err = run_one(args + ["-J", str(tmp_path / "run.txt")])
    assert rc == 0 and "JSON" not in out and "json" not in out and not (tmp_path / "run.txt").exists(), err
    missing = str(tmp_path / "nowhere" / "run.json")
    rc, out, err = run_one(args + ["-J", missing])
    assert rc == 0, err
    assert out.startswith("# skipping json output; %s not accessible\n# Collective test starting" % missing)


def test_json_of_failed_runs(tmp_path):
    """#wrong: the document is finished and says so (exit 6). A failure before the table (no interface): finished,
    no results. A failure in the table (the stand-in's wall-clock cap): left without end_time, not one document."""
    wrong = str(tmp_path / "wrong.json")
    env = standin_env(NCCL_SOCKET_IFNAME="lo", GPUFLEET_STANDIN_CORRUPT_RANK="1")
    results = run_ranks(2, ["-b", "64K", "-e", "128K", "-f", "2", "-n", "2", "-w", "0", "-d", "int32", "-J", wrong],
                        env)
    assert [rc for rc, _out, _err in results] == [6, 6]
    _text, doc = load_document(wrong)
    # 3 per half, 2 rows (test_corrupted_link_is_counted_wrong)
    assert doc["out_of_bounds"] == {"count": 12, "okay": "false"}
    assert [row["out_of_place"]["nwrong"] for row in doc["results"]] == [3.0, 3.0] and "end_time" in doc
    assert parse("nccl-json", json.dumps(doc))["failed"] is True

    early = str(tmp_path / "early.json")
    rc, _out, _err = run_one(["-b", "1K", "-e", "1K", "-J", early], env=standin_env(NCCL_SOCKET_IFNAME="=nosuch0"))
    assert rc == 3
    _text, doc = load_document(early)
    assert list(doc) == ["version", "start_time", "args", "env", "nccl_version", "config", "end_time"]

    cut = str(tmp_path / "cut.json")
    rc, _out, err = run_one(["-b", "64K", "-e", "64K", "-n", "2", "-J", cut],
                            env=standin_env(GPUFLEET_STANDIN_MAX_SECONDS="0"))
    assert rc == 1 and "GPUFLEET_STANDIN_MAX_SECONDS exceeded" in err
    with open(cut, "r", encoding="ascii") as handle:
        text = handle.read()
    assert text.endswith(',"results":[') and "end_time" not in text


def test_sanitize_json_as_util_cu():
    assert standin.sanitize_json('a"b\\c/d\te\nf') == 'a\\"b\\\\c\\/d\\te\\nf'
    assert standin.sanitize_json("ab\u00e9cd") == "ab"  # a non-ASCII byte ends the string
    assert standin.sanitize_json("ab\x01cd") == "ab" and standin.sanitize_json("ab\x7fcd") == "ab"
    assert standin.sanitize_json("abcdefgh", limit=5) == "abcd"  # room for the terminating NUL
    assert standin.json_double(float("nan")) == '"nan"' and standin.json_double(1.5) == "1.500000"


@pytest.mark.parametrize("value, width, text", [
    (0.0, 6, "  0.00"), (999.99, 6, "999.99"), (1234.56, 6, "1234.6"), (12345.6, 6, " 12346"), (1234567.0, 6, " 1e+06"),
    (2.531, 7, "   2.53"), (9999.5, 7, "9999.50"), (25812.5, 7, "25812.5"), (123456.7, 7, " 123457"),
    (12345678.0, 7, "1.2e+07"),
])
def test_float_str_as_get_float_str(value, width, text):
    # 25812.5 in a 7-wide time cell: as the 2.17.9 recording (NEW_LAYOUT[1]) prints it
    assert standin.float_str(value, width) == text
