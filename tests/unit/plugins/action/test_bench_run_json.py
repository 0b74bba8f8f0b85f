# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the bench_run action hands the node for a tool's JSON document (ActionModule._ask_for_json): the binary and
format for nccl-tests and perftest runs, the caller's answer or the kept probe, and nothing for any other run (a
perftest server under the module_defaults of playbooks/benchmark_tasks/perftest.yml)."""

from __future__ import annotations

from ansible_collections.gpufleet.acceptance.plugins.action.bench_run import ActionModule, JSON_NODE_OPTIONS

PERFTEST_PROBES = "bench_run_perftest_json_probes"


def _args(parse_kind, argv, **given):
    args = {"parse_kind": parse_kind, "argv": argv, "nccl_json": True, "perftest_json": True}
    args.update({key: None for key in JSON_NODE_OPTIONS})
    args.update(given)
    return args


def test_a_perftest_client_gets_the_binary_format_and_the_callers_answer():
    args = _args("ib-bw", ["python3", "-c", "wrapper", "30", "/opt/ib_write_bw-x", "-d", "mlx5_0", "node-b"],
                 json_binary="/opt/ib_write_bw-x", json_supported=True)
    assert ActionModule._ask_for_json(args, {}, "node-a") is None  # pylint: disable=protected-access
    assert (args["json_binary"], args["json_format"], args["json_supported"], args["json_cached"]) == (
        "/opt/ib_write_bw-x", "perftest", True, None)


def test_a_perftest_binary_found_in_argv_takes_the_kept_probe():
    probes = {PERFTEST_PROBES: {"node-a": {"/usr/bin/ib_read_lat": {"identity": "1:2:3", "supported": False}}}}
    args = _args("ib-lat", ["/usr/bin/ib_read_lat", "-d", "mlx4_0", "node-b"])
    facts = {"ansible_facts": probes}
    assert ActionModule._ask_for_json(args, facts, "node-a") is None  # pylint: disable=protected-access
    assert (args["json_binary"], args["json_format"]) == ("/usr/bin/ib_read_lat", "perftest")
    assert args["json_cached"] == {"identity": "1:2:3", "supported": False}


def test_a_run_without_a_document_hands_the_node_nothing():
    # a perftest server (no parse_kind) under perftest.yml's module_defaults
    server = _args(None, ["/opt/ib_write_bw-x", "-d", "mlx5_0"], json_binary="/opt/ib_write_bw-x", json_supported=True)
    assert ActionModule._ask_for_json(server, {}, "node-a") is None  # pylint: disable=protected-access
    assert all(server[key] is None for key in JSON_NODE_OPTIONS)
    off = _args("ib-bw", ["ib_write_bw", "node-b"], perftest_json=False, json_binary="ib_write_bw")
    assert ActionModule._ask_for_json(off, {}, "node-a") == {  # pylint: disable=protected-access
        "document": None, "reason": "perftest_json is false: the text was asked for"}
    assert off["json_binary"] is None
    other = _args("ib-bw", ["./my_bw_wrapper.sh", "node-b"])
    assert ActionModule._ask_for_json(other, {}, "node-a") == {  # pylint: disable=protected-access
        "document": None, "reason": "no perftest binary (ib_write_bw, ib_read_lat...) in argv"}


def test_nccl_runs_as_before():
    args = _args("nccl", ["mpirun", "-np", "2", "/opt/nccl-tests/build/all_reduce_perf", "-b", "8"])
    assert ActionModule._ask_for_json(args, {}, "node-a") is None  # pylint: disable=protected-access
    assert (args["json_binary"], args["json_format"]) == ("/opt/nccl-tests/build/all_reduce_perf", "nccl-tests")
