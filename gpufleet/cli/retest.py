# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The retest loop: which nodes of a previous run to run again, and ``retest.json``, the diff of the
new run against the previous one (pure: results directories in, a document out).

``retest.json`` (written into the NEW results directory, schema ``gpufleet.results/v1``)::

    {
      "schema": "gpufleet.results/v1",
      "generated": "2026-01-31T12:00:00Z",
      "run_id": "<new run id>",
      "previous": {"path": "<previous results dir>", "run_id": "<its run id>"},
      "retested": ["node-a", "node-b"],          # the nodes run again (REJECT or UNREACHABLE before)
      "fixed": ["node-a"],                        # accepted now (ACCEPT / ACCEPT WITH WARNINGS)
      "still_failing": ["node-b"],                # failing now, on at least one problem seen before
      "newly_failing": [],                        # failing now, only on problems NOT seen before
      "not_judged": [],                           # retested but without a verdict (interrupted run)
      "nodes": {
        "node-b": {
          "before": "REJECT", "after": "REJECT", "outcome": "still_failing",
          "fixed_checks": [{"id", "subject", "message"}],        # failed before, not now (message: before)
          "still_failing_checks": [{"id", "subject", "message"}], # failed both times (message: now)
          "newly_failing_checks": [{"id", "subject", "message"}]  # failed now only (message: now)
        }
      }
    }

A problem is a failing check, told apart by ``(id, subject)`` (``network.ib_port_errors`` on
``mlx5_0/1`` is not the same problem as on ``mlx5_3/1``). An unreachable node counts as one
problem with id ``unreachable``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypedDict

from gpufleet.cli.common import ACCEPTED, FAILING, failing_checks, load_run, node_verdicts
from gpufleet.results.store import SCHEMA, utc_now, write_json_atomic

RETEST_FILE = "retest.json"
UNREACHABLE_ID = "unreachable"

# What became of a retested node
Outcome = Literal["fixed", "still_failing", "newly_failing", "not_judged"]
# A problem: a failing check's (id, subject), and its message
Problems = dict[tuple[str, Any], Any]


class ListedProblem(TypedDict):
    """One problem of a node's diff: a failing check's id, subject and message."""

    id: str
    subject: Any
    message: Any


class NodeDiff(TypedDict):
    """``nodes.<host>`` of retest.json: one node's diff between the two runs (:func:`compare_node`)."""

    before: str | None
    after: str | None
    outcome: Outcome
    fixed_checks: list[ListedProblem]
    still_failing_checks: list[ListedProblem]
    newly_failing_checks: list[ListedProblem]


class PreviousRun(TypedDict):
    path: str
    run_id: Any


class RetestDocument(TypedDict):
    """retest.json (module docstring)."""

    schema: str
    generated: str
    run_id: Any
    previous: PreviousRun
    retested: list[str]
    fixed: list[str]
    still_failing: list[str]
    newly_failing: list[str]
    not_judged: list[str]
    nodes: dict[str, NodeDiff]


def failed_nodes(previous_dir: str) -> list[str]:
    """The nodes of the run in ``previous_dir`` to run again: REJECTed, UNREACHABLE, or never judged
    (a run interrupted before its verdicts), sorted. ResultsError when it is no results directory."""
    run, fleet, hosts = load_run(previous_dir)
    verdicts = node_verdicts(run, fleet, hosts)
    return sorted(host for host, verdict in verdicts.items() if verdict in FAILING or verdict is None)


def problems(record: Mapping[str, Any] | None, verdict: str | None) -> Problems:
    """``{(id, subject): message}`` of what made a node fail: its failing checks, or ``unreachable``."""
    record = record or {}
    if verdict == "UNREACHABLE" or record.get("unreachable"):
        return {(UNREACHABLE_ID, None): record.get("unreachable") or "unreachable"}
    found: Problems = {}
    for item in failing_checks(record):
        found.setdefault((str(item.get("id")), item.get("subject")), item.get("message"))
    return found


def _listed(found: Problems) -> list[ListedProblem]:
    return [{"id": key[0], "subject": key[1], "message": message}
            for key, message in sorted(found.items(), key=lambda pair: (pair[0][0], str(pair[0][1] or "")))]


def compare_node(before_verdict: str | None, before_record: Mapping[str, Any] | None, after_verdict: str | None,
                 after_record: Mapping[str, Any] | None) -> NodeDiff:
    """The diff of one node between two runs: its outcome and the problems fixed, still there and new."""
    before = problems(before_record, before_verdict) if before_verdict in FAILING else {}
    after = problems(after_record, after_verdict) if after_verdict in FAILING else {}
    outcome: Outcome
    if after_verdict is None:
        outcome = "not_judged"
    elif after_verdict in ACCEPTED:
        outcome = "fixed"
    elif set(after) & set(before):
        outcome = "still_failing"
    else:
        # every problem on record was fixed (or none was on record: a node never judged) and others appeared
        outcome = "newly_failing"
    return {
        "before": before_verdict,
        "after": after_verdict,
        "outcome": outcome,
        "fixed_checks": _listed({key: value for key, value in before.items() if key not in after}),
        "still_failing_checks": _listed({key: value for key, value in after.items() if key in before}),
        "newly_failing_checks": _listed({key: value for key, value in after.items() if key not in before}),
    }


def retest_diff(previous_dir: str, new_dir: str, retested: Iterable[str]) -> RetestDocument:
    """The ``retest.json`` document for the nodes ``retested`` (the previous run's failed nodes)."""
    prev_run, prev_fleet, prev_hosts = load_run(previous_dir)
    new_run, new_fleet, new_hosts = load_run(new_dir)
    before = node_verdicts(prev_run, prev_fleet, prev_hosts)
    after = node_verdicts(new_run, new_fleet, new_hosts)
    document: RetestDocument = {
        "schema": SCHEMA,
        "generated": utc_now(),
        "run_id": new_run.get("run_id"),
        "previous": {"path": os.path.abspath(previous_dir), "run_id": prev_run.get("run_id")},
        "retested": sorted(retested),
        "fixed": [],
        "still_failing": [],
        "newly_failing": [],
        "not_judged": [],
        "nodes": {},
    }
    for host in sorted(retested):
        entry = compare_node(before.get(host), prev_hosts.get(host), after.get(host), new_hosts.get(host))
        document["nodes"][host] = entry
        document[entry["outcome"]].append(host)
    return document


def write_retest(previous_dir: str, new_dir: str, retested: Iterable[str]) -> tuple[str, RetestDocument]:
    """Write ``retest.json`` into ``new_dir``; return ``(path, document)``."""
    document = retest_diff(previous_dir, new_dir, retested)
    path = os.path.join(os.path.abspath(new_dir), RETEST_FILE)
    write_json_atomic(path, document)
    return path, document


def retest_lines(document: RetestDocument) -> list[str]:
    """The diff in a few lines for the terminal."""
    lines = ["retest against %s: %d fixed, %d still failing, %d newly failing%s" % (
        document["previous"]["run_id"], len(document["fixed"]), len(document["still_failing"]), len(document["newly_failing"]),
        ", %d not judged" % len(document["not_judged"]) if document["not_judged"] else "")]
    for host in document["retested"]:
        entry = document["nodes"][host]
        parts = []
        for checks, label in ((entry["fixed_checks"], "fixed"), (entry["still_failing_checks"], "still"),
                              (entry["newly_failing_checks"], "new")):
            ids = sorted({item["id"] for item in checks})
            if ids:
                parts.append("%s %s" % (label, ", ".join(ids)))
        lines.append("  %s: %s -> %s (%s)%s" % (
            host, entry["before"] or "not judged", entry["after"] or "not judged",
            entry["outcome"].replace("_", " "), ": " + "; ".join(parts) if parts else ""))
    return lines
