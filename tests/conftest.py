# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Makes the collection importable (the gpufleet library is installed; the collection's own plugins are
imported as ``ansible_collections.gpufleet.acceptance``), and gives the tests their replayed demo fleet.

`make unit` runs the suite on pytest-xdist workers, whole files each (--dist loadfile), so a file's module-scoped
fixtures (an SSH fleet, a replayed run) are built once. The replayed demo fleet is one per worker
(``simulated_fleet``): a copy of inventories/simulated/ under tests/output/workers/<worker>/, whose inventory finds
its built tools at ../../tests/output/simulated from there, so no two workers ever build into the same directory
(the checkout's own tests/output/simulated is `make demo`'s, and `gpufleet demo`'s test). One validate_cluster.yml
run of the whole demo fleet backs several files (``simulated_validate_run``): the first worker that needs it runs it
under a lock, the others read its results (``run_once``).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import uuid

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIMULATED = os.path.join(REPO_ROOT, "inventories", "simulated")
# one id per pytest run, the same in every xdist worker (xdist sets it in each worker); a plain run makes its own
RUN_ID = os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex


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


def worker_name():
    """This process's xdist worker (gw0, gw1, ...), or "main" without xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def ansible_env(base, **extra):
    """The environment a test's ansible-playbook runs with: the checkout's ansible.cfg and collection, no colour, its
    own local temp under ``base``."""
    env = dict(os.environ)
    env.update({"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"),
                "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO_ROOT, "collections"),
                "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": os.path.join(str(base), "ansible-local")})
    env.update(extra)
    return env


@pytest.fixture(scope="session", name="simulated_fleet")
def simulated_fleet_fixture():
    """This worker's replayed demo fleet, built: ``{"inventory": .../hosts.yml, "inventory_dir", "built"}``.

    A fresh copy of inventories/simulated/ each session (edits to it are seen); its hosts.yml finds the built tools
    at inventory_dir/../../tests/output/simulated, which is this worker's own directory.
    """
    root = os.path.join(REPO_ROOT, "tests", "output", "workers", worker_name())
    inventory_dir = os.path.join(root, "inventories", "simulated")
    built = os.path.join(root, "tests", "output", "simulated")
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(SIMULATED, inventory_dir)
    inventory = os.path.join(inventory_dir, "hosts.yml")
    build = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "tests", "replay", "build_fleet.py"),
                            "--inventory", inventory, "--out", built],
                           capture_output=True, text=True, check=False, timeout=120)
    assert build.returncode == 0, build.stdout + build.stderr
    return {"inventory": inventory, "inventory_dir": inventory_dir, "built": built}


def run_once(name, produce):
    """``produce(directory)`` once per pytest run, whichever worker asks first; every caller gets its JSON result.

    The directory (tests/output/runs/<run id>/<name>/) holds what ``produce`` writes; a caller that arrives while
    another worker produces it waits on the lock. A failed ``produce`` is not cached: the next caller tries again
    and sees the failure itself.
    """
    base = os.path.join(REPO_ROOT, "tests", "output", "runs", RUN_ID)
    os.makedirs(base, exist_ok=True)
    directory = os.path.join(base, name)
    done = os.path.join(base, name + ".json")
    with open(os.path.join(base, name + ".lock"), "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not os.path.exists(done):
                shutil.rmtree(directory, ignore_errors=True)
                os.makedirs(directory)
                result = produce(directory)
                with open(done + ".tmp", "w", encoding="utf-8") as handle:
                    json.dump(result, handle)
                os.replace(done + ".tmp", done)
            with open(done, encoding="utf-8") as handle:
                return json.load(handle)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _validate_demo_fleet(simulated_fleet, directory):
    """validate_cluster.yml, unchanged, on the whole replayed demo fleet (the report role included)."""
    run_dir = os.path.join(directory, "results")
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", simulated_fleet["inventory"],
           os.path.join(REPO_ROOT, "playbooks", "validate_cluster.yml"), "-e", json.dumps({"gpufleet_results_dir": run_dir})]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=ansible_env(directory), capture_output=True, text=True, timeout=600,
                          check=False)
    return {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr, "results_dir": run_dir}


@pytest.fixture(scope="session", name="simulated_validate_run")
def simulated_validate_run_fixture(simulated_fleet):
    """``{"rc", "stdout", "stderr", "results_dir"}`` of one validate_cluster.yml run of the whole demo fleet, shared
    by every file (and worker) that reads it. Read only: a test that changes the results copies them first."""
    return run_once("simulated-validate", lambda directory: _validate_demo_fleet(simulated_fleet, directory))


def _validate_della_quick(directory):
    """validate_cluster.yml on della-h100-1gpu alone at level quick, with its claim and fact groups of
    inventories/simulated/host_vars/ (ACCEPT): the run that both level quick's test and the exit status 0 test read."""
    sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))
    import build_fleet  # pylint: disable=import-error,import-outside-toplevel
    import yaml  # pylint: disable=import-outside-toplevel

    layout = build_fleet.build_node(os.path.join(SIMULATED, "nodes", "della-h100-1gpu.yml"),
                                    os.path.join(directory, "fleet"))
    with open(os.path.join(SIMULATED, "host_vars", "della-h100-1gpu.yml"), encoding="utf-8") as handle:
        host = dict(build_fleet.local_host_vars(layout), gpufleet_level="quick", **yaml.safe_load(handle))
    host["gpufleet_nccl_include_dirs"] = [os.path.join(layout["dir"], "include")]
    inventory = os.path.join(directory, "inventory.yml")
    with open(inventory, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"all": {"hosts": {"della-h100-1gpu": host}}}, handle, sort_keys=False)
    run_dir = os.path.join(directory, "results")
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory,
           os.path.join(REPO_ROOT, "playbooks", "validate_cluster.yml"),
           "-e", json.dumps({"gpufleet_results_dir": run_dir, "gpufleet_level": "quick"})]
    env = ansible_env(directory, ANSIBLE_HOST_KEY_CHECKING="False",
                      ANSIBLE_REMOTE_TEMP=os.path.join(directory, "ansible-remote"))
    proc = subprocess.run(cmd, cwd=directory, env=env, capture_output=True, text=True, timeout=300, check=False)
    return {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr, "results_dir": run_dir}


@pytest.fixture(scope="session", name="della_quick_validate_run")
def della_quick_validate_run_fixture():
    """``{"rc", "stdout", "stderr", "results_dir"}`` of validate_cluster.yml on della-h100-1gpu alone at level quick
    (ACCEPT), one run shared by every file (and worker) that reads it. Read only."""
    return run_once("della-quick-validate", _validate_della_quick)
