# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Progress of a playbook run through ansible-runner, per phase, on stderr (``gpufleet validate``, ``burn-in``).

Each line names the phase, how many hosts are done, how long the phase has run, and the task:
``gpufleet validate: Facts 3/4 hosts done (12 s): gather the node's facts``. A phase that writes no line for
:data:`HEARTBEAT_S` says it is still running (``... Benchmarks still running (1 min 30 s): 3/8 hosts done, 5
running: ...``): ansible-runner calls :meth:`Progress.tick` at least every 5 s (its ``pexpect_timeout``) through the
run's ``cancel_callback``, event or not.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gpufleet.cli.common import load_run, say, terminal_text
from gpufleet.results.store import ResultsError

# A phase silent this long says it is still running, and how far it is
HEARTBEAT_S = 30.0


PHASES = ("Preflight", "Facts", "Benchmarks", "Burn-in", "Results", "Verdict", "Report")
RESULT_EVENTS = ("runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable")
# The playbook's last task: it fails each node that is not accepted, after the verdicts and the report are written
# (gpufleet_fail_on_verdict); its failures mean "judged", not "the run failed".
VERDICT_GATE = "Verdict | fail the run for a node that is not accepted"
# Tasks of plays that run on some of the nodes only, by design (validate_cluster.yml: the gate on the nodes not
# accepted, the opt-ins' files on the nodes that get one): once such a task is over, every node is done with it.
SOME_NODES_TASKS = (VERDICT_GATE, "Verdict | the verdict file on each node", "Verdict | the gate baseline on each")
# Tasks Ansible adds itself (a role's meta/argument_specs.yml check): no step of the run, never shown as progress
ANSIBLE_INTERNAL_TASKS = ("Validating arguments against arg spec",)


class Progress:
    """An ansible-runner event handler: per phase, how many hosts are done, on stderr.

    Ansible's linear strategy runs a task on every host before the next, so a phase advances task
    by task: a line ``<Phase> <done>/<total> hosts done: <task>`` is written when the task has a
    result (ok, failed, skipped, unreachable) for every host still in the play, and on fleets of
    20 hosts or more also at each tenth on the way. A ``run_once`` task's single result counts for
    every host; a host that failed a task without ``ignore_errors``, or was unreachable, has left the play
    and counts as done from then on. The total is the play's host list, read from run.json once the preflight has
    written it (the lines of the first preflight task are therefore not shown). ``run_once`` tasks
    are known from the playbook, or, inside roles, by their single result (see ``_end_task``).
    """

    def __init__(self, results_dir: str, once: Iterable[str] = (), write: Callable[[str], None] = say,
                 command: str = "validate", plays: dict[str, str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.results_dir = results_dir
        self.clock = clock
        # when the phase began, and when a line was last written (the heartbeat's quiet time)
        self.phase_started = self.last_line = clock()
        self.command = command
        self.once = set(once)
        # {play name: phase} of the imported playbooks (imported_play_phases)
        self.plays = dict(plays or {})
        self.write = write
        self.hosts: list[str] | None = None
        self.phase: str | None = None
        self.task: str | None = None
        # whether any host ran the task (a task every host skipped, as the burn-in at a level without one, says
        # nothing)
        self.ran = False
        self.done: set[str] = set()
        self.dropped: set[str] = set()
        self.shown: int | None = None
        self.failures: list[str] = []
        # what the exit status of ansible-playbook is made of (judged_despite_rc)
        self.gate_started = False
        self.failed_tasks: set[str] = set()
        self.unreachable: set[str] = set()
        # the writes into the results directory that failed (results_write_error): the controller's failure
        self.write_failures: list[str] = []

    def _load_hosts(self) -> None:
        try:
            hosts = load_run(self.results_dir)[0].get("hosts")
        except ResultsError:
            return
        if isinstance(hosts, list):
            self.hosts = [str(host) for host in hosts]

    def _show(self, force: bool = False) -> None:
        if self.phase is None or self.hosts is None or self.task is None or not self.ran:
            return
        total, done = len(self.hosts), self._done_count()
        step = max(total // 10, 1) if total >= 20 else total
        if done == self.shown or (not force and done < total and (done == 0 or done % step)):
            return
        self.shown = done
        self._line("%s %d/%d hosts done (%s): %s" % (self.phase, done, total, self._elapsed(), self._task_words()))

    def _done_count(self) -> int:
        """The play's hosts done with the task: they have a result, or have left the play."""
        return len((self.done | self.dropped) & set(self.hosts or ()))

    def _task_words(self) -> str:
        return terminal_text(str(self.task).split("|", 1)[-1].strip(), 80)

    def _elapsed(self) -> str:
        """How long the phase has run: ``12 s``, ``2 min 5 s``."""
        seconds = int(max(self.clock() - self.phase_started, 0))
        return "%d s" % seconds if seconds < 60 else "%d min %d s" % divmod(seconds, 60)

    def _line(self, text: str) -> None:
        self.last_line = self.clock()
        self.write("gpufleet %s: %s" % (self.command, text))

    def tick(self) -> None:
        """Called every few seconds, events or not: a phase that wrote no line for :data:`HEARTBEAT_S` says it is
        still running, with its hosts done and running."""
        if self.phase is None or self.hosts is None or self.task is None:
            return
        if self.clock() - self.last_line < HEARTBEAT_S:
            return
        total, done = len(self.hosts), self._done_count()
        self._line("%s still running (%s): %d/%d hosts done, %d running: %s" % (
            self.phase, self._elapsed(), done, total, total - done, self._task_words()))

    def _end_task(self) -> None:
        """A task is over: a single result on a fleet of several hosts was a ``run_once`` task (the
        linear strategy gives every host in the play a result, skipped or not), which counts for all;
        else a count the throttle held back is shown as it stands."""
        if self.task is None or self.hosts is None or not self.done:
            return
        if len(self.done) == 1 and len(self.hosts) > 1 or self.task.startswith(SOME_NODES_TASKS):
            self.done = set(self.hosts)
        if self.shown != self._done_count():
            self._show(force=True)

    def _advance(self, phase: str | None) -> None:
        """Phases only move forward: a role run late in the play may name its own checks "Preflight | ...", as
        benchmark.yml names its own first tasks."""
        if phase in PHASES and (self.phase is None or PHASES.index(phase) > PHASES.index(self.phase)):
            self.phase = phase
            self.phase_started = self.clock()

    def __call__(self, event: Mapping[str, Any]) -> bool:
        """Take one ansible-runner event; always True (runner keeps the event)."""
        kind = event.get("event")
        data = event.get("event_data") or {}
        task = str(data.get("task") or "")
        if kind in ("playbook_on_task_start", "playbook_on_stats"):
            self._end_task()
        if kind == "playbook_on_play_start":
            self._advance(self.plays.get(str(data.get("play") or data.get("name") or "")))
        if kind == "playbook_on_task_start":
            self._start_task(task)
        elif kind in RESULT_EVENTS:
            self._result(str(kind), task, data)
        return True

    def _start_task(self, task: str) -> None:
        """A task starts: its phase (the name's prefix) may advance, and no host is done with it yet."""
        self._advance(task.split("|", 1)[0].strip() if "|" in task else None)
        # Ansible's own tasks (a role's argument check) are no step of the run to report
        self.task = None if task.startswith(ANSIBLE_INTERNAL_TASKS) else task
        self.ran = False
        self.done = set()
        self.shown = None
        self.gate_started = self.gate_started or task.startswith(VERDICT_GATE)

    def _result(self, kind: str, task: str, data: Mapping[str, Any]) -> None:
        """A host's result of the task (``kind``: one of RESULT_EVENTS): it is done with it, or has left the play."""
        host = str(data.get("host") or "")
        if self.hosts is None and task.startswith("Preflight") and kind == "runner_on_ok":
            self._load_hosts()
        self.ran = self.ran or kind != "runner_on_skipped"
        if task in self.once:
            self.done = set(self.hosts or [host])
        else:
            self.done.add(host)
        if kind == "runner_on_unreachable":
            # unless gpufleet_fail_on_verdict is false it has left the play, as a failed host has: done from now on
            self.unreachable.add(host)
            self.dropped.add(host)
        if kind == "runner_on_failed":
            self._failed(host, task, data)
        self._show()

    def _failed(self, host: str, task: str, data: Mapping[str, Any]) -> None:
        """A failed result: a failed write into the results directory (even one the task ignored), and, when the
        failure was not ignored, the host has left the play and the failure is kept for the summary."""
        res = data.get("res") or {}
        written = res.get("results_write_error")
        if written and written not in self.write_failures:
            self.write_failures.append(str(written))  # ignored by the fact task, yet what stopped the run
        if not data.get("ignore_errors"):
            self.failed_tasks.add(task)
            self.dropped.add(host)
            self.failures.append("%s: %s: %s" % (terminal_text(host), task,
                                                 terminal_text(res.get("msg") or "failed", 2000)))
