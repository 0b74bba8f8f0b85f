# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests that can fail: the exit code of both entry points for each mix of verdicts, and of the validation playbook's
callback for each code a run records (gpufleet/results/exit_codes.py, docs/cli.md "Exit codes")."""

from __future__ import annotations

import pytest

from gpufleet.cli.common import fleet_line, reasons, sort_nodes
from gpufleet.results.exit_codes import verdict_exit_code
from gpufleet.results.exit_codes import recorded_exit_code, table_text


@pytest.mark.parametrize(
    "verdicts, code",
    [
        ({"a": "ACCEPT", "b": "ACCEPT WITH WARNINGS"}, 0),
        ({"a": "ACCEPT", "b": "REJECT"}, 3),
        ({"a": "UNREACHABLE", "b": "REJECT"}, 3),  # a measured fault first
        ({"a": "ACCEPT", "b": "UNREACHABLE"}, 4),
        ({"a": "INCOMPLETE", "b": "UNREACHABLE"}, 4),
        ({"a": "ACCEPT", "b": None}, 6),  # never judged: evidence missing
        ({"a": "ACCEPT", "b": "INCOMPLETE"}, 6),
        ({"a": "INCOMPLETE", "b": "ACCEPT WITH WARNINGS"}, 6),
        ({"a": "INCOMPLETE", "b": "REJECT"}, 3),
        ({}, 64),  # no node: nothing to judge
    ],
)
def test_exit_code_per_verdict_mix(verdicts, code):
    assert verdict_exit_code(verdicts) == code


@pytest.mark.parametrize(
    "recorded, code",
    [
        (3, 3),
        ("4", 4),  # set_stats keeps what the template made of it: a string
        (0, 0),  # a report-only run (gpufleet_fail_on_verdict false)
        (64, 64),  # the preflight refused an input
        (1, 1),  # recorded at the start: the run ended before its verdict
        ("three", 1),
        (8, 1),  # no code of the table
    ],
)
def test_the_playbook_exits_with_the_recorded_code(recorded, code):
    assert recorded_exit_code(recorded) == code


def test_the_table_in_help_lists_every_code_once():
    lines = [line for line in table_text().splitlines() if line[:5].strip()]
    assert [int(line.split()[0]) for line in lines] == [0, 1, 2, 3, 4, 6, 64, 99, 143]


def test_incomplete_in_the_summary():
    verdicts = {"a": "ACCEPT", "b": "INCOMPLETE", "c": "REJECT"}
    assert sort_nodes(verdicts) == ["c", "b", "a"]
    assert fleet_line(verdicts) == "fleet REJECT: 1 of 3 nodes acceptable; 1 ACCEPT, 1 INCOMPLETE, 1 REJECT"
    assert fleet_line({"a": "ACCEPT", "b": "INCOMPLETE"}) == "fleet INCOMPLETE: 1 of 2 nodes acceptable; 1 ACCEPT, 1 INCOMPLETE"
    # fleet.json's label (level quick, nothing measured required) is said as the playbook's fleet line says it
    static = {"verdict": "ACCEPT", "level": "quick", "label": "static checks only"}
    assert fleet_line({"a": "ACCEPT", "b": "ACCEPT"}, static) == "fleet ACCEPT (static checks only): 2 of 2 nodes acceptable; 2 ACCEPT"
    assert fleet_line({"a": "ACCEPT", "b": "ACCEPT WITH WARNINGS"}, static) == (
        "fleet ACCEPT WITH WARNINGS (static checks only): 2 of 2 nodes acceptable; 1 ACCEPT, 1 ACCEPT WITH WARNINGS")
    # a fleet not accepted (its nodes judged again since) is no static ACCEPT
    assert fleet_line({"a": "ACCEPT", "b": "REJECT"}, static) == "fleet REJECT: 1 of 2 nodes acceptable; 1 ACCEPT, 1 REJECT"
    standard = {"verdict": "ACCEPT", "level": "standard", "label": None}
    assert fleet_line({"a": "ACCEPT"}, standard) == "fleet ACCEPT: 1 of 1 node acceptable; 1 ACCEPT"
    record = {
        "coverage": {
            "incomplete": [
                "NVLink GPU0: nvlink status was not collected",
                "GPU model: gpu facts not gathered",
                "GPU count: gpu facts not gathered",
            ]
        }
    }
    assert reasons(record, "INCOMPLETE") == [
        "not verified: NVLink GPU0: nvlink status was not collected",
        "not verified: GPU model: gpu facts not gathered",
        "and 1 more",
    ]
