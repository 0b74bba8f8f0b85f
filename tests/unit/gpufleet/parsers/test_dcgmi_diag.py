# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``dcgmi diag -j``: the parser, the burn-in load's verdict from it (a Skip is never ok) and the ``burn_in.load`` check.

Inputs are the recordings and the SYNTHETIC edited copies of tests/fixtures/dcgm/ (SOURCES.md says which is
which); expected values are read by hand from them.
"""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.acceptance.plugins.filter.dcgmi_diag_load import dcgmi_diag_load
from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.checks.burn_in_flags import check_load
from gpufleet.checks.model import ERROR, FAIL, PASS
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.dcgmi_diag import parse_dcgmi_diag
from gpufleet.results.burn_in import dcgmi_load

SKIP_FAIL = "dcgm/gb10-dcgm-4.5.2-diag-r2-j-memory-pcie-Skip-software-Fail-persistence.json"
PASS_FAIL = "dcgm/gb10-dcgm-4.5.2-diag-r2-j-memory-pcie-Pass-software-Fail-persistence.json"
ALL_SKIP = "dcgm/gb10-dcgm-4.5.2-diag-r2-j-every-test-Skip-synthetic-EDITED.json"
PARTIAL_SKIP = "dcgm/gb10-dcgm-4.5.2-diag-r2-j-software-Pass-memory-pcie-Skip-synthetic-EDITED.json"
ALL_PASS = "dcgm/gb10-dcgm-4.5.2-diag-r2-j-all-Pass-synthetic-EDITED.json"
PERSISTENCE = ('Persistence Mode: Persistence mode for GPU 0 is disabled. Enable persistence mode by running '
               '"nvidia-smi -i <gpuId> -pm 1 " as root.')


def test_parser_reads_the_dcgm_4_document(fixture_text):
    parsed = parse_dcgmi_diag(fixture_text(SKIP_FAIL))
    assert (parsed["version"], parsed["driver_version"], parsed["runtime_error"]) == ("4.5.2", "580.82.09", None)
    assert [(test["category"], test["name"], test["status"]) for test in parsed["tests"]] == [
        ("Deployment", "software", "fail"), ("Hardware", "memory", "skip"), ("Integration", "pcie", "skip")]
    assert parsed["tests"][0]["entities"] == [{"entity": 0, "status": "fail", "warnings": [PERSISTENCE]}]
    assert parsed["counts"] == {"fail": 1, "skip": 2}


def test_parser_reads_the_dcgm_3_words_and_skips_text_before_the_document():
    # SYNTHETIC: the DCGM 3.x shape its NvvsCommon.h documents (gpu_ids, PASS|FAIL|WARN|SKIPPED), no test_summary
    text = ('WARNING: a line dcgmi printed first\n{"DCGM GPU Diagnostic": {"version": "3.3.5", "test_categories": [\n'
            '{"category": "Hardware", "tests": [{"name": "GPU Memory", "results": [{"gpu_ids": "0", "status": "PASS"}, '
            '{"gpu_ids": "1", "status": "SKIPPED"}]}]}]}}\n')
    parsed = parse_dcgmi_diag(text)
    assert parsed["version"] == "3.3.5"
    assert parsed["tests"] == [{"category": "Hardware", "name": "GPU Memory", "status": "skip", "entities": [
        {"entity": "0", "status": "pass", "warnings": []}, {"entity": "1", "status": "skip", "warnings": []}]}]


@pytest.mark.parametrize("text, words", [
    ("", "empty input"),
    ("Error: unable to establish a connection to the host engine", "no JSON document"),
    ('{"DCGM Diagnostic": {"test_categories": [', "broken JSON"),
    ('{"something": {}}', "no 'DCGM Diagnostic' / 'DCGM GPU Diagnostic' key"),
])
def test_parser_refuses_what_is_not_the_document(text, words):
    with pytest.raises(ParseError, match=words):
        parse_dcgmi_diag(text)


def test_every_test_skipped_is_not_ok(fixture_text):
    # the defect: with only "Fail" counted, this run (exit 0) was "ok"
    load = dcgmi_load(fixture_text(ALL_SKIP), "ok", "")
    assert load == {"outcome": "not_verified",
                    "reason": "dcgmi diag: Skip in Deployment/software, Hardware/memory, Integration/pcie (0 of 3 test(s) passed): not verified"}
    item, = check_load(dict(load, tool="dcgmi"))
    assert item["status"] == ERROR
    assert item["message"].startswith("dcgmi diag did not verify the GPUs: dcgmi diag: Skip in Deployment/software")


def test_one_skipped_test_is_not_ok_either(fixture_text):
    load = dcgmi_load(fixture_text(PARTIAL_SKIP), "ok", "")
    assert load["outcome"] == "not_verified"
    assert load["reason"] == "dcgmi diag: Skip in Hardware/memory, Integration/pcie (1 of 3 test(s) passed): not verified"


def test_a_failed_test_fails_whatever_the_exit_status_and_names_the_skips_too(fixture_text):
    load = dcgmi_load(fixture_text(SKIP_FAIL), "crash", "exit status 226 (128 + signal 98)")
    assert load == {"outcome": "failed",
                    "reason": "dcgmi diag: Fail in Deployment/software: %s; Skip in Hardware/memory, Integration/pcie (0 of 3 test(s) passed)"
                              % PERSISTENCE}
    item, = check_load(dict(load, tool="dcgmi"))
    assert item["status"] == FAIL
    assert dcgmi_load(fixture_text(PASS_FAIL), "failed", "exit status 226")["reason"] == (
        "dcgmi diag: Fail in Deployment/software: %s (2 of 3 test(s) passed)" % PERSISTENCE)


def test_every_test_passed_is_ok(fixture_text):
    load = dcgmi_load(fixture_text(ALL_PASS), "ok", "")
    assert load == {"outcome": "ok", "reason": "3 of 3 test(s) passed"}
    item, = check_load(dict(load, tool="dcgmi"))
    assert item["status"] == PASS


def test_a_hang_stays_a_hang_and_text_output_is_not_verified():
    assert dcgmi_load("", "hang", "no exit within the 3600.0s timeout") == {"outcome": "hang", "reason": "no exit within the 3600.0s timeout"}
    load = dcgmi_load("Successfully ran diagnostic for group.\n| Deployment | Pass |\n", "ok", "")
    assert load["outcome"] == "not_verified" and load["reason"].startswith("dcgmi diag -j: no JSON document")


def test_the_role_filter_gives_the_same_verdict(fixture_text):
    assert dcgmi_diag_load(fixture_text(ALL_SKIP), "ok", "") == dcgmi_load(fixture_text(ALL_SKIP), "ok", "")


def test_foreign_lines_around_the_document_are_listed_and_change_no_value(fixture_text):
    # EDITED: the DGX Spark recording (129 lines) behind a prompt and a banner, with a rule and a prompt after it
    text = fixture_text(PASS_FAIL)
    edited = insert_lines(text, {
        1: "(venv) ubuntu@spark-01:~$ dcgmi diag -r 2 -j",
        2: "===== spark-01 : dcgmi diag -r 2 -j =====",
        132: "-----",
        133: "root@spark-01:~# echo $?",
    })
    parsed = parse_dcgmi_diag(edited)
    assert parsed.pop("ignored_lines") == [
        {"line": 1, "text": "(venv) ubuntu@spark-01:~$ dcgmi diag -r 2 -j", "why": "shell prompt"},
        {"line": 2, "text": "===== spark-01 : dcgmi diag -r 2 -j =====", "why": "banner"},
        {"line": 132, "text": "-----", "why": "separator"},
        {"line": 133, "text": "root@spark-01:~# echo $?", "why": "shell prompt"},
    ]
    assert parsed == parse_dcgmi_diag(text)
    assert parsed["counts"] == {"fail": 1, "pass": 2} and parsed["version"] == "4.5.2"


def test_a_foreign_line_inside_the_document_is_broken_json_at_its_line(fixture_text):
    # EDITED: a prompt first (the document then starts at line 2) and a note at line 6, inside the document
    edited = insert_lines(fixture_text(PASS_FAIL), {1: "$ dcgmi diag -r 2 -j", 6: "<-- the Deployment tests"})
    with pytest.raises(ParseError, match="broken JSON") as info:
        parse_dcgmi_diag(edited)
    assert info.value.line == 6
