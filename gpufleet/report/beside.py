# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Work done beside this process by a forked copy of it, its result sent back through a pipe.

A large report reads its host records in several processes (report/digest.py), each copy its share of the files,
and writes report.md, results.json and junit.xml in a copy while this process writes report.html (render.py). A copy
holds what this process held when it was made (fork copies memory on write), so only its result crosses over,
pickled: it comes from a copy of this same program, never from a node. Used only where a fork is safe and can help
(:func:`can_fork`): Linux, more than one CPU to run on, and one thread (a fork of a threaded process may inherit a lock
some other thread held).

The copy never returns into the caller's code: it runs the work, writes its result to a pipe and ends with
``os._exit``, so no ``atexit`` handler, buffered output or ``finally`` of the caller runs twice.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from typing import Any, Callable, Iterable

from gpufleet.report.common import error_words


# what ends a copy at once, as it ends this process (a Ctrl-C to the process group, a stop)
ENDING_SIGNALS = {signal.SIGINT, signal.SIGTERM}


class BesideError(Exception):
    """The copy ended without a result: it was killed, or its result could not be sent."""


def usable_cpus() -> int:
    """How many CPUs this process may run on (its affinity where the system says, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether a forked copy can run beside this process: Linux (macOS's frameworks are not safe across a fork), a
    second CPU to run it, and no other thread here."""
    return sys.platform.startswith("linux") and usable_cpus() > 1 and threading.active_count() == 1


class Beside:
    """``work()`` running in a forked copy of this process; :meth:`result` waits for it and returns what it returned
    (anything pickle can carry)."""

    def __init__(self, work: Callable[[], Any]) -> None:
        read_end, write_end = os.pipe()
        # SIGINT and SIGTERM held back across the fork: none may reach the copy while it still has this process's
        # handlers (which would run this process's code in it, or let it live on past a stop)
        held = signal.pthread_sigmask(signal.SIG_BLOCK, ENDING_SIGNALS)
        try:
            self.pid = os.fork()
            if self.pid == 0:  # the copy: never returns
                os.close(read_end)
                _run_and_exit(work, write_end, held)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        os.close(write_end)
        self._read_end = read_end

    def result(self) -> Any:
        """What ``work()`` returned; BesideError when the copy ended without a result, or ``work()`` raised (the
        message says which)."""
        with os.fdopen(self._read_end, "rb") as pipe:
            try:
                answer = pickle.load(pipe)
            except Exception:  # pylint: disable=broad-exception-caught  # a copy killed mid-way sends half a pickle
                answer = None
        _pid, status = os.waitpid(self.pid, 0)
        if not isinstance(answer, dict):
            raise BesideError("the process beside (pid %d) ended with %s and no result" % (self.pid, _ended(status)))
        if "raised" in answer:
            raise BesideError("the process beside (pid %d) failed: %s" % (self.pid, answer["raised"]))
        return answer["returned"]

    def stop(self) -> None:
        """End the copy and wait for it (the caller failed: its result would not be read)."""
        try:
            os.kill(self.pid, signal.SIGTERM)
        except OSError:
            pass
        os.close(self._read_end)
        os.waitpid(self.pid, 0)


def _ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        return "signal %d" % os.WTERMSIG(status)
    return "exit %d" % os.WEXITSTATUS(status)


def _run_and_exit(work: Callable[[], Any], write_end: int, held: Iterable[int]) -> None:
    """In the copy: run ``work``, send ``{"returned": ...}`` or ``{"raised": "..."}`` and end, whatever happens. An
    interrupt ends the copy at once (the caller's handlers are the caller's: the caller is told by the copy's end);
    ``held``: the signal mask to take back once the ending signals are the default again."""
    code = 1
    try:
        for number in ENDING_SIGNALS:
            signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        try:
            answer = {"returned": work()}
        except Exception as exc:  # pylint: disable=broad-exception-caught  # sent to the caller, which reports it
            answer = {"raised": error_words(exc)}
        with os.fdopen(write_end, "wb") as pipe:
            pickle.dump(answer, pipe, protocol=pickle.HIGHEST_PROTOCOL)
        code = 0
    finally:
        os._exit(code)  # pylint: disable=protected-access
