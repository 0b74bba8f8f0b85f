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
