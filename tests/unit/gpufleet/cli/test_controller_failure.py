# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``gpufleet validate`` after a write to the results directory failed (a full disk): the run failed for the
controller's fault, said with the write that failed; no node verdict, no node named as the cause.

In this process, with run_playbook replaced by one that feeds the progress handler the events ansible-playbook sends
when the fact task could not record its hosts (tests/playbooks/test_results_disk_full.py runs the role for real);
the results directory is hand-built (SYNTHETIC, cli_results.py)."""

from __future__ import annotations

import importlib.util
import os

from gpufleet.cli import main as cli
from gpufleet.cli import validate

_SPEC = importlib.util.spec_from_file_location("cli_results", os.path.join(os.path.dirname(__file__), "cli_results.py"))
cli_results = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(cli_results)

FACT_TASK = "Facts | every fact group, one module run per node"
STOP_TASK = "Facts | the controller could not record, the run stops (not the node's fault)"


def _event(kind, task=None, host=None, **data):
    return {"event": kind, "event_data": dict(data, task=task, host=host)}


def _full(results_dir, host):
    return ("results directory %s is full (ENOSPC: No space left on device) writing raw/%s/topology/topo_m.txt, "
            "which was not written; free space and resume: gpufleet validate --out %s"
            % (results_dir, host, results_dir))


def _disk_full_playbook(inventories, results_dir, progress=None, **_kwargs):
    # node-c was gathered by an earlier run (resumed: not gathered again); node-a and node-b could not be recorded
    cli_results.write_run(results_dir, [cli_results.host_record("node-c", None)], finished=False)
    full_a, full_b = _full(results_dir, "node-a"), _full(results_dir, "node-b")
    for event in (
        _event("playbook_on_task_start", FACT_TASK),
        _event("runner_on_failed", FACT_TASK, "node-a", ignore_errors=True,
               res={"failed": True, "msg": full_a, "results_write_error": full_a}),
        _event("runner_on_failed", FACT_TASK, "node-b", ignore_errors=True,
               res={"failed": True, "msg": full_b, "results_write_error": full_b}),
        _event("playbook_on_task_start", STOP_TASK),
        _event("runner_on_failed", STOP_TASK, "node-a", ignore_errors=False, res={"failed": True, "msg": full_a}),
        _event("runner_on_failed", STOP_TASK, "node-b", ignore_errors=False, res={"failed": True, "msg": full_b}),
        _event("playbook_on_stats"),
    ):
        progress(event)
    return 2, "failed", [], results_dir + ".runner"


def test_a_full_results_directory_fails_the_run_for_the_controller(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(validate, "program", lambda: ["gpufleet"])
    monkeypatch.setattr(validate, "run_playbook", _disk_full_playbook)
    inventory = tmp_path / "inv.yml"
    inventory.write_text("all: {}\n")
    out = str(tmp_path / "r")
    code = cli.main(["validate", "-i", str(inventory), "--out", out])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "gpufleet validate: the run failed on the controller, not on any node: " + _full(out, "node-a"),
        "  also: " + _full(out, "node-b"),
        "  nothing was judged: no node is blamed for a write the controller could not make",
        "  on disk in %s: run.json (status running), host records of 1 of 1 host(s): node-c, no fleet.json "
        "(nothing judged)" % out,
        "  resume with: gpufleet validate -i %s --out %s" % (inventory, out),
        "  full Ansible output: %s" % os.path.join(out + ".runner", "artifacts"),
    ]


def test_progress_keeps_each_failed_write_once_ignored_or_not(tmp_path):
    progress = validate.Progress(str(tmp_path), write=lambda line: None, clock=lambda: 0.0)
    said = _full("/r", "node-a")
    for event in (
        _event("playbook_on_task_start", FACT_TASK),
        _event("runner_on_failed", FACT_TASK, "node-a", ignore_errors=True,
               res={"msg": said, "results_write_error": said}),
        _event("runner_on_failed", FACT_TASK, "node-b", ignore_errors=True, res={"msg": "nvidia-smi not found"}),
        _event("runner_on_failed", "Results | record", "node-a", ignore_errors=False,
               res={"msg": said, "results_write_error": said}),
    ):
        progress(event)
    assert progress.write_failures == [said]
