# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every section of the report's render model shares (report/model.py assembles the sections).

The verdicts in their report order and colour classes, the check statuses in their order, and the small readers
every section uses on a host record: a fact group, a figure as a finite float, a JSON value as cell text, an
exception in one line. A host record is foreign JSON (``hosts/<host>.json``, written by any gpufleet version, or
forged): every reader here takes what it finds and never trusts a type.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any, Collection, Iterable

from gpufleet.checks.model import ACCEPT, ACCEPT_WITH_WARNINGS, INCOMPLETE, REJECT, UNREACHABLE
from gpufleet.report.cost import NOT_JUDGED

# a host record (hosts/<host>.json) and one view of the render model: plain JSON-like data for the templates
Record = dict[str, Any]
View = dict[str, Any]
# host -> what of that node could not be shown (a section fills it, build_model puts it on the node's row)
NodeErrors = dict[str, list[str]]

VERDICTS = (ACCEPT, ACCEPT_WITH_WARNINGS, INCOMPLETE, REJECT, UNREACHABLE)
# Failing first: what a reader must act on comes first, at 10 nodes or 1,000.
VERDICT_ORDER = {REJECT: 0, UNREACHABLE: 1, INCOMPLETE: 2, NOT_JUDGED: 3, ACCEPT_WITH_WARNINGS: 4, ACCEPT: 5}
VERDICT_CLASS = {REJECT: "reject", UNREACHABLE: "unreachable", INCOMPLETE: "incomplete", NOT_JUDGED: "notjudged",
                 ACCEPT_WITH_WARNINGS: "warn", ACCEPT: "accept"}
STATUS_ORDER = {"fail": 0, "error": 1, "warn": 2, "skip": 3, "pass": 4}
REASON_STATUSES = ("fail", "error", "warn")


def cell_text(value: Any) -> str:
    """A JSON value as short text for a table cell (None -> empty)."""
    if type(value) is str:  # pylint: disable=unidiomatic-typecheck  # most cells: as they are, no other test
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return ("%.3f" % value).rstrip("0").rstrip(".")
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def status_rank(status: Any) -> int:
    """The place of a check status in STATUS_ORDER (fail first); an unknown status last."""
    return STATUS_ORDER.get(status, 9)


def majority(values: list[str]) -> tuple[str | None, bool]:
    """``(value, tie)``: the most common value, or ``(None, False)`` for no values.

    When several values are equally most common there is no majority: ``(text naming them, True)``.
    """
    counted = Counter(values)
    if not counted:
        return None, False
    best = max(counted.values())
    leaders = [value for value in dict.fromkeys(values) if counted[value] == best]
    if len(leaders) > 1:
        return "no majority: %s" % " / ".join(leaders), True
    return leaders[0], False


def facts_group(record: Record, name: str) -> dict[str, Any] | None:
    """The record's fact group ``name`` (``gpu``, ``nic``, ``topology``) when it is a mapping, else None."""
    facts = record.get("facts") or {}
    value = facts.get(name)
    return value if isinstance(value, dict) else None


def gpus_of(record: Record) -> list[dict[str, Any]]:
    """The GPUs of the record's ``gpu`` facts (each a mapping; anything else left out)."""
    gpu = facts_group(record, "gpu")
    return [item for item in (gpu or {}).get("gpus") or [] if isinstance(item, dict)]


def worst_status(checks: Iterable[dict[str, Any]], ids: Collection[str]) -> Any:
    """The worst status (STATUS_ORDER) of the checks whose id is one of ``ids``; None when none ran."""
    statuses = [item.get("status") for item in checks if item.get("id") in ids]
    if not statuses:
        return None
    return min(statuses, key=status_rank)


def finite(value: Any) -> float | None:
    """A figure as a finite float; None for anything else (text, a bool, an int too large for a float, inf, NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def error_words(exc: BaseException) -> str:
    """An exception in one line, its type first and its text cut (a message may quote a 400-digit figure)."""
    text = " ".join(str(exc).split())
    return "%s: %s" % (type(exc).__name__, text[:300] + ("..." if len(text) > 300 else ""))


def note_error(errors: NodeErrors | None, host: Any, what: str, exc: BaseException) -> None:
    """Record in ``errors`` (host -> [text]) that ``what`` of ``host`` could not be built."""
    if errors is not None:
        errors.setdefault(str(host), []).append("%s could not be shown: %s" % (what, error_words(exc)))
