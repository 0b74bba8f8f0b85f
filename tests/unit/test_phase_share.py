# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""benchmarks/phase_share.py: the time some node ran a benchmark, from host records, against the phase's wall."""

from __future__ import annotations

import json
import os
import sys

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "benchmarks"))

import phase_share  # noqa: E402  pylint: disable=import-error,wrong-import-position
from gpufleet.results.store import SCHEMA, RunDir  # noqa: E402  pylint: disable=wrong-import-position


def _run(name, hosts, started, duration, **extra):
    return dict({"name": name, "hosts": hosts, "started": started, "duration_s": duration}, **extra)


# two hosts; a pair run recorded on both (counts once), one single-node run each, one overlapping another, a skipped
# run (no duration) and one with a started the store could not read
RECORDS = [
    {"host": "a", "benchmarks": [
        _run("allreduce_single", ["a"], "2026-12-06T10:00:00Z", 4.0),
        _run("allreduce_pairs", ["a", "b"], "2026-12-06T10:00:10Z", 5.5, round=1),
        _run("iperf3", ["a", "b"], "2026-12-06T10:00:30Z", None, outcome="skipped"),
    ]},
    {"host": "b", "benchmarks": [
        _run("allreduce_single", ["b"], "2026-12-06T10:00:02Z", 4.0),
        _run("allreduce_pairs", ["b", "a"], "2026-12-06T10:00:10Z", 5.5, round=1),
        _run("gpu_compute", ["b"], "not a time", 9.0),
    ]},
]


def test_windows_count_a_multi_host_run_once_and_skip_runs_without_a_window():
    # 10:00:00 is 1796551200 s after the epoch
    start = 1796551200.0
    expected = [(start, start + 4.0), (start + 2.0, start + 6.0), (start + 10.0, start + 15.5)]
    assert sorted(phase_share.run_windows(RECORDS)) == expected


def test_the_busy_time_is_the_union_and_its_lower_bound_opens_each_window_a_second_later():
    windows = phase_share.run_windows(RECORDS)
    # recorded: [0, 6] (two overlapping single runs) and [10, 15.5]: 6 + 5.5 = 11.5 s
    # each opened 1 s later: [1, 4] + [3, 6] = [1, 6] (5 s) and [11, 15.5] (4.5 s): 9.5 s
    assert phase_share.busy_bounds(windows) == (9.5, 11.5)
    # a window shorter than the second it may have opened late adds nothing to the lower bound
    assert phase_share.busy_bounds([(0.0, 0.5), (2.0, 4.0)]) == (1.0, 2.5)


def test_share_of_a_results_directory_and_its_line(tmp_path, capsys):
    RunDir.create(str(tmp_path), hosts=["a", "b"])
    for record in RECORDS:
        (tmp_path / "hosts" / (record["host"] + ".json")).write_text(json.dumps(dict(record, schema=SCHEMA)))
    figures = phase_share.share(str(tmp_path), 46.0)
    # orchestration: 46 - 11.5 = 34.5 s (75 %) to 46 - 9.5 = 36.5 s (79 %)
    assert figures["orchestration_low_pct"] == 75.0 and round(figures["orchestration_high_pct"], 2) == 79.35
    assert phase_share.main([str(tmp_path), "--phase-wall", "46"]) == 0
    assert capsys.readouterr().out == ("benchmark phase: wall 46.0 s; some node running one of 3 benchmark runs "
                                       "9.5-11.5 s; orchestration 75-79 %\n")
    # not a results directory: the store names its run.json, and the line says what to give
    assert phase_share.main([str(tmp_path / "hosts"), "--phase-wall", "46"]) == 2
    said = capsys.readouterr().err
    assert os.path.join(str(tmp_path), "hosts", "run.json") in said and "give a gpufleet results directory" in said
