# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ib_counters: what the node side reads from a sysfs tree, the snapshot the controller makes of it, and the
records (gpufleet/results/bench.py) the results directory accepts.

Trees: the SYNTHETIC tests/fixtures/sysfs/h100-ndr-ib (class/infiniband verbatim from the gpud recording) and its
SYNTHETIC "after" copy h100-ndr-ib-after-symbol-error; the node-exporter recording with the i40iw0 "N/A (no PMA)"
counters (tests/fixtures/ib-sysfs). Values asserted are read by hand from those files.
"""

from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.gpufleet.acceptance.plugins.modules import ib_counters
from gpufleet.results.bench import build_plain_record, counters_record, snapshot
from gpufleet.checks import bench_network
from gpufleet.checks.model import NodeContext
from gpufleet.results.store import RunDir

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs"))

import render_tree  # noqa: E402  pylint: disable=import-error,wrong-import-position

NODE_EXPORTER = "tests/fixtures/ib-sysfs/node-exporter-sys-ttar-i40iw0-NA-no-PMA-and-mlx4_0-qdr-counters_ext-grep-r.txt"


def rendered(name, tmp_path):
    return render_tree.render(render_tree.named_tree(name), str(tmp_path / name))


def test_reads_every_port_raw(tmp_path):
    root = rendered("h100-ndr-ib", tmp_path)
    ports = ib_counters.read_ports(root)
    assert [(p["device"], p["port"]) for p in ports] == [
        ("mlx5_0", "1"), ("mlx5_1", "1"), ("mlx5_4", "1"), ("mlx5_5", "1"), ("mlx5_6", "1"), ("mlx5_7", "1"), ("mlx5_8", "1"), ("mlx5_9", "1"),
        ("mlx5_bond_0", "1")]
    first = ports[0]
    assert first["state"] == "4: ACTIVE" and first["link_layer"] == "InfiniBand"
    assert first["counters"]["port_rcv_errors"] == "14" and first["counters"]["symbol_error"] == "0"
    assert first["hw_counters"]["roce_adp_retrans"] == "3"
    assert ports[1]["counters"]["link_downed"] == "255"
    only = ib_counters.read_ports(root, devices=["mlx5_1"])
    assert [p["device"] for p in only] == ["mlx5_1"]
    assert ib_counters.read_ports(str(tmp_path / "nothing")) == []


def test_snapshot_numbers_and_no_pma(tmp_path):
    tree = tmp_path / "manifest"
    tree.mkdir()
    (tree / "tree.txt").write_text("@include %s class/infiniband\n" % NODE_EXPORTER)
    root = render_tree.render(str(tree), str(tmp_path / "root"))
    snap = snapshot(ib_counters.read_ports(root), "2026-01-31T12:00:00Z")
    assert snap["counters"]["i40iw0/1"]["link_downed"] is None  # "N/A (no PMA)"
    assert snap["taken"] == "2026-01-31T12:00:00Z"


def test_after_copy_grows_one_counter_and_the_check_names_the_port(tmp_path):
    before = snapshot(ib_counters.read_ports(rendered("h100-ndr-ib", tmp_path)), "t0")
    after = snapshot(ib_counters.read_ports(rendered("h100-ndr-ib-after-symbol-error", tmp_path)), "t1")
    assert before["counters"]["mlx5_0/1"]["symbol_error"] == 0 and after["counters"]["mlx5_0/1"]["symbol_error"] == 3
    record = counters_record("node-a", "ib_write_bw", before, after)
    run = RunDir.create(str(tmp_path / "run"), hosts=["node-a"])
    run.add_benchmark("node-a", record)  # the results directory accepts the record as it is
    node = NodeContext("node-a", settings={"benchmarks": [record]})
    fails = [item for item in bench_network.check_ib_counters(node) if item["status"] == "fail"]
    assert [item["message"] for item in fails] == ["error counters grew during ib_write_bw on port mlx5_0/1: mlx5_0/1 symbol_error 0 -> 3"]


def test_bench_record_skip_and_failed_side(tmp_path):
    skip = build_plain_record({"kind": "iperf3_concurrent", "reason": "one rack labelled: A"}, "node-a")
    assert (skip["name"], skip["outcome"], skip["reason"], skip["hosts"]) == ("iperf3 concurrent", "skipped", "one rack labelled: A", ["node-a"])
    args = {"kind": "ib_write_bw", "name": "ib_write_bw server", "hosts": ["node-b", "node-c"], "group": "mlx5_0->mlx5_0", "repeat": "2",
            "result": {"outcome": "missing_binary", "reason": "ib_write_bw: not found (or not executable) on the node", "rc": None,
                       "cmd": ["ib_write_bw", "-d", "mlx5_0"], "started": "2026-01-31T12:00:00Z", "duration_s": 0.0, "job_id": "j-1"}}
    side = build_plain_record(args, "node-c")
    assert (side["outcome"], side["repeat"], side["group"], side["command"], side["job_id"]) == (
        "missing_binary", 2, "mlx5_0->mlx5_0", ["ib_write_bw", "-d", "mlx5_0"], "j-1")
    run = RunDir.create(str(tmp_path / "run"), hosts=["node-a", "node-c"])
    run.add_benchmark("node-a", skip)
    run.add_benchmark("node-c", side)
    with pytest.raises(ValueError, match="reason is required"):
        build_plain_record({"kind": "iperf3"}, "node-a")
    with pytest.raises(ValueError, match="kind must be one of"):
        build_plain_record({"kind": "ping", "reason": "x"}, "node-a")
    with pytest.raises(ValueError, match="outcome must be one of"):
        build_plain_record({"kind": "iperf3", "outcome": "fine"}, "node-a")
