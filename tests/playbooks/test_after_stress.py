# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Health after stress through validate_cluster.yml on replayed nodes, with the shipped defaults (level standard).

- hgx-h100-nv18 (inventories/simulated/nodes/): every call answers the same recordings, so the re-read after the
  benchmarks equals the first reading: read again (recorded beside the first, which is kept), nothing grew.
- ecc-grows (tests/replay/nodes/hgx-h100-ecc-grows-under-load-synthetic.yml): its `nvidia-smi -q` answers the recording
  first, then the SYNTHETIC edited copy in which GPU 1 (00000000:3B:00.0) counts 2 volatile uncorrectable DRAM errors
  (0 before): rejected by after_stress.benchmarks naming the counter, 0 before, 2 after.
Neither node has a benchmark binary (paths into an empty folder of the test): the benchmarks are recorded as not run;
the health re-read after them runs all the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIM_NODES = os.path.join(REPO_ROOT, "inventories", "simulated", "nodes")
TEST_NODES = os.path.join(REPO_ROOT, "tests", "replay", "nodes")
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position

BENCH_TOOLS = ("all_reduce_perf", "iperf3", "ib_write_bw", "ib_write_lat", "nvbandwidth")

pytestmark = pytest.mark.skipif(not os.path.isdir(SIM_NODES), reason="inventories/simulated/nodes/ not present")


def _replayed(tmp_path, name, node_file):
    layout = build_fleet.build_node(node_file, str(tmp_path / "fleet"), name=name)
    host = build_fleet.local_host_vars(layout)
    host.update({"gpufleet_%s_path" % tool: str(tmp_path / "no-bench-tools" / tool) for tool in BENCH_TOOLS})
    manifest_dir = tmp_path / "manifest" / name
    manifest_dir.mkdir(parents=True)
    host["gpufleet_manifest_dir"] = str(manifest_dir)
    return host


def test_the_health_re_read_after_the_benchmarks_rejects_the_node_whose_ecc_counter_grew(tmp_path):
    hosts = {
        "hgx-h100-nv18": _replayed(tmp_path, "hgx-h100-nv18", os.path.join(SIM_NODES, "hgx-h100-nv18.yml")),
        "ecc-grows": _replayed(
            tmp_path, "ecc-grows", os.path.join(TEST_NODES, "hgx-h100-ecc-grows-under-load-synthetic.yml")
        ),
    }
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": hosts}}, sort_keys=False))
    results = tmp_path / "results"
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env.update(
        {
            "ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"),
            "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO_ROOT, "collections"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
            "ANSIBLE_REMOTE_TEMP": str(tmp_path / "ansible-remote"),
        }
    )
    # the shipped defaults: no gpufleet_level (standard), no gpufleet_benchmarks
    extra = {"gpufleet_results_dir": str(results), "gpufleet_benchmark_repeats": 1, "gpufleet_fail_on_verdict": False}
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory),
           os.path.join(REPO_ROOT, "playbooks", "validate_cluster.yml"), "-e", json.dumps(extra)]
    proc = subprocess.run(cmd, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "TASK [gpufleet.acceptance.facts : Health after stress |" in proc.stdout
    records = {name: json.loads((results / "hosts" / (name + ".json")).read_text()) for name in hosts}

    healthy = records["hgx-h100-nv18"]
    reading = healthy["health_after"]["benchmarks"]
    # recorded beside the first reading, which is kept; it names the facts reading it follows
    assert reading["before"] == healthy["phases"]["facts"]["finished"]
    assert reading["groups"] == ["gpu", "nic", "host"] and reading["unreachable"] is None
    assert reading["facts"]["gpu"]["gpu_count"] == 8 and healthy["facts"]["gpu"]["gpu_count"] == 8
    assert healthy["facts"]["topology"] is not None and "topology" not in reading["facts"]
    assert reading["raw"]["gpu"]["query_text"]["path"] == "raw/hgx-h100-nv18/after_benchmarks/gpu/query_text.txt"
    assert healthy["raw"]["gpu"]["query_text"]["path"] == "raw/hgx-h100-nv18/gpu/query_text.txt"
    by_id = {}
    for item in healthy["checks"]:
        by_id.setdefault(item["id"], []).append(item)
    assert by_id["after_stress.benchmarks.reading"][0]["status"] == "pass"
    assert {item["status"] for item in by_id["after_stress.benchmarks"]} == {"pass"}
    assert "after_stress.benchmarks" not in healthy["failed"]
    item, = [item for item in healthy["coverage"]["items"] if item["item"] == "after_stress.benchmarks"]
    assert item["status"] == "verified"

    grown = records["ecc-grows"]
    assert grown["verdict"] == "REJECT" and "after_stress.benchmarks" in grown["failed"]
    # the first reading is kept as it was: 0 on GPU 1
    gpu1 = [gpu for gpu in grown["facts"]["gpu"]["gpus"] if gpu["index"] == 1][0]
    assert gpu1["ecc_errors_volatile_uncorrectable"] == 0
    failed = [item for item in grown["checks"] if item["id"] == "after_stress.benchmarks" and item["status"] == "fail"]
    assert [(item["subject"], item["counter"], item["before"], item["after"]) for item in failed] == [
        ("GPU1", "ecc_errors_volatile_uncorrectable", 0, 2), ("GPU1", "ecc_errors_aggregate_uncorrectable", 0, 2)]
    assert (
        failed[0]["message"] == "GPU1 ecc_errors_volatile_uncorrectable: 0 before, 2 after (grew during the benchmarks)"
    )
    item, = [item for item in grown["coverage"]["items"] if item["item"] == "after_stress.benchmarks"]
    assert item["status"] == "failed"
