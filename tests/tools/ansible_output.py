# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the tests read from ansible-playbook's default output."""

from __future__ import annotations

import json
import re


def failures(stdout):
    """``{host: msg}`` of the ``fatal: [host]: FAILED! => {...}`` lines (one JSON object a line)."""
    found = {}
    for name, result in re.findall(r"^fatal: \[([^\]]+)\]: FAILED! => (\{.*\})$", stdout, re.M):
        found[name] = " ".join(json.loads(result).get("msg", "").split())
    return found


def recap(stdout):
    """{host: (ok, changed, failed)} from PLAY RECAP."""
    line = r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)"
    return {m.group(1): (int(m.group(2)), int(m.group(3)), int(m.group(5))) for m in re.finditer(line, stdout, re.M)}


def changed_tasks(stdout):
    """[(task, host)] reported ``changed``, without the runner's own dump task."""
    found, task = [], None
    for line in stdout.splitlines():
        head = re.match(r"^TASK \[(.*)\] \*+$", line)
        if head:
            task = head.group(1)
            continue
        hit = re.match(r"^changed: \[([^\]]+)\]", line)
        if hit and task != "Dump what the test reads":
            found.append((task, hit.group(1)))
    return found
