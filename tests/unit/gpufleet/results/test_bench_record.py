# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run that exited 0 with output its parser refuses (all_reduce_perf's usage text) is recorded failed, naming the
output's first line; never an ok run without a figure. The usage text is the stand-in's (tests/standin/, a test
double of nccl-tests (2.17.3) that prints what the real tool prints for an unknown option, exit status 0)."""

from __future__ import annotations

import os
import subprocess
import sys

from ansible_collections.gpufleet.acceptance.plugins.module_utils.bench_process import classify

from gpufleet.checks import benchmarks
from gpufleet.checks.model import FAIL, NodeContext
from gpufleet.results.bench import build_run_record, parse_output, record_run
from gpufleet.results.store import RunDir

STANDIN = os.path.join(os.path.dirname(__file__), "..", "..", "..", "standin", "all_reduce_perf_standin.py")
SINGLE = "nccl/h100-8gpu-1node-nvls-allreduce-128M-4G-issue290.txt"  # a real single-node sweep, 4 GiB busbw 473.60


def _args(run_dir):
    return {"run_dir": run_dir, "record_host": "node", "hosts": ["node"], "kind": "allreduce_single", "parse_kind": "nccl",
            "argv": ["all_reduce_perf", "-Z", "1"], "env": {}, "job_id": "job-single"}


def _module_result(stdout, rc):
    outcome, reason = classify(rc, stdout, "")
    return {"outcome": outcome, "reason": reason, "rc": rc, "stdout": stdout, "stderr": "", "cmd": ["all_reduce_perf", "-Z", "1"],
            "started": "2026-01-01T00:00:00Z", "duration_s": 0.1}


def test_usage_text_after_an_unknown_option_is_a_failed_run_naming_its_first_line(tmp_path):
    done = subprocess.run([sys.executable, STANDIN, "-Z", "1"], capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("invalid option '?'\nUSAGE: ")  # what nccl-tests does
    module_result = _module_result(done.stdout, done.returncode)
    assert module_result["outcome"] == "ok"  # the node sees only exit status 0
    parsed, error = parse_output("nccl", done.stdout)
    # nccl-tests' own argument error is the run's first error, and its cause (the usage text after it is no error)
    assert error is None and parsed["failed"] is True and parsed["cause"] == "invalid option '?'"
    assert parsed["rows"] == [] and parsed["errors"][0]["line"] == 1
    run = RunDir.create(str(tmp_path / "run"))
    record = record_run(_args(run.path), module_result, parsed)
    assert record["outcome"] == "failed" and record["rc"] == 0
    assert record["reason"] == "exited 0, but its output says it failed: invalid option '?'"
    assert run.host_records()["node"]["benchmarks"][0]["outcome"] == "failed"
    item, = benchmarks.check_allreduce_single(NodeContext("node", settings={"benchmarks": [record]}))
    assert item["status"] == FAIL and "invalid option" in item["message"]


def test_a_readable_sweep_stays_ok(tmp_path, fixture_text):
    stdout = fixture_text(SINGLE)
    parsed, error = parse_output("nccl", stdout)
    assert error is None
    run = RunDir.create(str(tmp_path / "run"))
    record = record_run(_args(run.path), _module_result(stdout, 0), parsed)
    assert record["outcome"] == "ok" and record["reason"] == ""


def test_a_run_that_failed_keeps_its_own_outcome_and_reason():
    args = _args(None)
    result = {"outcome": "crash", "reason": "killed by SIGSEGV", "rc": -11, "cmd": ["all_reduce_perf"], "started": "t", "duration_s": 1.0}
    record = build_run_record(args, result, "all_reduce_perf", None, None, None, unreadable="exited 0 without nccl results")
    assert (record["outcome"], record["reason"]) == ("crash", "killed by SIGSEGV")


def test_a_sampler_that_did_not_start_covers_the_run_at_once_and_says_why():
    """nvml_sample writes one end record (reason failed, the message in error) when NVML cannot start: the wait for
    the sampler's tick after the run ends at once, and the message is kept."""
    from gpufleet.facts.nvml_samples import parse_text  # pylint: disable=import-outside-toplevel
    from gpufleet.results.bench import samples_cover  # pylint: disable=import-outside-toplevel

    text = '{"type": "end", "t": 1784020373.4, "samples": 0, "reason": "failed", "error": "NVML did not start: x"}\n'
    parsed = parse_text(text)
    assert parsed["end"] == {"type": "end", "t": 1784020373.4, "samples": 0, "reason": "failed",
                             "error": "NVML did not start: x"}
    assert samples_cover(parsed, (1784020300.0, 1784020400.0)) is True
    # a sampler that has not written yet does not cover a run that ended after its last tick
    assert samples_cover(parse_text(""), (1784020300.0, 1784020400.0)) is False
