# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ending a process group on the node: SIGTERM, a grace period, SIGKILL. Standard library only and no import of the
collection, so it serves both the benchmark runner (module_utils/bench_process.py) and the burn-in role's node-side
helper, which the role copies beside this file onto the node (roles/burn_in/tasks/probe.yml)."""

from __future__ import absolute_import, division, print_function

import os
import signal
import subprocess
import time


def group_alive(pgid):
    """Whether any process of group ``pgid`` is still there (one we may not signal counts as there)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def end_group(proc, pgid, grace):
    """SIGTERM to the group, wait up to ``grace`` s for all of it to go, then SIGKILL; returns the signals sent."""
    sent = []
    if not group_alive(pgid):
        return sent
    signal_group(pgid, signal.SIGTERM)
    sent.append("SIGTERM")
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc.poll() is not None and not group_alive(pgid):
            return sent
        time.sleep(0.05)
    if group_alive(pgid):
        signal_group(pgid, signal.SIGKILL)
        sent.append("SIGKILL")
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    deadline = time.monotonic() + 5
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return sent
