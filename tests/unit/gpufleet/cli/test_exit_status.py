# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``gpufleet validate`` reads ansible-playbook's exit status: the playbook's verdict gate failing the nodes it did
not accept, and unreachable nodes, mean "judged" (exit from the verdicts), anything else "the run failed" (1)."""

from __future__ import annotations

from gpufleet.cli import validate

GATE = "Verdict | fail the run for a node that is not accepted (gpufleet_fail_on_verdict)"


def _event(kind, task=None, host=None, **data):
    return {"event": kind, "event_data": dict(data, task=task, host=host)}


def test_a_clean_run_is_judged():
    assert validate.judged_despite_rc(0, False, set(), set())


def test_the_gate_failing_rejected_nodes_is_judged():
    assert validate.judged_despite_rc(2, True, {GATE}, set())


def test_unreachable_nodes_alone_or_with_the_gate_are_judged():
    assert validate.judged_despite_rc(4, True, set(), {"gone"})
    assert validate.judged_despite_rc(4, True, {GATE}, {"gone"})


def test_another_task_failing_is_a_failed_run():
    assert not validate.judged_despite_rc(2, True, {GATE, "Report | render the fleet acceptance report"}, set())
    assert not validate.judged_despite_rc(2, True, {"Multi node | all_reduce_perf via the launcher"}, set())


def test_a_run_that_never_reached_the_gate_is_a_failed_run():
    # e.g. every node unreachable: Ansible ends the playbook after the fact task
    assert not validate.judged_despite_rc(4, False, set(), {"a", "b"})
    assert not validate.judged_despite_rc(2, False, {GATE}, set())


def test_other_exit_statuses_are_a_failed_run():
    assert not validate.judged_despite_rc(1, True, {GATE}, set())  # an error
    assert not validate.judged_despite_rc(250, True, set(), set())  # an unexpected error
    assert not validate.judged_despite_rc(4, True, {GATE}, set())  # 4 with nothing unreachable: a parser error
    assert not validate.judged_despite_rc(2, True, set(), set())  # failed, but nothing seen failing


def test_progress_records_the_gate_its_failures_and_the_unreachable_hosts():
    lines = []
    progress = validate.Progress("/nonexistent", write=lines.append, clock=lambda: 0.0)
    progress.hosts = ["ok", "rejected", "gone"]
    for event in (
        _event("playbook_on_task_start", "Facts | every fact group, one module run per node"),
        _event("runner_on_ok", "Facts | every fact group, one module run per node", "ok"),
        _event("runner_on_ok", "Facts | every fact group, one module run per node", "rejected"),
        _event("runner_on_unreachable", "Facts | every fact group, one module run per node", "gone"),
        _event("playbook_on_task_start", "Verdict | judge the whole fleet and write the verdicts"),
        _event("runner_on_ok", "Verdict | judge the whole fleet and write the verdicts", "ok"),
        _event("playbook_on_task_start", GATE),
        _event("runner_on_skipped", GATE, "ok"),
        _event("runner_on_failed", GATE, "rejected", ignore_errors=False, res={"msg": "not accepted: rejected: REJECT"}),
        _event("playbook_on_stats"),
    ):
        progress(event)
    assert progress.gate_started is True
    assert progress.failed_tasks == {GATE}
    assert progress.unreachable == {"gone"}
    # the unreachable host left the play: later tasks count it done
    assert lines[-1] == "gpufleet validate: Verdict 3/3 hosts done (0 s): fail the run for a node that is not accepted " \
        "(gpufleet_fail_on_verdict)"
    assert validate.judged_despite_rc(4, progress.gate_started, progress.failed_tasks, progress.unreachable)
