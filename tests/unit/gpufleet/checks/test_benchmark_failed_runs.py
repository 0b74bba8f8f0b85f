# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A failed all_reduce_perf says why in its record, is never passed by the checks that read its NCCL log, and a
``-c 0`` run is "not validated": on REAL recordings (tests/fixtures/nccl/SOURCES.md), expected words read by hand.

The node's reason is what the node module really says of the recording (module_utils/bench_process.py
``classify`` with the exit status written in each test); the record envelopes are what bench_run records.
"""

from __future__ import annotations

from ansible_collections.gpufleet.acceptance.plugins.module_utils.bench_process import classify

from gpufleet.checks import benchmarks
from gpufleet.checks.model import FAIL, PASS, SKIP, NodeContext
from gpufleet.parsers.registry import parse
from gpufleet.results.bench import build_run_record

RTX5090 = "nccl/rtx5090x2-nccl-debug-info-warn-then-failure.txt"  # WARN Cuda failure 1 'invalid argument', then the backtrace
A6000 = "nccl/issue320-3x-rtx-a6000-1node-WARN-timestamped-failed-open-libnvidia-ml-unhandled-system-error.txt"
VALIDATION0 = "nccl/h100-2node-16rank-ndr-ib-allreduce-srun-prefix-validation0-issue290.txt"  # validation: 0, #wrong N/A
OLD_VALIDATION0 = "nccl/superbench-a100-sxm4-40gb-8gpu-single-node-allreduce-oldheader.txt"  # validation: 0
SINGLE = "nccl/h100-8gpu-1node-nvls-allreduce-128M-4G-issue290.txt"  # validation: 1, #wrong 0


def run_record(fixture_text, path, rc, kind="allreduce_single", hosts=("node",), command=("all_reduce_perf",),
               stdout=None, hang=False):
    stdout = fixture_text(path) if stdout is None else stdout
    outcome, reason = classify(rc, stdout, "", hang=hang, timeout=30, signals=["SIGTERM"])
    args = {"record_host": hosts[0], "hosts": list(hosts), "kind": kind, "argv": list(command), "env": {"NCCL_DEBUG": "INFO"}}
    result = {"outcome": outcome, "reason": reason, "rc": rc, "cmd": list(command), "started": "2026-01-01T00:00:00Z", "duration_s": 3.0}
    return build_run_record(args, result, "all_reduce_perf", None, None, parse("nccl", stdout))


def node(records):
    return NodeContext("node", settings={"benchmarks": records})


def test_failed_run_reason_quotes_the_nccl_warn_and_the_unhandled_cuda_error_not_the_last_backtrace_line(fixture_text):
    record = run_record(fixture_text, RTX5090, 1)
    # the node alone words it from the last line: " .. GENOA-06 pid 4766: Test failure common.cu:891"
    assert classify(1, fixture_text(RTX5090), "")[1] == "exit status 1: .. GENOA-06 pid 4766: Test failure common.cu:891"
    assert record["outcome"] == "failed"
    assert record["reason"] == ("GENOA-06:4766:4766 [1] enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'; "
                                "GENOA-06: Test NCCL failure common.cu:392 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / ' "
                                "(exit status 1)")
    # the routine graph-search WARNs printed before it are not the cause
    assert "falling back to simple order" not in record["reason"]


def test_timestamped_warn_is_the_cause_without_its_wall_clock(fixture_text):
    record = run_record(fixture_text, A6000, 3)
    assert record["reason"].startswith("gpu0301:842624:842643 [0] misc/nvmlwrap.cc:74 NCCL WARN Failed to open libnvidia-ml.so.1; "
                                       "gpu0301: Test NCCL failure common.cu:1119 'unhandled system error")
    assert record["reason"].endswith("(exit status 3)")
    message = benchmarks.outcome_problem(record)
    assert "Failed to open libnvidia-ml.so.1" in message and "Test failure common.cu:937" not in message


def test_algorithm_check_does_not_pass_a_run_whose_output_failed(fixture_text):
    # exit status 0 (a launcher that loses the ranks' status), but the output says Test NCCL failure
    record = run_record(fixture_text, RTX5090, 0)
    # no result row and a failure in the output: a failed run whatever its exit status said
    assert record["outcome"] == "failed" and record["reason"].startswith("exited 0, but its output says it failed: ")
    item, = benchmarks.check_allreduce_algo(node([record]))
    assert item["status"] == SKIP
    assert "NCCL WARN Cuda failure 1 'invalid argument'" in item["message"]


def test_algorithm_check_still_reports_a_finished_run(fixture_text):
    item, = benchmarks.check_allreduce_algo(node([run_record(fixture_text, SINGLE, 0)]))
    assert item["status"] == PASS and "NCCL_ALGO not pinned" in item["message"]


def test_c0_run_is_not_validated_and_does_not_pass_correctness(fixture_text):
    record = run_record(fixture_text, VALIDATION0, 0, kind="allreduce_multi", hosts=("node005", "node007"))
    assert record["parsed"]["validated"] is False and record["parsed"]["wrong_total"] is None
    item, = benchmarks.check_allreduce_wrong(node([record]))
    assert item["status"] == SKIP
    assert item["message"] == ("not validated: all_reduce_perf ran with -c 0 (validation: 0): its results were not checked, "
                               "#wrong says nothing")


def test_c0_on_the_command_line_is_not_validated_even_when_wrong_prints_0(fixture_text):
    # nccl-tests versions that print "#wrong 0" under -c 0: the command line says what was asked
    record = run_record(fixture_text, SINGLE, 0, command=("all_reduce_perf", "-b", "128M", "-e", "4G", "-c", "0"))
    assert record["parsed"]["wrong_total"] == 0
    item, = benchmarks.check_allreduce_wrong(node([record]))
    assert item["status"] == SKIP and "ran with -c 0 (command line)" in item["message"]


def test_validated_and_unvalidated_runs_are_each_named(fixture_text):
    checked = run_record(fixture_text, SINGLE, 0)
    unchecked = run_record(fixture_text, OLD_VALIDATION0, 0)
    assert checked["parsed"]["validated"] is True and unchecked["parsed"]["validated"] is False
    items = benchmarks.check_allreduce_wrong(node([checked, unchecked]))
    assert [item["status"] for item in items] == [PASS, SKIP]
    assert items[0]["message"] == "#wrong 0 in 1 validated all-reduce run(s); 1 not validated (-c 0)"


def test_corrupt_results_still_fail(fixture_text):
    record = run_record(fixture_text, "nccl/rtx3090-2node-1nic-inc-allreduce-WRONG-108-FAILED.txt", 1, kind="allreduce_pair", hosts=("a", "b"))
    assert record["reason"] == "# Out of bounds values : 108 FAILED (exit status 1)"
    item, = benchmarks.check_allreduce_wrong(node([record]))
    assert item["status"] == FAIL


RANKS_FAILED = "nccl/h100-1024rank-allreduce-5-rows-then-39-ranks-Test-NCCL-failure-mpirun-detected-PARTIAL-tail.txt"
LAUNCHER_ONLY = ("nccl/azure-nd-h100-v5-8rank-allreduce-mpirun-ucx-warn-ELIDED-primary-job-terminated-mpirun-detected-"
                 "exit3.txt")
HUNG = "hung: the table header was printed and no result row followed"


def test_a_run_hung_after_its_header_says_hung_and_is_never_a_figure_nor_wrong_0(fixture_text):
    # the real recording cut after its units line (15): the runner's timeout ended it (classify's hang reason)
    cut = "\n".join(fixture_text(SINGLE).split("\n")[:15]) + "\n"
    record = run_record(fixture_text, SINGLE, None, stdout=cut, hang=True)
    assert record["outcome"] == "hang"
    assert record["reason"] == HUNG + " (no exit within the 30s timeout; process group ended with SIGTERM)"
    single, = benchmarks.check_allreduce_single(node([record]))
    assert single["status"] == FAIL and single["measured"] is None
    # the reason says it hung: the outcome is not said again ("did not finish: hang (hung: ...)" before); the
    # parser's finding and the runner's timeout both stay
    assert single["message"] == ("all_reduce_perf did not finish: hung: the table header was printed and no result row "
                                 "followed (no exit within the 30s timeout; process group ended with SIGTERM)")
    wrong, = benchmarks.check_allreduce_wrong(node([record]))
    assert wrong["status"] == SKIP and wrong["measured"] is None
    assert wrong["message"] == ("not judged: all_reduce_perf did not finish: hung: the table header was printed and "
                                "no result row followed (no exit within the 30s timeout; process group ended with "
                                "SIGTERM): its #wrong says nothing")
    # beside a finished run the hung one is named, and only the finished one counts
    items = benchmarks.check_allreduce_wrong(node([run_record(fixture_text, SINGLE, 0), record]))
    assert [item["status"] for item in items] == [PASS, SKIP]
    assert items[0]["message"] == "#wrong 0 in 1 validated all-reduce run(s)"


def test_a_hang_whose_reason_does_not_say_it_hung_keeps_the_outcome(fixture_text):
    # the real recording cut inside its device list (line 11 of 16 before the first row): no table header, so the
    # parser cannot tell a hang from a crash; only the outcome says it hung
    cut = "\n".join(fixture_text(SINGLE).split("\n")[:11]) + "\n"
    record = run_record(fixture_text, SINGLE, None, stdout=cut, hang=True)
    assert record["reason"] == ("no result rows in the output (hang, crash or launch failure) "
                                "(no exit within the 30s timeout; process group ended with SIGTERM)")
    single, = benchmarks.check_allreduce_single(node([record]))
    assert single["message"] == ("all_reduce_perf did not finish: hang (no result rows in the output (hang, crash or "
                                 "launch failure) (no exit within the 30s timeout; process group ended with SIGTERM))")


def test_the_reason_is_the_ranks_failure_never_mpiruns_closing_summary(fixture_text):
    record = run_record(fixture_text, RANKS_FAILED, 3, kind="allreduce_multi", hosts=("HCA-128", "HCA-1"))
    # the node alone quotes the last line: Open MPI's closing box
    assert classify(3, fixture_text(RANKS_FAILED), "")[1] == "exit status 3: " + "-" * 74
    assert record["reason"] == ("HCA-128: Test NCCL failure common.cu:1204 'unhandled cuda error (run with "
                                "NCCL_DEBUG=INFO for details) / ' (exit status 3)")
    assert record["parsed"]["errors"][0]["count"] == 39
    # its five rows before the failure are no pass of #wrong either
    wrong, = benchmarks.check_allreduce_wrong(node([record]))
    assert wrong["status"] == SKIP and "Test NCCL failure common.cu:1204" in wrong["message"]


def test_with_only_launcher_lines_the_reason_is_the_first_of_them(fixture_text):
    record = run_record(fixture_text, LAUNCHER_ONLY, 3)
    assert record["reason"] == ("Primary job terminated normally, but 1 process returned a non-zero exit code. "
                                "Per user-direction, the job has been aborted. (exit status 3)")


def test_a_damaged_table_is_no_figure_even_when_the_run_exited_0(fixture_text):
    # EDITED: the 1 GiB row (line 19 of the NVLS recording: 4 GiB is its largest) cut after its root cell by an
    # NCCL WARN without its host prefix
    text = fixture_text(SINGLE)
    row = next(line for line in text.split("\n") if line.strip().startswith("1073741824"))
    cut = row[:row.index("-1") + 2] + "NCCL WARN Cuda failure 'out of memory'"
    record = run_record(fixture_text, SINGLE, 0, stdout=text.replace(row, cut))
    assert record["outcome"] == "ok" and record["parsed"]["damaged"]["by"] == "NCCL WARN Cuda failure 'out of memory'"
    item, = benchmarks.check_allreduce_single(node([record]))
    assert item["status"] == FAIL and item["measured"] is None
    assert item["message"] == ("all_reduce_perf failed: result row at line 19 cut by: "
                               "NCCL WARN Cuda failure 'out of memory'")
