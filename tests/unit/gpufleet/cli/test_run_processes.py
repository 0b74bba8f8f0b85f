# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""No process of a run outlives it (gpufleet/cli/run_processes.py), with real processes and no Ansible: the launcher
the CLI uses (validate.run_playbook, ansible-runner) runs a stand-in "ansible-playbook" (a Python script written
here) that forks a worker which, as Ansible's workers do, leads a session of its own (setsid) and writes a file every
50 ms. Killing the stand-in with SIGKILL, or the process running the launcher, must take the worker down too.

Every wait is bounded (a condition polled for up to WAIT_S), never a sleep then an assertion."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

from gpufleet.cli import run_processes, validate
from gpufleet.results.store import LAUNCH_ENV, RESULTS_DIR_ENV

WAIT_S = 20.0
REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))

# The stand-in: it writes "<its pid> <its worker's pid>" to PIDS once the worker runs, then waits to be killed (it
# gives up after 60 s, so that a test that fails leaves nothing running for long).
FAKE_PLAYBOOK = """\
#!{python}
import os, time
worker = os.fork()
if worker == 0:
    os.setsid()  # as ansible-core's WorkerProcess._detach: a session, and a process group, of its own
    null = os.open(os.devnull, os.O_RDWR)
    for descriptor in (0, 1, 2):
        os.dup2(null, descriptor)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with open({writes!r}, "a") as handle:
            handle.write("written\\n")
        time.sleep(0.05)
    os._exit(0)
with open({pids!r} + ".tmp", "w") as handle:
    handle.write("%d %d" % (os.getpid(), worker))
os.rename({pids!r} + ".tmp", {pids!r})
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    time.sleep(0.05)
"""

# The CLI side in a process of its own: validate.run_playbook with the stand-in as ansible-playbook.
LAUNCHER = """\
import sys
from gpufleet.cli import validate
original = validate.runner_kwargs
validate.runner_kwargs = lambda *args, **kwargs: dict(original(*args, **kwargs), binary=sys.argv[1])
validate.run_playbook(["localhost,"], sys.argv[2])
"""


def _alive(pid: int) -> bool:
    """The process runs (a zombie has ended: it writes nothing more)."""
    try:
        with open("/proc/%d/stat" % pid, encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("not within %ds: %s" % (WAIT_S, what))
        time.sleep(0.05)


def _fake_playbook(tmp_path):
    """The stand-in's path, where it writes its pids, where its worker writes."""
    script, pids, writes = tmp_path / "ansible-playbook", tmp_path / "pids", tmp_path / "writes"
    script.write_text(FAKE_PLAYBOOK.format(python=sys.executable, pids=str(pids), writes=str(writes)))
    script.chmod(0o755)
    return script, pids, writes


def _pids(path) -> tuple[int, int]:
    _wait_for(path.exists, "the stand-in started its worker")
    playbook, worker = (int(part) for part in path.read_text().split())
    return playbook, worker


def _kill(*pids: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_sigkill_of_ansible_playbook_ends_the_worker_it_left_and_says_so(tmp_path, monkeypatch, capsys):
    script, pids, writes = _fake_playbook(tmp_path)
    original = validate.runner_kwargs
    monkeypatch.setattr(validate, "runner_kwargs", lambda *a, **k: dict(original(*a, **k), binary=str(script)))
    killed = {}

    def kill_the_playbook():
        try:
            killed["pids"] = _pids(pids)
        except AssertionError:
            return  # run_playbook fails below: no pids
        _wait_for(writes.exists, "the worker writes")
        os.kill(killed["pids"][0], signal.SIGKILL)

    killer = threading.Thread(target=kill_the_playbook)
    killer.start()
    try:
        rc = validate.run_playbook(["localhost,"], str(tmp_path / "run"))[0]
    finally:
        killer.join()
    playbook, worker = killed["pids"]
    try:
        assert rc == -9
        _wait_for(lambda: not _alive(worker), "the worker of the killed ansible-playbook ended")
        assert ("gpufleet: ended 1 process of the run that ansible-playbook left running: %d (ansible-playboo)\n"
                % worker) in capsys.readouterr().err
        # gone, it writes nothing more
        size = writes.stat().st_size
        assert not _alive(worker) and writes.stat().st_size == size
    finally:
        _kill(playbook, worker)


def test_sigkill_of_the_cli_ends_ansible_playbook_and_its_worker(tmp_path):
    script, pids, writes = _fake_playbook(tmp_path)
    launcher = tmp_path / "launcher.py"
    launcher.write_text(LAUNCHER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO_ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    with open(tmp_path / "launcher.err", "w", encoding="utf-8") as err:
        cli = subprocess.Popen([sys.executable, str(launcher), str(script), str(tmp_path / "run")], stderr=err, env=env)
    playbook = worker = None
    try:
        playbook, worker = _pids(pids)
        _wait_for(writes.exists, "the worker writes")
        assert _alive(playbook) and _alive(worker)
        cli.kill()
        cli.wait()
        _wait_for(lambda: not _alive(playbook), "ansible-playbook ended with the CLI")
        _wait_for(lambda: not _alive(worker), "its worker ended with the CLI")
        # the watchdog said it (its stderr is the CLI's)
        ended = ", ".join("%d (ansible-playboo)" % pid for pid in sorted((playbook, worker)))
        said = ("gpufleet: the CLI running %s ended before its ansible-playbook run: ended 2 processes of the run: %s\n"
                % (os.path.realpath(tmp_path / "run"), ended))
        _wait_for(lambda: said in (tmp_path / "launcher.err").read_text(), "the watchdog said what it ended")
    finally:
        cli.kill()
        cli.wait()
        _kill(*[pid for pid in (playbook, worker) if pid])


def test_a_run_that_leaves_nothing_running_says_nothing_and_leaves_no_watchdog(tmp_path, monkeypatch, capsys):
    script = tmp_path / "ansible-playbook"
    script.write_text("#!%s\nimport sys\nsys.exit(0)\n" % sys.executable)
    script.chmod(0o755)
    original = validate.runner_kwargs
    monkeypatch.setattr(validate, "runner_kwargs", lambda *a, **k: dict(original(*a, **k), binary=str(script)))
    watchdogs = []
    start = run_processes.start_watchdog

    def started(launch):
        watchdogs.append(start(launch))
        return watchdogs[-1]

    monkeypatch.setattr(run_processes, "start_watchdog", started)
    assert validate.run_playbook(["localhost,"], str(tmp_path / "run"))[0] == 0
    assert "ended" not in capsys.readouterr().err
    assert len(watchdogs) == 1 and watchdogs[0].returncode == 0  # told the run was over, it exited
    # the CLI's own environment is not the run's: nothing the CLI starts later is taken for a process of the run
    assert RESULTS_DIR_ENV not in os.environ and LAUNCH_ENV not in os.environ


def _marked(launch: run_processes.Launch, code: str) -> subprocess.Popen:
    """A process of ``launch`` (its environment) running ``code``; it says "ready" on stdout once it runs."""
    return subprocess.Popen([sys.executable, "-c", code], env=dict(os.environ, **launch.environment()),
                            stdout=subprocess.PIPE, text=True)


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace_and_only_the_launchs_own(tmp_path):
    launch = run_processes.Launch(str(tmp_path / "run"))
    other = run_processes.Launch(str(tmp_path / "run"))
    stubborn = _marked(launch, textwrap.dedent("""\
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ready", flush=True)
        time.sleep(60)
        """))
    bystander = _marked(other, "import time\nprint('ready', flush=True)\ntime.sleep(60)\n")
    try:
        assert stubborn.stdout.readline() == "ready\n" and bystander.stdout.readline() == "ready\n"
        # the kernel's command name: the interpreter's file name, cut at 15 characters
        assert launch.processes() == {stubborn.pid: os.path.basename(sys.executable)[:15]}
        ended, left = run_processes.end_processes(launch.processes, grace_s=0.5)
        assert set(ended) == {stubborn.pid} and left == {}
        assert stubborn.wait(timeout=WAIT_S) == -signal.SIGKILL  # SIGTERM was ignored: SIGKILL after the grace
        assert bystander.poll() is None  # another start's process is not this one's
    finally:
        for proc in (stubborn, bystander):
            proc.kill()
            proc.wait()


def test_end_processes_signals_a_process_found_late_and_gives_up_after_its_bound():
    looks = [{10: "a"}, {10: "a", 11: "b"}, {10: "a", 11: "b"}, {11: "b"}, {11: "b"}]
    now = [0.0]
    sent = []

    def find():
        return dict(looks.pop(0)) if looks else {11: "b"}

    def sleep(seconds):
        now[0] += 1.0

    ended, left = run_processes.end_processes(find, grace_s=2.0, kill_wait_s=2.0,
                                              send=lambda pid, signum: sent.append((pid, signum)),
                                              clock=lambda: now[0], sleep=sleep)
    # t=0 a: SIGTERM; t=1 b (forked since): SIGTERM, a not again; t=2 the grace is over: SIGKILL to both; a ended;
    # t=3, t=4 SIGKILL to b again; t=5, past 2 + 2 s: b is left
    assert sent == [(10, signal.SIGTERM), (11, signal.SIGTERM), (10, signal.SIGKILL), (11, signal.SIGKILL),
                    (11, signal.SIGKILL), (11, signal.SIGKILL)]
    assert ended == {10: "a"} and left == {11: "b"}
