# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report/beside.py: work in a forked copy of this process, and what the caller learns when the copy fails."""

from __future__ import annotations

import collections
import math
import os
import signal
import struct
import subprocess
import sys
import time

import pytest

from gpufleet.report import beside
from gpufleet.report.beside import Beside, BesideError, Frames, TakeQueue

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
# a type marshal does not carry (a tuple's subclass): its answer is pickled
Point = collections.namedtuple("Point", "x y")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the copies fork on Linux alone")


def test_the_copy_returns_what_its_work_returned_and_changes_nothing_here():
    here = {"n": 1}

    def work():
        here["n"] = 2  # the copy's memory, not this process's
        return {"pid": os.getpid(), "made": (1, "two", [3.0])}

    answer = Beside(work).result()
    assert answer["made"] == (1, "two", [3.0])
    assert answer["pid"] != os.getpid() and here == {"n": 1}


def test_plain_data_crosses_marshalled_as_it_was():
    sent = {"floats": [-0.0, 1e-300, float("inf")], "ints": [10 ** 30, -1, True], "text": "\ud800 \u202e \x1b",
            "bytes": b"\x00\xff", "none": None, "nested": (1, [2, {"3": (4,)}])}
    assert beside.pack({"returned": sent})[:1] == b"M"
    answer = Beside(lambda: sent).result()
    assert answer == sent
    assert math.copysign(1.0, answer["floats"][0]) == -1.0 and answer["ints"][2] is True
    assert isinstance(answer["nested"], tuple) and isinstance(answer["nested"][1], list)


def test_what_marshal_cannot_carry_crosses_pickled_as_it_was():
    assert beside.pack({"returned": [Point(1, 2)]})[:1] == b"P"
    answer = Beside(lambda: [Point(1, 2)]).result()
    assert answer == [Point(1, 2)] and type(answer[0]) is Point  # pylint: disable=unidiomatic-typecheck


def test_work_that_raises_is_named():
    def work():
        raise ValueError("no such file: x.json")

    with pytest.raises(BesideError, match=r"failed: ValueError: no such file: x\.json$"):
        Beside(work).result()


def test_a_copy_that_ends_without_a_result_is_named_with_how_it_ended():
    with pytest.raises(BesideError, match=r"ended with exit 7 and no result$"):
        Beside(lambda: os._exit(7)).result()  # pylint: disable=protected-access
    with pytest.raises(BesideError, match=r"ended with signal 9 and no result$"):
        Beside(lambda: os.kill(os.getpid(), signal.SIGKILL)).result()


def test_an_interrupt_ends_the_copy_not_the_callers_handler():
    """A Ctrl-C reaches the whole process group: the copy ends by it, whatever handler the caller set."""
    previous = signal.signal(signal.SIGINT, lambda *_args: None)  # the caller's handler: ignores it
    try:
        with pytest.raises(BesideError, match=r"ended with signal 2 and no result$"):
            Beside(lambda: os.kill(os.getpid(), signal.SIGINT) or "handled").result()
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_stop_ends_the_copy_even_at_once_and_with_the_callers_handler_set():
    """SIGTERM sent the moment a copy is made ends it, whatever handler the caller set (pytest's worker has one):
    the copy never runs with the caller's handlers. Bounded: a copy that lived on would hold stop() past the alarm."""
    def overdue(*_args):
        raise AssertionError("a stopped copy lived on")

    previous = signal.signal(signal.SIGTERM, lambda *_args: None), signal.signal(signal.SIGALRM, overdue)
    signal.alarm(60)
    try:
        for _copy in range(200):
            Beside(signal.pause).stop()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGALRM, previous[1])


def test_stop_ends_a_copy_still_at_work():
    copy = Beside(signal.pause)
    copy.stop()
    with pytest.raises(ChildProcessError):
        os.waitpid(copy.pid, os.WNOHANG)


@pytest.mark.parametrize("platform, cpus, threads, expected", [
    ("linux", 2, 1, True), ("linux", 1, 1, False), ("linux", 4, 2, False), ("darwin", 8, 1, False)])
def test_a_fork_only_where_it_is_safe_and_can_help(monkeypatch, platform, cpus, threads, expected):
    monkeypatch.setattr(beside.sys, "platform", platform)
    monkeypatch.setattr(beside, "usable_cpus", lambda: cpus)
    monkeypatch.setattr(beside.threading, "active_count", lambda: threads)
    assert beside.can_fork() is expected


def test_each_number_of_a_queue_is_taken_once_in_order_by_whoever_asks():
    """However the two processes happen to share them: each number once, each process's in rising order."""
    queue = TakeQueue(300)
    copy = Beside(lambda: list(queue.taken()))
    mine = list(queue.taken())
    theirs = copy.result()
    queue.close()
    assert sorted(mine + theirs) == list(range(300))
    assert mine == sorted(mine) and theirs == sorted(theirs)


def test_a_queue_of_none_and_a_queue_past_its_limit():
    empty = TakeQueue(0)
    assert not list(empty.taken())
    empty.close()
    empty.close()  # closed once
    with pytest.raises(ValueError, match="a queue holds 0 to 1024 numbers, not 1025"):
        TakeQueue(TakeQueue.LIMIT + 1)


def _gone(pid):
    """Whether ``pid`` has ended (gone, or a zombie its new parent has not reaped)."""
    try:
        with open("/proc/%d/stat" % pid, encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_copy_ends_when_its_caller_is_killed():
    """A caller killed while it waits (a timeout's SIGKILL) leaves no copy at work: the kernel ends it. Bounded: the
    copy would wait forever (signal.pause) if it lived on."""
    code = ("import signal, sys; sys.path.insert(0, %r)\n"
            "from gpufleet.report.beside import Beside\n"
            "print(Beside(signal.pause).pid, flush=True)\n"
            "signal.pause()\n" % REPO)
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE) as caller:
        copy = int(caller.stdout.readline())
        assert not _gone(copy)
        caller.kill()
        caller.wait(timeout=60)
    deadline = time.monotonic() + 60
    while not _gone(copy) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(copy)


def test_frames_a_copy_sends_are_taken_here_whole_once_in_order(tmp_path):
    frames = Frames(str(tmp_path))
    assert os.listdir(str(tmp_path)) == []  # an unnamed file
    Beside(lambda: [frames.send({"run": number, "rows": ["\u202e"] * number}) for number in range(3)]).result()
    assert list(frames.ready()) == [{"run": 0, "rows": []}, {"run": 1, "rows": ["\u202e"]},
                                    {"run": 2, "rows": ["\u202e", "\u202e"]}]
    assert not list(frames.ready())
    # a frame still being written is left until it is whole
    packed = beside.pack({"run": 3})
    handle = frames._file.fileno()  # pylint: disable=protected-access
    os.write(handle, struct.pack("<Q", len(packed)) + packed[:4])
    assert not list(frames.ready())
    os.write(handle, packed[4:])
    assert list(frames.ready()) == [{"run": 3}]
    frames.close()
