# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node's required-evidence coverage in words (the record's ``coverage``, gpufleet/checks/evidence.py): how many
required items were judged, and why the node is INCOMPLETE, per-GPU items alike on many GPUs folded into one line."""

from __future__ import annotations

from typing import Any

from gpufleet.report.common import Record, View, cell_text
from gpufleet.report.reasons import fold_gpus, without_subject


def coverage_view(record: Record) -> View:
    """The node's required evidence in words: ``{known, claim, required, judged, skipped, failed, text, incomplete}``.

    ``incomplete`` lists why the node is INCOMPLETE, per-GPU items alike on many GPUs folded
    (``NVLink GPU0\u20137: nvlink -s listed no link``). ``known`` is False for a record judged before coverage existed.
    """
    coverage = record.get("coverage") if isinstance(record.get("coverage"), dict) else None
    claim = record.get("claim") is not None
    if coverage is None:
        return {"known": False, "claim": claim, "required": 0, "judged": 0, "skipped": 0, "failed": 0, "text": "",
                "incomplete": []}
    items = [item for item in coverage.get("items") or [] if isinstance(item, dict)]
    incomplete = _unverified_lines(items) + _reasons_beside_items(coverage, items)
    required, judged = int(coverage.get("required") or 0), int(coverage.get("judged") or 0)
    skipped = int(coverage.get("skipped") or 0)
    text = "%d of %d required judged" % (judged, required)
    if skipped:
        text += ", %d not verified" % skipped
    return {"known": True, "claim": bool(coverage.get("claim", claim)), "required": required, "judged": judged,
            "skipped": skipped, "failed": int(coverage.get("failed") or 0), "text": text, "incomplete": incomplete,
            "level": cell_text(coverage.get("level")), "label": cell_text(coverage.get("label"))}


def _unverified_lines(items: list[dict[str, Any]]) -> list[str]:
    """One line per required item not verified (``label: reason (fix: ...)``), alike per-GPU items folded."""
    rows = [_unverified_row(item) for item in items if item.get("status") == "unverified"]
    return [row["text"] if row["base"] is None else "%s %s" % (row["base"], row["text"])
            for row in fold_gpus(rows, "subject", "text", ("base",))]


def _unverified_row(item: dict[str, Any]) -> dict[str, Any]:
    """An unverified item as a row :func:`fold_gpus` can fold: a per-GPU item (its label ends in its subject) keeps
    the label's ``base`` apart, so alike GPUs fold."""
    label, subject = str(item.get("label") or item.get("item")), item.get("subject")
    reason = cell_text(item.get("reason"))
    # the fix rides on the reason, so alike GPUs still fold into one row
    reason = "%s (fix: %s)" % (reason, item["fix"]) if item.get("fix") else reason
    if subject and label.endswith(" " + str(subject)):
        base = label[:-len(str(subject)) - 1]
        # the reason's own GPU prefix ("GPU3: nvlink -s listed no link") is dropped so alike reasons fold
        reason = without_subject(reason, str(subject)) or reason
        return {"subject": str(subject), "text": "%s: %s" % (subject, reason), "base": base}
    return {"subject": None, "text": "%s: %s" % (label, reason), "base": None}


def _reasons_beside_items(coverage: dict[str, Any], items: list[dict[str, Any]]) -> list[str]:
    """The coverage's INCOMPLETE reasons that are no required item ("nothing was judged"), as coverage lists them."""
    listed = [str(reason) for reason in coverage.get("incomplete") or []]
    labels = tuple(str(item.get("label")) + ":" for item in items)
    return [reason for reason in listed if not reason.startswith(labels)] if labels else listed
