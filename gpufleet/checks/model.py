# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vocabulary of judging: check results, node contexts and verdicts (pure, controller side).

A check is a pure function. It receives what was gathered about a node (or the whole fleet)
and returns result dicts; it never runs a command. Every result carries the figure it
judged (``measured``), what it was held against (``expected``) and where that expectation
comes from (``threshold_source``), so a report can show the evidence behind every reason.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, TypedDict

from gpufleet.facts import FACT_GROUPS

PASS, WARN, FAIL, SKIP, ERROR = "pass", "warn", "fail", "skip", "error"
STATUSES = (PASS, WARN, FAIL, SKIP, ERROR)

ACCEPT = "ACCEPT"
ACCEPT_WITH_WARNINGS = "ACCEPT WITH WARNINGS"
REJECT = "REJECT"
UNREACHABLE = "UNREACHABLE"
INCOMPLETE = "INCOMPLETE"
# Every verdict, worst first: the fleet's verdict is its worst node's.
VERDICTS = (REJECT, UNREACHABLE, INCOMPLETE, ACCEPT_WITH_WARNINGS, ACCEPT)
# The verdicts of a node that can be used
ACCEPTED = (ACCEPT, ACCEPT_WITH_WARNINGS)


class CheckResult(TypedDict):
    """One check result, as hosts/<host>.json holds it under ``checks`` (docs/results-schema.md; results.json keeps
    it as a row of indexes into its ``values``)."""

    id: str
    status: str  # one of STATUSES
    subject: Any  # what was judged (a GPU index, an interface, a pair): None for the node as a whole
    measured: Any  # the figure judged; None where nothing was measured
    expected: Any  # what it was held against
    threshold_source: Optional[str]  # where the expectation comes from
    message: str


def result(check_id: str, status: str, message: str, measured: Any = None, expected: Any = None,
           threshold_source: Optional[str] = None, subject: Any = None) -> CheckResult:
    """One check result in the results schema (see docs/results-schema.md)."""
    if status not in STATUSES:
        raise ValueError("unknown check status %r" % (status,))
    return {
        "id": check_id,
        "status": status,
        "subject": subject,
        "measured": measured,
        "expected": expected,
        "threshold_source": threshold_source,
        "message": message,
    }


class NodeContext:
    """What the checks may read about one node.

    ``facts`` maps each fact group (``topology``, ``gpu``, ``nic``, ``host``) to its facts, or
    None when that group was not gathered; ``fact_errors`` maps a group that failed to the
    message it failed with. ``claim`` is the seller's claim (``gpufleet_claim``) or None;
    ``profile`` the validated profile chosen for the node; ``settings`` other inventory
    variables the checks read (e.g. ``gpufleet_nccl_env`` chosen by provisioning).
    """

    def __init__(self, name: str, facts: Mapping[str, Any] | None = None, fact_errors: Mapping[str, str] | None = None,
                 claim: dict[str, Any] | None = None, profile: dict[str, Any] | None = None,
                 settings: Mapping[str, Any] | None = None, unreachable: Any = None) -> None:
        self.name = name
        self.facts: dict[str, Any] = {group: (facts or {}).get(group) for group in FACT_GROUPS}
        self.fact_errors: dict[str, str] = dict(fact_errors or {})
        self.claim = claim
        self.profile: dict[str, Any] = profile or {}
        self.settings: dict[str, Any] = dict(settings or {})
        self.unreachable = unreachable

    def group(self, name: str) -> Any:
        """Facts of one group, or None."""
        return self.facts.get(name)


def node_verdict(results: Iterable[CheckResult], unreachable: Any = None,
                 coverage: Mapping[str, Any] | None = None) -> str:
    """ACCEPT / ACCEPT WITH WARNINGS / INCOMPLETE / REJECT / UNREACHABLE from a node's results.

    Any ``fail`` rejects (a failed required item wins over a missing one). A required item that
    was not judged (``coverage["incomplete"]`` from gpufleet/checks/evidence.py lists why) makes
    the node INCOMPLETE: never accepted unmeasured. ``warn`` and ``error`` (a check that could not
    be evaluated) on anything else accept with warnings. An unreachable node has no evidence at all.
    """
    if unreachable:
        return UNREACHABLE
    statuses = {item["status"] for item in results}
    if FAIL in statuses:
        return REJECT
    if coverage and coverage.get("incomplete"):
        return INCOMPLETE
    if WARN in statuses or ERROR in statuses:
        return ACCEPT_WITH_WARNINGS
    return ACCEPT


class FleetLine(TypedDict):
    """The fleet's verdict, its counts per verdict and its number of nodes (results.json ``fleet``)."""

    verdict: str
    counts: dict[str, int]
    nodes: int


def fleet_verdict(node_verdicts: Mapping[str, str]) -> FleetLine:
    """The fleet's line: counts per verdict, and the worst node's verdict (ACCEPT only when every node is)."""
    counts = {verdict: 0 for verdict in (ACCEPT, ACCEPT_WITH_WARNINGS, INCOMPLETE, REJECT, UNREACHABLE)}
    for verdict in node_verdicts.values():
        counts[verdict] += 1
    overall = next((verdict for verdict in VERDICTS if counts[verdict]), ACCEPT)
    return {"verdict": overall, "counts": counts, "nodes": len(node_verdicts)}
