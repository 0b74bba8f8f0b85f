# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A write to the results directory that fails (a full disk, a quota, a read-only or unwritable directory, an I/O
error) is the controller's failure: named with its path, errno and what is on disk, the old file intact, no
temporary file left; the fact task that hit it fails with that message (``results_write_error``), and the verdict
never judges a node whose record the controller did not write.

In this process: the failure is made by replacing ``os.fsync`` (a file system that reports a full disk or an I/O
error when the data is flushed, as NFS and ext4's delayed allocation do) or ``tempfile.mkstemp`` (no room for a new
file) with one that raises the errno. tests/playbooks/test_results_disk_full.py proves it on a full tmpfs.
"""

from __future__ import annotations

import errno
import json
import os
import types

import pytest
from ansible.errors import AnsibleConnectionFailure

from ansible_collections.gpufleet.acceptance.plugins.action import node_facts, results_record
from gpufleet.results import store as results_store
from gpufleet.results.store import ResultsError, RunDir
from gpufleet.results.verdicts import judge_run

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
TOPO = os.path.join(REPO_ROOT, "tests", "fixtures", "topo", "mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt")


def _fail_with(monkeypatch, number, where="fsync"):
    """Every write of the results directory fails with ``number`` from now on: at fsync (the data written to the
    temporary file, then refused) or at mkstemp (no new file at all)."""
    error = OSError(number, os.strerror(number))

    def refuse(*_args, **_kwargs):
        raise error

    if where == "fsync":
        monkeypatch.setattr(results_store.os, "fsync", refuse)
    else:
        monkeypatch.setattr(results_store.tempfile, "mkstemp", refuse)


def _temporaries(directory):
    return sorted(name for _root, _dirs, files in os.walk(directory) for name in files if name.endswith(".tmp"))


def _topology_results(stdout):
    entry = {"cmd": ["nvidia-smi", "topo", "-m"], "rc": 0, "stdout": stdout, "stderr": "", "duration_s": 0.1,
             "error": None}
    return {"topology": {"changed": False, "ansible_facts": {"gpufleet_topology": {"summary": {"gpu_count": 8}}},
                         "raw": {"topo_m": entry}}}


def _read(path):
    with open(path, "rb") as handle:
        return handle.read()


# -- the store ----------------------------------------------------------------------------------------------------

def test_a_full_disk_rewriting_a_host_record_names_it_and_keeps_the_old_one(tmp_path, monkeypatch):
    run = RunDir.create(str(tmp_path / "r"), hosts=["node-a"])
    record = run.new_host_record("node-a")
    run.write_host(record)
    before = _read(run.host_file("node-a"))
    _fail_with(monkeypatch, errno.ENOSPC)
    record["verdict"] = "ACCEPT"
    with pytest.raises(ResultsError) as caught:
        run.write_host(record)
    root = str(tmp_path / "r")
    assert str(caught.value) == (
        "results directory %s is full (ENOSPC: No space left on device) writing hosts/node-a.json, which keeps its "
        "earlier content; free space and resume: gpufleet validate --out %s" % (root, root))
    # still an OSError with its errno, for the callers that catch OSError
    assert isinstance(caught.value, OSError) and caught.value.errno == errno.ENOSPC
    assert _read(run.host_file("node-a")) == before
    assert _temporaries(root) == []


def test_no_room_for_the_first_record_of_a_host_writes_nothing_of_it(tmp_path, monkeypatch):
    run = RunDir.create(str(tmp_path / "r"), hosts=["node-b"])
    _fail_with(monkeypatch, errno.ENOSPC, where="mkstemp")
    with pytest.raises(ResultsError) as caught:
        run.record_facts("node-b", _topology_results("GPU0\n"))
    root = str(tmp_path / "r")
    # the raw outputs go first: the first write refused is the topology's
    assert str(caught.value) == (
        "results directory %s is full (ENOSPC: No space left on device) writing raw/node-b/topology/topo_m.txt, "
        "which was not written; free space and resume: gpufleet validate --out %s" % (root, root))
    assert not os.path.exists(run.host_file("node-b"))
    assert _temporaries(root) == []


@pytest.mark.parametrize("number, said", [
    (errno.EDQUOT, "is over its disk quota (EDQUOT: Disk quota exceeded) writing run.json, which keeps its earlier "
                   "content; free space or raise the quota and resume"),
    (errno.EROFS, "is on a read-only file system (EROFS: Read-only file system) writing run.json, which keeps its "
                  "earlier content; make it writable and resume"),
    (errno.EACCES, "is not writable by this user (EACCES: Permission denied) writing run.json, which keeps its "
                   "earlier content; give this user write access and resume"),
    (errno.EIO, "had an I/O error (EIO: Input/output error) writing run.json, which keeps its earlier content; "
                "check the disk and resume"),
])
def test_each_cause_is_named_with_what_frees_it(tmp_path, monkeypatch, number, said):
    run = RunDir.create(str(tmp_path / "r"), hosts=["node-a"])
    before = _read(run.run_file)
    _fail_with(monkeypatch, number)
    with pytest.raises(ResultsError) as caught:
        run.update_run(status="finished")
    root = str(tmp_path / "r")
    assert str(caught.value) == "results directory %s %s: gpufleet validate --out %s" % (root, said, root)
    assert _read(run.run_file) == before
    assert _temporaries(root) == []


def test_fleet_json_that_cannot_be_written_is_named_too(tmp_path, monkeypatch):
    run = RunDir.create(str(tmp_path / "r"), hosts=["node-a"])
    _fail_with(monkeypatch, errno.ENOSPC)
    with pytest.raises(ResultsError, match=r"is full \(ENOSPC: No space left on device\) writing fleet.json, which "
                                           r"was not written; free space and resume"):
        run.write_fleet({"fleet": {"verdict": "ACCEPT", "counts": {"ACCEPT": 1}}, "nodes": {}})
    assert not os.path.exists(os.path.join(run.path, "fleet.json"))


# -- the fact task (node_facts' action) and results_record ---------------------------------------------------------

def _node_facts_action(tmp_path, execute):
    """node_facts' action in this process, recording into ``<tmp>/r``; ``execute`` stands for the module run."""
    task = types.SimpleNamespace(args={"groups": ["topology"], "record": {"run_dir": str(tmp_path / "r")}},
                                 async_val=0, check_mode=False, action="gpufleet.acceptance.node_facts")
    connection = types.SimpleNamespace(_shell=types.SimpleNamespace(tmpdir=None))
    action = node_facts.ActionModule(task, connection, None, None, None)
    # the node's run (_collect: the program on the node's interpreter, or the module through Ansible) is ``execute``
    # pylint: disable-next=protected-access
    action._collect = lambda module_args, task_vars: execute(module_args=module_args, task_vars=task_vars)
    return action


def _topology_module_result(**_kwargs):
    with open(TOPO, encoding="utf-8") as handle:
        entry = {"cmd": ["nvidia-smi", "topo", "-m"], "rc": 0, "stdout": handle.read(), "stderr": "",
                 "duration_s": 0.1, "error": None}
    return {"changed": False, "groups": {"topology": {"raw": {"topo_m": entry}, "failed": False}}}


def test_the_fact_task_fails_naming_the_write_and_keeps_the_earlier_record(tmp_path, monkeypatch):
    run = RunDir.create(str(tmp_path / "r"), hosts=["node-a"])
    action = _node_facts_action(tmp_path, _topology_module_result)
    first = action.run(task_vars={"inventory_hostname": "node-a"})
    assert not first.get("failed") and first["record"] == run.host_file("node-a")
    raw_file = os.path.join(run.path, "raw", "node-a", "topology", "topo_m.txt")
    record_before, raw_before = _read(run.host_file("node-a")), _read(raw_file)
    _fail_with(monkeypatch, errno.ENOSPC)
    result = action.run(task_vars={"inventory_hostname": "node-a"})
    root = str(tmp_path / "r")
    said = ("results directory %s is full (ENOSPC: No space left on device) writing raw/node-a/topology/topo_m.txt, "
            "which keeps its earlier content; free space and resume: gpufleet validate --out %s" % (root, root))
    assert result["failed"] is True
    assert result["msg"] == said and result["results_write_error"] == said
    assert "record" not in result
    assert _read(run.host_file("node-a")) == record_before
    assert _read(raw_file) == raw_before
    assert _temporaries(root) == []


def test_a_node_lost_while_the_disk_is_full_fails_for_the_disk_not_as_unreachable(tmp_path, monkeypatch):
    RunDir.create(str(tmp_path / "r"), hosts=["node-a"])

    def lost(**_kwargs):
        raise AnsibleConnectionFailure("ssh: connect to host 10.0.0.7 port 22: Connection timed out")

    action = _node_facts_action(tmp_path, lost)
    _fail_with(monkeypatch, errno.ENOSPC, where="mkstemp")
    result = action.run(task_vars={"inventory_hostname": "node-a"})
    root = str(tmp_path / "r")
    said = ("results directory %s is full (ENOSPC: No space left on device) writing hosts/node-a.json, which was not "
            "written; free space and resume: gpufleet validate --out %s" % (root, root))
    assert result["failed"] is True and result["results_write_error"] == said
    assert result["msg"] == said + "; before that the node was lost: ssh: connect to host 10.0.0.7 port 22: " \
                                   "Connection timed out"
    assert not result.get("unreachable")


def test_a_fact_task_past_its_timeout_while_the_disk_is_full_fails_for_the_disk(tmp_path, monkeypatch):
    # Ansible's own task timeout, raised inside the action while the module runs (ansible-core 2.19)
    from ansible._internal._errors._task_timeout import TaskTimeoutError  # pylint: disable=import-outside-toplevel

    RunDir.create(str(tmp_path / "r"), hosts=["node-a"])

    def stuck(**_kwargs):
        raise TaskTimeoutError(210)

    action = _node_facts_action(tmp_path, stuck)
    _fail_with(monkeypatch, errno.EROFS, where="mkstemp")
    result = action.run(task_vars={"inventory_hostname": "node-a"})
    root = str(tmp_path / "r")
    said = ("results directory %s is on a read-only file system (EROFS: Read-only file system) writing "
            "hosts/node-a.json, which was not written; make it writable and resume: gpufleet validate --out %s"
            % (root, root))
    assert result["failed"] is True and result["results_write_error"] == said
    assert result["msg"] == said + "; before that the fact task ran past its timeout of 210 s"


def test_results_record_fails_naming_the_write(tmp_path, monkeypatch):
    run = RunDir.create(str(tmp_path / "r"), hosts=["node-a"])
    task = types.SimpleNamespace(args={"run_dir": run.path, "phase": "facts", "host": "node-a",
                                       "results": _topology_results("GPU0\n")},
                                 async_val=0, check_mode=False, action="gpufleet.acceptance.results_record")
    action = results_record.ActionModule(task, types.SimpleNamespace(_shell=types.SimpleNamespace(tmpdir=None)),
                                         None, None, None)
    _fail_with(monkeypatch, errno.ENOSPC)
    result = action.run(task_vars={"inventory_hostname": "node-a"})
    said = ("results directory %s is full (ENOSPC: No space left on device) writing raw/node-a/topology/topo_m.txt, "
            "which was not written; free space and resume: gpufleet validate --out %s" % (run.path, run.path))
    assert result["failed"] is True and result["msg"] == said and result["results_write_error"] == said


# -- the verdict -----------------------------------------------------------------------------------------------------

class _Judge:
    """No profile chosen: the refusal comes before any check."""

    @staticmethod
    def choose(_facts, _choice):
        return None, "no profile"


def test_a_host_in_the_play_without_a_record_is_not_judged(tmp_path):
    run = RunDir.create(str(tmp_path / "r"), hosts=["node-a", "node-b", "node-c"])
    run.record_facts("node-a", _topology_results("GPU0\n"))
    choice = {"claim": None, "profile": None, "overrides": None, "settings": {}}
    choices = {host: dict(choice) for host in ("node-a", "node-b", "node-c")}
    record_before = _read(run.host_file("node-a"))
    with pytest.raises(ResultsError) as caught:
        judge_run(run, ["node-a", "node-b", "node-c"], {"node-a", "node-b", "node-c"}, choices, _Judge())
    assert str(caught.value) == (
        "nothing was judged: node-b and node-c stayed in the play but have no record in %s/hosts: the controller did "
        "not write them (the fact task's failure says why: a full or unwritable results directory), and a node is "
        "never judged on a record the controller failed to write" % run.path)
    # nothing written: no verdict, no fleet.json, the one record as it was
    assert not os.path.exists(os.path.join(run.path, "fleet.json"))
    assert _read(run.host_file("node-a")) == record_before
    assert json.loads(_read(run.run_file))["status"] == "running"
