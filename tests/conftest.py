# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How `make unit` shares the suite between its two pytest-xdist workers (--dist loadgroup).

Every test gets an ``xdist_group``: its file, so a file's module-scoped fixtures (an SSH fleet, a
replayed run) are built once, in one worker; except the files below, which all rebuild the one
shared replayed fleet of inventories/simulated/ in tests/output/simulated (its inventory names
those paths) and so must never run at the same time: they form one group, run by one worker.
Without xdist the marks are inert.
"""

from __future__ import annotations

import os

import pytest

SHARED_SIMULATED_FLEET = frozenset((
    os.path.join("tests", "playbooks", "test_cli_validate.py"),
    os.path.join("tests", "playbooks", "test_simulated_inventory.py"),
    os.path.join("tests", "playbooks", "test_simulated_verdicts.py"),
    os.path.join("tests", "playbooks", "test_speed_options.py"),
    os.path.join("tests", "report", "test_report_browser.py"),
))
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_collection_modifyitems(items):
    for item in items:
        path = os.path.relpath(str(item.fspath), REPO_ROOT)
        group = "simulated-fleet" if path in SHARED_SIMULATED_FLEET else path
        item.add_marker(pytest.mark.xdist_group(group))
