# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who writes a results directory: run.lock (held by one gpufleet process, across processes, never by what it
starts), the reopening refused while the ansible-playbook run that opened it last still runs, or any process an
earlier run started, fleet.json naming the opening that wrote it, and what makes a directory no place for a run
(foreign_contents)."""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from gpufleet.results import store
from gpufleet.results.store import RunDir, RunInUse, RunLock

# A child that takes the lock of argv[1], says so on stdout, then waits (or first starts a grandchild `sleep`, handing
# it every descriptor it may: close_fds=False, as a careless launcher would).
HOLDER = textwrap.dedent("""
    import subprocess, sys, time
    from gpufleet.results.store import RunLock
    RunLock(sys.argv[1], "gpufleet validate").acquire()
    if sys.argv[2] == "grandchild":
        grandchild = subprocess.Popen(["sleep", "60"], close_fds=False)
        print(grandchild.pid, flush=True)
    else:
        print("held", flush=True)
    time.sleep(60)
""")


def _start_ticks(pid):
    """/proc/<pid>/stat field 22 (proc(5)): the process's start in clock ticks after boot."""
    with open("/proc/%d/stat" % pid, encoding="ascii") as handle:
        return handle.read().rsplit(")", 1)[1].split()[19]


def _holder(directory, mode="held"):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(directory), mode], stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def test_another_process_holding_the_lock_is_named(tmp_path):
    proc, _line = _holder(tmp_path / "run")
    try:
        with pytest.raises(RunInUse) as raised:
            RunLock(str(tmp_path / "run")).acquire()
        message = str(raised.value)
        assert message.startswith("%s is in use by another run: process %d (gpufleet validate, started "
                                  % (tmp_path / "run", proc.pid))
        assert message.endswith(") holds %s; wait for it to end, or choose another results directory"
                                % (tmp_path / "run" / "run.lock"))
    finally:
        proc.kill()
        proc.wait()
    # its holder killed (SIGKILL: no chance to give it back), the lock is free, and what it said is handed back
    lock = RunLock(str(tmp_path / "run"), "gpufleet demo")
    stale = lock.acquire()
    assert (stale["pid"], stale["command"]) == (proc.pid, "gpufleet validate")
    assert stale["token"].startswith("%d:" % proc.pid)
    on_disk = json.loads((tmp_path / "run" / "run.lock").read_text())
    assert (on_disk["pid"], on_disk["command"]) == (os.getpid(), "gpufleet demo")
    lock.release()
    assert os.listdir(tmp_path / "run") == []  # given back: the file is gone (the directory was the holder's)


def test_what_the_holder_starts_never_holds_the_lock(tmp_path):
    proc, grandchild = _holder(tmp_path / "run", "grandchild")
    try:
        proc.kill()
        proc.wait()
        os.kill(int(grandchild), 0)  # the grandchild still runs
        stale = RunLock(str(tmp_path / "run")).acquire()
        assert stale["pid"] == proc.pid
    finally:
        os.kill(int(grandchild), signal.SIGKILL)


def test_the_start_of_a_process_is_when_it_started(tmp_path):
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) - datetime.timedelta(seconds=2)
    proc = subprocess.Popen(["sleep", "30"])
    after = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=2)
    try:
        token = store.process_token(proc.pid)
        assert token == "%d:%s" % (proc.pid, _start_ticks(proc.pid))
        assert store.token_alive(token)
        started = datetime.datetime.strptime(store.started_utc(_start_ticks(proc.pid)), "%Y-%m-%dT%H:%M:%SZ")
        assert before <= started.replace(tzinfo=datetime.timezone.utc) <= after
    finally:
        proc.kill()
        proc.wait()
    # ended (and reaped), or the same pid with another start: not that process
    assert not store.token_alive(token)
    assert not store.token_alive("%d:1" % os.getpid())
    assert not store.token_alive("%d:unknown" % os.getpid()) and not store.token_alive(None)


def test_reopening_is_refused_while_the_run_that_opened_it_last_runs(tmp_path):
    path = str(tmp_path / "run")
    writer = subprocess.Popen(["sleep", "30"])
    try:
        token = "%d:%s" % (writer.pid, _start_ticks(writer.pid))
        RunDir.create(path, hosts=["a"], invocation=token)
        # the same invocation opening it again (the free strategy, once per host) is no resume: not refused
        RunDir.create(path, hosts=["a"], invocation=token)
        with pytest.raises(RunInUse) as raised:
            RunDir.create(path, hosts=["a"], invocation="5151:2002")
        assert str(raised.value).startswith("%s is still being written by the ansible-playbook run that opened it "
                                            "last: process %d (started " % (path, writer.pid))
        assert json.loads((tmp_path / "run" / "run.json").read_text())["resumed"] == []
    finally:
        writer.kill()
        writer.wait()
    RunDir.create(path, hosts=["a"], invocation="5151:2002")
    assert len(json.loads((tmp_path / "run" / "run.json").read_text())["resumed"]) == 1


def _of_a_run(directory, launch):
    """A `sleep` started by the gpufleet CLI's ansible-playbook run ``launch`` for ``directory`` (its environment, as
    a worker that outlived the run inherits it; gpufleet/cli/run_processes.py)."""
    env = dict(os.environ, GPUFLEET_RESULTS_DIR=os.path.realpath(directory), GPUFLEET_LAUNCH=launch)
    return subprocess.Popen(["sleep", "30"], env=env)


def _wait_for_mark(directory, pid):
    """Until `pid` has exec'd `sleep` with its environment (bounded: a busy machine may be slow to)."""
    deadline = time.monotonic() + 20
    while store.launch_processes(directory).get(pid) != "sleep":
        assert time.monotonic() < deadline, "process %d never ran `sleep` marked for %s" % (pid, directory)
        time.sleep(0.05)


def test_reopening_is_refused_while_any_process_of_an_earlier_run_lives(tmp_path, monkeypatch):
    path = str(tmp_path / "run")
    RunDir.create(path, hosts=["a"], invocation="5151:1001")  # its ansible-playbook is gone: a dead pid's token
    worker = _of_a_run(path, "0123abcd")
    other_directory = _of_a_run(str(tmp_path / "elsewhere"), "0123abcd")
    try:
        _wait_for_mark(path, worker.pid)
        with pytest.raises(RunInUse) as raised:
            RunDir.create(path, hosts=["a"], invocation="5151:2002")
        assert str(raised.value) == ("%s is still being written by an earlier run: 1 process of it still runs: "
                                     "%d (sleep); wait for it to end, or stop it, before resuming" % (path, worker.pid))
        # the opening run's own processes are no earlier run's (it runs in one: its mark is in its environment)
        monkeypatch.setenv("GPUFLEET_LAUNCH", "0123abcd")
        RunDir.create(path, hosts=["a"], invocation="5151:3003")
        assert len(json.loads((tmp_path / "run" / "run.json").read_text())["resumed"]) == 1
    finally:
        for proc in (worker, other_directory):
            proc.kill()
            proc.wait()


def test_fleet_json_names_the_opening_that_wrote_it(tmp_path):
    run = RunDir.create(str(tmp_path / "run"), hosts=["a"], invocation="4242:1000")
    run.write_fleet({"fleet": {"verdict": "ACCEPT", "counts": {}, "nodes": 1}, "nodes": {"a": {"verdict": "ACCEPT"}}})
    assert json.loads((tmp_path / "run" / "fleet.json").read_text())["invocation"] == "4242:1000"


def test_what_is_no_place_for_a_run(tmp_path):
    assert store.foreign_contents(str(tmp_path / "new")) is None
    (tmp_path / "file").write_text("x")
    assert store.foreign_contents(str(tmp_path / "file")) == "a file, not a directory"
    other = tmp_path / "other-schema"
    other.mkdir()
    (other / "run.json").write_text(json.dumps({"schema": "gpufleet.results/v0"}))
    assert store.foreign_contents(str(other)) == (
        "a directory whose run.json is not a gpufleet.results/v1 run (%s: schema 'gpufleet.results/v0', this gpufleet "
        "reads gpufleet.results/v1)" % (other / "run.json"))
    started = tmp_path / "started"
    (started / "hosts").mkdir(parents=True)
    (started / "hosts" / "a.json").write_text("{}")  # host records without a run.json: not a run's beginning
    assert store.foreign_contents(str(started)) == "a directory of 1 entry and no run.json (hosts)"
    many = tmp_path / "many"
    many.mkdir()
    for name in "abcdefg":
        (many / name).write_text("")
    assert store.foreign_contents(str(many)) == "a directory of 7 entries and no run.json (a, b, c, d, e, ...)"


def test_a_lock_file_removed_while_taken_is_taken_again(tmp_path, monkeypatch):
    # another holder gave the lock back (removing the file) between this opener's open and its flock: the lock it got
    # is on a file no later run sees, so it locks the new file instead
    lock = RunLock(str(tmp_path / "run"))
    real_flock = store.fcntl.flock
    removed = []

    def flock_after_removal(descriptor, operation):
        if not removed:
            removed.append(True)
            os.unlink(lock.path)
        return real_flock(descriptor, operation)

    monkeypatch.setattr(store.fcntl, "flock", flock_after_removal)
    assert lock.acquire() is None
    # the file a later run opens is the one held, and says who holds it
    assert json.loads((tmp_path / "run" / "run.lock").read_text())["pid"] == os.getpid()
    lock.release()
    assert not (tmp_path / "run").exists()  # made for the lock, and nothing else was written there: gone with it
