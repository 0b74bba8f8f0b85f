# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Makes the collection importable (the gpufleet library is installed; the collection's own plugins are
imported as ``ansible_collections.gpufleet.acceptance``), and how `make unit` shares the suite between its two pytest-xdist workers (--dist loadfile).

Each worker takes whole files, so a file's module-scoped fixtures (an SSH fleet, a replayed run) are
built once. The files below all rebuild the one shared replayed fleet of inventories/simulated/ in
tests/output/simulated (its inventory names those paths) and so must never run at the same time:
each holds an exclusive lock on tests/output/.simulated-fleet.lock for as long as its module runs (a
worker that reaches a second such file waits for the first to finish). A lock, not an xdist_group:
with pytest 9.2 and pytest-xdist 3.8, --dist loadgroup ignores the group marks (the group's files
and even one file's tests were split between the workers, and two builds of the shared fleet raced).
Without xdist the lock is taken and released file by file, uncontended.
"""

from __future__ import annotations

import fcntl
import os
import sys

import pytest

SHARED_SIMULATED_FLEET = frozenset((
    os.path.join("tests", "playbooks", "test_cli_validate.py"),
    os.path.join("tests", "playbooks", "test_simulated_inventory.py"),
    os.path.join("tests", "playbooks", "test_simulated_verdicts.py"),
    os.path.join("tests", "playbooks", "test_speed_options.py"),
    os.path.join("tests", "report", "test_report_browser.py"),
))
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCK = os.path.join(REPO_ROOT, "tests", "output", ".simulated-fleet.lock")


def _ensure_collection_importable():
    """Import ``ansible_collections.gpufleet.acceptance`` from this checkout.

    ansible-test runs from ``.../ansible_collections/gpufleet/acceptance`` and already has
    it on sys.path; a plain ``pytest`` in the checkout uses the untracked link that
    ``make`` creates under collections/.
    """
    parts = REPO_ROOT.split(os.sep)
    if len(parts) > 3 and parts[-3] == "ansible_collections":
        base = os.sep.join(parts[:-3])
    else:
        base = os.path.join(REPO_ROOT, "collections")
        link = os.path.join(base, "ansible_collections", "gpufleet", "acceptance")
        if not os.path.exists(link):
            os.makedirs(os.path.dirname(link), exist_ok=True)
            os.symlink(os.path.relpath(REPO_ROOT, os.path.dirname(link)), link)
    if base not in sys.path:
        sys.path.insert(0, base)


_ensure_collection_importable()


# autouse and module-scoped: set up before the module's own fixtures (which build the fleet), torn
# down after the module's last test
@pytest.fixture(autouse=True, scope="module")
def _shared_simulated_fleet_lock(request):
    if os.path.relpath(str(request.path), REPO_ROOT) not in SHARED_SIMULATED_FLEET:
        yield
        return
    os.makedirs(os.path.dirname(LOCK), exist_ok=True)
    with open(LOCK, "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
