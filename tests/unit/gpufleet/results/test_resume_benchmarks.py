# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A resumed run knows which benchmark runs the interrupted one recorded (RunDir.recorded_benchmark_jobs), so
playbooks/benchmark.yml neither runs them again (a duplicate record) nor loses them. SYNTHETIC records."""

from __future__ import annotations

from gpufleet.results.store import RunDir


def _bench(job_id, outcome="ok", host="a"):
    return {"name": "all_reduce_perf", "command": ["all_reduce_perf", "-g", "8"], "environment": {},
            "message_size_bytes": None, "algorithm": None, "raw_output_path": None, "parsed": None,
            "started": "2026-01-31T12:00:00Z", "duration_s": 1.0, "kind": "allreduce_single", "hosts": [host],
            "outcome": outcome, "job_id": job_id}


def test_a_reopened_run_lists_the_benchmark_runs_it_recorded(tmp_path):
    first = RunDir.create(str(tmp_path / "run"), hosts=["a", "b"])
    started = first.read_run()["started"]
    first.add_benchmark("a", _bench("gpufleet-20260131T120000Z-single-a-0"))
    # a crash is a measured outcome: kept; unreachable: run again; no job id: a preflight record
    first.add_benchmark("a", _bench("gpufleet-20260131T120000Z-single-a-1", outcome="crash"))
    first.add_benchmark("b", _bench("gpufleet-20260131T120000Z-single-b-0", outcome="unreachable", host="b"))
    first.add_benchmark("b", _bench(None, outcome="skipped", host="b"))
    again = RunDir.create(str(tmp_path / "run"), hosts=["a", "b"])
    assert again.read_run()["started"] == started  # the job tag of benchmark.yml stays the same
    assert again.recorded_benchmark_jobs() == ["gpufleet-20260131T120000Z-single-a-0",
                                               "gpufleet-20260131T120000Z-single-a-1"]


def test_a_new_run_has_recorded_none(tmp_path):
    assert RunDir.create(str(tmp_path / "run"), hosts=["a"]).recorded_benchmark_jobs() == []
