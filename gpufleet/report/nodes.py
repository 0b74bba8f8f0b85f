# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One node's row of the report: its verdict, reasons, coverage, claim rows, NIC tables, benchmark records, and
what ``--slurm-drain`` did to it. A node whose data breaks its row keeps a row with its recorded verdict and the
error (:func:`node_row`): one node's data never stops the others from rendering."""

from __future__ import annotations

import shlex
from collections import Counter
from typing import Any

from gpufleet.checks.model import ACCEPTED
from gpufleet.report.claims import claim_rows, nic_rows
from gpufleet.report.common import (REASON_STATUSES, VERDICT_CLASS, Record, View, cell_text, error_words, facts_group,
                                    status_rank)
from gpufleet.report.cost import verdict_of
from gpufleet.report.coverage import coverage_view
from gpufleet.report.reasons import other_checks, reason_rows
from gpufleet.text import one_line


def not_measured(record: Record, group: str) -> str:
    """Why ``record`` has no ``group`` facts, for a table to show instead of a zero ("" when it has them, even empty:
    a node with no NIC is a measured zero)."""
    if facts_group(record, group) is not None:
        return ""
    if record.get("unreachable"):
        return "not measured: the node was unreachable"
    error = (record.get("fact_errors") or {}).get(group)
    if error:
        return "not measured: the %s facts could not be gathered (%s)" % (group, one_line(str(error))[:200])
    return "not measured: %s facts not gathered" % group


def _benchmark_rows(record: Record) -> list[dict[str, str]]:
    """The node's benchmark records as rows: what ran, when, and where its raw output is."""
    return [{"name": cell_text(item.get("name")), "started": cell_text(item.get("started")),
             "duration_s": cell_text(item.get("duration_s")), "algorithm": cell_text(item.get("algorithm")),
             "message_size_bytes": cell_text(item.get("message_size_bytes")),
             "command": " ".join(str(part) for part in item.get("command") or []),
             "raw_output_path": cell_text(item.get("raw_output_path"))}
            for item in record.get("benchmarks") or [] if isinstance(item, dict)]


def _node(index: int, record: Record) -> View:
    checks = [item for item in record.get("checks") or [] if isinstance(item, dict)]
    verdict = verdict_of(record)
    reasons = sorted((item for item in checks if item.get("status") in REASON_STATUSES),
                     key=lambda item: status_rank(item.get("status")))
    coverage = coverage_view(record)
    profile = record.get("profile") or {}
    interfaces, rdma_ports = nic_rows(record)
    return {
        "anchor": "node-%d" % index,
        "error": "",
        "host": str(record.get("host")),
        "verdict": verdict,
        "verdict_class": VERDICT_CLASS[verdict],
        "unreachable": cell_text(record.get("unreachable")),
        "profile": cell_text(profile.get("name")),
        "profile_reason": cell_text(profile.get("reason")),
        "reasons": reason_rows(reasons),
        "coverage": coverage,
        # a node judged against no claim says so wherever its verdict is shown
        "claim_note": "" if coverage["claim"] else "judged against no claim",
        # level quick: an ACCEPT rests on the facts alone ("static checks only", gpufleet/plan/levels.py)
        "level_label": coverage.get("label") or "" if verdict in ACCEPTED else "",
        "other_checks": other_checks(checks),
        "status_counts": dict(Counter(str(item.get("status")) for item in checks)),
        "fact_errors": [{"group": str(group), "message": cell_text(message)}
                        for group, message in sorted((record.get("fact_errors") or {}).items())],
        "claim_rows": claim_rows(record),
        "nic_rows": interfaces,
        "rdma_rows": rdma_ports,
        # what the NIC table shows instead of counts of zero (not_measured)
        "nic_not_measured": not_measured(record, "nic"),
        # a node no check judged (unreachable) has no counts: the summary shows "not judged", never 0 failures
        "judged": bool(checks),
        "gpu_rows": [],
        "benchmarks": _benchmark_rows(record),
    }


def node_row(index: int, record: Record) -> View:
    """The node's row (:func:`_node`); when building it raises, a row with the recorded verdict and ``error`` saying
    why its details are missing: one node's data never stops the others from rendering."""
    try:
        return _node(index, record)
    except Exception as exc:  # pylint: disable=broad-exception-caught  # any node data may be hostile
        return _failed_node(index, record, exc)


def _failed_node(index: int, record: Record, exc: Exception) -> View:
    verdict = verdict_of(record)
    coverage = {"known": False, "claim": record.get("claim") is not None, "required": 0, "judged": 0, "skipped": 0,
                "failed": 0, "text": "", "incomplete": [], "level": "", "label": ""}
    return {
        "anchor": "node-%d" % index, "host": str(record.get("host")), "verdict": verdict,
        "verdict_class": VERDICT_CLASS[verdict], "unreachable": "", "profile": "", "profile_reason": "",
        "error": "this node's details could not be shown: %s" % error_words(exc),
        "reasons": [], "coverage": coverage, "claim_note": "", "level_label": "", "checks": [], "other_checks": [],
        "status_counts": {}, "fact_errors": [], "claim_rows": [], "nic_rows": [], "rdma_rows": [], "gpu_rows": [],
        "benchmarks": [], "nic_not_measured": "not shown: this node's details could not be read", "judged": False,
    }


def slurm_words(slurm: Any) -> dict[str, str]:
    """What ``--slurm-drain`` did to each host's node, with the command as run (slurm.json), by host: a host's first
    action; a host it did nothing to is absent. One pass over the actions: a fleet's nodes look it up, not scan it."""
    words: dict[str, str] = {}
    for action in (slurm or {}).get("actions") or [] if isinstance(slurm, dict) else []:
        if not isinstance(action, dict) or not isinstance(action.get("host"), str) or action["host"] in words:
            continue
        command = action.get("command")
        if command:
            done = "" if action.get("rc") == 0 else " (failed, exit %s: %s)" % (action.get("rc"), action.get("output"))
            words[action["host"]] = "%s: %s%s" % (cell_text(action.get("action")),
                                                  shlex.join(str(word) for word in command), done)
        else:
            words[action["host"]] = "%s: %s" % (cell_text(action.get("action")), cell_text(action.get("why")))
    return words
