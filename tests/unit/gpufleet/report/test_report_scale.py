# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report at fleet scale: passing and skipped checks listed by id, reasons in full, compact results.json."""

from __future__ import annotations

import json
import os

from gpufleet.report import model
from gpufleet.report.render import render_report
from gpufleet.results.compact import expand_document


def check(check_id, status, message, subject=None):
    return {"id": check_id, "status": status, "subject": subject, "measured": None, "expected": None, "threshold_source": None, "message": message}


def test_other_checks_are_the_non_reasons_by_status_skip_first():
    checks = [check("gpu.count", "pass", "8 GPUs"), check("gpu.throttle", "fail", "GPU0 held down", subject="GPU0"),
              check("host.xid", "skip", "not judged: host facts not gathered"), check("gpu.ecc", "pass", "ECC on"),
              check("pcie.gpu_link", "skip", "not judged", subject="GPU3"), check("gpu.consistency", "warn", "VBIOS differs")]
    assert model._other_checks(checks) == [  # pylint: disable=protected-access
        {"status": "skip", "count": 2, "checks": "host.xid, pcie.gpu_link [GPU3]"},
        {"status": "pass", "count": 2, "checks": "gpu.count, gpu.ecc"},
    ]


def test_html_lists_passes_by_id_and_keeps_every_reason_in_full(small_run):
    outcome = render_report(small_run, formats=("html", "json"))
    with open(outcome["files"]["html"], encoding="utf-8") as handle:
        html = handle.read()
    # bravo: its pass by id, its fail and warn with figures and messages (conftest.py writes them)
    assert '<span class="s-pass">1 pass</span>: <span class="mono">gpu.count</span>' in html
    assert "busbw 476.72 GB/s, expected &gt;= 480" in html and "GPU3 VBIOS differs" in html
    # the message of a passing check is in results.json, not in the page
    assert "8 GPUs, expected 8" not in html
    with open(outcome["files"]["json"], encoding="utf-8") as handle:
        text = handle.read()
    assert "\n" not in text.rstrip("\n")
    document = json.loads(text)
    # said once in values, however many nodes passed it, and the row of bravo's check points at it
    assert document["values"].count("8 GPUs, expected 8") == 1
    bravo = expand_document(document)["hosts"]["bravo"]
    assert bravo["verdict"] == "REJECT"
    assert [item["message"] for item in bravo["checks"] if item["id"] == "gpu.count"] == ["8 GPUs, expected 8"]
    assert os.path.getsize(outcome["files"]["json"]) == len(text.encode("utf-8"))
