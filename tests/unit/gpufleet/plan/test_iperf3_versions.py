# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""iperf3's version decides -P streams or one process per stream (hand-written plans for 3.9 and 3.16), and the check
sums the processes of a run.

``iperf3 --version`` first lines: ``iperf 3.9 (cJSON 1.7.13)`` is what iperf3 3.9 prints (the version line of
tests/fixtures/perf's 3.9 recordings says ``iperf 3.9``); the 3.16 line is written the same way by hand.
"""

from __future__ import annotations

from ansible_collections.gpufleet.acceptance.plugins.filter import network_plan as filters
from gpufleet.checks import bench_network
from gpufleet.checks.model import FAIL, PASS, NodeContext
from gpufleet.parsers.registry import parse
from gpufleet.plan import network as plan

OLD = {"rc": 0, "stdout": "iperf 3.9 (cJSON 1.7.13)\nLinux h1 5.15.0-91-generic #101-Ubuntu SMP x86_64"}
NEW = {"rc": 0, "stdout": "iperf 3.16 (cJSON 1.7.15)\nLinux h1 6.8.0-31-generic #31-Ubuntu SMP x86_64"}
TWO_ONE_STREAM_RUNS = "perf/iperf3-json-3.9-MULTIPLE-CONCATENATED-documents.json.txt"  # two -P 1 documents, 115.34 Mbit/s median each


def hostvars(versions):
    return {host: {"ansible_host": "10.0.0.%d" % index, "gpufleet_iperf3_version": version}
            for index, (host, version) in enumerate(versions.items(), 1)}


def test_version_from_iperf3_version():
    assert plan.iperf3_version(OLD["stdout"]) == (3, 9)
    assert plan.iperf3_version(NEW["stdout"]) == (3, 16)
    assert plan.iperf3_version("") is None and plan.iperf3_version("bash: iperf3: command not found") is None


def test_iperf3_3_9_runs_one_process_per_stream_on_its_own_port():
    runs = filters.network_plan(["h1", "h2", "h3", "h4"], hostvars=hostvars({"h1": OLD, "h2": NEW, "h3": NEW, "h4": NEW}),
                                streams=4, seconds=10, omit=2)
    # round 0: h1 -> h2 (port 5201) and h3 -> h4 (5202); h1 has 3.9: four one-stream processes on 5201, 5203, 5205, 5207
    first = runs[0]
    assert (first["client"], first["server"], first["parallel"], first["processes"]) == ("h1", "h2", "processes", 4)
    assert first["ports"] == [5201, 5203, 5205, 5207]
    assert first["server_args"] == [["-s", "-p", "5201", "-1"], ["-s", "-p", "5203", "-1"], ["-s", "-p", "5205", "-1"],
                                    ["-s", "-p", "5207", "-1"]]
    assert first["client_args"][1] == ["-c", "10.0.0.2", "-P", "1", "-t", "10", "-O", "2", "--json", "-p", "5203"]
    assert len(first["client_args"]) == 4
    # h4 -> h1 (round 1) has 3.9 at its server end: processes too
    closing = [run for run in runs if (run["client"], run["server"]) == ("h4", "h1")][0]
    assert closing["parallel"] == "processes"


def test_iperf3_3_16_on_both_ends_runs_streams():
    runs = filters.network_plan(["h1", "h2", "h3", "h4"], hostvars=hostvars({"h1": OLD, "h2": NEW, "h3": NEW, "h4": NEW}),
                                streams=4, seconds=10, omit=2)
    second = [run for run in runs if (run["client"], run["server"]) == ("h3", "h4")][0]
    assert (second["parallel"], second["processes"], second["ports"]) == ("streams", 1, [5202])
    assert second["client_argv"] == ["iperf3", "-c", "10.0.0.4", "-P", "4", "-t", "10", "-O", "2", "--json", "-p", "5202"]
    assert second["server_argv"] == ["iperf3", "-s", "-p", "5202", "-1"]


def test_one_stream_never_needs_processes():
    assert plan.iperf3_parallel((3, 9), (3, 9), 1) == "streams"
    assert plan.iperf3_parallel((3, 9), (3, 16), 8) == "processes"
    assert plan.iperf3_parallel((3, 16), (3, 17), 8) == "streams"


def iperf3_node(name, server, parsed, environment):
    record = {"name": "iperf3", "kind": "iperf3", "hosts": [name, server], "outcome": "ok", "reason": "", "parsed": parsed,
              "round": 0, "group": None, "repeat": 1, "environment": environment}
    return NodeContext(name, settings={"benchmarks": [record], "gpufleet_iperf3_line_rate_gbps": 0.25})


def test_the_check_sums_the_processes_of_a_run(fixture_text):
    parsed = parse("iperf3", fixture_text(TWO_ONE_STREAM_RUNS))
    processes = {"GPUFLEET_IPERF3_MODE": "alone", "GPUFLEET_IPERF3_PARALLEL": "processes:2"}
    out = bench_network.check_iperf3([iperf3_node("a", "b", parsed, processes), iperf3_node("b", "a", parsed, processes)])
    got, = out["a"]
    # each process's median judged interval is (115342095 + 115345203) / 2 bit/s; two of them: 0.231 Gb/s >= 0.9 x 0.25
    assert got["status"] == PASS and got["measured"] == 0.231


def test_documents_appended_one_after_the_other_are_not_summed(fixture_text):
    parsed = parse("iperf3", fixture_text(TWO_ONE_STREAM_RUNS))
    streams = {"GPUFLEET_IPERF3_MODE": "alone", "GPUFLEET_IPERF3_PARALLEL": "streams:1"}
    out = bench_network.check_iperf3([iperf3_node("a", "b", parsed, streams), iperf3_node("b", "a", parsed, streams)])
    got, = out["a"]
    assert got["status"] == FAIL and got["measured"] == 0.115
