# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`--reference-job JSON`: one option, one parser (playbook_options.reference_job_option) for `gpufleet validate`,
`demo` and `report`. validate hands the job to the playbook as the extra var gpufleet_reference_job (recorded in
run.json settings.reference_job) and refuses a bad one before anything runs, with the words report uses.
Expected values written by hand; results directories hand-built (SYNTHETIC, cli_results.py)."""

from __future__ import annotations

import importlib.util
import os
import shlex

import pytest

from gpufleet.cli import main as cli
from gpufleet.cli import playbook_options, report, validate
from gpufleet.cli.playbook_options import OptionsError, PlaybookOptions

_SPEC = importlib.util.spec_from_file_location("cli_results", os.path.join(os.path.dirname(__file__), "cli_results.py"))
cli_results = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(cli_results)

UNKNOWN_KEY = ("--reference-job: reference job: unknown key(s) mfuu (known: models, tokens, precision, "
               "global_batch_tokens)")


def _validate_options(*argv):
    return PlaybookOptions.from_args(cli.build_parser().parse_args(["validate", "-i", "inv.yml", *argv]))


def test_validate_hands_the_job_to_the_playbook_as_an_extra_var(tmp_path):
    options = _validate_options("--reference-job", '{"precision": "fp8", "tokens": 2e12}', "--level", "quick")
    kwargs = validate.runner_kwargs(str(tmp_path), ["/inv/hosts.yml"], "/results/r1", options=options)
    assert kwargs["extravars"] == {"gpufleet_results_dir": "/results/r1", "gpufleet_level": "quick",
                                   "gpufleet_reference_job": {"precision": "fp8", "tokens": 2e12}}
    # not given: nothing added (the playbook records None, the report takes the defaults)
    plain = validate.runner_kwargs(str(tmp_path), ["/i"], "/r", options=_validate_options())
    assert "gpufleet_reference_job" not in plain["extravars"]


def test_the_resume_command_repeats_the_job(monkeypatch):
    monkeypatch.setattr(validate, "program", lambda: ["gpufleet"])
    options = _validate_options("--reference-job", '{"tokens": 2e12, "precision": "fp8"}')
    line = playbook_options.resume_command(validate.validate_command(["/inv/a.yml"], options=options), "/results/r1")
    assert shlex.split(line) == ["gpufleet", "validate", "-i", "/inv/a.yml", "--reference-job",
                                 '{"precision": "fp8", "tokens": 2000000000000.0}', "--out", "/results/r1"]


@pytest.mark.parametrize("text, message", [
    ('{"mfuu": 1}', UNKNOWN_KEY),
    ('{"tokens": -1}', "--reference-job: reference job tokens: -1 is outside (0, 1e+18]"),
    ('{"tokens": 1e12', "--reference-job: not JSON: Expecting ',' delimiter: line 1 column 16 (char 15)"),
    ('[1]', "--reference-job: reference job: a mapping of models, tokens, precision, global_batch_tokens expected, "
            "got list"),
])
def test_one_parser_refuses_what_the_cost_view_would(text, message):
    with pytest.raises(OptionsError) as raised:
        playbook_options.reference_job_option(text)
    assert str(raised.value) == message


def test_a_bad_job_stops_validate_before_anything_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(validate, "run_playbook", lambda *a, **k: pytest.fail("the playbook ran"))
    (tmp_path / "inv.yml").write_text("all: {}\n")
    code = cli.main(["validate", "-i", str(tmp_path / "inv.yml"), "--reference-job", '{"mfuu": 1}'])
    assert code == 1
    assert capsys.readouterr().err == "gpufleet validate: %s\n" % UNKNOWN_KEY


def test_report_refuses_the_same_job_in_the_same_words(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(report, "render_report", lambda *a, **k: pytest.fail("the report was rendered"))
    results = cli_results.write_run(tmp_path / "r1", [cli_results.host_record("node-a", "ACCEPT")])
    code = cli.main(["report", results, "--reference-job", '{"mfuu": 1}'])
    assert code == 1
    assert capsys.readouterr().err == "gpufleet report: %s\n" % UNKNOWN_KEY


def test_report_renders_with_the_job_given(tmp_path, monkeypatch):
    seen = {}

    def render(results_dir, out_dir, reference_job=None):
        seen["job"] = reference_job
        return None, "not rendered in this test"

    monkeypatch.setattr(report, "render_report", render)
    results = cli_results.write_run(tmp_path / "r1", [cli_results.host_record("node-a", "ACCEPT")])
    cli.main(["report", results, "--reference-job", '{"precision": "fp8"}'])
    assert seen["job"] == {"precision": "fp8"}


def test_one_spelling_in_every_command():
    parser = cli.build_parser()
    for argv in (["validate", "-i", "x"], ["demo"], ["report", "dir"]):
        assert parser.parse_args(argv + ["--reference-job", "{}"]).reference_job == "{}"
