# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Work done beside this process by a forked copy of it, its result sent back through a pipe.

A large report is made in a copy (render.py), reads its host records in several (report/digest.py, each copy its
share of the files) and writes its files in several (report/writers.py). A copy holds what this process held when it
was made (fork copies memory on write), so only its result crosses over (and what it sends as it goes: Frames),
marshalled (pickled when it holds what marshal cannot carry): it comes from a copy of this same program, never from a
node. Used only where a fork is safe and can help (:func:`can_fork`): Linux, more than one CPU to run on, and one
thread (a fork of a threaded process may inherit a lock some other thread held). A copy ends when its caller does.

The copy never returns into the caller's code: it runs the work, writes its result to a pipe and ends with
``os._exit``, so no ``atexit`` handler, buffered output or ``finally`` of the caller runs twice.
"""

from __future__ import annotations

import contextlib
import ctypes
import marshal
import os
import pickle
import signal
import struct
import sys
import tempfile
import threading
from typing import Any, Callable, Iterable, Iterator

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
        caller = os.getpid()
        try:
            self.pid = os.fork()
            if self.pid == 0:  # the copy: never returns
                os.close(read_end)
                _run_and_exit(work, write_end, held, caller)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        os.close(write_end)
        self._read_end = read_end

    def result(self) -> Any:
        """What ``work()`` returned; BesideError when the copy ended without a result, or ``work()`` raised (the
        message says which)."""
        with os.fdopen(self._read_end, "rb") as pipe:
            try:
                answer = unpack(pipe.read())
            except Exception:  # pylint: disable=broad-exception-caught  # a copy killed mid-way sends half an answer
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
        # what result() did before it was interrupted (a Ctrl-C) is not done again
        with contextlib.suppress(OSError):
            os.close(self._read_end)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


class TakeQueue:
    """The numbers ``0 .. count - 1``, each taken once, in order, by whichever process asks first: this one or a copy
    made after the queue (work shared by who is free, not cut in advance). They wait in a pipe, 4 bytes each, written
    before any copy is made; a read of 4 bytes takes 4 whole bytes, whoever else reads (the kernel serializes a pipe's
    readers). At most LIMIT numbers: a pipe holds one page (4 KiB) even when its owner's pipe memory is used up, so
    writing them never waits."""

    LIMIT = 1024
    _NUMBER = struct.Struct("<I")

    def __init__(self, count: int) -> None:
        if not 0 <= count <= self.LIMIT:
            raise ValueError("a queue holds 0 to %d numbers, not %d" % (self.LIMIT, count))
        self._read_end, write_end = os.pipe()
        try:
            os.write(write_end, b"".join(self._NUMBER.pack(number) for number in range(count)))
        finally:
            os.close(write_end)

    def taken(self) -> Iterator[int]:
        """The numbers this process takes, one at a time, until none is left."""
        while True:
            data = os.read(self._read_end, self._NUMBER.size)
            if not data:
                return
            yield self._NUMBER.unpack(data)[0]

    def close(self) -> None:
        if self._read_end >= 0:
            os.close(self._read_end)
            self._read_end = -1


class Frames:
    """What a copy sends while it works, taken here as it comes, without waiting: each piece packed (:func:`pack`) and
    appended as a frame (its length, then it) to an unnamed file of ``directory`` made before the copy. A file, not a
    pipe: the copy never waits for this process to read. The copy writes at the end (the file's offset, which only it
    moves); this process reads at its own offset (``os.pread``), a frame once it is whole."""

    _LENGTH = struct.Struct("<Q")

    def __init__(self, directory: str) -> None:
        self._file = tempfile.TemporaryFile(prefix=".frames-", dir=directory, buffering=0)
        self._taken = 0

    def send(self, data: Any) -> None:
        """In the copy: ``data`` appended as a frame."""
        packed = pack(data)
        view = memoryview(self._LENGTH.pack(len(packed)) + packed)
        while view:
            view = view[os.write(self._file.fileno(), view):]

    def ready(self) -> Iterator[Any]:
        """Here: each frame sent and not yet taken, whole, unpacked, in the order sent."""
        handle = self._file.fileno()
        size = os.fstat(handle).st_size
        while self._taken + self._LENGTH.size <= size:
            (length,) = self._LENGTH.unpack(os.pread(handle, self._LENGTH.size, self._taken))
            start = self._taken + self._LENGTH.size
            if start + length > size:  # still being written
                return
            self._taken = start + length
            yield unpack(os.pread(handle, length, start))

    def close(self) -> None:
        self._file.close()


def pack(data: Any) -> bytes:
    """``data`` as bytes for :func:`unpack`, in this process or another copy of this program: marshalled (plain data:
    5,000 records' share of a report crosses in 0.9 CPU-s instead of a pickle's 1.5), else pickled; the first byte says
    which."""
    try:
        return b"M" + marshal.dumps(data)
    except ValueError:  # a type marshal does not know (a tuple's subclass), or data nested too deep for it
        return b"P" + pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(packed: bytes) -> Any:
    if packed[:1] == b"M":
        return marshal.loads(memoryview(packed)[1:])
    return pickle.loads(memoryview(packed)[1:])


def _ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        return "signal %d" % os.WTERMSIG(status)
    return "exit %d" % os.WEXITSTATUS(status)


def _ends_with_caller(caller: int) -> None:
    """Have the kernel end this copy when its caller ends (Linux's PR_SET_PDEATHSIG): a caller killed while it waited
    (a timeout's SIGKILL) leaves no copy writing its files after it. A copy made by a copy ends with it in turn."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (AttributeError, OSError):  # not Linux's C library: the copy still ends once its work is done
        return
    if os.getppid() != caller:  # the caller ended before the kernel was asked
        os._exit(1)  # pylint: disable=protected-access


_PR_SET_PDEATHSIG = 1


def _run_and_exit(work: Callable[[], Any], write_end: int, held: Iterable[int], caller: int) -> None:
    """In the copy: run ``work``, send ``{"returned": ...}`` or ``{"raised": "..."}`` and end, whatever happens. An
    interrupt ends the copy at once (the caller's handlers are the caller's: the caller is told by the copy's end), and
    so does the caller's end; ``held``: the signal mask to take back once the ending signals are the default again."""
    code = 1
    try:
        for number in ENDING_SIGNALS:
            signal.signal(number, signal.SIG_DFL)
        _ends_with_caller(caller)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        try:
            answer = {"returned": work()}
        except Exception as exc:  # pylint: disable=broad-exception-caught  # sent to the caller, which reports it
            answer = {"raised": error_words(exc)}
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(pack(answer))
        code = 0
    finally:
        os._exit(code)  # pylint: disable=protected-access
