# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`gpufleet validate` writes one run per results directory: a second run on the same --out is refused while the
first runs (and a resume while the ansible-playbook of the old run, or any process it started, still writes), --out
never adopts a directory that is not a gpufleet results directory, or a symbolic link, without --force; a resume
tells its own verdicts from an earlier run's by the run's invocation, not by the clock; --forks and --tags are
checked before anything runs.
In this process, with run_playbook replaced: results directories are hand-built (SYNTHETIC, cli_results.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import time

import pytest

from gpufleet.cli import main as cli
from gpufleet.cli import common, demo, playbook_options, validate
from gpufleet.results import store

_SPEC = importlib.util.spec_from_file_location("cli_results", os.path.join(os.path.dirname(__file__), "cli_results.py"))
cli_results = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(cli_results)
check, host_record, write_run = cli_results.check, cli_results.host_record, cli_results.write_run

RECORDS = [host_record("node-a", "ACCEPT", [check("gpu.count", "pass")])]
ISO_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


@pytest.fixture(name="inventory")
def inventory_fixture(tmp_path):
    path = tmp_path / "inv.yml"
    path.write_text("all: {}\n")
    return str(path)


@pytest.fixture(name="ran")
def ran_fixture(monkeypatch):
    """The results directories run_playbook was called with; each call writes a finished run of RECORDS there, opened
    by an ansible-playbook run of its own (an invocation no earlier run.json names)."""
    calls = []

    def run_playbook(inventories, results_dir, **_kwargs):
        calls.append(results_dir)
        write_run(results_dir, RECORDS, invocation="5151:%d" % len(calls))
        return 0, "successful", [], results_dir + ".runner"

    monkeypatch.setattr(validate, "run_playbook", run_playbook)
    monkeypatch.setattr(validate, "render_report", lambda d: (os.path.join(d, "report.html"), None))
    return calls


def _start_ticks(pid):
    """/proc/<pid>/stat field 22 (proc(5)): the process's start in clock ticks after boot."""
    with open("/proc/%d/stat" % pid, encoding="ascii") as handle:
        return handle.read().rsplit(")", 1)[1].split()[19]


def _dead_pid():
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


# -- one run at a time ---------------------------------------------------------------------------------------------

def test_a_second_run_on_the_same_out_is_refused_naming_the_first(tmp_path, inventory, capsys, monkeypatch):
    out = str(tmp_path / "run")
    second = {}

    def first_run(inventories, results_dir, **_kwargs):
        if second:
            pytest.fail("the second run ran its playbook on the first one's directory")
        second["code"] = None
        # while the first run's playbook runs, the same command again
        second["code"] = cli.main(["validate", "-i", inventory, "--out", out])
        second["err"] = capsys.readouterr().err
        write_run(results_dir, RECORDS)
        return 0, "successful", [], results_dir + ".runner"

    monkeypatch.setattr(validate, "run_playbook", first_run)
    monkeypatch.setattr(validate, "render_report", lambda d: (os.path.join(d, "report.html"), None))
    assert cli.main(["validate", "-i", inventory, "--out", out]) == 0
    assert second["code"] == 64
    lock = os.path.join(out, "run.lock")
    assert re.fullmatch(r"gpufleet validate: %s is in use by another run: process %d \(gpufleet validate, started %s\) "
                        r"holds %s; wait for it to end, or choose another results directory\n"
                        % (re.escape(out), os.getpid(), ISO_TIME, re.escape(lock)), second["err"]), second["err"]
    # the first run gave the lock back: nothing of it is left
    assert not os.path.exists(lock)


def test_a_stale_lock_of_a_dead_process_is_taken_over_and_said(tmp_path, inventory, capsys, ran):
    out = tmp_path / "run"
    out.mkdir()
    dead = _dead_pid()
    (out / "run.lock").write_text(json.dumps({"pid": dead, "started": "2026-01-31T12:00:00Z",
                                              "token": "%d:1234" % dead, "command": "gpufleet validate"}))
    assert cli.main(["validate", "-i", inventory, "--out", str(out)]) == 0
    assert ran == [str(out)]
    assert ("gpufleet validate: took over %s from process %d (gpufleet validate, started 2026-01-31T12:00:00Z), "
            "which no longer runs\n" % (out / "run.lock", dead)) in capsys.readouterr().err
    assert not (out / "run.lock").exists()


def test_a_resume_is_refused_while_the_old_runs_ansible_playbook_still_writes(tmp_path, inventory, capsys, ran):
    # run.json names the ansible-playbook run that opened it last: here a process that still runs
    writer = subprocess.Popen(["sleep", "60"])
    try:
        token = "%d:%s" % (writer.pid, _start_ticks(writer.pid))
        out = write_run(tmp_path / "run", RECORDS[:0], finished=False, invocation=token)
        assert cli.main(["validate", "-i", inventory, "--out", out]) == 1
        err = capsys.readouterr().err
        assert ran == []
        assert re.fullmatch(r"gpufleet validate: %s is still being written by the ansible-playbook run that opened it "
                            r"last: process %d \(started %s\) runs; wait for it to end, or stop it, before resuming\n"
                            % (re.escape(out), writer.pid, ISO_TIME), err), err
        # the same pid with another start is another process (the pid was given again): the old run is over
        write_run(out, RECORDS[:0], finished=False, invocation="%d:1" % writer.pid)
        assert cli.main(["validate", "-i", inventory, "--out", out]) == 0
        assert ran == [out]
    finally:
        writer.kill()
        writer.wait()


def test_a_resume_is_refused_while_a_worker_of_the_old_run_still_runs_naming_it(tmp_path, inventory, capsys, ran):
    # the old run's ansible-playbook is gone (run.json names a dead pid), a worker it forked is not: a `sleep` with the
    # environment the CLI starts ansible-playbook with (gpufleet/cli/run_processes.py), inherited by what it starts
    out = write_run(tmp_path / "run", RECORDS[:0], finished=False, invocation="%d:1234" % _dead_pid())
    worker = subprocess.Popen(["sleep", "60"], env=dict(os.environ, GPUFLEET_RESULTS_DIR=os.path.realpath(out),
                                                        GPUFLEET_LAUNCH="0123abcd"))
    try:
        deadline = time.monotonic() + 20
        while worker.pid not in store.launch_processes(out):  # until it has exec'd sleep
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert cli.main(["validate", "-i", inventory, "--out", out]) == 1
        assert ran == []
        assert capsys.readouterr().err == (
            "gpufleet validate: %s is still being written by an earlier run: 1 process of it still runs: %d (sleep); "
            "wait for it to end, or stop it, before resuming\n" % (out, worker.pid))
    finally:
        worker.kill()
        worker.wait()
    assert cli.main(["validate", "-i", inventory, "--out", out]) == 0
    assert ran == [out]


# -- --out never adopts a directory that is not a run's ---------------------------------------------------------

def test_out_refuses_a_symbolic_link_without_force(tmp_path, inventory, capsys, ran):
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "latest"
    link.symlink_to(target)
    assert cli.main(["validate", "-i", inventory, "--out", str(link)]) == 64
    assert capsys.readouterr().err == (
        "gpufleet validate: --out %s is a symbolic link (to %s); choose an empty or new directory, or --force to "
        "write into it anyway\n" % (link, target))
    assert ran == [] and os.listdir(target) == []
    assert cli.main(["validate", "-i", inventory, "--out", str(link), "--force"]) == 0
    assert ran == [str(link)]


def test_out_refuses_a_directory_that_is_not_a_results_directory(tmp_path, inventory, capsys, ran):
    unrelated = tmp_path / "site"
    unrelated.mkdir()
    (unrelated / "report.html").write_text("<p>the team's own page</p>")
    (unrelated / "results.json").write_text("[1, 2, 3]")
    assert cli.main(["validate", "-i", inventory, "--out", str(unrelated)]) == 64
    assert capsys.readouterr().err == (
        "gpufleet validate: --out %s is not a gpufleet results directory: it is a directory of 2 entries and no "
        "run.json (report.html, results.json); choose an empty or new directory, or --force to write into it anyway\n"
        % unrelated)
    assert ran == []
    assert (unrelated / "report.html").read_text() == "<p>the team's own page</p>"
    assert sorted(os.listdir(unrelated)) == ["report.html", "results.json"]  # no lock, no hosts/ left there


@pytest.mark.parametrize("layout", ["new", "empty", "before-run-json", "results-directory"])
def test_out_takes_a_new_empty_or_gpufleet_results_directory(tmp_path, inventory, ran, layout):
    out = tmp_path / "run"
    if layout != "new":
        out.mkdir()
    if layout == "before-run-json":  # what a run that stopped in its preflight leaves
        (out / "hosts").mkdir()
        (out / "raw").mkdir()
    if layout == "results-directory":
        write_run(out, RECORDS, finished=False)
    assert cli.main(["validate", "-i", inventory, "--out", str(out)]) == 0
    assert ran == [str(out)]


# -- whose verdicts fleet.json holds ------------------------------------------------------------------------------

def test_a_resume_after_the_clock_stepped_back_is_not_judged_by_the_old_verdicts(
        tmp_path, inventory, capsys, monkeypatch):
    # the first run finished at 12:00:09 (its opening 4242:1000 wrote fleet.json); the clock then stepped back an hour
    out = write_run(tmp_path / "run", [host_record("node-a", "ACCEPT"), host_record("node-b", "ACCEPT")])

    def resumed_then_interrupted(inventories, results_dir, progress=None, interruption=None, **_kwargs):
        # the resume's preflight reopened it at 11:00:00 by the stepped clock; node-b's record was set aside (damaged)
        with open(os.path.join(results_dir, "run.json"), encoding="utf-8") as handle:
            run = json.load(handle)
        run.update(status="running", finished=None, resumed=["2026-01-31T11:00:00Z"], invocation="5151:2002")
        with open(os.path.join(results_dir, "run.json"), "w", encoding="utf-8") as handle:
            json.dump(run, handle)
        os.unlink(os.path.join(results_dir, "hosts", "node-b.json"))
        progress.phase = "Facts"
        interruption.say = lambda line: None
        interruption.handle(signal.SIGINT)
        return None, "canceled", [], results_dir + ".runner"

    monkeypatch.setattr(validate, "run_playbook", resumed_then_interrupted)
    monkeypatch.setattr(validate, "program", lambda: ["gpufleet"])
    assert cli.main(["validate", "-i", inventory, "--out", out]) == 99
    captured = capsys.readouterr()
    assert captured.out == ""
    assert ("gpufleet validate: interrupted (SIGINT) in the Facts phase, before the verdict: nothing was judged; "
            "what was gathered is kept in %s\n" % out) in captured.err


def test_a_resume_that_never_reopened_the_directory_is_not_judged_by_its_old_verdicts(
        tmp_path, inventory, capsys, monkeypatch):
    # a finished run resumed with a --limit no host matches: the playbook ends at once, exit 0, run.json untouched
    out = write_run(tmp_path / "run", [host_record("node-a", "ACCEPT")])
    monkeypatch.setattr(validate, "run_playbook", lambda inventories, results_dir, **_kw: (0, "successful", [], "/x"))
    assert cli.main(["validate", "-i", inventory, "--limit", "nomatch", "--out", out]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "  no results were written: no host of the inventory matched --limit nomatch\n" in captured.err


# -- --forks and --tags --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("forks", ["-5", "0"])
def test_forks_must_be_a_positive_integer(tmp_path, inventory, capsys, ran, forks):
    assert cli.main(["validate", "-i", inventory, "--forks", forks, "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == ("gpufleet validate: --forks %s: the number of hosts Ansible works on at once "
                                       "must be a positive integer\n" % forks)
    assert ran == [] and not (tmp_path / "run").exists()


KNOWN_TAGS = ("benchmarks, burn_in, facts, health_after_benchmarks, health_after_burn_in, report "
              "(and Ansible's all, always, never, tagged, untagged)")


@pytest.mark.parametrize("option", ["--tags", "--skip-tags"])
def test_an_unknown_tag_is_refused_naming_the_known_ones(tmp_path, inventory, capsys, ran, option):
    assert cli.main(["validate", "-i", inventory, option, "facts,nosuchtag", "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == (
        "gpufleet validate: %s nosuchtag: validate_cluster.yml has no such tag; its tags: %s\n" % (option, KNOWN_TAGS))
    assert ran == []


def test_known_tags_are_passed_on(tmp_path, inventory, ran):
    assert cli.main(["validate", "-i", inventory, "--tags", "facts,report", "--tags", "always", "--skip-tags",
                     "burn_in", "--out", str(tmp_path / "run")]) == 0
    assert ran == [str(tmp_path / "run")]


def test_the_tags_of_the_shipped_playbook(tmp_path):
    # read by hand from playbooks/validate_cluster.yml and what it imports statically (benchmark.yml, burn_in.yml,
    # roles facts and report): the set `ansible-playbook --list-tags playbooks/validate_cluster.yml` prints
    assert playbook_options.playbook_tags(validate.playbook_path()) == {
        "facts", "benchmarks", "health_after_benchmarks", "burn_in", "health_after_burn_in", "report"}
    playbook = tmp_path / "play.yml"
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "more.yml").write_text("- name: t\n  debug: {}\n  tags: [imported]\n"
                                                 "- include_tasks: dynamic.yml\n  tags: include_itself\n")
    (tmp_path / "tasks" / "dynamic.yml").write_text("- name: d\n  debug: {}\n  tags: [dynamic_only]\n")
    playbook.write_text("- hosts: all\n  tags: play_tag\n  tasks:\n    - block:\n        - debug: {}\n"
                        "          tags: 'in_block, second'\n"
                        "    - ansible.builtin.import_tasks: tasks/more.yml\n")
    # a dynamic include's own tags count, the tasks it includes are not listed (as --list-tags has it)
    assert playbook_options.playbook_tags(str(playbook)) == {"play_tag", "in_block", "second", "imported",
                                                             "include_itself"}


# -- gpufleet report --out, alike --------------------------------------------------------------------------------

def test_report_out_refuses_a_foreign_directory_and_takes_an_earlier_reports(tmp_path, capsys, monkeypatch):
    results = write_run(tmp_path / "run", RECORDS)
    rendered = []
    monkeypatch.setattr(common, "renderer", lambda: (lambda results_dir, out_dir: rendered.append(out_dir) or {},
                                                     ValueError, None))
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<p>the team's own page</p>")
    assert cli.main(["report", results, "--out", str(site)]) == 1
    assert capsys.readouterr().err == (
        "gpufleet report: --out %s holds neither a gpufleet run nor an earlier report: it is a directory of 1 entry "
        "and no run.json (index.html); choose an empty or new directory, or --force to write into it anyway\n" % site)
    assert rendered == []
    assert cli.main(["report", results, "--out", str(site), "--force"]) == 0
    earlier = tmp_path / "earlier"  # what an earlier `gpufleet report --out` left: its results.json says so
    earlier.mkdir()
    (earlier / "results.json").write_text(json.dumps({"schema": "gpufleet.results/v1", "hosts": {}}))
    (earlier / "report.html").write_text("<p>the earlier report</p>")
    assert cli.main(["report", results, "--out", str(earlier)]) == 0
    assert rendered == [str(site), str(earlier)]


def test_demo_passes_force_on_to_the_run(tmp_path, monkeypatch):
    # the fleet build is the demo's own step (a subprocess); what matters here is --force reaching validate()
    seen = []
    monkeypatch.setattr(demo.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, "", ""))
    monkeypatch.setattr(validate, "validate", lambda *a, **k: seen.append(k["force"]) or 0)
    out = str(tmp_path / "site")
    assert cli.main(["demo", "--out", out]) == 0
    assert cli.main(["demo", "--out", out, "--force"]) == 0
    assert seen == [False, True]


def test_a_run_that_failed_after_its_verdicts_shows_them_and_never_says_nothing_was_judged(
        tmp_path, inventory, capsys, monkeypatch):
    # the playbook wrote fleet.json, then a later step (the report) failed: exit 2 from ansible-playbook
    def run_playbook(inventories, results_dir, **_kwargs):
        write_run(results_dir, RECORDS, invocation="5151:9")
        return 2, "failed", ["report: render failed: OverflowError"], results_dir + ".runner"

    monkeypatch.setattr(validate, "run_playbook", run_playbook)
    monkeypatch.setattr(validate, "render_report", lambda d: (os.path.join(d, "report.html"), None))
    out = str(tmp_path / "run")
    assert cli.main(["validate", "-i", inventory, "--out", out]) == 1
    captured = capsys.readouterr()
    assert "nothing was judged" not in captured.err
    assert "the run failed (" in captured.err and "after the verdicts were written to %s/fleet.json" % out in captured.err
    # every host's verdict is in the summary table
    for record in RECORDS:
        assert record["host"] in captured.out + captured.err
