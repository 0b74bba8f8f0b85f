# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/provision.yml does not include a role that is switched off (nccl_tests_enabled, gpu_bench_enabled
false): no task of it is evaluated for that host, not even skipped; where the switch is not set, the role's own
default (true, roles/<role>/defaults/main.yml) includes it.

One ansible-playbook run of provision.yml itself, `--tags provision --skip-tags facts`, on three local hosts that
differ only in the switches. No facts are gathered, so each host stops at the first task that needs them: in nccl_env
(right after the two switchable roles) where both are off, in the role's preflight where one is on. Nothing is built
or written: the first such task is an assert on the controller, and the toolkit paths of the hosts that include a
role point at an empty directory."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROLES = ("nccl_tests", "gpu_bench")
# the include_role tasks of provision.yml (their names, written from the playbook)
INCLUDE_TASKS = {
    "nccl_tests": "NCCL tests | build the pinned release with MPI for the GPUs found"
                  " (nccl_tests_enabled false skips it)",
    "gpu_bench": "GPU compute benchmark | build gpubench with nvcc for the GPUs found"
                 " (gpu_bench_enabled false skips it)",
}
RESULT = re.compile(r"^(?:ok|changed|skipping|fatal|failed): \[([^\]]+)\]")
INCLUDED = re.compile(r"^included: gpufleet\.acceptance\.(\w+) for (.+)$")


def host_vars(toolkit: str) -> dict:
    return {
        # both off; one as the string an --extra-vars gives ("false"), which `| bool` reads as off too
        "both-off": {"nccl_tests_enabled": False, "gpu_bench_enabled": "false"},
        # neither set: the roles' defaults (on); nccl_tests, first, stops this host in its preflight
        "defaults": {"nccl_tests_cuda_home": toolkit, "gpu_bench_cuda_home": toolkit},
        "bench-default": {"nccl_tests_enabled": False, "gpu_bench_cuda_home": toolkit},
    }


def sections(stdout: str) -> dict[str, set[str]]:
    """{TASK header: hosts with a result under it}, "included:" lines counted under the role they include."""
    found: dict[str, set[str]] = {}
    hosts: set[str] = set()
    for line in stdout.splitlines():
        if line.startswith("TASK ["):
            hosts = found.setdefault(line[len("TASK ["):line.rindex("]")], set())
        elif RESULT.match(line):
            hosts.add(RESULT.match(line).group(1))
        elif INCLUDED.match(line):
            role, names = INCLUDED.match(line).groups()
            found.setdefault("included " + role, set()).update(names.split(", "))
    return found


def role_hosts(found: dict[str, set[str]], role: str) -> set[str]:
    """The hosts any task of ``role`` was evaluated for (ran, skipped or failed). A delegated task's header has no
    role prefix: its name's own prefix (Nccl_tests | ..., the role's task naming) tells it."""
    prefixes = ("gpufleet.acceptance.%s : " % role, role.capitalize() + " | ")
    return set().union(*[hosts for name, hosts in found.items() if name.startswith(prefixes)])


@pytest.fixture(scope="module", name="provision_run")
def provision_run_fixture(tmp_path_factory):
    base = tmp_path_factory.mktemp("provision_switched_off")
    toolkit = base / "no-toolkit"
    toolkit.mkdir()
    hosts = {name: dict(switches, ansible_connection="local", ansible_python_interpreter=sys.executable)
             for name, switches in host_vars(str(toolkit)).items()}
    inventory = base / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO_ROOT, "collections"), ANSIBLE_LOCAL_TEMP=str(base / "tmp"))
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory),
           "--tags", "provision", "--skip-tags", "facts", os.path.join(REPO_ROOT, "playbooks", "provision.yml")]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc


def test_a_switched_off_role_is_not_included(provision_run):
    found = sections(provision_run.stdout)
    output = provision_run.stdout[-6000:] + provision_run.stderr[-2000:]
    # the include itself is skipped for the host, once per role
    assert "both-off" in found[INCLUDE_TASKS["nccl_tests"]] and "both-off" in found[INCLUDE_TASKS["gpu_bench"]], output
    # and no task of either role is evaluated for it, nor is the role included for it
    for role in ROLES:
        assert "both-off" not in role_hosts(found, role), (role, output)
        assert "both-off" not in found.get("included " + role, set()), (role, output)
    # it went on past both to nccl_env, the next role, which stops it (no facts gathered in this run)
    assert "nccl_env: both-off has no NIC facts" in provision_run.stdout, output


def test_an_unset_switch_takes_the_roles_default_on(provision_run):
    found = sections(provision_run.stdout)
    output = provision_run.stdout[-6000:] + provision_run.stderr[-2000:]
    assert found["included nccl_tests"] == {"defaults"}, output
    assert "defaults" in role_hosts(found, "nccl_tests"), output
    # nccl_tests off, gpu_bench unset: only gpu_bench included
    assert found["included gpu_bench"] == {"bench-default"}, output
    assert "bench-default" in role_hosts(found, "gpu_bench"), output
    assert "bench-default" not in role_hosts(found, "nccl_tests"), output
    # every host stopped where the docstring says, so the play ran no further for any of them
    assert provision_run.returncode == 2, output
    for host in host_vars(""):
        assert re.search(r"^%s\s+:.*failed=1 " % re.escape(host), provision_run.stdout, re.M), (host, output)
