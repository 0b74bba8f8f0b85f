# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bench_run action with parse_kind nccl, for real on localhost: nccl-tests' JSON document asked for (-J) where the
binary's -h lists it, read first, its figures those of the text table of the same run; the -h probe run once per host
and binary (kept in the fact bench_run_nccl_json_probes); a binary without -J run as before and read from its text.

The binaries: the all_reduce_perf TEST DOUBLE (tests/standin/all_reduce_perf_standin.py, nccl-tests 2.17.3's options
and document) behind an executable named all_reduce_perf, as a node has it; and a TEST DOUBLE of an older
all_reduce_perf (synthetic script): its -h prints the stand-in's usage without the -J line (what 2.17.1 printed), a
run prints a RECORDED table (tests/fixtures/nccl/, SOURCES.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gpufleet.parsers.registry import parse

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STANDIN = os.path.join(REPO_ROOT, "tests", "standin", "all_reduce_perf_standin.py")
RECORDED = os.path.join(REPO_ROOT, "tests", "fixtures", "nccl", "h100-8gpu-1node-nvls-allreduce-128M-4G-issue290.txt")
J_USAGE_LINE = ("[-J,--output_file <file> write output to filepath, if accessible. Infer type from suffix (only json "
                "supported presently.)] \n\t")
SWEEP = ["-b", "64K", "-e", "128K", "-f", "2", "-n", "2", "-w", "0", "-d", "int32"]


def executable(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o755)
    return path


def test_json_read_first_probe_kept_and_an_older_binary_read_from_text(playbook, node_file, node_python_path, tmp_path):
    run_dir = str(tmp_path / "run")
    binary = executable(str(tmp_path / "new" / "all_reduce_perf"),
                        "#!/bin/sh\nexec %s %s \"$@\"\n" % (node_python_path, STANDIN))
    usage = subprocess.run([sys.executable, STANDIN, "-h"], capture_output=True, text=True, timeout=60,
                           check=True).stdout
    assert J_USAGE_LINE in usage
    (tmp_path / "usage-2.17.1.txt").write_text(usage.replace(J_USAGE_LINE, ""))
    old_usage = tmp_path / "usage-2.17.1.txt"
    old_script = "#!/bin/sh\n[ \"$1\" = -h ] && exec cat '%s'\nexec cat '%s'\n" % (old_usage, RECORDED)
    old = executable(str(tmp_path / "old" / "all_reduce_perf"), old_script)
    tasks = [
        {"name": "Start the results directory", "run_once": True, "delegate_to": "localhost",
         "gpufleet.acceptance.results_record": {"run_dir": run_dir, "phase": "start"}},
        {"name": "The stand-in twice", "register": "runs", "loop": [1, 2],
         "gpufleet.acceptance.bench_run": {"argv": [binary] + SWEEP, "timeout": 120, "job_id": "json-{{ item }}",
                                           "parse_kind": "nccl", "kind": "allreduce_single", "repeat": "{{ item }}",
                                           "run_dir": run_dir}},
        {"name": "An all_reduce_perf without -J", "register": "old_run",
         "gpufleet.acceptance.bench_run": {"argv": [old, "-b", "128M", "-e", "4G"], "timeout": 60, "job_id": "old-1",
                                           "parse_kind": "nccl", "kind": "allreduce_single", "run_dir": run_dir}},
        {"name": "Keep what the test reads", "ansible.builtin.set_fact": {
            "dumped": {"runs": "{{ runs }}", "old": "{{ old_run }}",
                       "probes": "{{ ansible_facts.bench_run_nccl_json_probes }}"}}},
    ]
    run = playbook({"node-a": {"node_file": node_file("host-bare-no-tools.yml")}}, tasks)
    assert run.rc == 0, run.stdout + run.stderr
    dumped = run.results["node-a"]
    with open(os.path.join(run_dir, "hosts", "node-a.json"), "r", encoding="utf-8") as handle:
        first, second, older = json.load(handle)["benchmarks"]

    # the probe ran once for the stand-in: the second run took the first's answer
    assert [item["nccl_json"]["probe"] for item in dumped["runs"]["results"]] == ["probed", "cached"]
    assert all(item["nccl_json"]["document"] is None and item["nccl_json"]["document_bytes"] > 0
               for item in dumped["runs"]["results"])
    for record in (first, second):
        assert record["outcome"] == "ok", record["reason"]
        assert record["command"][:2] == [binary, "-J"] and record["command"][2].endswith("/nccl-tests.json")
        parsed = record["parsed"]
        assert parsed["parsed_from"] == "json"
        assert (parsed["json_fallback_reason"], parsed["json_text_disagreements"]) == (None, [])
        assert parsed["json_version"] == 1 and parsed["args"][0] == "all_reduce_perf"
        # the same run's table, read on its own: the same rows, each figure the document's as the table prints it
        # (2.17.3: two decimals below 10000 us and below 1000 GB/s)
        with open(os.path.join(run_dir, record["raw_output_path"]), "r", encoding="utf-8") as handle:
            text = parse("nccl", handle.read())
        assert [row["size_bytes"] for row in parsed["rows"]] == [row["size_bytes"] for row in text["rows"]]
        assert [row["size_bytes"] for row in text["rows"]] == [65536, 131072]
        for row_json, row_text in zip(parsed["rows"], text["rows"]):
            for half in ("out_of_place", "in_place"):
                assert row_json[half]["wrong"] == row_text[half]["wrong"] == 0
                for key in ("time_us", "algbw_gbs", "busbw_gbs"):
                    from_json, from_text = row_json[half][key], row_text[half][key]
                    assert abs(from_json - from_text) <= 0.005 + 1e-6, (half, key, from_json, from_text)
        assert parsed["ranks"] == text["ranks"] == 1 and parsed["avg_busbw_gbs"] == text["avg_busbw_gbs"] == 0

    reason = "%s -h lists no -J,--output_file (nccl-tests before 2.17.3)" % old
    assert older["command"] == [old, "-b", "128M", "-e", "4G"] and older["outcome"] == "ok"
    assert (older["parsed"]["parsed_from"], older["parsed"]["json_fallback_reason"]) == ("text", reason)
    assert older["parsed"]["busbw_at_largest_size_gbs"] == 473.60  # the recording's 4 GiB row
    probes = dumped["probes"]["node-a"]
    assert (probes[binary]["supported"], probes[old]["supported"]) == (True, False)
