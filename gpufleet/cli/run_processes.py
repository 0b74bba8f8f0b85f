# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The processes of one ansible-playbook run end with it: none of them writes into the results directory once the
run is over, however it ended (docs/cli.md, "No process outlives the run").

Which processes. ansible-runner starts ansible-playbook on a terminal of its own, in a session and process group of
its own (pexpect). Its workers are forked from it, but each calls setsid() (ansible-core's
``WorkerProcess._detach``): they lead sessions of their own, so neither ansible-playbook's process group nor its
session holds them, and once ansible-playbook is gone they are init's children. What each of them keeps is the
environment ansible-playbook started with, and the CLI starts it with two more variables: the results directory
(``GPUFLEET_RESULTS_DIR``) and which start of ansible-playbook this is (``GPUFLEET_LAUNCH``, a random id). The
workers, the modules a local connection runs and the commands those start inherit them, in whatever session or
group they run; /proc/<pid>/environ tells them (results/store.py ``launch_processes``).

When they are ended:

- ansible-playbook ends, in any way (its exit, Ctrl-C, SIGKILL from outside): before the CLI reads the results
  directory it ends every process of the launch still running, SIGTERM first (an Ansible worker passes it on to its
  own process group and exits), SIGKILL to those left after ``GRACE_S``, and says which it ended (:func:`guarded`).
- The CLI itself dies (SIGKILL, its terminal gone): a watchdog the CLI starts before ansible-playbook
  (``python -m gpufleet.cli.run_processes DIR LAUNCH``, in a session of its own: the signals of the CLI's terminal do
  not reach it) reads a pipe from the CLI. The kernel closes the CLI's end however the CLI ends; at that end-of-file
  without the CLI's ``done`` the watchdog ends every process of the launch, ansible-playbook among them, the same
  way, then exits. A pipe, not a parent-death signal (PR_SET_PDEATHSIG): that one must be set in ansible-playbook
  between fork and exec, where ansible-runner's pexpect gives no hook, it comes when the forking thread ends rather
  than the process, and it would reach ansible-playbook alone, never its workers. The end-of-file comes even when
  the CLI died before the watchdog began to read.
- A resume refuses to start while any process of an earlier start lives (results/store.py ``writers_still_running``),
  naming them: the watchdog may still be ending them, or one may not end at all (stuck in the kernel).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

from gpufleet.cli.interrupt import write_stderr
from gpufleet.results.store import LAUNCH_ENV, RESULTS_DIR_ENV, launch_processes, process_count, process_list

# after SIGTERM, the time the processes of the run have to end before SIGKILL; after SIGKILL, the time the kernel has
GRACE_S = 5.0
KILL_WAIT_S = 10.0
POLL_S = 0.05
# what the CLI writes to its watchdog when the run is over and its processes ended: the watchdog has nothing to do
DONE = b"done\n"
WATCHDOG_MODULE = "gpufleet.cli.run_processes"
# the directory the gpufleet package is in: the watchdog imports it from where the CLI did
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Launch:
    """One start of ansible-playbook for a results directory: the environment that marks its processes, and what
    ending them found (``ended``: signalled, ``left``: still running after SIGKILL), both ``{pid: command name}``."""

    def __init__(self, results_dir: str, launch_id: str | None = None) -> None:
        self.directory = os.path.realpath(results_dir)
        self.id = launch_id or secrets.token_hex(8)
        self.ended: dict[int, str] = {}
        self.left: dict[int, str] = {}

    def environment(self) -> dict[str, str]:
        """The variables ansible-playbook starts with, besides its own."""
        return {RESULTS_DIR_ENV: self.directory, LAUNCH_ENV: self.id}

    def processes(self) -> dict[int, str]:
        """The processes of this start still running."""
        return launch_processes(self.directory, launch=self.id)

    def lines(self, prefix: str, left_by: str = "") -> list[str]:
        """What ending them did, in words, each line after ``prefix``; none when none was running. ``left_by``: who left
        them running."""
        lines = []
        if self.ended:
            lines.append("%s: ended %s of the run%s: %s"
                         % (prefix, process_count(len(self.ended)), left_by, process_list(self.ended)))
        if self.left:
            lines.append("%s: %s of the run did not end on SIGKILL: %s; a resume waits for %s"
                         % (prefix, process_count(len(self.left)), process_list(self.left),
                            "it" if len(self.left) == 1 else "them"))
        return lines


def end_processes(find: Callable[[], dict[int, str]], grace_s: float = GRACE_S, kill_wait_s: float = KILL_WAIT_S,
                  send: Callable[[int, int], None] = os.kill, clock: Callable[[], float] = time.monotonic,
                  sleep: Callable[[float], None] = time.sleep) -> tuple[dict[int, str], dict[int, str]]:
    """End every process ``find()`` names, those it names later included (forked between two looks): SIGTERM, and
    SIGKILL to those still running ``grace_s`` after the first look. ``(ended, left)``: those signalled that ended,
    those still running ``kill_wait_s`` after the SIGKILL."""
    signalled: dict[int, str] = {}
    start = clock()
    while True:
        found = find()
        elapsed = clock() - start
        if not found or elapsed > grace_s + kill_wait_s:
            return {pid: name for pid, name in signalled.items() if pid not in found}, found
        signum = signal.SIGKILL if elapsed >= grace_s else signal.SIGTERM
        for pid, name in found.items():
            if signum == signal.SIGKILL or pid not in signalled:
                with contextlib.suppress(OSError):  # it ended since the look
                    send(pid, signum)
            signalled.setdefault(pid, name)
        sleep(POLL_S)


def start_watchdog(launch: Launch) -> subprocess.Popen | None:
    """The watchdog of ``launch`` (this module run as a program), reading the pipe whose other end the returned
    process's ``stdin`` is; None when it cannot be started (the run goes on without it)."""
    env = dict(os.environ)  # not the launch's own marks: the watchdog is no process of the run
    env["PYTHONPATH"] = os.pathsep.join([PACKAGE_PARENT] + [path for path in env.get("PYTHONPATH", "").split(os.pathsep)
                                                            if path])
    try:
        return subprocess.Popen([sys.executable, "-m", WATCHDOG_MODULE, launch.directory, launch.id],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, start_new_session=True)
    except OSError:
        return None


def stop_watchdog(watchdog: subprocess.Popen | None, wait_s: float = KILL_WAIT_S) -> None:
    """Tell the watchdog the run is over (``DONE``), and wait for it to exit."""
    if watchdog is None:
        return
    stdin = watchdog.stdin  # a pipe: start_watchdog opens it
    with contextlib.suppress(OSError):  # it is gone already
        if stdin is not None:
            stdin.write(DONE)
            stdin.close()
    try:
        watchdog.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        watchdog.kill()
        watchdog.wait()


@contextlib.contextmanager
def guarded(results_dir: str, grace_s: float = GRACE_S) -> Iterator[Launch]:
    """A start of ansible-playbook for ``results_dir`` (run it with ``Launch.environment``) within the block: at the
    block's end, however it ends, every process of it still running is ended (``Launch.ended``, ``Launch.left``);
    should the CLI die within the block, its watchdog ends them."""
    launch = Launch(results_dir)
    watchdog = start_watchdog(launch)
    try:
        yield launch
    finally:
        launch.ended, launch.left = end_processes(launch.processes, grace_s)
        stop_watchdog(watchdog)


def watch(directory: str, launch_id: str, grace_s: float = GRACE_S) -> int:
    """The watchdog: wait for the end of its stdin, the CLI's pipe; unless the CLI wrote ``DONE`` first (it ended the
    processes of the run itself), end them."""
    told = sys.stdin.buffer.read()
    if told == DONE:
        return 0
    launch = Launch(directory, launch_id)
    launch.ended, launch.left = end_processes(launch.processes, grace_s)
    for line in launch.lines("gpufleet: the CLI running %s ended before its ansible-playbook run" % directory):
        write_stderr(line)
    return 0


if __name__ == "__main__":
    sys.exit(watch(sys.argv[1], sys.argv[2]))
