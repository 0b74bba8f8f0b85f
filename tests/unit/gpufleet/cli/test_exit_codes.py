# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests that can fail: `gpufleet validate`'s exit code for each mix of verdicts (docs/cli.md "Exit codes")."""

from __future__ import annotations

import pytest

from gpufleet.cli.common import exit_code_for, fleet_line, reasons, sort_nodes


@pytest.mark.parametrize(
    "verdicts, code",
    [
        ({"a": "ACCEPT", "b": "ACCEPT WITH WARNINGS"}, 0),
        ({"a": "ACCEPT", "b": "REJECT"}, 2),
        ({"a": "ACCEPT", "b": "UNREACHABLE"}, 2),
        ({"a": "ACCEPT", "b": None}, 2),  # not judged: the run did not finish
        ({}, 2),
        ({"a": "ACCEPT", "b": "INCOMPLETE"}, 3),
        ({"a": "INCOMPLETE", "b": "ACCEPT WITH WARNINGS"}, 3),
        ({"a": "INCOMPLETE", "b": "REJECT"}, 2),
        ({"a": "INCOMPLETE", "b": "UNREACHABLE"}, 2),
    ],
)
def test_exit_code_per_verdict_mix(verdicts, code):
    assert exit_code_for(verdicts) == code


def test_incomplete_in_the_summary():
    verdicts = {"a": "ACCEPT", "b": "INCOMPLETE", "c": "REJECT"}
    assert sort_nodes(verdicts) == ["c", "b", "a"]
    assert fleet_line(verdicts) == "fleet REJECT: 1 ACCEPT, 1 INCOMPLETE, 1 REJECT"
    assert fleet_line({"a": "ACCEPT", "b": "INCOMPLETE"}) == "fleet INCOMPLETE: 1 ACCEPT, 1 INCOMPLETE"
    # fleet.json's label (level quick, nothing measured required) is said as the playbook's fleet line says it
    static = {"verdict": "ACCEPT", "level": "quick", "label": "static checks only"}
    assert fleet_line({"a": "ACCEPT", "b": "ACCEPT"}, static) == "fleet ACCEPT (static checks only): 2 ACCEPT"
    assert fleet_line({"a": "ACCEPT", "b": "ACCEPT WITH WARNINGS"}, static) == (
        "fleet ACCEPT WITH WARNINGS (static checks only): 1 ACCEPT, 1 ACCEPT WITH WARNINGS")
    # a fleet not accepted (its nodes judged again since) is no static ACCEPT
    assert fleet_line({"a": "ACCEPT", "b": "REJECT"}, static) == "fleet REJECT: 1 ACCEPT, 1 REJECT"
    standard = {"verdict": "ACCEPT", "level": "standard", "label": None}
    assert fleet_line({"a": "ACCEPT"}, standard) == "fleet ACCEPT: 1 ACCEPT"
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
