# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bench_run action and bench_cleanup module for real, on localhost (the node's Python is the oldest
supported one where installed): records in a results directory with their exact fields, the CPU
all-reduce TEST DOUBLE (tests/standin/all_reduce_perf_standin.py, one rank) parsed as ``nccl``, a
hanging command reported as a hang within timeout + grace, a missing binary, an unreachable node.
"""

from __future__ import annotations

import json
import os

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NODE_PYTHON = "{{ ansible_python_interpreter }}"  # the replayed node's Python (conftest.node_python: 3.8 where installed)
STANDIN = os.path.join(REPO_ROOT, "tests", "standin", "all_reduce_perf_standin.py")
RECORD_KEYS = {"name", "command", "environment", "message_size_bytes", "algorithm", "raw_output_path", "stderr_path", "parsed", "started",
               "duration_s", "kind", "hosts", "outcome", "reason", "rc", "repeat", "round", "group", "job_id"}


def test_bench_run_records_parses_and_reports_hangs(playbook, node_file, tmp_path):
    run_dir = str(tmp_path / "run")
    standin_argv = [NODE_PYTHON, STANDIN, "-b", "1M", "-e", "2M", "-f", "2", "-n", "2", "-w", "1", "-d", "int32"]
    hang_argv = [NODE_PYTHON, "-c", "import time; print('row 1', flush=True); time.sleep(120)"]
    # bench_cleanup looks for the job's tag in every process of the machine: a fixed id would find (and count) the hang of
    # another run of this test beside this one (seen when two checkouts ran the suite at once)
    hang_job = "hang-%d" % os.getpid()
    tasks = [
        {"name": "Start the results directory", "gpufleet.acceptance.results_record": {"run_dir": run_dir, "phase": "start"},
         "run_once": True, "delegate_to": "localhost"},
        {"name": "All-reduce stand-in, one rank", "register": "ok_run",
         "gpufleet.acceptance.bench_run": {"argv": standin_argv, "env": {"NCCL_ALGO": "Ring", "NCCL_DEBUG": "INFO"}, "timeout": 120,
                                           "job_id": "ar-{{ inventory_hostname }}-2", "parse_kind": "nccl", "kind": "allreduce_single",
                                           "message_size_bytes": 2097152, "repeat": 2, "run_dir": run_dir}},
        {"name": "A command that hangs", "register": "hang_run",
         "gpufleet.acceptance.bench_run": {"argv": hang_argv, "timeout": 2, "grace": 1, "job_id": hang_job, "name": "all_reduce_perf",
                                           "kind": "allreduce_multi", "hosts": ["node-a", "node-b"], "round": 3, "group": "rack-a",
                                           "run_dir": run_dir}},
        {"name": "A missing binary", "register": "missing_run",
         "gpufleet.acceptance.bench_run": {"argv": ["/nonexistent/nccl-tests/all_reduce_perf", "-b", "8G"], "job_id": "missing-1",
                                           "kind": "allreduce_single", "run_dir": run_dir}},
        {"name": "Clean up after the hang", "register": "cleanup",
         "gpufleet.acceptance.bench_cleanup": {"job_id": hang_job}},
        {"name": "Keep what the test reads", "ansible.builtin.set_fact": {
            "dumped": {"ok": "{{ ok_run }}", "hang": "{{ hang_run }}", "missing": "{{ missing_run }}", "cleanup": "{{ cleanup }}"}}},
    ]
    run = playbook({"node-a": {"node_file": node_file("host-bare-no-tools.yml")}}, tasks)
    assert run.rc == 0, run.stdout + run.stderr
    dumped = run.results["node-a"]
    with open(os.path.join(run_dir, "hosts", "node-a.json"), "r", encoding="utf-8") as handle:
        record = json.load(handle)
    benchmarks = record["benchmarks"]
    assert [item["job_id"] for item in benchmarks] == ["ar-node-a-2", hang_job, "missing-1"]
    for item in benchmarks:
        assert set(item) == RECORD_KEYS

    done = benchmarks[0]
    assert done["name"] == "all_reduce_perf" and done["kind"] == "allreduce_single"
    assert done["command"][1:] == standin_argv[1:]  # not a launcher: no -x added
    assert os.path.basename(done["command"][0]).startswith("python")
    assert done["environment"] == {"NCCL_ALGO": "Ring", "NCCL_DEBUG": "INFO"}
    assert done["algorithm"] == "Ring" and done["message_size_bytes"] == 2097152
    assert (done["outcome"], done["reason"], done["rc"]) == ("ok", "", 0)
    assert done["hosts"] == ["node-a"] and done["repeat"] == 2 and done["round"] is None and done["group"] is None
    assert done["raw_output_path"] == "raw/node-a/benchmarks/all_reduce_perf.ar-node-a-2.txt"
    with open(os.path.join(run_dir, done["raw_output_path"]), "r", encoding="utf-8") as handle:
        raw = handle.read()
    assert raw.startswith("# Collective test starting: all_reduce_perf\n") and raw.endswith("# Collective test concluded: all_reduce_perf\n\n")
    parsed = done["parsed"]
    # the command line asked for 1M and 2M, int32, one rank, validation on
    assert [row["size_bytes"] for row in parsed["rows"]] == [1048576, 2097152]
    assert parsed["ranks"] == 1 and parsed["wrong_total"] == 0 and parsed["complete"] is True
    assert dumped["ok"]["parsed"]["rows"] == parsed["rows"] and dumped["ok"]["parse_error"] is None
    assert isinstance(done["duration_s"], float) and done["started"].endswith("Z")

    hang = benchmarks[1]
    assert hang["outcome"] == "hang"
    assert hang["reason"] == "no exit within the 2.0s timeout; process group ended with SIGTERM"
    assert hang["rc"] == -15
    assert 2.0 <= hang["duration_s"] < 2.0 + 1.0 + 3.0
    assert hang["hosts"] == ["node-a", "node-b"] and hang["round"] == 3 and hang["group"] == "rack-a" and hang["repeat"] == 1
    assert hang["kind"] == "allreduce_multi" and hang["parsed"] is None and hang["algorithm"] is None
    with open(os.path.join(run_dir, hang["raw_output_path"]), "r", encoding="utf-8") as handle:
        assert handle.read() == "row 1\n"
    assert dumped["hang"]["outcome"] == "hang" and dumped["hang"]["failed"] is False

    missing = benchmarks[2]
    assert missing["outcome"] == "missing_binary" and missing["rc"] is None
    assert missing["reason"] == "/nonexistent/nccl-tests/all_reduce_perf: not found (or not executable) on the node"
    assert missing["name"] == "all_reduce_perf"
    assert dumped["cleanup"]["killed"] == [] and dumped["cleanup"]["remaining"] == []


def test_bench_run_refuses_bad_options_and_records_unreachable(playbook, node_file, tmp_path):
    run_dir = str(tmp_path / "run")
    tasks = [
        {"name": "Start the results directory", "gpufleet.acceptance.results_record": {"run_dir": run_dir, "phase": "start"},
         "run_once": True, "delegate_to": "localhost"},
        {"name": "Unknown parser", "register": "bad_kind", "ignore_errors": True,
         "gpufleet.acceptance.bench_run": {"argv": ["true"], "job_id": "x-1", "parse_kind": "no-such-parser"}},
        {"name": "Shell text as a job id", "register": "bad_id", "ignore_errors": True,
         "gpufleet.acceptance.bench_run": {"argv": ["true"], "job_id": "x; reboot"}},
        {"name": "On a node that cannot be reached", "register": "far", "ignore_unreachable": True,
         "gpufleet.acceptance.bench_run": {"argv": ["true"], "job_id": "far-1", "kind": "iperf3", "run_dir": run_dir,
                                           "record_host": "gone"},
         "vars": {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_user": "nobody", "ansible_timeout": 5,
                  "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes"}},
        {"name": "Keep what the test reads",
         "ansible.builtin.set_fact": {"dumped": {"bad_kind": "{{ bad_kind }}", "bad_id": "{{ bad_id }}", "far": "{{ far }}"}}},
    ]
    run = playbook({"node-a": {"node_file": node_file("host-bare-no-tools.yml")}}, tasks)
    dumped = run.results["node-a"]
    # checked against the parser registry, whose kinds the message lists
    assert dumped["bad_kind"]["failed"] is True
    assert dumped["bad_kind"]["msg"].startswith("parse_kind 'no-such-parser' is no parser kind; one of: dcgmi-diag, ")
    assert ", nccl, " in dumped["bad_kind"]["msg"]
    assert dumped["bad_id"]["failed"] is True
    assert dumped["bad_id"]["msg"] == "job_id 'x; reboot': use letters, digits and ._:- only, at most 128 characters"
    assert dumped["far"]["unreachable"] is True
    with open(os.path.join(run_dir, "hosts", "gone.json"), "r", encoding="utf-8") as handle:
        record = json.load(handle)
    (item,) = record["benchmarks"]
    assert item["outcome"] == "unreachable" and item["kind"] == "iperf3" and item["name"] == "iperf3" and item["rc"] is None
    assert "port 1" in item["reason"] or "Connection refused" in item["reason"], item["reason"]
    assert item["raw_output_path"] is None and item["parsed"] is None
