# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node-side collection helpers shared by the fact modules.

Runs on a bare rented node: standard library only, Python 3.8+. Tools run as argv lists
(never through a shell) with ``LC_ALL=C``, in their own process group, with a timeout each and
their output capped while it is read; files are opened without blocking and read with a size
cap. Every wait here is bounded, each tool by its own timeout and all of them together by the fact
phase's budget (fact_phase): a tool that answers just under its timeout, run once per interface, would
otherwise hold the node for its timeout times the interfaces. What is kept is bounded the same way: each tool
stream and file by its own cap, and all of them together by the fact phase's output budget, since the per-call
caps times the calls (two ethtool runs per interface) are no bound. Nothing here parses tool output: the
controller does that.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import stat
import subprocess
import time

# A runaway tool (or a hostile one) must not flood the controller: outputs are capped.
MAX_OUTPUT_BYTES = 8 * 1024 * 1024
MAX_FILE_BYTES = 256 * 1024


def resolve_tool(path):
    """Absolute path of a tool given by name or path, or None when it is not there."""
    if not path:
        return None
    if os.sep in path:
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(path)


# Tools that timed out in this module run: {executable: the reason later runs of it are skipped}. One module
# run is one process on the node, so this lasts one run; reset_timeouts() starts over (tests, long runs).
_TIMED_OUT = {}
# After SIGKILL to a timed-out tool's group, how long its last output may take to arrive.
_DRAIN_S = 2.0


# The running fact phase (fact_phase): its budget_s, deadline (time.monotonic()), the seconds and runs of each tool
# in it ({name: [seconds, runs]}), its output_budget and the bytes of output kept so far; empty while none runs.
_PHASE = {}
# Without a phase_timeout the budget is twice the longest tool timeout (room for one tool to time out and the
# others to answer) and this margin.
PHASE_MARGIN_S = 30
# Without a phase_output_budget, what all the collectors of one phase may keep together (tools' stdout and stderr,
# files read): a healthy 8-GPU node's raw output (a few MiB, the kernel log at most MAX_OUTPUT_BYTES) many times
# over, a tenth of what 20 interfaces x 2 ethtool runs x 2 streams x MAX_OUTPUT_BYTES could keep (640 MiB).
DEFAULT_PHASE_OUTPUT_BYTES = 64 * 1024 * 1024
_BYTE_UNITS = (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024))


def reset_timeouts():
    """Forget the tools that timed out: the next run of each is tried again."""
    _TIMED_OUT.clear()


def seconds_text(value):
    """``30``, ``0.3``, ``145.4``: seconds as the messages print them."""
    return ("%.1f" % value).rstrip("0").rstrip(".")


def phase_budget(timeouts, phase_timeout=None):
    """The fact phase's budget in seconds: ``phase_timeout``, else 2 x the longest of ``timeouts`` + the margin."""
    if phase_timeout is not None:
        return phase_timeout
    return 2 * max(timeouts) + PHASE_MARGIN_S


def bytes_text(value):
    """``64 MiB``, ``1.5 KiB``, ``100 bytes``: sizes as the messages print them."""
    for unit, size in _BYTE_UNITS:
        if value >= size:
            return "%s %s" % (seconds_text(value / size), unit)
    return "%d bytes" % value


def phase_timeout_problem(phase_timeout):
    """Why a ``phase_timeout`` option cannot be used, or None."""
    if phase_timeout is not None and phase_timeout <= 0:
        return "phase_timeout must be more than 0 seconds"
    return None


def phase_problem(params):
    """Why a fact module's ``phase_timeout`` or ``phase_output_budget`` cannot be used, or None."""
    problem = phase_timeout_problem(params.get("phase_timeout"))
    output_budget = params.get("phase_output_budget")
    if problem is None and output_budget is not None and output_budget <= 0:
        problem = "phase_output_budget must be more than 0 bytes"
    return problem


def phase_output_budget(params):
    """The fact phase's output budget in bytes: ``phase_output_budget``, else DEFAULT_PHASE_OUTPUT_BYTES."""
    output_budget = params.get("phase_output_budget")
    return DEFAULT_PHASE_OUTPUT_BYTES if output_budget is None else output_budget


@contextlib.contextmanager
def fact_phase(budget_s, output_budget=DEFAULT_PHASE_OUTPUT_BYTES):
    """The fact phase of this module run: inside it every run_tool ends by ``budget_s`` seconds after it began, and
    the tools' output and the files read keep ``output_budget`` bytes all together.

    Each tool gets the smaller of its own timeout and what is left of the phase; once the budget is spent, every
    later run is skipped with the reason. Once the output budget is spent, every later read keeps nothing (a tool
    still runs, its output read and dropped) and says so: ``truncated`` with ``truncated_reason``. Inside a phase
    already running (node_facts runs each group's collector inside its own), that phase's budgets hold.
    """
    if _PHASE:
        yield
        return
    _PHASE.update(budget_s=budget_s, deadline=time.monotonic() + budget_s, tools={}, output_budget=output_budget,
                  output_kept=0)
    try:
        yield
    finally:
        _PHASE.clear()


def overran(entry):
    """Whether a run_tool entry timed out or was skipped (after a timeout, or for the spent phase budget): the
    controller says what that leaves unknown; the node fails no group for it."""
    error = entry.get("error") or ""
    return error == "timeout" or error.startswith("skipped: ")


def module_phase(params):
    """The fact phase of one fact module's run (fact_phase): ``phase_timeout``, else 2 x its ``timeout`` + margin;
    ``phase_output_budget`` bytes of output, else DEFAULT_PHASE_OUTPUT_BYTES."""
    return fact_phase(phase_budget([params["timeout"]], params.get("phase_timeout")), phase_output_budget(params))


def _phase_left():
    """Seconds left in the running fact phase; None when no phase runs."""
    return _PHASE["deadline"] - time.monotonic() if _PHASE else None


def _phase_spent():
    """Why a run is skipped once the phase's budget is spent, naming the tool that took the most of it."""
    text = "the fact phase's budget of %s s was spent" % seconds_text(_PHASE["budget_s"])
    if _PHASE["tools"]:
        name, (seconds, runs) = max(_PHASE["tools"].items(), key=lambda item: item[1][0])
        text += " (%s ran %s s of it in %d run%s)" % (name, seconds_text(seconds), runs, "" if runs == 1 else "s")
    return text


def _count_in_phase(name, seconds):
    if _PHASE:
        spent = _PHASE["tools"].setdefault(name, [0.0, 0])
        spent[0] += seconds
        spent[1] += 1


def output_budget_spent():
    """Why a read kept nothing (or kept less) once the fact phase's output budget was spent."""
    return "the fact phase's output budget of %s was spent" % bytes_text(_PHASE["output_budget"])


def _keep_output(size, whole=False):
    """How many of ``size`` bytes read the fact phase's output budget lets the reader keep, counted as kept: all of
    them outside a phase; with ``whole``, all of them or none (a file cut short would read as another value)."""
    if not _PHASE:
        return size
    left = max(0, _PHASE["output_budget"] - _PHASE["output_kept"])
    kept = 0 if whole and size > left else min(size, left)
    _PHASE["output_kept"] += kept
    return kept


class _CappedBuffer:
    """The first ``cap`` bytes of a stream, no more than the fact phase's output budget lets it keep, and the count of
    all it gave (bounded memory, whatever it prints); ``budget_cut`` once that budget kept it short."""

    def __init__(self, cap):
        self.cap = cap
        self.data = bytearray()
        self.seen = 0
        self.budget_cut = False

    def feed(self, chunk):
        self.seen += len(chunk)
        room = min(len(chunk), self.cap - len(self.data))
        if room <= 0:
            return
        kept = _keep_output(room)
        self.budget_cut = self.budget_cut or kept < room
        self.data += chunk[:kept]

    def truncated(self):
        return self.seen > len(self.data)

    def text(self):
        return bytes(self.data).decode("utf-8", errors="replace")


def read_pipes(fds, buffers, deadline, done=None):
    """Read the non-blocking pipes ``fds`` into ``buffers`` (each has ``feed(bytes)``) until each is at EOF,
    ``done()`` is true or ``deadline`` (time.monotonic()); returns the fds left open.

    One thread, raw file descriptors: nothing here can block past the deadline, whoever holds the pipes'
    write ends (a buffered reader in another thread would hold its lock in a blocked read, and closing the
    stream would wait for that lock forever). A ``None`` fd (a stream not captured) is left out.
    """
    open_fds = dict((fd, buffer) for fd, buffer in zip(fds, buffers) if fd is not None)
    with selectors.DefaultSelector() as selector:
        for fd in open_fds:
            selector.register(fd, selectors.EVENT_READ)
        while open_fds and not (done is not None and done()):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for key, _events in selector.select(min(left, 0.2)):
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                if chunk:
                    open_fds[key.fd].feed(chunk)
                else:
                    selector.unregister(key.fd)
                    del open_fds[key.fd]
    return list(open_fds)


def _kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_tool(argv, timeout, max_output=None):
    """Run ``argv`` with ``LC_ALL=C``; never raises for the tool's own failures.

    Returns a dict: ``cmd`` (the argv as run), ``rc`` (None when it did not run or timed
    out), ``stdout``, ``stderr``, ``duration_s`` and ``error`` (None, ``"not_found"``,
    ``"timeout"``, ``"skipped: <why>"`` or ``"exec_failed: <reason>"``); a timed-out run also has
    ``timeout_s``, the seconds it was given, and ``phase_budget_s`` when the fact phase's deadline, not
    its own timeout, stopped it. Output beyond
    ``max_output`` bytes per stream (MAX_OUTPUT_BYTES) is read and dropped, never held, and so is output beyond what
    is left of the fact phase's output budget: the entry then has ``truncated`` true and
    ``stdout_bytes``/``stderr_bytes``, what the tool printed, and ``truncated_reason`` when that budget cut it.

    Bounded whatever the tool does: it runs in its own session (so its own process group); at
    ``timeout`` the whole group is killed, and the output is read at most a few seconds longer (a
    child that left the group may hold the pipes). A tool that timed out is not run again in this
    module run: later calls are ``skipped`` with the reason, so a hung tool costs one timeout per node.
    Inside a fact phase (fact_phase) it runs at most until the phase's deadline, and not at all after it.
    """
    argv = [str(a) for a in argv]
    cap = MAX_OUTPUT_BYTES if max_output is None else max_output
    result = {"cmd": argv, "rc": None, "stdout": "", "stderr": "", "duration_s": 0.0, "error": None}
    executable = resolve_tool(argv[0])
    if executable is None:
        result["error"] = "not_found"
        return result
    if executable in _TIMED_OUT:
        result["error"] = "skipped: %s" % _TIMED_OUT[executable]
        return result
    left = _phase_left()
    if left is not None and left <= 0:
        result["error"] = "skipped: %s" % _phase_spent()
        return result
    limit = timeout if left is None else min(timeout, left)
    env = dict(os.environ)
    env["LC_ALL"] = "C"
    env["LANG"] = "C"
    started = time.monotonic()
    try:
        proc = subprocess.Popen(  # noqa: S603 - argv list, no shell  pylint: disable=consider-using-with
            [executable] + argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, start_new_session=True)
    except OSError as exc:
        result["error"] = "exec_failed: %s" % (exc.strerror or exc,)
        return result
    buffers = (_CappedBuffer(cap), _CappedBuffer(cap))
    fds = [proc.stdout.fileno(), proc.stderr.fileno()]
    for fd in fds:
        os.set_blocking(fd, False)
    try:
        # until both pipes close; a tool that exits with a child still holding them waits no longer than its timeout
        open_fds = read_pipes(fds, buffers, started + limit, lambda: False)
        try:
            proc.wait(timeout=max(0.0, started + limit - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        if proc.poll() is None or open_fds:
            _kill_group(proc.pid)
            read_pipes(open_fds, [buffers[fds.index(fd)] for fd in open_fds], time.monotonic() + _DRAIN_S, lambda: False)
            try:
                proc.wait(timeout=_DRAIN_S)
            except subprocess.TimeoutExpired:
                pass
            # still running at the deadline, or its output still held open by a child: a timeout either way
            result["error"] = "timeout"
            result["timeout_s"] = round(limit, 3)
            if limit < timeout:
                # the phase ended first: the runs after it are skipped for the spent budget, not for this tool
                result["phase_budget_s"] = _PHASE["budget_s"]
            else:
                _TIMED_OUT[executable] = "%s timed out after %s s at `%s`; not run again" % (
                    os.path.basename(argv[0]), seconds_text(timeout), " ".join(argv))
        if result["error"] is None:
            result["rc"] = proc.returncode
    finally:
        for stream in (proc.stdout, proc.stderr):
            stream.close()
        if proc.poll() is None:
            _kill_group(proc.pid)
    result["stdout"] = buffers[0].text()
    result["stderr"] = buffers[1].text()
    if buffers[0].truncated() or buffers[1].truncated():
        result["truncated"] = True
        result["stdout_bytes"] = buffers[0].seen
        result["stderr_bytes"] = buffers[1].seen
    if buffers[0].budget_cut or buffers[1].budget_cut:
        result["truncated_reason"] = output_budget_spent()
    result["duration_s"] = round(time.monotonic() - started, 3)
    _count_in_phase(os.path.basename(argv[0]), result["duration_s"])
    return result


class NotRegularFile(OSError):
    """A FIFO, device or socket where a file was expected: reading it could block or never end."""


class OutputBudgetSpent(OSError):
    """A file read and dropped whole: the fact phase's output budget had no room left for it. ``size``: its bytes."""

    def __init__(self, size):
        super().__init__(output_budget_spent())
        self.size = size


def _kind(mode):
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def read_bounded(path, limit=MAX_FILE_BYTES):
    """The first ``limit`` bytes of the regular file ``path``; never blocks.

    Opened with O_NONBLOCK (opening a FIFO without a writer would wait forever) and checked with
    fstat before any read: anything but a regular file raises NotRegularFile naming what it is. Inside a fact
    phase the bytes count against its output budget; a file it has no room left for raises OutputBudgetSpent.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile("%s where a regular file was expected" % _kind(mode))
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if _keep_output(len(data), whole=True) < len(data):
        raise OutputBudgetSpent(len(data))
    return data


def read_error(exc):
    """A short reason for a failed read_bounded, for the raw entry."""
    if isinstance(exc, (NotRegularFile, OutputBudgetSpent)):
        return "unreadable: %s" % exc
    return "unreadable: %s" % (exc.strerror or exc,)


def read_text(path, limit=MAX_FILE_BYTES, errors=None):
    """Contents of a (sysfs/procfs) file stripped of the trailing newline; None if unreadable.

    sysfs attributes can fail to read with EINVAL (e.g. ``speed`` of a down link) or
    EACCES; those read as None, which is what the controller reports. A FIFO or device in
    its place reads as None too, without blocking, and so does a file the fact phase's output budget
    had no room left for; with ``errors`` (a dict) the reason is recorded there under the file's name.
    """
    try:
        data = read_bounded(path, limit)
    except (NotRegularFile, OutputBudgetSpent) as exc:
        if errors is not None:
            errors[os.path.basename(path)] = read_error(exc)
        return None
    except (OSError, ValueError):
        return None
    return data.decode("utf-8", errors="replace").rstrip("\n")


def list_dir(path):
    """Sorted entries of a directory; [] when it is missing or unreadable."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def link_target(path):
    """Basename of a symlink's target (sysfs ``device``/``driver`` links); None if not a link."""
    try:
        return os.path.basename(os.readlink(path))
    except OSError:
        return None


def real_path(path):
    """Resolved path of a sysfs link (e.g. a netdev's PCI device path); None if missing."""
    if not os.path.lexists(path):
        return None
    return os.path.realpath(path)
