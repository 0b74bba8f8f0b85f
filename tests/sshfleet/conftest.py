# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures for the multi-host SSH fleet (tests/sshfleet/fleet.sh): root, ip, sshd, iperf3."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
FLEET_SH = os.path.join(HERE, "fleet.sh")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "tools"))

from system_programs import require_programs  # noqa: E402  pylint: disable=import-error,wrong-import-position

# The session fleet's hosts 1, 2, 3 (the tests read what these recordings show).
FLEET_NODES = ("gpu-h100-590-1gpu.yml", "dgx-a100-topo.yml", "nic-h100-ndr-ib.yml")
REQUIRED_TOOLS = ("sshd", "ip", "tc", "ss", "iperf3", "ssh", "ssh-keygen", "unshare")


def require_fleet():
    """Skip without root: the fleet's network namespaces and sshd need it (how the suite is run, not
    what the machine lacks). Fail when a program is missing: that is a set-up defect."""
    if os.geteuid() != 0:
        pytest.skip("the SSH fleet needs root (network namespaces, sshd)")
    require_programs(REQUIRED_TOOLS, "the SSH fleet needs them")


@pytest.fixture(name="mpirun_installed", scope="session")
def mpirun_installed_fixture():
    """Session scope: checked before the session's fleet is built."""
    require_programs(["mpirun"], "Open MPI launches the all-reduce stand-in's ranks")


@pytest.fixture(name="slurm_installed", scope="session")
def slurm_installed_fixture():
    """A real Slurm on the fleet (fleet.sh --slurm, slurm.sh): Debian's slurmctld, slurmd, slurm-client and munge."""
    require_programs(["slurmctld", "slurmd", "srun", "sinfo", "scontrol", "munged"], "the Slurm fleet runs them")


def fleet_sh(*args, check=True, env=None, timeout=120):
    proc = subprocess.run([FLEET_SH] + list(args), capture_output=True, text=True, timeout=timeout, check=False, env=env)
    if check and proc.returncode != 0:
        raise AssertionError("fleet.sh %s failed (rc %d): %s%s" % (" ".join(args), proc.returncode, proc.stdout, proc.stderr))
    return proc


def fleet_id(state):
    with open(os.path.join(state, "fleet_id"), "r", encoding="utf-8") as handle:
        return int(handle.read().strip())


def leftovers(fleet, state):
    """What of fleet number ``fleet`` (state dir ``state``) still exists: namespaces, links, processes, files."""
    found = []
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout.split("\n")
    found += ["netns " + line.split()[0] for line in namespaces if line.startswith("gf%dh" % fleet)]
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout.splitlines()
    for line in links:
        name = line.split(": ")[1].split("@")[0]
        if name == "gf%dbr" % fleet or (name.startswith("gf%dh" % fleet) and name.endswith("v")):
            found.append("link " + name)
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if state in cmdline and FLEET_SH not in cmdline:
            found.append("process %s %s" % (pid, cmdline))
    if os.path.exists(state):
        found.append("state dir %s: %s" % (state, os.listdir(state)))
    # each host's own temporary directory (fleet.sh: TMPDIR of its SSH sessions)
    found += ["tmp dir /tmp/" + name for name in os.listdir("/tmp") if re.match(r"gf%dh[0-9]+$" % fleet, name)]
    return found


@pytest.fixture(scope="session", name="fleet")
def fleet_fixture(tmp_path_factory):
    """A 3-host fleet for the session: ``{state, id, hosts}``; torn down (and checked) at the end."""
    require_fleet()
    state = str(tmp_path_factory.mktemp("sshfleet") / "fleet")
    nodes = [os.path.join(REPO_ROOT, "tests", "replay", "nodes", name) for name in FLEET_NODES]
    fleet_sh("up", "--hosts", "3", "--state", state, "--node-files", ",".join(nodes))
    number = fleet_id(state)
    try:
        yield {"state": state, "id": number, "hosts": 3}
    finally:
        fleet_sh("down", "--state", state)
    assert leftovers(number, state) == []


@pytest.fixture(name="requirements")
def requirements_fixture():
    require_fleet()
