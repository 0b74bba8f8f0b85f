# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node-side collection helpers shared by the fact modules.

Runs on a bare rented node: standard library only, Python 3.8+. Tools run as argv lists
(never through a shell) with ``LC_ALL=C`` and a timeout each; files are read with a size
cap. Nothing here parses tool output: the controller does that.
"""

from __future__ import annotations

import os
import shutil
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


def _decode(data):
    if len(data) > MAX_OUTPUT_BYTES:
        data = data[:MAX_OUTPUT_BYTES]
    return data.decode("utf-8", errors="replace")


def run_tool(argv, timeout):
    """Run ``argv`` with ``LC_ALL=C``; never raises for the tool's own failures.

    Returns a dict: ``cmd`` (the argv as run), ``rc`` (None when it did not run or timed
    out), ``stdout``, ``stderr``, ``duration_s`` and ``error`` (None, ``"not_found"``,
    ``"timeout"`` or ``"exec_failed: <reason>"``).
    """
    argv = [str(a) for a in argv]
    result = {"cmd": argv, "rc": None, "stdout": "", "stderr": "", "duration_s": 0.0, "error": None}
    executable = resolve_tool(argv[0])
    if executable is None:
        result["error"] = "not_found"
        return result
    env = dict(os.environ)
    env["LC_ALL"] = "C"
    env["LANG"] = "C"
    started = time.monotonic()
    try:
        proc = subprocess.run(  # noqa: S603 - argv list, no shell
            [executable] + argv[1:],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        result["error"] = "timeout"
        result["stdout"] = _decode(exc.stdout or b"")
        result["stderr"] = _decode(exc.stderr or b"")
    except OSError as exc:
        result["error"] = "exec_failed: %s" % (exc.strerror or exc,)
    else:
        result["rc"] = proc.returncode
        result["stdout"] = _decode(proc.stdout)
        result["stderr"] = _decode(proc.stderr)
    result["duration_s"] = round(time.monotonic() - started, 3)
    return result


def read_text(path, limit=MAX_FILE_BYTES):
    """Contents of a (sysfs/procfs) file stripped of the trailing newline; None if unreadable.

    sysfs attributes can fail to read with EINVAL (e.g. ``speed`` of a down link) or
    EACCES; those read as None, which is what the controller reports.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit)
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
