# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A figure never measured is shown as "not measured" with why, never as 0 (gpufleet/report/model.py not_measured);
the demo report in a browser: tests/report/test_report_browser.py."""

from __future__ import annotations

from gpufleet.report.model import node_row, not_measured


def _record(**fields):
    record = {"host": "n1", "verdict": "INCOMPLETE", "checks": [], "unreachable": None, "fact_errors": {},
              "facts": {"topology": None, "gpu": None, "nic": None, "host": None}}
    record.update(fields)
    return record


def test_why_a_group_is_missing():
    assert not_measured(_record(unreachable="ssh: connect to host 10.0.0.4 port 22: No route to host"), "nic") == (
        "not measured: the node was unreachable")
    assert not_measured(_record(fact_errors={"nic": "ibstat exited 255:\npanic"}), "nic") == (
        "not measured: the nic facts could not be gathered (ibstat exited 255: panic)")
    assert not_measured(_record(), "nic") == "not measured: nic facts not gathered"


def test_a_node_without_interfaces_is_a_measured_zero():
    assert not_measured(_record(facts={"nic": {"interfaces": [], "rdma": []}}), "nic") == ""


def test_a_node_no_check_judged_has_no_counts():
    row = node_row(0, _record(verdict="UNREACHABLE", unreachable="ssh: Connection timed out"))
    assert row["judged"] is False and row["nic_not_measured"] == "not measured: the node was unreachable"
    judged = node_row(1, _record(verdict="REJECT", checks=[{"id": "gpu.count", "status": "fail", "message": "7 GPUs"}]))
    assert judged["judged"] is True and judged["status_counts"] == {"fail": 1}
