# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's fleet summary: the fleet verdict and counts (fleet.json's, else the node verdicts recorded so far
of a run that has none), how many nodes can be used, and the check statuses over every node."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gpufleet.checks.model import ACCEPT, ACCEPT_WITH_WARNINGS, ACCEPTED, INCOMPLETE, REJECT, UNREACHABLE
from gpufleet.report.common import VERDICT_CLASS, VERDICTS, View, cell_text
from gpufleet.report.cost import NOT_JUDGED

# the verdict counts shown, failing first
COUNTED_VERDICTS = (REJECT, UNREACHABLE, INCOMPLETE, ACCEPT_WITH_WARNINGS, ACCEPT)
STATUSES = ("fail", "error", "warn", "skip", "pass")


def fleet_view(fleet: dict[str, Any] | None, run: dict[str, Any], nodes: list[View]) -> View:
    """The fleet's verdict, its counts, how many nodes are acceptable, and a note when the run has no fleet.json."""
    counts = Counter(node["verdict"] for node in nodes)
    if fleet:
        verdict = fleet.get("verdict") or NOT_JUDGED
        fleet_counts = fleet.get("counts") or {}
        note = None
    else:
        verdict = NOT_JUDGED
        fleet_counts = {name: counts.get(name, 0) for name in VERDICTS}
        note = ("the run has no fleet.json (status %s): it was interrupted or is still running; node verdicts are as "
                "recorded so far" % cell_text(run.get("status")))
    return {
        "verdict": verdict,
        "verdict_class": VERDICT_CLASS.get(verdict, "notjudged"),
        "counts": [{"verdict": name, "count": int(fleet_counts.get(name, 0) or 0), "css": VERDICT_CLASS[name]}
                   for name in COUNTED_VERDICTS],
        "not_judged": counts.get(NOT_JUDGED, 0),
        "nodes": len(nodes),
        # how many nodes can be used, first: the fleet's verdict is its worst node's
        "acceptable": sum(1 for node in nodes if node["verdict"] in ACCEPTED),
        "note": note,
        "level": cell_text((fleet or {}).get("level") or (run.get("settings") or {}).get("level")),
        "label": cell_text((fleet or {}).get("label")),
    }


def status_totals(nodes: list[View]) -> list[dict[str, Any]]:
    """How many checks of every node ended in each status, fail first."""
    totals: Counter[str] = Counter()
    for node in nodes:
        totals.update(node["status_counts"])
    return [{"status": status, "count": totals.get(status, 0)} for status in STATUSES]
