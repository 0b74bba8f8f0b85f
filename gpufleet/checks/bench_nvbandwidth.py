# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvbandwidth's copy matrices against the profile's floors (pure): the steps of ``bench_network.nvbandwidth``.

H2D / D2H / D2D copy bandwidth of every GPU (pair) is held to the profile's ``thresholds.h2d_bandwidth`` /
``d2h_bandwidth`` / ``p2p_bandwidth`` (checks/bench_net_floors.py ``NVBANDWIDTH_THRESHOLDS``); the repeats of one copy
vote (:func:`nvbandwidth_repeats`), and a testcase's lowest copy is named in every message.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from gpufleet.checks.bench_net_floors import NVBANDWIDTH_THRESHOLDS
from gpufleet.checks.bench_net_records import outcome_words, record_label, voted
from gpufleet.checks.bench_records import Record
from gpufleet.checks.bench_words import repeat_words
from gpufleet.checks.model import ERROR, FAIL, PASS, SKIP, WARN, CheckResult, NodeContext, result
from gpufleet.checks.network import num
from gpufleet.checks.profiles import profile_value

NVBANDWIDTH_CHECK = "bench_network.nvbandwidth"

# One copy of a testcase: (row, column, voted GB/s, GB/s per repeat)
Cell = tuple[Any, Any, float, list[float]]


def copy_cells(testcase: dict[str, Any]) -> list[tuple[Any, Any, float]]:
    """``[(row, column, GB/s)]`` of a testcase matrix, without the diagonal of GPU x GPU matrices and N/A."""
    square = testcase.get("rows") == testcase.get("columns")
    cells = []
    for row, values in (testcase.get("matrix") or {}).items():
        for column, value in values.items():
            if value is None or (square and row == column):
                continue
            cells.append((row, column, float(value)))
    return cells


def nvbandwidth_repeats(runs: Sequence[Record]) -> tuple[dict[str, dict[str, Any]], list[tuple[str, dict[str, Any]]]]:
    """``({testcase: {"cells": {(row, col): [GB/s per repeat]}, "testcase": last}}, problems)``."""
    testcases: dict[str, dict[str, Any]] = {}
    problems: list[tuple[str, dict[str, Any]]] = []
    for rec in runs:
        for testcase in rec["parsed"].get("testcases") or []:
            name = str(testcase.get("name") or "")
            entry = testcases.setdefault(name, {"cells": {}, "testcase": testcase, "status": []})
            entry["status"].append(testcase.get("status"))
            if testcase.get("status") != "ok":
                problems.append((name, testcase))
                continue
            entry["testcase"] = testcase
            for row, column, value in copy_cells(testcase):
                entry["cells"].setdefault((row, column), []).append(value)
    return testcases, problems


def run_result(rec: Record) -> Optional[CheckResult]:
    """A run that was skipped, did not complete or has no parsed output; None for a run with copies to judge."""
    if rec.get("outcome") == "skipped":
        return result(NVBANDWIDTH_CHECK, SKIP, "nvbandwidth not run: %s" % (rec.get("reason") or "skipped"),
                      subject=record_label(rec))
    if rec.get("outcome") not in (None, "ok"):
        return result(NVBANDWIDTH_CHECK, FAIL, "%s did not complete: %s" % (record_label(rec), outcome_words(rec)),
                      measured=rec.get("outcome"), subject="%s repeat %s" % (record_label(rec), rec.get("repeat") or 1))
    if not isinstance(rec.get("parsed"), dict):
        return result(NVBANDWIDTH_CHECK, ERROR, "%s repeat %s has no parsed output to judge" % (
            record_label(rec), rec.get("repeat") or 1), subject=record_label(rec))
    return None


def testcase_problem_result(name: str, testcase: dict[str, Any]) -> CheckResult:
    """A testcase nvbandwidth did not run (``waived``: SKIP) or that failed (``error``)."""
    subject = "nvbandwidth %s" % name
    return result(NVBANDWIDTH_CHECK, ERROR if testcase.get("status") == "error" else SKIP,
                  "%s: %s (%s)" % (subject, testcase.get("status"), testcase.get("message")), subject=subject)


def testcase_result(node: NodeContext, name: str, entry: dict[str, Any], how: str) -> Optional[CheckResult]:
    """Every copy of one testcase against its floor (None for a testcase without a floor key or copies)."""
    key = next((threshold for prefix, threshold in NVBANDWIDTH_THRESHOLDS if name.startswith(prefix)), None)
    subject = "nvbandwidth %s" % name
    cells: list[Cell] = [(row, col, voted(values, how), values) for (row, col), values in entry["cells"].items()]
    if key is None or not cells:
        return None
    lowest = min(cells, key=lambda cell: cell[2])
    spread = repeat_words(lowest[3], how)
    threshold = profile_value(node.profile, "thresholds." + key)[0]
    if not threshold:
        return result(NVBANDWIDTH_CHECK, SKIP, "%s: lowest %s->%s %s GB/s%s; profile %s has no thresholds.%s" % (
            subject, lowest[0], lowest[1], num(lowest[2]), spread, (node.profile or {}).get("name"), key),
            measured=lowest[2], subject=subject)
    status, message = _copies_words(subject, cells, lowest, spread, threshold, entry["testcase"].get("description"))
    return result(NVBANDWIDTH_CHECK, status, message, measured=lowest[2], expected=threshold["floor"],
                  threshold_source=threshold.get("source"), subject=subject)


def _copies_words(subject: str, cells: list[Cell], lowest: Cell, spread: str, threshold: dict[str, Any],
                  description: Any) -> tuple[str, str]:
    """``(status, message)``: copies below the floor fail, naming the lowest eight; the lowest in the warn band
    warns."""
    floor = threshold["floor"]
    below = [cell for cell in cells if cell[2] < floor]
    if below:
        named = ", ".join("%s->%s %s" % (row, col, num(value))
                          for row, col, value, _values in sorted(below, key=lambda c: c[2])[:8])
        more = " ..." if len(below) > 8 else ""
        return FAIL, "%s: %d of %d copies below %s GB/s (%s): %s%s; lowest%s" % (
            subject, len(below), len(cells), num(floor), description, named, more, spread or " of 1 run")
    message = "%s: all %d copies >= %s GB/s; lowest %s->%s %s GB/s%s" % (
        subject, len(cells), num(floor), lowest[0], lowest[1], num(lowest[2]), spread)
    return WARN if threshold.get("warn_below") is not None and lowest[2] < threshold["warn_below"] else PASS, message
