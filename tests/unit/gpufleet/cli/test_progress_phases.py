# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`gpufleet validate`'s phase for the plays it imports: their tasks are named by step ("Single node | ...", and
their own "Preflight | ..."), so the phase an interrupted run names comes from the play's start."""

from __future__ import annotations

from gpufleet.cli import validate


def test_the_imported_plays_of_the_shipped_playbook_have_their_phase():
    phases = validate.imported_play_phases(validate.playbook_path())
    # playbooks/benchmark.yml and playbooks/burn_in.yml, imported by validate_cluster.yml as "Benchmarks (...)" and
    # "Burn-in (...)"
    # burn_in.yml's "Health after the burn-in" play (the health re-read after stress) is part of the burn-in phase;
    # validate_cluster.yml's own "Health after the benchmarks" play is not imported: its tasks ("Health after the
    # benchmarks | ...") name no phase, so the run stays in Benchmarks, which only moves forward
    assert phases == {"All-reduce benchmarks and bad-node search": "Benchmarks",
                      "Burn-in under full load (GPUs and interconnect), NVML sampling": "Burn-in",
                      "Health after the burn-in": "Burn-in",
                      "Judge and report the burn-in (run alone)": "Burn-in"}


def test_the_health_re_read_after_the_benchmarks_stays_in_the_benchmarks_phase():
    lines = []
    progress = validate.Progress("/nonexistent", write=lines.append, plays={"All-reduce benchmarks": "Benchmarks"})
    progress.hosts = ["n1"]
    for kind, task, play in (("playbook_on_play_start", None, "All-reduce benchmarks"),
                             ("playbook_on_task_start", "Single node | all_reduce_perf", None),
                             ("playbook_on_play_start", None, "Health after the benchmarks, on the hosts that ran them"),
                             ("playbook_on_task_start", "Health after the benchmarks | read again and recorded", None)):
        progress({"event": kind, "event_data": {"task": task, "play": play, "name": play}})
    assert progress.phase == "Benchmarks"


def test_a_benchmark_play_is_the_benchmarks_phase_until_the_verdict():
    lines = []
    progress = validate.Progress("/nonexistent", write=lines.append, plays={"All-reduce benchmarks": "Benchmarks"})
    progress.hosts = ["n1"]
    for kind, task, play in (("playbook_on_play_start", None, "Facts of the nodes"),
                             ("playbook_on_task_start", "Facts | gather", None),
                             ("playbook_on_play_start", None, "All-reduce benchmarks"),
                             # benchmark.yml's own first tasks: not back to Preflight
                             ("playbook_on_task_start", "Preflight | the level asked for is known", None),
                             ("playbook_on_task_start", "Single node | all_reduce_perf", None)):
        progress({"event": kind, "event_data": {"task": task, "play": play, "name": play}})
        if task:
            progress({"event": "runner_on_ok", "event_data": {"task": task, "host": "n1"}})
    assert progress.phase == "Benchmarks"
    assert lines == ["gpufleet validate: Facts 1/1 hosts done: gather",
                     "gpufleet validate: Benchmarks 1/1 hosts done: the level asked for is known",
                     "gpufleet validate: Benchmarks 1/1 hosts done: all_reduce_perf"]
    progress({"event": "playbook_on_task_start", "event_data": {"task": "Verdict | judge"}})
    assert progress.phase == "Verdict"
