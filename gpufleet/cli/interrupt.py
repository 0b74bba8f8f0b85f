# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ctrl-C (SIGINT) and SIGTERM while ``gpufleet validate`` runs ansible-playbook.

ansible-runner starts ansible-playbook on a pseudo-terminal of its own (pexpect), in a session of its
own: a Ctrl-C at the user's terminal reaches the ``gpufleet`` process only. The signal is therefore
forwarded to ansible-playbook's process group (ansible-playbook passes it on to its workers and
stops as after a Ctrl-C of its own), and the CLI waits for it to end, at most ``grace_s`` seconds:
then ansible-runner kills it (its cancel callback). ansible-playbook's pid comes with every runner
event (the callback plugin runs in it); before the first event there is nothing of it to wait for.
Neither the forwarded signal nor runner's kill of the group reaches a worker ansible-playbook left behind (each
leads a session of its own): run_processes.py ends those once ansible-playbook has ended.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from gpufleet.results.exit_codes import EXIT_INTERRUPTED

SIGNALS = (signal.SIGINT, signal.SIGTERM)
GRACE_S = 30.0


def write_stderr(line: str) -> None:
    """One line on stderr, from a signal handler: straight to the descriptor, for the handler may run
    while the main code is inside a write to ``sys.stderr`` (a buffered stream is not reentrant)."""
    try:
        os.write(2, (line.rstrip("\n") + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


def signal_name(signum: int) -> str:
    """``SIGINT`` for 2."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return "signal %d" % signum


class Interruption:
    """The signals received during one ansible-playbook run, and what was done with them.

    ``handle`` is the signal handler, ``watch`` sees every runner event (for ansible-playbook's pid),
    ``cancel`` is runner's cancel callback (polled while ansible-playbook runs): True once the grace
    time after the first signal is over, or at once when ansible-playbook's pid is not known yet.
    """

    def __init__(self, grace_s: float = GRACE_S, clock: Callable[[], float] = time.monotonic,
                 kill: Callable[[int, int], None] = os.kill, killpg: Callable[[int, int], None] = os.killpg,
                 getpgid: Callable[[int], int] = os.getpgid, say: Callable[[str], None] = write_stderr,
                 label: str = "gpufleet") -> None:
        self.grace_s = grace_s
        self.clock = clock
        self.kill = kill
        self.killpg = killpg
        self.getpgid = getpgid
        self.say = say
        self.label = label
        self.signum: int | None = None
        self.since: float | None = None
        self.pid: int | None = None
        self.killed = False

    def watch(self, event: dict) -> None:
        """Learn ansible-playbook's pid from a runner event."""
        pid = event.get("pid")
        if self.pid is None and isinstance(pid, int) and pid > 1 and pid != os.getpid():
            self.pid = pid
            if self.signum is not None:  # the signal came while ansible-playbook was starting
                self.forward(self.signum)

    def forward(self, signum: int) -> None:
        """Send ``signum`` to ansible-playbook: to its process group when it leads one of its own (as a
        terminal's Ctrl-C would), else to the process alone (never to the CLI's own group)."""
        if self.pid is None:
            return
        try:
            group = self.getpgid(self.pid)
            if group == self.pid and group != os.getpgrp():
                self.killpg(group, signum)
            else:
                self.kill(self.pid, signum)
        except OSError:
            pass  # it has ended already

    def handle(self, signum: int, _frame: FrameType | None = None) -> None:
        """The signal handler: remember the first signal and its time, forward each one."""
        if self.signum is None:
            self.signum, self.since = signum, self.clock()
            self.say("%s: %s: stopping ansible-playbook (waiting up to %ds for it to end)"
                     % (self.label, signal_name(signum), self.grace_s))
        self.forward(signum)

    def cancel(self) -> bool:
        """ansible-runner's cancel callback: True (runner then kills ansible-playbook's process group)
        when the grace time is over, or when a signal came before ansible-playbook's pid was known."""
        if self.signum is None or self.killed:
            return self.killed
        if self.pid is None or self.clock() - (self.since or 0.0) > self.grace_s:
            self.killed = True
        return self.killed

    @property
    def exit_code(self) -> int:
        """The run's code for the signal (gpufleet/results/exit_codes.py): 99 for SIGINT, ansible-playbook's own after
        Ctrl-C; else the shell's 128 + its number (143 for SIGTERM)."""
        if self.signum == signal.SIGINT:
            return EXIT_INTERRUPTED
        return 128 + int(self.signum or 0)

    @contextmanager
    def installed(self) -> Iterator["Interruption"]:
        """``handle`` as the SIGINT and SIGTERM handler for the block, the previous handlers after it
        (signal handlers belong to the main thread: elsewhere nothing is installed)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {signum: signal.signal(signum, self.handle) for signum in SIGNALS}
        try:
            yield self
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
