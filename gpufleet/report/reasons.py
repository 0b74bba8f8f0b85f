# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node's check results as report rows: its reasons (measured vs expected in words with their units, alike
findings on many GPUs folded into one row) and its other checks listed by id.

:func:`fold_gpus` is shared with the coverage view (report/coverage.py), which folds unverified per-GPU items alike.
"""

from __future__ import annotations

import re
from typing import Any

from gpufleet.report.common import REASON_STATUSES, cell_text, status_rank

# Units of the figures a check measures and expects (a bare number in a report cell says nothing).
CHECK_UNITS = {
    "gpu.count": "GPUs", "gpu.memory": "MiB", "gpu.temperature": "C", "host.memlock": "B", "nvlink.link_speed": "GB/s",
    "network.nic_speed": "Gb/s", "network.rdma_port_state": "Gb/s", "benchmarks.allreduce_single": "GB/s",
    "benchmarks.allreduce_multi": "GB/s", "nvlink.link_active": "links",
}
_GPU_SUBJECT = re.compile(r"^GPU(\d+)$")
# the fields two reason rows must agree on to fold into one (with the rest of their message)
_ALIKE_REASON_FIELDS = ("id", "status", "measured", "expected", "source")


def figure_text(value: Any, unit: str | None = None) -> str:
    """A measured or expected figure in words, with its unit: ``8 GPUs``, ``65536 B``, ``hw_slowdown, sw_power_cap``,
    ``port_rcv_errors 14, link_downed 255``; never raw JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return "%s %s" % (cell_text(value), unit) if unit else cell_text(value)
    if isinstance(value, list):
        return ", ".join(figure_text(item, unit) for item in value) if value else "none"
    if isinstance(value, dict):
        return ", ".join("%s %s" % (key, figure_text(item)) for key, item in value.items()) if value else "none"
    return str(value)


def gpu_ranges(indices: list[int]) -> str:
    """``GPU0\u20137`` for GPUs 0..7, ``GPU0\u20132, GPU5`` otherwise (indices sorted, deduplicated)."""
    parts: list[str] = []
    ordered: list[int | None] = list(sorted(set(indices)))
    start = previous = None
    for index in ordered + [None]:
        if start is not None and (index is None or previous is None or index != previous + 1):
            parts.append("GPU%s" % start if start == previous else "GPU%s\u2013%s" % (start, previous))
            start = None
        if index is not None and start is None:
            start = index
        previous = index
    return ", ".join(parts)


def without_subject(text: str, subject: str) -> str | None:
    """``text`` without its leading ``subject`` (``GPU3: x`` / ``GPU3 x`` -> ``x``), else None."""
    if not text.startswith(subject):
        return None
    rest = text[len(subject):]
    if rest.startswith(": "):
        return rest[2:]
    return rest[1:] if rest.startswith(" ") else None


def fold_gpus(rows: list[dict[str, Any]], subject_key: str, text_key: str,
              same_keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """Rows alike on every GPU of a node folded into one (``GPU0\u20137: HW Slowdown active``).

    Rows whose ``subject_key`` is ``GPU<n>`` and whose ``text_key`` starts with it fold when every key of
    ``same_keys`` and the rest of the text agree; the folded row names the GPU range in both. Order is kept.
    """
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for row in rows:
        match = _GPU_SUBJECT.match(str(row.get(subject_key) or ""))
        rest = without_subject(str(row.get(text_key) or ""), row[subject_key]) if match else None
        if match is None or rest is None:
            out.append(row)
            continue
        key = tuple(row.get(name) for name in same_keys) + (rest,)
        if key not in groups:
            groups[key] = {"row": row, "rest": rest, "indices": []}
            out.append(groups[key])
        groups[key]["indices"].append(int(match.group(1)))
    return [entry if "indices" not in entry else _folded_row(entry, subject_key, text_key) for entry in out]


def _folded_row(entry: dict[str, Any], subject_key: str, text_key: str) -> dict[str, Any]:
    """One group of :func:`fold_gpus` as its row: the first row, naming the GPU range when it holds several."""
    row = dict(entry["row"])
    if len(entry["indices"]) > 1:
        label = gpu_ranges(entry["indices"])
        row[subject_key] = label
        row[text_key] = "%s: %s" % (label, entry["rest"])
        row["folded"] = len(entry["indices"])
    return row


def reason_row(item: dict[str, Any]) -> dict[str, str]:
    """One check result as a report row, its figures in words with their unit (CHECK_UNITS)."""
    unit = CHECK_UNITS.get(str(item.get("id")))
    return {
        "id": cell_text(item.get("id")), "status": cell_text(item.get("status")),
        "subject": cell_text(item.get("subject")),
        "measured": figure_text(item.get("measured"), unit), "expected": figure_text(item.get("expected"), unit),
        "source": cell_text(item.get("threshold_source")), "message": cell_text(item.get("message")),
    }


def reason_rows(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Report rows of check results, identical findings on many GPUs of the node folded into one row."""
    return fold_gpus([reason_row(item) for item in items], "subject", "message", _ALIKE_REASON_FIELDS)


def other_checks(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The checks that are not reasons (pass, skip), by status: ``[{status, count, checks}]`` with the check ids (and
    subjects).

    Their messages stay in hosts/<host>.json, results.json and junit.xml: listing every message of every
    node made the HTML of 1,024 nodes 15 MB larger (docs/performance.md).
    """
    by_status: dict[str, list[str]] = {}
    for item in checks:
        if item.get("status") in REASON_STATUSES:
            continue
        subject = item.get("subject")
        name = cell_text(item.get("id")) + (" [%s]" % cell_text(subject) if subject not in (None, "") else "")
        by_status.setdefault(cell_text(item.get("status")), []).append(name)
    return [{"status": status, "count": len(names), "checks": ", ".join(names)}
            for status, names in sorted(by_status.items(), key=lambda pair: status_rank(pair[0]))]
