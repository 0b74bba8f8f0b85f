# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node-side collection helpers shared by the fact modules.

Runs on a bare rented node: standard library only, Python 3.8+. Tools run as argv lists
(never through a shell) with ``LC_ALL=C``, in their own process group, with a timeout each and
their output capped while it is read; files are opened without blocking and read with a size
cap. Every wait here is bounded. Nothing here parses tool output: the controller does that.
"""

from __future__ import annotations

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


def reset_timeouts():
    """Forget the tools that timed out: the next run of each is tried again."""
    _TIMED_OUT.clear()


class _CappedBuffer:
    """The first ``cap`` bytes of a stream and the count of all it gave (bounded memory, whatever it prints)."""

    def __init__(self, cap):
        self.cap = cap
        self.data = bytearray()
        self.seen = 0

    def feed(self, chunk):
        self.seen += len(chunk)
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]

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
    ``"timeout"``, ``"skipped: <why>"`` or ``"exec_failed: <reason>"``). Output beyond
    ``max_output`` bytes per stream (MAX_OUTPUT_BYTES) is read and dropped, never held:
    the entry then has ``truncated`` true and ``stdout_bytes``/``stderr_bytes``, what the tool printed.

    Bounded whatever the tool does: it runs in its own session (so its own process group); at
    ``timeout`` the whole group is killed, and the output is read at most a few seconds longer (a
    child that left the group may hold the pipes). A tool that timed out is not run again in this
    module run: later calls are ``skipped`` with the reason, so a hung tool costs one timeout per node.
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
        open_fds = read_pipes(fds, buffers, started + timeout, lambda: False)
        try:
            proc.wait(timeout=max(0.0, started + timeout - time.monotonic()))
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
            _TIMED_OUT[executable] = "%s timed out after %s s at `%s`; not run again" % (
                os.path.basename(argv[0]), timeout, " ".join(argv))
        if result["error"] is None:
            result["rc"] = proc.returncode
    finally:
        for stream in (proc.stdout, proc.stderr):
            stream.close()
        if proc.poll() is None:
            _kill_group(proc.pid)
    result["stdout"] = buffers[0].text()
    result["stderr"] = buffers[1].text()
    if buffers[0].seen > cap or buffers[1].seen > cap:
        result["truncated"] = True
        result["stdout_bytes"] = buffers[0].seen
        result["stderr_bytes"] = buffers[1].seen
    result["duration_s"] = round(time.monotonic() - started, 3)
    return result


class NotRegularFile(OSError):
    """A FIFO, device or socket where a file was expected: reading it could block or never end."""


def _kind(mode):
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def read_bounded(path, limit=MAX_FILE_BYTES):
    """The first ``limit`` bytes of the regular file ``path``; never blocks.

    Opened with O_NONBLOCK (opening a FIFO without a writer would wait forever) and checked with
    fstat before any read: anything but a regular file raises NotRegularFile naming what it is.
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
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_error(exc):
    """A short reason for a failed read_bounded, for the raw entry."""
    if isinstance(exc, NotRegularFile):
        return "unreadable: %s" % exc
    return "unreadable: %s" % (exc.strerror or exc,)


def read_text(path, limit=MAX_FILE_BYTES, errors=None):
    """Contents of a (sysfs/procfs) file stripped of the trailing newline; None if unreadable.

    sysfs attributes can fail to read with EINVAL (e.g. ``speed`` of a down link) or
    EACCES; those read as None, which is what the controller reports. A FIFO or device in
    its place reads as None too, without blocking; with ``errors`` (a dict) its reason is
    recorded there under the file's name.
    """
    try:
        data = read_bounded(path, limit)
    except NotRegularFile as exc:
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
