# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pure parts of `gpufleet validate/report/demo` on hand-built (SYNTHETIC) results directories:
the summary table, exit codes, progress lines from runner events, `report` re-rendering, `demo`
refusing to run without the checkout."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

from gpufleet import collection
from gpufleet.cli import common, demo, validate
from gpufleet.cli import main as cli
from gpufleet.results.exit_codes import verdict_exit_code

_SPEC = importlib.util.spec_from_file_location("cli_results", os.path.join(os.path.dirname(__file__), "cli_results.py"))
cli_results = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(cli_results)
check, host_record, write_run = cli_results.check, cli_results.host_record, cli_results.write_run


def _records():
    return [
        host_record("node-b", "ACCEPT", [check("gpu.count", "pass")]),
        host_record("node-a", "ACCEPT WITH WARNINGS", [check("host.acs", "warn", message="could not verify ACS")]),
        host_record("node-c", "REJECT", [check("topology.gpu_pairs", "fail", "GPU0-GPU4", message="GPU0-GPU4: SYS, expected NV18"),
                                         check("host.acs", "warn", message="could not verify ACS"),
                                         check("host.xid", "fail", message="Xid 79 x1"),
                                         check("gpu.ecc", "fail", message="GPU3: 2 uncorrectable ECC errors")]),
        host_record("node-\x1b]0;pwned\x07d", "UNREACHABLE", unreachable="ssh: connect to host 10.0.0.4 port 22: No route to host"),
    ]


def test_summary_table_puts_failing_nodes_first_with_their_first_reasons(tmp_path):
    run, fleet, hosts = common.load_run(write_run(tmp_path / "run", _records()))
    verdicts = common.node_verdicts(run, fleet, hosts)
    assert common.summary_table(verdicts, hosts).splitlines() == [
        "NODE                    VERDICT               FIRST REASONS",
        "node-c                  REJECT                GPU0-GPU4: SYS, expected NV18; Xid 79 x1; and 1 more",
        "node-\\x1b]0;pwned\\x07d  UNREACHABLE           ssh: connect to host 10.0.0.4 port 22: No route to host",
        "node-a                  ACCEPT WITH WARNINGS  could not verify ACS",
        "node-b                  ACCEPT",
    ]
    assert common.fleet_line(verdicts) == "fleet REJECT: 2 of 4 nodes acceptable; 1 ACCEPT, 1 ACCEPT WITH WARNINGS, 1 REJECT, 1 UNREACHABLE"
    assert verdict_exit_code(verdicts) == 3


def test_long_reasons_are_cut_to_the_width():
    verdicts = {"n": "REJECT"}
    hosts = {"n": host_record("n", "REJECT", [check("x.y", "fail", message="word " * 100)])}
    line = common.summary_table(verdicts, hosts, width=60).splitlines()[1]
    assert len(line) == 60 and line.endswith("...") and line.startswith("n     REJECT   word word")


def _event(kind, task=None, host=None, **data):
    return {"event": kind, "event_data": dict(data, task=task, host=host)}


def test_progress_says_nothing_of_a_task_every_host_skipped(tmp_path):
    """The burn-in's tasks at a level without one, the verdict gate in a run that exits 0: skipped by every host, they
    are no progress."""
    results = write_run(tmp_path / "run", [host_record(name, None) for name in ("n1", "n2")], finished=False)
    lines = []
    progress = validate.Progress(results, write=lines.append, clock=lambda: 0.0)
    events = [
        _event("playbook_on_task_start", "Preflight | create"),  # the run's hosts are read from run.json here
        _event("runner_on_ok", "Preflight | create", "n1"),
        _event("runner_on_ok", "Preflight | create", "n2"),
        _event("playbook_on_task_start", "Burn-in | GPU load"),
        _event("runner_on_skipped", "Burn-in | GPU load", "n1"),
        _event("runner_on_skipped", "Burn-in | GPU load", "n2"),
        _event("playbook_on_task_start", "Verdict | fail the run for a node that is not accepted"),
        _event("runner_on_skipped", "Verdict | fail the run for a node that is not accepted", "n1"),
        _event("runner_on_ok", "Verdict | fail the run for a node that is not accepted", "n2"),
        _event("playbook_on_stats"),
    ]
    assert all(progress(event) is True for event in events)
    # the gate ran on n2 (a node it fails would be runner_on_failed): shown; the burn-in: not
    assert lines == ["gpufleet validate: Preflight 2/2 hosts done (0 s): create",
                     "gpufleet validate: Verdict 2/2 hosts done (0 s): fail the run for a node that is not accepted"]


def test_the_gate_on_the_nodes_not_accepted_counts_every_node_done_once_over(tmp_path):
    """validate_cluster.yml runs the gate in a play of the nodes not accepted: the others never get a result of it."""
    results = write_run(tmp_path / "run", [host_record(name, None) for name in ("n1", "n2", "n3")], finished=False)
    lines = []
    progress = validate.Progress(results, write=lines.append, clock=lambda: 0.0)
    gate = "Verdict | fail the run for a node that is not accepted (gpufleet_fail_on_verdict)"
    for event in [_event("playbook_on_task_start", "Preflight | create"), _event("runner_on_ok", "Preflight | create", "n1"),
                  _event("runner_on_ok", "Preflight | create", "n2"), _event("runner_on_ok", "Preflight | create", "n3"),
                  _event("playbook_on_task_start", gate),
                  _event("runner_on_failed", gate, "n2", ignore_errors=False, res={"msg": "not accepted: n2: REJECT"}),
                  _event("runner_on_failed", gate, "n3", ignore_errors=False, res={"msg": "not accepted: n3: REJECT"}),
                  _event("playbook_on_stats")]:
        progress(event)
    assert lines[-1] == ("gpufleet validate: Verdict 3/3 hosts done (0 s): fail the run for a node that is not "
                         "accepted (gpufleet_fail_on_verdict)")


def test_progress_lines_per_phase_with_hosts_done_over_total(tmp_path):
    results = write_run(tmp_path / "run", [host_record(name, None) for name in ("n1", "n2", "n3")], finished=False)
    lines = []
    progress = validate.Progress(results, once={"Preflight | create"}, write=lines.append, clock=lambda: 0.0)
    events = [
        _event("playbook_on_task_start", "Preflight | validate"),
        _event("runner_on_ok", "Preflight | validate", "n1"),
        _event("playbook_on_task_start", "Preflight | create"),
        _event("runner_on_ok", "Preflight | create", "n1"),
        _event("playbook_on_task_start", "Facts | GPU topology"),
        _event("runner_on_ok", "Facts | GPU topology", "n2"),
        _event("runner_on_unreachable", "Facts | GPU topology", "n3"),
        _event("runner_on_failed", "Facts | GPU topology", "n1", ignore_errors=True, res={"msg": "nvidia-smi not found"}),
        _event("playbook_on_task_start", "Validating arguments against arg spec 'main'"),  # no prefix: still Facts
        _event("runner_on_ok", "Validating arguments against arg spec 'main'", "n1"),
        _event("runner_on_ok", "Validating arguments against arg spec 'main'", "n2"),
        _event("runner_on_ok", "Validating arguments against arg spec 'main'", "n3"),
        _event("playbook_on_task_start", "Results | record"),
        _event("runner_on_ok", "Results | record", "n1"),
        _event("runner_on_failed", "Results | record", "n2", ignore_errors=False, res={"msg": "disk full"}),
        _event("runner_on_ok", "Results | record", "n3"),
        _event("playbook_on_task_start", "Verdict | judge"),  # run_once in a role: one result, known at the task's end
        _event("runner_on_ok", "Verdict | judge", "n1"),
        _event("playbook_on_task_start", "Report | render"),
        _event("runner_on_ok", "Report | render", "n1"),
        _event("playbook_on_task_start", "Preflight | the results directory is a gpufleet run"),  # a role's own preflight: still Report
        _event("runner_on_ok", "Preflight | the results directory is a gpufleet run", "n1"),
        _event("playbook_on_stats"),
    ]
    assert all(progress(event) is True for event in events)
    assert lines == [
        "gpufleet validate: Preflight 3/3 hosts done (0 s): validate",  # run.json is already there (a resumed run)
        "gpufleet validate: Preflight 3/3 hosts done (0 s): create",
        "gpufleet validate: Facts 3/3 hosts done (0 s): GPU topology",
        # Ansible's own argument check is no step of the run: not shown
        "gpufleet validate: Results 3/3 hosts done (0 s): record",
        "gpufleet validate: Verdict 3/3 hosts done (0 s): judge",
        "gpufleet validate: Report 3/3 hosts done (0 s): render",
        "gpufleet validate: Report 3/3 hosts done (0 s): the results directory is a gpufleet run",
    ]
    assert progress.failures == ["n2: Results | record: disk full"]


def test_progress_on_a_large_fleet_shows_tenths():
    lines = []
    progress = validate.Progress("/nonexistent", write=lines.append, clock=lambda: 0.0)
    progress.hosts = ["h%03d" % number for number in range(100)]
    progress({"event": "playbook_on_task_start", "event_data": {"task": "Facts | GPUs"}})
    for number in range(100):
        progress({"event": "runner_on_ok", "event_data": {"task": "Facts | GPUs", "host": "h%03d" % number}})
    assert lines == ["gpufleet validate: Facts %d/100 hosts done (0 s): GPUs" % done for done in range(10, 101, 10)]


def test_report_rerenders_an_existing_run(tmp_path, capsys, monkeypatch):
    results = write_run(tmp_path / "run", _records())
    calls = []

    def fake_render(results_dir, out_dir):
        calls.append((results_dir, out_dir))
        return {"files": {"html": os.path.join(out_dir, "report.html")}}

    monkeypatch.setattr(common, "renderer", lambda: (fake_render, ValueError, None))
    code = cli.main(["report", results, "--out", str(tmp_path / "elsewhere")])
    out, _err = capsys.readouterr()
    assert code == 0 and calls == [(results, str(tmp_path / "elsewhere"))]
    assert out.splitlines()[1].startswith("node-c ") and "fleet REJECT: 2 of 4 nodes acceptable; 1 ACCEPT, " in out
    assert out.endswith("report: %s\n" % os.path.join(str(tmp_path / "elsewhere"), "report.html"))


def test_report_says_a_static_accept_in_its_fleet_line(tmp_path, capsys, monkeypatch):
    results = write_run(tmp_path / "run", [host_record("node-a", "ACCEPT"), host_record("node-b", "ACCEPT")])
    fleet_path = os.path.join(results, "fleet.json")
    with open(fleet_path, encoding="utf-8") as handle:
        fleet = json.load(handle)
    fleet.update(verdict="ACCEPT", level="quick", label="static checks only")  # as a --level quick run writes it
    with open(fleet_path, "w", encoding="utf-8") as handle:
        json.dump(fleet, handle)
    monkeypatch.setattr(common, "renderer", lambda: (lambda results_dir, out_dir: {"files": {}}, ValueError, None))
    assert cli.main(["report", results]) == 0
    assert "\nfleet ACCEPT (static checks only): 2 of 2 nodes acceptable; 2 ACCEPT\n" in capsys.readouterr().out


def test_report_refuses_what_is_not_a_finished_run(tmp_path, capsys):
    assert cli.main(["report", str(tmp_path)]) == 64
    assert "is not a gpufleet results directory (it has no run.json)" in capsys.readouterr().err
    running = write_run(tmp_path / "cut", _records(), finished=False)
    assert cli.main(["report", running]) == 1
    assert "has no fleet.json: the run did not finish" in capsys.readouterr().err


def test_report_renders_for_real_when_the_renderer_is_there(tmp_path, capsys):
    """Against the real renderer (report/render.py), when it is installed: it writes report.html."""
    function, _error, why = common.renderer()
    if function is None:
        pytest.skip(why)
    results = write_run(tmp_path / "run", _records())
    assert cli.main(["report", results]) == 0
    assert capsys.readouterr().out.endswith("report: %s\n" % os.path.join(results, "report.html"))
    assert os.path.getsize(os.path.join(results, "report.html")) > 0


def test_demo_needs_the_checkout(tmp_path, capsys, monkeypatch):
    assert demo.checkout_root(str(tmp_path)) is None
    assert demo.checkout_root(collection.collection_root()) == collection.collection_root()  # this checkout has tests/ and the demo inventory
    monkeypatch.setattr(demo, "checkout_root", lambda: None)
    assert cli.main(["demo"]) == 1
    err = capsys.readouterr().err
    assert "the demo fleet lives in the gpufleet source checkout" in err and "make demo" in err


def test_validate_refuses_a_missing_inventory_before_running_anything(tmp_path, capsys):
    assert cli.main(["validate", "-i", str(tmp_path / "nope.yml"), "--out", str(tmp_path / "r")]) == 64
    assert capsys.readouterr().err == "gpufleet validate: inventory %s: no such file or directory\n" % (tmp_path / "nope.yml")
    assert not os.path.exists(tmp_path / "r")


def test_the_playbook_and_collections_path_come_from_the_package():
    assert validate.playbook_path() == os.path.join(collection.collection_root(), "playbooks", "validate_cluster.yml")
    assert os.path.isfile(validate.playbook_path())
    assert os.path.isdir(os.path.join(collection.collections_path(), "ansible_collections", "gpufleet", "acceptance", "plugins"))
    assert "Preflight | validate every claim and profile choice" in validate.run_once_tasks(validate.playbook_path())


def test_version_names_the_library_the_collection_and_ansible_core(capsys):
    import importlib.metadata  # pylint: disable=import-outside-toplevel

    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    # galaxy.yml and pyproject.toml say 0.1.0; ansible-core is the one installed beside it
    assert lines[0] == "gpufleet 0.1.0"
    assert lines[1].startswith("collection gpufleet.acceptance 0.1.0 at ")
    assert lines[2] == "ansible-core %s" % importlib.metadata.version("ansible-core")


def test_an_accepted_node_judged_on_facts_alone_keeps_its_label_in_the_table():
    quick = {"coverage": {"label": "static checks only"}}
    assert common.verdict_cell("ACCEPT", quick) == "ACCEPT (static checks only)"
    assert common.verdict_cell("ACCEPT WITH WARNINGS", quick) == "ACCEPT WITH WARNINGS (static checks only)"
    assert common.verdict_cell("REJECT", quick) == "REJECT"  # a label qualifies an acceptance only
    assert common.verdict_cell("ACCEPT", {"coverage": {"label": None}}) == "ACCEPT"
    assert common.verdict_cell(None, None) == "NOT JUDGED"


def test_a_yaml_error_in_host_vars_is_named_by_file_and_line_before_anything_runs(tmp_path, capsys):
    # ansible-core 2.19 names no file for it, even at -vvv
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    n1:\n", encoding="utf-8")
    # Ansible's own tags and a vault file are no errors
    (tmp_path / "group_vars" / "all.yml").write_text("secret: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162\n"
                                                     "raw: !unsafe '{{ x }}'\n", encoding="utf-8")
    (tmp_path / "group_vars" / "vaulted.yml").write_text("$ANSIBLE_VAULT;1.1;AES256\n6162\n", encoding="utf-8")
    bad = tmp_path / "host_vars" / "n1.yml"
    bad.write_text("gpufleet_claim:\n  gpu_count: 8\n   gpu_model: H100\n", encoding="utf-8")
    code = cli.main(["validate", "-i", str(tmp_path / "hosts.yml"), "--out", str(tmp_path / "r")])
    assert code == 64
    assert capsys.readouterr().err == (
        "gpufleet validate: inventory variables %s, line 3 column 13: not valid YAML: mapping values are not allowed "
        "here; fix the file\n" % bad)
    assert not (tmp_path / "r").exists()
    bad.write_text("gpufleet_claim:\n  gpu_count: 8\n", encoding="utf-8")
    assert validate.vars_yaml_problem([str(tmp_path)]) is None  # fixed: nothing to say
