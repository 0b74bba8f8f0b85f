# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The retest loop on hand-built results directories: which nodes are run again, and retest.json
(fixed, still failing, newly failing, with check ids and subjects)."""

from __future__ import annotations

import importlib.util
import json
import os

from gpufleet.cli import retest

_SPEC = importlib.util.spec_from_file_location("cli_results", os.path.join(os.path.dirname(__file__), "cli_results.py"))
cli_results = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(cli_results)
check, host_record, write_run = cli_results.check, cli_results.host_record, cli_results.write_run

IB0 = check("network.ib_port_errors", "fail", "mlx5_0/1", {"port_rcv_errors": 14}, 0, "IBTA", "mlx5_0/1 error counters: port_rcv_errors 14")
IB3 = check("network.ib_port_errors", "fail", "mlx5_3/1", {"port_rcv_errors": 2}, 0, "IBTA", "mlx5_3/1 error counters: port_rcv_errors 2")
PAIR = check("topology.gpu_pairs", "fail", "GPU0-GPU4", "SYS", "NV18", "claim", "GPU0-GPU4: SYS, expected NV18")
XID = check("host.xid", "fail", None, 1, 0, "NVIDIA Xid catalog", "Xid 48 x1")
WARN = check("host.acs", "warn", None, "unknown", "disabled", "NCCL docs", "could not verify ACS")


def _previous(tmp_path):
    return write_run(tmp_path / "before", [
        host_record("good", "ACCEPT", [check("topology.gpu_pairs", "pass")]),
        host_record("warned", "ACCEPT WITH WARNINGS", [WARN]),
        host_record("ports", "REJECT", [IB0, IB3, WARN]),
        host_record("pairs", "REJECT", [PAIR]),
        host_record("gone", "UNREACHABLE", unreachable="ssh: connect to host 10.0.0.9 port 22: Connection refused"),
        host_record("lost", "UNREACHABLE", unreachable="timed out"),
    ])


def test_failed_nodes_are_the_rejected_and_unreachable_ones(tmp_path):
    assert retest.failed_nodes(_previous(tmp_path)) == ["gone", "lost", "pairs", "ports"]


def test_an_interrupted_run_retests_its_unjudged_nodes_too(tmp_path):
    previous = write_run(tmp_path / "cut", [host_record("done", "REJECT", [PAIR]), host_record("half", None), host_record("ok", "ACCEPT")],
                         finished=False)
    assert retest.failed_nodes(previous) == ["done", "half"]


def test_retest_json_says_fixed_still_failing_and_newly_failing(tmp_path):
    previous = _previous(tmp_path)
    new = write_run(tmp_path / "after", [
        host_record("ports", "REJECT", [check("network.ib_port_errors", "pass", "mlx5_0/1"), IB3]),  # mlx5_0 fixed, mlx5_3 still
        host_record("pairs", "ACCEPT WITH WARNINGS", [check("topology.gpu_pairs", "pass", "GPU0-GPU4"), WARN]),  # fixed
        host_record("gone", "REJECT", [XID]),  # reachable now, but an Xid: newly failing
        host_record("lost", "UNREACHABLE", unreachable="timed out again"),  # still unreachable
    ])
    path, document = retest.write_retest(previous, new, ["gone", "lost", "pairs", "ports"])
    assert path == os.path.join(new, "retest.json")
    with open(path, encoding="utf-8") as handle:
        assert json.load(handle) == document
    assert document["schema"] == "gpufleet.results/v1"
    assert document["previous"] == {"path": previous, "run_id": "before"} and document["run_id"] == "after"
    assert document["retested"] == ["gone", "lost", "pairs", "ports"]
    assert document["fixed"] == ["pairs"]
    assert document["still_failing"] == ["lost", "ports"]
    assert document["newly_failing"] == ["gone"]
    assert document["not_judged"] == []

    ports = document["nodes"]["ports"]
    assert (ports["before"], ports["after"], ports["outcome"]) == ("REJECT", "REJECT", "still_failing")
    assert ports["fixed_checks"] == [{"id": "network.ib_port_errors", "subject": "mlx5_0/1", "message": "mlx5_0/1 error counters: port_rcv_errors 14"}]
    assert ports["still_failing_checks"] == [{"id": "network.ib_port_errors", "subject": "mlx5_3/1", "message": "mlx5_3/1 error counters: port_rcv_errors 2"}]
    assert ports["newly_failing_checks"] == []

    pairs = document["nodes"]["pairs"]
    assert (pairs["after"], pairs["outcome"]) == ("ACCEPT WITH WARNINGS", "fixed")
    assert [item["id"] for item in pairs["fixed_checks"]] == ["topology.gpu_pairs"] and pairs["still_failing_checks"] == []

    gone = document["nodes"]["gone"]
    assert gone["fixed_checks"] == [{"id": "unreachable", "subject": None, "message": "ssh: connect to host 10.0.0.9 port 22: Connection refused"}]
    assert gone["newly_failing_checks"] == [{"id": "host.xid", "subject": None, "message": "Xid 48 x1"}]

    lost = document["nodes"]["lost"]
    assert lost["still_failing_checks"] == [{"id": "unreachable", "subject": None, "message": "timed out again"}]


def test_a_retested_node_the_new_run_did_not_judge(tmp_path):
    previous = _previous(tmp_path)
    new = write_run(tmp_path / "after", [host_record("pairs", None)], finished=False)
    document = retest.retest_diff(previous, new, ["pairs"])
    assert document["not_judged"] == ["pairs"] and document["nodes"]["pairs"]["outcome"] == "not_judged"


def test_retest_lines_name_the_check_ids(tmp_path):
    previous = _previous(tmp_path)
    new = write_run(tmp_path / "after", [host_record("ports", "REJECT", [IB3]), host_record("pairs", "ACCEPT")])
    lines = retest.retest_lines(retest.retest_diff(previous, new, ["pairs", "ports"]))
    assert lines[0] == "retest against before: 1 fixed, 1 still failing, 0 newly failing"
    assert lines[1] == "  pairs: REJECT -> ACCEPT (fixed): fixed topology.gpu_pairs"
    assert lines[2] == "  ports: REJECT -> REJECT (still failing): fixed network.ib_port_errors; still network.ib_port_errors"
