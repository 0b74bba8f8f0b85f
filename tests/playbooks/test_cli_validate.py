# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The `gpufleet` console script for real: validate (on ansible-runner), --retest-failed, report,
bundle and demo, on replayed nodes of the simulated fleet (inventories/simulated/nodes/).

Expected values, read by hand from the recordings the node files name:
- hgx-h100-nv18: topo = tests/fixtures/topo/mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt, NV18
  between all 28 pairs of 8 GPUs: with the topology checks only (gpufleet_check_families) and an NV18
  NVSwitch claim it is ACCEPTed.
- sold-8x-nvlink-rtx4090-pcie: topo = tests/fixtures/topo/8x-rtx4090-pcie-all-SYS-2nic-no-legend.txt,
  every one of the 28 GPU pairs SYS while the claim says NVSwitch: REJECT, 28 x topology.gpu_pairs.
- gone: SSH to 127.0.0.1 port 1 (nothing listens): UNREACHABLE.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile

import pytest
import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIM_NODES = os.path.join(REPO_ROOT, "inventories", "simulated", "nodes")
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position

GPUFLEET = os.path.join(os.path.dirname(sys.executable), "gpufleet")
SOLD_TOPO = os.path.join(REPO_ROOT, "tests", "fixtures", "topo", "8x-rtx4090-pcie-all-SYS-2nic-no-legend.txt")
H100_CLAIM = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "gpu_memory_gb": 80, "interconnect": "nvswitch", "nvlinks_per_pair": 18}
SOLD_CLAIM = {"gpu_model": "NVIDIA GeForce RTX 4090", "gpu_count": 8, "gpu_memory_gb": 24, "interconnect": "nvswitch"}
PAIRS = ["GPU%d-GPU%d" % (a, b) for a in range(8) for b in range(a + 1, 8)]

pytestmark = pytest.mark.skipif(not os.path.isdir(SIM_NODES) or not os.path.exists(GPUFLEET), reason="simulated nodes or the gpufleet script missing")


def _replayed(tmp_path, node, claim):
    layout = build_fleet.build_node(os.path.join(SIM_NODES, node + ".yml"), str(tmp_path / "fleet"))
    tools = ("nvidia-smi", "lspci", "ethtool", "ibstat", "ibv_devinfo", "ip", "journalctl", "dmesg", "ofed_info", "mpirun", "ldconfig")
    host = {"gpufleet_%s_path" % tool.replace("-", "_"): os.path.join(layout["bin_dir"], tool) for tool in tools}
    host.update({"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                 "gpufleet_sysfs_root": layout["sysfs_root"], "gpufleet_procfs_root": layout["procfs_root"],
                 "gpufleet_gpu_query_formats": ["text"], "gpufleet_fact_groups": ["topology", "gpu"], "gpufleet_claim": claim})
    return host


def _gone():
    return {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_user": "nobody", "ansible_timeout": 5,
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes", "gpufleet_claim": H100_CLAIM}


def _inventory(tmp_path, name, hosts):
    path = tmp_path / name
    # the topology family alone: the replayed nodes' other evidence is partial (see inventories/simulated/README.md)
    path.write_text(yaml.safe_dump({"all": {"vars": {"gpufleet_check_families": ["topology"]}, "hosts": hosts}}, sort_keys=False))
    return str(path)


def _gpufleet(tmp_path, *args):
    env = dict(os.environ)
    for key in ("ANSIBLE_CONFIG", "ANSIBLE_COLLECTIONS_PATH"):
        env.pop(key, None)
    env.update({"ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
                "ANSIBLE_REMOTE_TEMP": str(tmp_path / "ansible-remote")})
    return subprocess.run([GPUFLEET] + list(args), cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300, check=False)


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
    inventory = _inventory(tmp_path, "inv.yml", {"h100-a": _replayed(tmp_path, "hgx-h100-nv18", H100_CLAIM),
                                                 "h100-b": _replayed(tmp_path, "hgx-h100-nv18", H100_CLAIM),
                                                 "pcie-sold": _replayed(tmp_path, "sold-8x-nvlink-rtx4090-pcie", SOLD_CLAIM)})
    proc = _gpufleet(tmp_path, "validate", "-i", inventory, "--limit", "h100-a,h100-b", "--out", "healthy")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _table(proc.stdout) == [("h100-a", "ACCEPT", ""), ("h100-b", "ACCEPT", "")]
    assert "\nfleet ACCEPT: 2 ACCEPT\n" in proc.stdout
    results = tmp_path / "healthy"
    assert "results: %s\n" % results in proc.stdout
    assert sorted(_json(results / "run.json")["hosts"]) == ["h100-a", "h100-b"]
    progress = [line for line in proc.stderr.splitlines() if line.startswith("gpufleet validate: ")]
    # the fact task records each host itself: there is no separate Results phase
    for phase, task in (("Preflight", "create or reopen the results directory"), ("Facts", "every fact group, one module run per node"),
                        ("Verdict", "judge the whole fleet and write the verdicts")):
        assert "gpufleet validate: %s 2/2 hosts done: %s" % (phase, task) in progress, proc.stderr
    phases = [line.split()[2] for line in progress]
    assert phases.index("Preflight") < phases.index("Facts") < phases.index("Verdict") < phases.index("Report")


def test_rejected_and_unreachable_exit_2_then_retest_report_and_bundle(tmp_path):
    healthy = _replayed(tmp_path, "hgx-h100-nv18", H100_CLAIM)
    sold = _replayed(tmp_path, "sold-8x-nvlink-rtx4090-pcie", SOLD_CLAIM)
    first = _gpufleet(tmp_path, "validate", "-i", _inventory(tmp_path, "inv1.yml", {"h100-a": healthy, "pcie-sold": sold, "gone": _gone()}),
                      "--out", "first", "--forks", "3")
    assert first.returncode == 2, first.stdout + first.stderr
    rows = _table(first.stdout)
    assert [row[:2] for row in rows] == [("pcie-sold", "REJECT"), ("gone", "UNREACHABLE"), ("h100-a", "ACCEPT")]
    assert rows[0][2] == "GPU0-GPU1: SYS, expected NVLink; GPU0-GPU2: SYS, expected NVLink; and 26 more"
    assert "port 1" in rows[1][2]
    assert "fleet REJECT: 1 ACCEPT, 1 REJECT, 1 UNREACHABLE" in first.stdout

    # the seller fixed the network of "gone" (now reachable, a healthy node); pcie-sold is unchanged
    second = _gpufleet(tmp_path, "validate", "-i", _inventory(tmp_path, "inv2.yml", {"h100-a": healthy, "pcie-sold": sold, "gone": healthy}),
                       "--retest-failed", "first", "--out", "second")
    assert second.returncode == 2, second.stdout + second.stderr
    assert "retesting 2 node(s) that failed in %s: gone, pcie-sold" % (tmp_path / "first") in second.stderr
    assert sorted(_json(tmp_path / "second" / "run.json")["hosts"]) == ["gone", "pcie-sold"]  # h100-a was not run again
    assert [row[:2] for row in _table(second.stdout)] == [("pcie-sold", "REJECT"), ("gone", "ACCEPT")]
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


def test_the_run_itself_failing_exits_1(tmp_path):
    missing = _gpufleet(tmp_path, "validate", "-i", "nope.yml")
    assert missing.returncode == 1 and missing.stderr == "gpufleet validate: inventory nope.yml: no such file or directory\n"
    bad = _inventory(tmp_path, "bad.yml", {"h100-a": _replayed(tmp_path, "hgx-h100-nv18", dict(H100_CLAIM, gpu_count="eight"))})
    proc = _gpufleet(tmp_path, "validate", "-i", bad, "--out", "refused")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the run failed" in proc.stderr
    assert "h100-a: gpufleet_claim.gpu_count: must be a whole number >= 0, got 'eight'" in proc.stderr
    assert proc.stdout == "" and not (tmp_path / "refused" / "fleet.json").exists()


def test_demo_runs_from_the_checkout(tmp_path):
    proc = _gpufleet(tmp_path, "demo", "--limit", "hgx-h100-nv18,frontend-1g-copper", "--out", "demo")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gpufleet demo: building the replayed fleet in %s" % os.path.join(REPO_ROOT, "tests", "output", "simulated") in proc.stderr
    rows = _table(proc.stdout)
    assert {row[0] for row in rows} == {"hgx-h100-nv18", "frontend-1g-copper"}
    # frontend-1g-copper: eth0 linked at 1000Mb/s (ethtool recording) on a port claimed 10G, no nvidia-smi recorded
    assert dict((row[0], row[1]) for row in rows)["frontend-1g-copper"] == "REJECT"
    assert "report: %s" % (tmp_path / "demo" / "report.html") in proc.stdout
