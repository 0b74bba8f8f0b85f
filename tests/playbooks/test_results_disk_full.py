# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A results directory on a full disk stops the run at the fact task, for the controller's fault: the role's fact
task (roles/facts, entry point gather) ignores a node's failures, never the controller's own.

One real-disk proof: a 256 KiB tmpfs (root only; skipped otherwise) holding one host's results directory, filled to
the last byte, and one ansible-playbook run of the role on two replayed nodes (topology only: one tool each), the
other node recording into a directory with room. The write that failed is named (ENOSPC), the full host's earlier
record is kept as it was and no temporary file is left; the run stops for both nodes (the task after the role runs
on none, nor on a first host the role did not gather). ~10 s. The structure of the two fact tasks' stops is checked without root.
"""

from __future__ import annotations

import errno
import os
import subprocess

import pytest
import yaml

from gpufleet.results.store import RunDir

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NODE_FILE = os.path.join(REPO_ROOT, "inventories", "simulated", "nodes", "hgx-h100-nv18.yml")


def _role_tasks(entry_point):
    with open(os.path.join(REPO_ROOT, "roles", "facts", "tasks", entry_point), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


FACT_TASKS = [("gather.yml", "facts_node_result"), ("after_stress.yml", "facts_after_stress_result")]


@pytest.mark.parametrize("entry_point, register", FACT_TASKS)
def test_the_fact_task_ignores_node_failures_and_is_followed_by_the_controllers_stop(entry_point, register):
    tasks = _role_tasks(entry_point)
    index = next(number for number, task in enumerate(tasks) if "gpufleet.acceptance.node_facts" in task)
    fact_task, stop = tasks[index], tasks[index + 1]
    # a node's failure stays the node's: recorded, judged, the others go on
    assert fact_task["register"] == register and fact_task["ignore_errors"] is True
    # the controller's failure stops the run, for every host, with the action's messages: once for the play, reading
    # every host's registered result (a failed run_once task fails every host)
    assert stop["ansible.builtin.fail"] == {"msg": "{{ __facts_write_errors | join('; ') }}"}
    assert stop["vars"]["__facts_write_errors"].split() == [
        "{{", "ansible_play_hosts_all", "|", "map('extract',", "hostvars)", "|", "selectattr('%s'," % register,
        "'defined')", "|", "map(attribute='%s')" % register, "|", "selectattr('results_write_error',", "'defined')",
        "|", "map(attribute='results_write_error')", "|", "unique", "|", "list", "}}"]
    assert stop["when"] == "__facts_write_errors | length > 0"
    assert stop["run_once"] is True and stop["any_errors_fatal"] is True
    assert stop.get("tags") == fact_task.get("tags")


def _fill(directory):
    """Write a file into ``directory`` until its file system has not one byte left."""
    descriptor = os.open(os.path.join(directory, "filler"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for chunk in (b"\0" * 4096, b"\0"):
            while True:
                try:
                    os.write(descriptor, chunk)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
    finally:
        os.close(descriptor)


@pytest.fixture(name="full_disk")
def full_disk_fixture(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount_point)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: %s" % mounted.stderr.strip())
    try:
        yield str(mount_point)
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


def test_a_full_results_directory_stops_the_run_at_the_fact_task(tmp_path, full_disk, playbook):
    full_dir, roomy_dir = os.path.join(full_disk, "r"), str(tmp_path / "roomy")
    full_run = RunDir.create(full_dir, hosts=["full"])
    RunDir.create(roomy_dir, hosts=["roomy"])
    # what an earlier run recorded of the host (unreachable then): it must survive the failed rewrite
    lost = {"unreachable": True, "msg": "ssh: connect to host: Connection refused"}
    full_run.record_facts("full", {"topology": lost})
    with open(full_run.host_file("full"), "rb") as handle:
        earlier = handle.read()
    _fill(full_disk)

    tools = {"gpufleet_nvidia_smi_path": "{{ replay_bin }}/nvidia-smi", "gpufleet_fact_groups": ["topology"]}
    # the play's first host (inventory order) is not gathered, as a resumed run's host gathered before: the stop,
    # once for the play, must not be skipped with it
    hosts = {"a-gathered-before": {"node_file": NODE_FILE, "vars": dict(tools)},
             "full": {"node_file": NODE_FILE, "vars": dict(tools, facts_record={"run_dir": full_dir})},
             "roomy": {"node_file": NODE_FILE, "vars": dict(tools, facts_record={"run_dir": roomy_dir})}}
    fact_task = {"name": "gpufleet.acceptance.facts", "tasks_from": "gather"}
    tasks = [{"name": "The fact task of validate_cluster.yml", "ansible.builtin.import_role": fact_task,
              "vars": {"facts_hosts": ["full", "roomy"]}},
             {"name": "After the facts", "ansible.builtin.set_fact": {"dumped": {"after_the_facts": True}}}]
    run = playbook(hosts, tasks)

    said = ("results directory %s is full (ENOSPC: No space left on device) writing raw/full/topology/topo_m.txt, "
            "which was not written; free space and resume: gpufleet validate --out %s" % (full_dir, full_dir))
    assert run.rc != 0
    assert said in run.stdout, run.stdout[-4000:]
    # the run stopped for all three: the task after the role ran on none (nothing dumped)
    assert run.results == {}, run.stdout[-4000:]
    # the node with room was recorded; the full one kept its earlier record, whole, and no temporary file is left
    assert os.path.isfile(os.path.join(roomy_dir, "hosts", "roomy.json"))
    with open(full_run.host_file("full"), "rb") as handle:
        assert handle.read() == earlier
    assert not os.path.exists(os.path.join(full_dir, "raw", "full", "topology", "topo_m.txt"))
    assert [name for _root, _dirs, files in os.walk(full_disk) for name in files if name.endswith(".tmp")] == []
