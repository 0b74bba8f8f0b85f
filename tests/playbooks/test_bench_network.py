# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/benchmark.yml's network part for real, on three localhost nodes with REPLAYED tools, then the verdict
(fleet_verdict, family bench_network) on what it recorded.

Each node is the replayed H100 node of tests/fixtures/sysfs/h100-ndr-ib (8 ConnectX-7 NDR rails; the test keeps
mlx5_0 with gpufleet_perftest_hca "=mlx5_0"). The replay answers, byte for byte, with recordings:
``ib_write_bw --help`` -> perf/ib_write_bw-help-grep-cuda-mlnx-ofed-5.5-PARTIAL.txt (the build has CUDA, so the argv
carries --use_cuda 0); the ib_write_bw client -> perf/ib_write_bw-roce-cx7-cuda-a40-16qp-rdma_cm-client-181gbps.txt
(BW average 181.46 Gb/s, GPUDirect) and the server -> its -server- recording; the ib_write_lat client ->
perf/ib_read_lat-mlx4-fdr-client-cpu-freq-warning.txt (no ib_write_lat recording exists; this ib_read_lat one prints
the same latency table, t_typical 1.79 us; there is no `ib_write_lat --help` recording, so the probe says the binary
is absent and the lat servers are not started: the replayed clients answer alone); nvbandwidth ->
perf/nvbandwidth-readme-8gpu-d2d-write-ce-matrix.txt (lowest copy 274.89 GB/s). Scenario inputs: node-c's
ib_write_bw is missing (gpufleet_ib_write_bw_path points nowhere); node-a's ib_write_bw is a TEST DOUBLE that, on a
real run (argv with -d), swaps node-a's sysfs root to the SYNTHETIC tree h100-ndr-ib-after-symbol-error (mlx5_0/1
symbol_error 0 -> 3) before exec'ing the replay: the counters "grow during the benchmark". The same double answers
``--help`` with perf/ib_write_bw-help-out_json-and-cuda-lines-EDITED.txt (the recorded cuda lines and perftest's
--out_json usage lines), so node-a's client runs get --out_json --out_json_file=FILE: the double copies
perf/SYNTHETIC-ib_write_bw-out_json-25.04-from-roce-cx7-cuda-client-181gbps.json (the client recording's figures in
perftest's report format) there and replays the rest of its argv; node-b's replayed --help lists no --out_json, so
its runs are read from the text. Profile dgx-a100-8 (ib_write_bw floor 180 Gb/s, p2p_bandwidth floor 235 GB/s).
Two repeats.
Takes ~15 s (budget 40 s; measured 15.4 s with the machine's load average falling from 9 to 3): 3 hosts x (2 tools x
2 repeats x 3 ring rounds + nvbandwidth + counters) Ansible tasks; up to ~90 s when other jobs load this 2-core machine.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position
import render_tree  # noqa: E402  pylint: disable=import-error,wrong-import-position

HOSTS = ("node-a", "node-b", "node-c")
# the node-side Python: the oldest supported (3.8) where installed, as tests/playbooks/conftest.py picks it
NODE_PYTHONS = sorted(glob.glob("/root/.pyenv/versions/3.8*/bin/python3.8"))
BW_ARGS = "-d mlx5_0 --report_gbits -s 8388608 -F -p 18515 --use_cuda 0"
LAT_ARGS = "-d mlx5_0 -n 10000 -s 8 -F -p 18515"
PERF = "tests/fixtures/perf/"
OUT_JSON_HELP = PERF + "ib_write_bw-help-out_json-and-cuda-lines-EDITED.txt"
OUT_JSON_REPORT = PERF + "SYNTHETIC-ib_write_bw-out_json-25.04-from-roce-cx7-cuda-client-181gbps.json"
# TEST DOUBLE of node-a's ib_write_bw (synthetic script): its --help lists --out_json; a real run (-d) makes node-a's IB
# counters read the SYNTHETIC after tree; --out_json_file=FILE gets the SYNTHETIC report; the rest goes to the replay
COUNTERS_GROW_DOUBLE = """#!/bin/sh
# TEST DOUBLE: --help lists --out_json; a real run (-d) makes node-a's IB counters read the SYNTHETIC after tree, writes
# the SYNTHETIC report where --out_json_file= says, then replays the rest of its argv
[ "$1" = --help ] && exec cat '{help}'
case " $* " in *" -d "*) ln -sfn '{after}' '{link}' ;; esac
for arg do
    shift
    case "$arg" in
        --out_json) ;;
        --out_json_file=*) cp '{report}' "${{arg#--out_json_file=}}" ;;
        *) set -- "$@" "$arg" ;;
    esac
done
exec '{replay}' "$@"
"""


def node_python():
    for candidate in NODE_PYTHONS:
        if subprocess.run([candidate, "-c", "pass"], capture_output=True, timeout=30, check=False).returncode == 0:
            return candidate
    return sys.executable


def node_file(tmp_path, host, peer):
    """The replay node of ``host`` (its client talks to ``peer``, the next host of the ring)."""
    node = {
        "description": "TEST node for test_bench_network.py: h100-ndr-ib sysfs tree with perftest and nvbandwidth recordings",
        "composite": True,
        "sysfs_tree": "tests/fixtures/sysfs/h100-ndr-ib",
        "commands": {
            "ibstat": {"stdout": "tests/fixtures/ib/gpud-ibstat-h100-8x-ndr400-ib-plus-bf3-bond-roce200-SPACES.txt", "rc": 0},
            "ib_write_bw --help": {"stdout": PERF + "ib_write_bw-help-grep-cuda-mlnx-ofed-5.5-PARTIAL.txt", "rc": 0},
            "ib_write_bw %s" % BW_ARGS: {"stdout": PERF + "ib_write_bw-roce-cx7-cuda-a40-16qp-rdma_cm-server-181gbps.txt", "rc": 0},
            "ib_write_lat %s %s" % (LAT_ARGS, peer): {"stdout": PERF + "ib_read_lat-mlx4-fdr-client-cpu-freq-warning.txt", "rc": 0},
            "nvbandwidth -t device_to_device_memcpy_write_ce": {"stdout": PERF + "nvbandwidth-readme-8gpu-d2d-write-ce-matrix.txt", "rc": 0},
        },
    }
    # the client's answer towards any other host: a host the preflight leaves out (node-c, no ib_write_bw) changes the ring
    for other in HOSTS:
        if other != host:
            node["commands"]["ib_write_bw %s %s" % (BW_ARGS, other)] = {
                "stdout": PERF + "ib_write_bw-roce-cx7-cuda-a40-16qp-rdma_cm-client-181gbps.txt", "rc": 0}
    path = tmp_path / ("%s.yml" % host)
    path.write_text(yaml.safe_dump(node, sort_keys=False))
    return str(path)


def build_inventory(tmp_path):
    fleet = tmp_path / "fleet"
    hosts = {}
    for index, host in enumerate(HOSTS):
        layout = build_fleet.build_node(node_file(tmp_path, host, HOSTS[(index + 1) % len(HOSTS)]), str(fleet), name=host)
        bin_dir = layout["bin_dir"]
        hosts[host] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": node_python(),
            "gpufleet_sysfs_root": layout["sysfs_root"],
            "gpufleet_ibstat_path": os.path.join(bin_dir, "ibstat"),
            "gpufleet_ethtool_path": os.path.join(bin_dir, "ethtool"),
            "gpufleet_ibv_devinfo_path": os.path.join(bin_dir, "ibv_devinfo"),
            "gpufleet_ip_path": os.path.join(bin_dir, "ip"),
            "gpufleet_ib_write_bw_path": os.path.join(bin_dir, "ib_write_bw"),
            "gpufleet_ib_write_lat_path": os.path.join(bin_dir, "ib_write_lat"),
            "gpufleet_nvbandwidth_path": os.path.join(bin_dir, "nvbandwidth"),
            "gpufleet_profile": "dgx-a100-8",
        }
    # node-c: no ib_write_bw on the node
    hosts["node-c"]["gpufleet_ib_write_bw_path"] = str(tmp_path / "nowhere" / "ib_write_bw")
    # node-a: its sysfs root is a link; the ib_write_bw TEST DOUBLE points it at the SYNTHETIC "after" tree on a real run
    after = render_tree.render(render_tree.named_tree("h100-ndr-ib-after-symbol-error"), str(tmp_path / "after-sys"))
    link = tmp_path / "node-a-sys"
    os.symlink(hosts["node-a"]["gpufleet_sysfs_root"], str(link))
    double = tmp_path / "ib_write_bw-counters-grow"
    double.write_text(COUNTERS_GROW_DOUBLE.format(help=os.path.join(REPO_ROOT, OUT_JSON_HELP), after=after,
                                                  link=str(link), report=os.path.join(REPO_ROOT, OUT_JSON_REPORT),
                                                  replay=hosts["node-a"]["gpufleet_ib_write_bw_path"]))
    double.chmod(0o755)
    hosts["node-a"]["gpufleet_sysfs_root"] = str(link)
    hosts["node-a"]["gpufleet_ib_write_bw_path"] = str(double)
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    return str(inventory)


def run_network(tmp_path):
    run_dir = str(tmp_path / "run")
    site = tmp_path / "site.yml"
    site.write_text(yaml.safe_dump([
        {"name": "Benchmarks", "ansible.builtin.import_playbook": os.path.join(REPO_ROOT, "playbooks", "benchmark.yml")},
        {"name": "Judge", "hosts": "all", "gather_facts": False, "tasks": [
            {"name": "Verdict of the bench_network family", "run_once": True, "delegate_to": "localhost",
             "gpufleet.acceptance.fleet_verdict": {"run_dir": run_dir, "families": ["bench_network"]}}]}], sort_keys=False))
    extra = tmp_path / "vars.yml"
    extra.write_text(yaml.safe_dump({
        "gpufleet_results_dir": run_dir,
        "gpufleet_benchmarks": ["ib_write_bw", "ib_write_lat", "nvbandwidth"],
        "gpufleet_benchmark_repeats": 2,
        "gpufleet_perftest_hca": "=mlx5_0",
        "gpufleet_nvbandwidth_testcases": ["device_to_device_memcpy_write_ce"],
    }))
    env = dict(os.environ)
    env.update({"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO_ROOT, "collections"),
                "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"), "ANSIBLE_REMOTE_TEMP": str(tmp_path / "ansible-remote"),
                "ANSIBLE_LOG_PATH": str(tmp_path / "ansible.log")})
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", build_inventory(tmp_path), "-e", "@" + str(extra), str(site)]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-3000:]
    records = {}
    for path in glob.glob(os.path.join(run_dir, "hosts", "*.json")):
        with open(path, "r", encoding="utf-8") as handle:
            record = json.load(handle)
        records[record["host"]] = record
    return records


def of_kind(record, kind):
    return [item for item in record["benchmarks"] if item["kind"] == kind]


def checks(record, check_id):
    return [item for item in record["checks"] if item["id"] == check_id]


def test_perftest_nvbandwidth_and_ib_counters_through_benchmark_yml(tmp_path):
    records = run_network(tmp_path)
    assert sorted(records) == list(HOSTS)

    # ib_write_bw: the ring of the hosts that have it, a->b, b->a, two repeats; each client records under its own host
    bw_a = of_kind(records["node-a"], "ib_write_bw")
    assert [(item["hosts"], item["repeat"], item["outcome"]) for item in bw_a] == [(["node-a", "node-b"], 1, "ok"), (["node-a", "node-b"], 2, "ok")]
    assert bw_a[0]["group"] == "mlx5_0->mlx5_0" and bw_a[0]["name"] == "ib_write_bw"
    assert bw_a[0]["command"][-2:] == ["0", "node-b"] and "--use_cuda" in bw_a[0]["command"]  # GPUDirect: the --help lists --use_cuda
    assert bw_a[0]["parsed"]["results"][0]["bw_avg_gbps"] == 181.46 and bw_a[0]["parsed"]["gpu_direct"] is True
    # node-a's --help lists --out_json: its client asked for the report (a file in the run's temporary directory, right
    # after the binary) and the record is read from it first; node-b's does not: read from its text, saying why
    for item in bw_a:
        assert item["command"][item["command"].index("--out_json") - 1] == str(tmp_path / "ib_write_bw-counters-grow")
        report_flag = item["command"][item["command"].index("--out_json") + 1]
        assert report_flag.startswith("--out_json_file=/") and report_flag.endswith("/perftest.json")
        parsed = item["parsed"]
        assert (parsed["parsed_from"], parsed["document_syntax"]) == ("json", "json")
        assert parsed["json_text_disagreements"] == []
        assert parsed["cuda_device"] == 0 and parsed["results"][0]["bw_avg_gbps"] == 181.46
    bw_b = of_kind(records["node-b"], "ib_write_bw")
    assert [item["outcome"] for item in bw_b] == ["ok", "ok"]
    assert not any("--out_json" in item["command"] for item in bw_b)
    assert all(item["parsed"]["parsed_from"] == "text" and item["parsed"]["json_fallback_reason"].endswith(
        "/ib_write_bw --help lists no --out_json (perftest before 4.5-0.11) (the caller's look at its usage)")
        for item in bw_b)
    # node-c has no ib_write_bw: the preflight (benchmark_tasks/preflight.yml) records it ONCE, with the fix, and leaves
    # node-c out of the ring (a->b, b->a): no missing_binary per run, round or repeat
    bw_c = of_kind(records["node-c"], "ib_write_bw")
    assert sorted((item["name"], tuple(item["hosts"]), item["repeat"], item["outcome"]) for item in bw_c) == [
        ("ib_write_bw", ("node-c",), 1, "missing_binary")]
    assert bw_c[0]["reason"].startswith("ib_write_bw is not on this node (") and bw_c[0]["reason"].endswith(
        "install perftest (apt-get install perftest), or set gpufleet_ib_write_bw_path")
    bw_checks = {host: checks(records[host], "bench_network.ib_write_bw") for host in HOSTS}
    # the one run both ends could run, a->b 181.46 >= 180, clears a and b; c is not verified (its tool is missing), not failed
    for host in ("node-a", "node-b"):
        assert [item["status"] for item in bw_checks[host]] == ["pass"], bw_checks[host]
    assert "node-a:mlx5_0->node-b:mlx5_0 181.46 Gb/s (median of 2 repeats, spread 181.46-181.46)" in bw_checks["node-a"][0]["message"]
    assert bw_checks["node-a"][0]["expected"] == 180.0
    assert [item["status"] for item in bw_checks["node-c"]] == ["skip"]
    assert all(item["message"].startswith("not verified: ") and "missing_binary" in item["message"] for item in bw_checks["node-c"])

    # ib_write_lat: t_typical 1.79 us on every run, limit 5 us
    for host in HOSTS:
        lat = checks(records[host], "bench_network.ib_write_lat")
        assert [item["status"] for item in lat] == ["pass"], lat
        assert len(of_kind(records[host], "ib_write_lat")) == 2

    # nvbandwidth: two repeats per node, lowest copy 274.89 GB/s >= 235
    for host in HOSTS:
        nvb = of_kind(records[host], "nvbandwidth")
        assert [item["repeat"] for item in nvb] == [1, 2] and all(item["outcome"] == "ok" for item in nvb)
        got = checks(records[host], "bench_network.nvbandwidth")
        assert [item["status"] for item in got] == ["pass"] and got[0]["measured"] == 274.89

    # IB counters: read around each perftest tool on every node; node-a's mlx5_0/1 symbol_error grew during ib_write_bw
    counters = {host: {item["parsed"]["benchmark"]: item for item in of_kind(records[host], "ib_counters")} for host in HOSTS}
    for host in HOSTS:
        assert sorted(counters[host]) == ["ib_write_bw", "ib_write_lat"]
    grown = counters["node-a"]["ib_write_bw"]["parsed"]
    assert grown["before"]["mlx5_0/1"]["symbol_error"] == 0 and grown["after"]["mlx5_0/1"]["symbol_error"] == 3
    fails = {host: [item for item in checks(records[host], "bench_network.ib_counters") if item["status"] == "fail"] for host in HOSTS}
    assert [item["message"] for item in fails["node-a"]] == [
        "error counters grew during ib_write_bw on port mlx5_0/1: mlx5_0/1 symbol_error 0 -> 3"]
    assert fails["node-a"][0]["subject"] == "mlx5_0/1"
    assert fails["node-b"] == [] and fails["node-c"] == []
    # the recording's mlx5_1 link_downed reads 255 (its 8-bit maximum): saturated, so growth there cannot be seen
    warns = [item["message"] for item in checks(records["node-b"], "bench_network.ib_counters") if item["status"] == "warn"]
    assert warns and all("mlx5_1/1 link_downed" in text and "saturated" in text for text in warns)
