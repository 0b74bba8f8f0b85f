# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests that can fail: coverage, INCOMPLETE reasons, figures with units and per-GPU folding in the report."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from gpufleet.report.model import build_model, figure_text, gpu_ranges
from gpufleet.report.junit import render_junit
from gpufleet.report.render import render_html, render_markdown

SLOW = ["hw_slowdown"]


def _throttle(index):
    return {
        "id": "gpu.throttle",
        "status": "fail",
        "subject": "GPU%d" % index,
        "measured": SLOW,
        "expected": [],
        "threshold_source": None,
        "message": "GPU%d clocks held down: HW Slowdown Active (clocks 86/1980 MHz SM)" % index,
    }


def _nvlink_item(index):
    return {
        "item": "nvlink.GPU%d" % index,
        "label": "NVLink GPU%d" % index,
        "checks": ["nvlink.link_active"],
        "expected": "12 active NVLinks",
        "source": "claim",
        "subject": "GPU%d" % index,
        "status": "unverified",
        "reason": "not judged: nvlink status was not collected",
    }


def _results():
    incomplete_items = [
        {
            "item": "gpu.count",
            "label": "GPU count",
            "checks": ["gpu.count"],
            "expected": "8 GPUs",
            "source": "claim",
            "subject": None,
            "status": "verified",
            "reason": None,
        }
    ] + [_nvlink_item(index) for index in range(8)]
    hosts = {
        "inc": {
            "host": "inc",
            "verdict": "INCOMPLETE",
            "unreachable": None,
            "claim": {"gpu_count": 8},
            "profile": {"name": "dgx-a100-8"},
            "checks": [
                {
                    "id": "gpu.count",
                    "status": "pass",
                    "subject": None,
                    "measured": 8,
                    "expected": 8,
                    "threshold_source": "claim",
                    "message": "8 GPU(s) visible to nvidia-smi, expected 8",
                }
            ],
            "coverage": {
                "claim": True,
                "required": 9,
                "judged": 1,
                "verified": 1,
                "failed": 0,
                "skipped": 8,
                "items": incomplete_items,
                "incomplete": [
                    "NVLink GPU%d: not judged: nvlink status was not collected" % index for index in range(8)
                ],
            },
        },
        "hot": {
            "host": "hot",
            "verdict": "REJECT",
            "unreachable": None,
            "claim": None,
            "profile": {"name": "generic"},
            "checks": [_throttle(index) for index in range(8)]
            + [
                {
                    "id": "host.memlock",
                    "status": "fail",
                    "subject": None,
                    "measured": 65536,
                    "expected": "unlimited",
                    "threshold_source": "profile",
                    "message": "memlock 65536 bytes",
                }
            ],
            "coverage": {
                "claim": False,
                "required": 0,
                "judged": 0,
                "verified": 0,
                "failed": 0,
                "skipped": 0,
                "items": [],
                "incomplete": [],
            },
        },
    }
    fleet = {
        "verdict": "REJECT",
        "counts": {"ACCEPT": 0, "ACCEPT WITH WARNINGS": 0, "INCOMPLETE": 1, "REJECT": 1, "UNREACHABLE": 0},
    }
    return {"path": "/nonexistent", "run": {"run_id": "r1", "status": "finished"}, "fleet": fleet, "hosts": hosts}


def test_figures_in_words_with_units():
    assert figure_text(8, "GPUs") == "8 GPUs"
    assert figure_text(65536, "B") == "65536 B"
    assert figure_text(["hw_slowdown", "sw_power_cap"]) == "hw_slowdown, sw_power_cap"
    assert figure_text({"port_rcv_errors": 14, "link_downed": 255}) == "port_rcv_errors 14, link_downed 255"
    assert figure_text({"pending": False}) == "pending no"
    assert gpu_ranges([7, 0, 1, 2, 3, 4, 5, 6]) == "GPU0\u20137" and gpu_ranges([0, 1, 3]) == "GPU0\u20131, GPU3"


def test_model_coverage_and_folding():
    model = build_model(_results())
    inc, hot = {node["host"]: node for node in model["nodes"]}["inc"], {node["host"]: node for node in model["nodes"]}[
        "hot"
    ]
    assert [node["host"] for node in model["nodes"]] == ["hot", "inc"]  # REJECT before INCOMPLETE
    assert inc["coverage"]["text"] == "1 of 9 required judged, 8 not verified"
    # eight alike NVLink items are one reason
    assert inc["coverage"]["incomplete"] == ["NVLink GPU0\u20137: not judged: nvlink status was not collected"]
    assert inc["verdict_class"] == "incomplete" and inc["claim_note"] == ""
    assert hot["claim_note"] == "judged against no claim"
    # eight alike throttle failures are one row; units on the memlock figure
    assert [(row["id"], row["subject"]) for row in hot["reasons"]] == [
        ("gpu.throttle", "GPU0\u20137"),
        ("host.memlock", ""),
    ]
    assert hot["reasons"][0]["message"] == "GPU0\u20137: clocks held down: HW Slowdown Active (clocks 86/1980 MHz SM)"
    assert (hot["reasons"][0]["measured"], hot["reasons"][0]["expected"]) == ("hw_slowdown", "none")
    assert (hot["reasons"][1]["measured"], hot["reasons"][1]["expected"]) == ("65536 B", "unlimited")
    assert model["failing"] == [hot, inc]


def test_markdown_and_html_show_coverage():
    model = build_model(_results())
    model["generated"] = "2026-01-01T00:00:00Z"
    text = render_markdown(model)
    assert "| node | verdict | profile | coverage | fail | warn | reasons |" in text
    assert "| inc | **INCOMPLETE** | dgx-a100-8 | 1 of 9 required judged, 8 not verified |" in text
    assert "not verified: NVLink GPU0\u20137: not judged: nvlink status was not collected" in text
    assert "generic (judged against no claim)" in text
    html = render_html(model)
    assert "<th>coverage</th>" in html and "1 of 9 required judged, 8 not verified" in html
    assert "judged against no claim" in html


def test_junit_unverified_items_skipped_and_the_node_failed():
    root = ET.fromstring(render_junit(_results()))
    suite = root.find("testsuite[@name='inc']")
    skipped = [case for case in suite.findall("testcase") if case.find("skipped") is not None]
    assert [case.get("name") for case in skipped] == ["evidence.nvlink.GPU%d" % index for index in range(8)]
    assert (
        skipped[0].find("skipped").get("message")
        == "not verified: NVLink GPU0: not judged: nvlink status was not collected"
    )
    failed = [case for case in suite.findall("testcase") if case.find("failure") is not None]
    assert [case.get("name") for case in failed] == ["node.evidence"]
    assert failed[0].find("failure").get("message") == "INCOMPLETE: 8 required item(s) not verified"
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("10", "1", "8")


def test_junit_carries_the_level_of_each_node():
    results = _results()
    results["hosts"]["inc"]["coverage"]["level"] = "standard"  # the node's own level, as the verdict wrote it
    results["fleet"]["level"] = "quick"  # the run's: for a node whose record has none
    root = ET.fromstring(render_junit(results))
    properties = {suite.get("name"): [(prop.get("name"), prop.get("value")) for prop in suite.find("properties")]
                  for suite in root.findall("testsuite")}
    assert properties["inc"] == [("verdict", "INCOMPLETE"), ("profile", "dgx-a100-8"), ("level", "standard")]
    assert properties["hot"] == [("verdict", "REJECT"), ("profile", "generic"), ("level", "quick")]


def test_junit_names_a_static_accept():
    results = _results()
    results["hosts"]["hot"].update(verdict="ACCEPT", checks=[])
    results["hosts"]["hot"]["coverage"].update(level="quick", label="static checks only")
    root = ET.fromstring(render_junit(results))
    props = [(prop.get("name"), prop.get("value")) for prop in root.find("testsuite[@name='hot']").find("properties")]
    assert props == [("verdict", "ACCEPT"), ("profile", "generic"), ("level", "quick"), ("label", "static checks only")]
    results["hosts"]["hot"]["verdict"] = "REJECT"  # the label qualifies an ACCEPT only
    root = ET.fromstring(render_junit(results))
    props = [(prop.get("name"), prop.get("value")) for prop in root.find("testsuite[@name='hot']").find("properties")]
    assert props == [("verdict", "REJECT"), ("profile", "generic"), ("level", "quick")]
