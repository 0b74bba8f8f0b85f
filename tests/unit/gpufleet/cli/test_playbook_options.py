# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`gpufleet validate` and `demo` take what ansible-playbook takes (-e, --tags, --skip-tags, --check, --level,
--limit) and hand it on; an interrupted run forwards the signal, waits, and prints the command that resumes
it; a run interrupted after its verdict is reported as finished. Expected argument lists written by hand.
Results directories are hand-built (SYNTHETIC, cli_results.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import signal

import pytest

from gpufleet.cli import demo, validate
from gpufleet.cli import main as cli
from gpufleet.cli import playbook_options
from gpufleet.cli.common import JsonOutput
from gpufleet.cli.interrupt import Interruption
from gpufleet.cli.playbook_options import OptionsError, PlaybookOptions

_SPEC = importlib.util.spec_from_file_location("cli_results", os.path.join(os.path.dirname(__file__), "cli_results.py"))
cli_results = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(cli_results)
check, host_record, write_run = cli_results.check, cli_results.host_record, cli_results.write_run

PLAYBOOK = validate.playbook_path()


def _options(*argv):
    return PlaybookOptions.from_args(cli.build_parser().parse_args(["validate", "-i", "inv.yml", *argv]))


# -- the arguments handed to ansible-playbook ---------------------------------------------------------------

def test_runner_gets_extra_vars_tags_check_and_level(tmp_path):
    options = _options("-e", "a=1 b='x y'", "-e", '{"gpufleet_check_families": ["topology"]}', "--tags", "facts",
                       "--tags", "report", "--skip-tags", "burn_in", "--check", "--level", "quick")
    kwargs = validate.runner_kwargs(str(tmp_path), ["/inv/hosts.yml"], "/results/r1", limit="gpu-*",
                                    profile="hgx-h100-8", forks=4, options=options)
    # the string ansible-runner splits with shlex: a value with quotes and spaces stays one argument
    assert kwargs["cmdline"] == ("-e 'a=1 b='\"'\"'x y'\"'\"'' -e '{\"gpufleet_check_families\": [\"topology\"]}' "
                                 "--check")
    assert shlex.split(kwargs["cmdline"]) == ["-e", "a=1 b='x y'", "-e", '{"gpufleet_check_families": ["topology"]}',
                                              "--check"]
    assert kwargs["extravars"] == {"gpufleet_results_dir": "/results/r1", "gpufleet_profile": "hgx-h100-8",
                                   "gpufleet_level": "quick"}
    assert (kwargs["tags"], kwargs["skip_tags"], kwargs["limit"], kwargs["forks"]) == (
        "facts,report", "burn_in", "gpu-*", 4)
    assert (kwargs["playbook"], kwargs["inventory"]) == (PLAYBOOK, ["/inv/hosts.yml"])


def test_the_ansible_playbook_command_runner_builds(tmp_path):
    """ansible-runner's own command line: the user's -e first, the CLI's own -e last (read last by Ansible, it wins)."""
    ansible_runner = pytest.importorskip("ansible_runner")
    options = _options("-e", "gpufleet_level=full", "-e", "x=1", "--check", "--level", "quick",
                       "--tags", "facts,report")
    kwargs = validate.runner_kwargs(str(tmp_path), ["/inv/hosts.yml"], "/results/r1", limit="a,b", options=options)
    assert ansible_runner.interface.init_runner(**kwargs).config.command == [
        "ansible-playbook", "-e", "gpufleet_level=full", "-e", "x=1", "--check", "-i", "/inv/hosts.yml",
        "--limit", "a,b",
        "-e", '{"gpufleet_results_dir":"/results/r1","gpufleet_level":"quick"}', "--tags", "facts,report", PLAYBOOK]


def test_slurm_drain_is_the_playbooks_switch_and_kept_by_the_resume(tmp_path):
    options = _options("--slurm-drain", "--level", "quick")
    kwargs = validate.runner_kwargs(str(tmp_path), ["/inv"], "/results/r1", options=options)
    assert kwargs["extravars"] == {"gpufleet_results_dir": "/results/r1", "gpufleet_level": "quick",
                                   "gpufleet_slurm_drain": True}
    assert options.arguments() == ["--level", "quick", "--slurm-drain"]


def test_no_options_add_nothing(tmp_path):
    kwargs = validate.runner_kwargs(str(tmp_path), ["/inv"], "/results/r1")
    assert kwargs["extravars"] == {"gpufleet_results_dir": "/results/r1"}
    assert not {"cmdline", "tags", "skip_tags", "limit", "forks"} & set(kwargs)
    assert PlaybookOptions().arguments() == []


def test_extra_vars_are_read_with_ansibles_rules(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "vars.yml").write_text("gpufleet_check_families: [topology]\n")
    assert playbook_options.extra_vars_arguments(["a=1", "{b: 2}", '{"c": [3]}', "@vars.yml", ""]) == [
        "a=1", "{b: 2}", '{"c": [3]}', "@%s" % (tmp_path / "vars.yml")]


@pytest.mark.parametrize("value, message", [
    ("./vars.yml", "-e ./vars.yml: a file of extra vars is written @./vars.yml, as ansible-playbook takes it"),
    ("[1, 2]", "-e [1, 2]: not a set of variables (a mapping of names to values)"),
    ("{a: ", None),
    ("@nope.yml", None),
    ("gpufleet_results_dir=/elsewhere",
     "-e gpufleet_results_dir=/elsewhere: the results directory is given with --out DIR "
     "(the CLI reads the results from it)"),
])
def test_extra_vars_ansible_playbook_would_refuse_are_refused(tmp_path, monkeypatch, value, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OptionsError) as raised:
        playbook_options.extra_vars_arguments([value])
    if message:
        assert str(raised.value) == message
    else:
        shown = "@" + str(tmp_path / value[1:]) if value.startswith("@") else value  # a @file by its absolute path
        assert str(raised.value).startswith("-e %s: " % shown)


def test_a_vault_encrypted_file_is_passed_on_unread(tmp_path):
    secret = tmp_path / "secret.yml"
    secret.write_text("$ANSIBLE_VAULT;1.1;AES256\n6162636465\n")
    assert playbook_options.extra_vars_arguments(["@" + str(secret)]) == ["@" + str(secret)]


def test_a_bad_extra_var_stops_validate_before_anything_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(validate, "run_playbook", lambda *a, **k: pytest.fail("the playbook ran"))
    (tmp_path / "inv.yml").write_text("all: {}\n")
    code = cli.main(["validate", "-i", str(tmp_path / "inv.yml"), "-e", "[1]"])
    assert code == 1
    assert capsys.readouterr().err == ("gpufleet validate: -e [1]: not a set of variables "
                                       "(a mapping of names to values)\n")


def test_level_is_one_of_three(capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["validate", "-i", "x", "--level", "thorough"])
    assert "invalid choice: 'thorough' (choose from 'quick', 'standard', 'full')" in capsys.readouterr().err


def test_the_resume_command_repeats_the_run_with_its_results_directory(monkeypatch):
    monkeypatch.setattr(validate, "program", lambda: ["gpufleet"])
    options = _options("--level", "full", "-e", "a=1 b=2", "--tags", "facts", "--skip-tags", "burn_in", "--check")
    output = JsonOutput(query="values(hosts)[].verdict")
    command = validate.validate_command(["/inv/a.yml", "h1,h2,"], limit="gpu-*", profile="hgx-h100-8", forks=8,
                                        retest_failed="/results/r0", options=options, output=output)
    line = playbook_options.resume_command(command, "/results/r 1")
    assert shlex.split(line) == [
        "gpufleet", "validate", "-i", "/inv/a.yml", "-i", "h1,h2,", "--limit", "gpu-*", "--profile", "hgx-h100-8",
        "--forks", "8", "--retest-failed", "/results/r0", "--level", "full", "-e", "a=1 b=2", "--tags", "facts",
        "--skip-tags", "burn_in", "--check", "--query", "values(hosts)[].verdict", "--out", "/results/r 1"]


def test_demo_passes_the_options_on_and_resumes_as_demo(monkeypatch, tmp_path):
    monkeypatch.setattr(demo, "program", lambda: ["gpufleet"])
    args = cli.build_parser().parse_args(["demo", "--limit", "hgx-h100-nv18", "--workdir", str(tmp_path / "w"),
                                          "--level", "quick", "-e", "x=1"])
    options = PlaybookOptions.from_args(args)
    assert demo.demo_command(args, options, None) == [
        "gpufleet", "demo", "--limit", "hgx-h100-nv18", "--workdir", str(tmp_path / "w"), "--level", "quick",
        "-e", "x=1"]


def test_program_is_gpufleet_when_that_is_the_script_on_path(monkeypatch, tmp_path):
    script = tmp_path / "bin" / "gpufleet"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr("sys.argv", [str(script), "validate"])
    monkeypatch.setenv("PATH", str(script.parent))
    assert playbook_options.program() == ["gpufleet"]
    monkeypatch.setenv("PATH", str(tmp_path))
    assert playbook_options.program() == [str(script)]
    monkeypatch.setattr("sys.argv", ["/src/gpufleet/cli/main.py"])
    assert playbook_options.program()[1:] == ["-m", "gpufleet.cli.main"]


# -- the signal: forwarded, waited for, then killed -----------------------------------------------------------

class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _interruption(clock, sent, group_of=None):
    return Interruption(grace_s=30, clock=clock, kill=lambda pid, sig: sent.append(("kill", pid, sig)),
                        killpg=lambda pgid, sig: sent.append(("killpg", pgid, sig)),
                        getpgid=lambda pid: (group_of or {}).get(pid, pid), say=lambda line: sent.append(("say", line)),
                        label="gpufleet validate")


def test_a_signal_is_forwarded_to_ansible_playbooks_group_then_waited_for_then_killed():
    clock, sent = _Clock(), []
    interruption = _interruption(clock, sent)
    assert interruption.cancel() is False  # nothing happened: runner goes on
    interruption.watch({"event": "playbook_on_start", "pid": 4242})
    interruption.handle(signal.SIGINT)
    assert sent == [("say", "gpufleet validate: SIGINT: stopping ansible-playbook (waiting up to 30s for it to end)"),
                    ("killpg", 4242, signal.SIGINT)]
    clock.now += 30
    assert interruption.cancel() is False  # within the grace time: ansible-playbook is waited for
    interruption.handle(signal.SIGINT)  # a second Ctrl-C goes on too, without a second message
    assert sent[-1] == ("killpg", 4242, signal.SIGINT) and len(sent) == 3
    clock.now += 0.5
    assert interruption.cancel() is True and interruption.killed  # runner kills it now
    assert interruption.exit_code == 99  # ansible-playbook's own code after Ctrl-C: one table for both entry points


def test_sigterm_goes_to_the_process_alone_when_it_leads_no_group_of_its_own():
    clock, sent = _Clock(), []
    interruption = _interruption(clock, sent, group_of={4242: os.getpgrp()})
    interruption.watch({"pid": 4242})
    interruption.handle(signal.SIGTERM)
    assert sent[1:] == [("kill", 4242, signal.SIGTERM)]  # never the CLI's own process group
    assert interruption.exit_code == 143


def test_a_signal_before_ansible_playbook_is_known_cancels_at_once():
    clock, sent = _Clock(), []
    interruption = _interruption(clock, sent)
    interruption.handle(signal.SIGINT)
    assert [item[0] for item in sent] == ["say"]
    assert interruption.cancel() is True


def test_the_handlers_are_installed_for_the_run_only():
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    interruption = Interruption()
    with interruption.installed():
        assert signal.getsignal(signal.SIGINT) == interruption.handle
        assert signal.getsignal(signal.SIGTERM) == interruption.handle
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


# -- what validate says after an interrupted run ----------------------------------------------------------------

def _fake_playbook(results_dir_writer, signum=signal.SIGINT, phase="Facts"):
    """A run_playbook that writes what ansible-playbook had written when the signal came, then is interrupted."""
    def run_playbook(inventories, results_dir, progress=None, interruption=None, **_kwargs):
        results_dir_writer(results_dir)
        progress.phase = phase
        interruption.say = lambda line: None
        interruption.handle(signum)
        return 99, "failed", [], results_dir + ".runner"
    return run_playbook


def _inventory(tmp_path):
    path = tmp_path / "inv.yml"
    path.write_text("all: {}\n")
    return str(path)


def test_interrupted_before_the_verdict_prints_the_resume_command(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(validate, "program", lambda: ["gpufleet"])
    records = [host_record("node-a", None, [check("gpu.count", "pass")]), host_record("node-b", None)]
    monkeypatch.setattr(validate, "run_playbook", _fake_playbook(lambda d: write_run(d, records, finished=False)))
    inventory = _inventory(tmp_path)
    code = cli.main(["validate", "-i", inventory, "--limit", "node-*", "--level", "quick", "-e", "a=1",
                     "--out", str(tmp_path / "r1")])
    assert code == 99
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[:2] == [
        "gpufleet validate: interrupted (SIGINT) in the Facts phase, before the verdict: nothing was judged; "
        "what was gathered is kept in %s" % (tmp_path / "r1"),
        "gpufleet validate: resume with: gpufleet validate -i %s --limit 'node-*' --level quick -e a=1 --out %s"
        % (inventory, tmp_path / "r1")]


def test_a_finished_fleet_json_of_an_earlier_run_is_not_this_runs_verdict(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(validate, "program", lambda: ["gpufleet"])

    def resumed_after_finishing(directory):
        write_run(directory, [host_record("node-a", "ACCEPT")], finished=True)
        with open(os.path.join(directory, "run.json"), encoding="utf-8") as handle:
            run = json.load(handle)
        # the directory is run again (the preflight of another ansible-playbook run marks it running, resumed at
        # 12:05, and names its invocation): its fleet.json is from 12:00:09, written by the earlier invocation
        run.update(status="running", finished=None, resumed=["2026-01-31T12:05:00Z"], invocation="5151:2002")
        with open(os.path.join(directory, "run.json"), "w", encoding="utf-8") as handle:
            json.dump(run, handle)

    monkeypatch.setattr(validate, "run_playbook", _fake_playbook(resumed_after_finishing, signum=signal.SIGTERM))
    code = cli.main(["validate", "-i", _inventory(tmp_path), "--out", str(tmp_path / "r1")])
    assert code == 143
    assert "interrupted (SIGTERM) in the Facts phase, before the verdict" in capsys.readouterr().err


def test_interrupted_after_the_verdict_is_reported_as_the_finished_run(tmp_path, capsys, monkeypatch):
    records = [host_record("node-a", "ACCEPT", [check("gpu.count", "pass")]),
               host_record("node-b", "REJECT", [check("gpu.count", "fail", message="7 GPUs, expected 8")])]
    rendered = []
    monkeypatch.setattr(validate, "run_playbook", _fake_playbook(lambda d: write_run(d, records), phase="Verdict"))
    monkeypatch.setattr(validate, "render_report",
                        lambda d: rendered.append(d) or (os.path.join(d, "report.html"), None))
    code = cli.main(["validate", "-i", _inventory(tmp_path), "--out", str(tmp_path / "r1")])
    captured = capsys.readouterr()
    assert code == 3  # node-b REJECT
    assert captured.err == ("gpufleet validate: interrupted (SIGINT) after the verdict was written: "
                            "the run is complete\n")
    assert captured.out.splitlines()[:3] == ["NODE    VERDICT  FIRST REASONS", "node-b  REJECT   7 GPUs, expected 8",
                                             "node-a  ACCEPT"]
    assert "report: %s\n" % (tmp_path / "r1" / "report.html") in captured.out
    assert rendered == [str(tmp_path / "r1")]  # the playbook's report never came: rendered by the CLI
