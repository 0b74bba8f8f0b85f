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
    progress = validate.Progress("/nonexistent", write=lines.append, plays={"All-reduce benchmarks": "Benchmarks"},
                                 clock=lambda: 0.0)
    progress.hosts = ["n1"]
    for kind, task, play in (("playbook_on_play_start", None, "All-reduce benchmarks"),
                             ("playbook_on_task_start", "Single node | all_reduce_perf", None),
                             ("playbook_on_play_start", None, "Health after the benchmarks, on the hosts that ran them"),
                             ("playbook_on_task_start", "Health after the benchmarks | read again and recorded", None)):
        progress({"event": kind, "event_data": {"task": task, "play": play, "name": play}})
    assert progress.phase == "Benchmarks"


def test_a_benchmark_play_is_the_benchmarks_phase_until_the_verdict():
    lines = []
    progress = validate.Progress("/nonexistent", write=lines.append, plays={"All-reduce benchmarks": "Benchmarks"},
                                 clock=lambda: 0.0)
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
    assert lines == ["gpufleet validate: Facts 1/1 hosts done (0 s): gather",
                     "gpufleet validate: Benchmarks 1/1 hosts done (0 s): the level asked for is known",
                     "gpufleet validate: Benchmarks 1/1 hosts done (0 s): all_reduce_perf"]
    progress({"event": "playbook_on_task_start", "event_data": {"task": "Verdict | judge"}})
    assert progress.phase == "Verdict"


class Clock:
    """A clock the test moves by hand: no assertion here depends on the machine's speed."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _start(progress, task, phase_play=None):
    if phase_play:
        progress({"event": "playbook_on_play_start", "event_data": {"play": phase_play, "name": phase_play}})
    progress({"event": "playbook_on_task_start", "event_data": {"task": task}})


def test_each_line_carries_the_phase_elapsed_time_and_a_quiet_phase_a_heartbeat():
    lines, clock = [], Clock()
    progress = validate.Progress("/nonexistent", write=lines.append, clock=clock,
                                 plays={"All-reduce benchmarks": "Benchmarks"})
    progress.hosts = ["n1", "n2", "n3"]
    _start(progress, "Facts | gather")
    clock.now += 12.5
    for host in ("n1", "n2", "n3"):
        progress({"event": "runner_on_ok", "event_data": {"task": "Facts | gather", "host": host}})
    assert lines == ["gpufleet validate: Facts 3/3 hosts done (12 s): gather"]
    # a new phase starts its own clock
    _start(progress, "Single node | all_reduce_perf on each node", "All-reduce benchmarks")
    progress({"event": "runner_on_ok", "event_data": {"task": "Single node | all_reduce_perf on each node",
                                                      "host": "n1"}})
    clock.now += 29
    progress.tick()
    assert len(lines) == 1  # quiet for under 30 s: nothing
    clock.now += 1
    progress.tick()
    assert lines[-1] == ("gpufleet validate: Benchmarks still running (30 s): 1/3 hosts done, 2 running: "
                         "all_reduce_perf on each node")
    # the heartbeat itself resets the quiet time; the next one 30 s later
    clock.now += 29
    progress.tick()
    assert len(lines) == 2
    clock.now += 66
    progress.tick()
    assert lines[-1] == ("gpufleet validate: Benchmarks still running (2 min 5 s): 1/3 hosts done, 2 running: "
                         "all_reduce_perf on each node")


def test_no_heartbeat_before_the_hosts_are_known_or_on_ansibles_own_tasks():
    lines, clock = [], Clock()
    progress = validate.Progress("/nonexistent", write=lines.append, clock=clock)
    _start(progress, "Facts | gather")
    clock.now += 300
    progress.tick()  # run.json not read yet: no total to show
    progress.hosts = ["n1"]
    _start(progress, "Validating arguments against arg spec 'main'")
    clock.now += 300
    progress.tick()
    assert lines == []
