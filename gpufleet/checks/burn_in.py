# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Burn-in checks (pure): the NVML samples of a burn-in or health check, and the history's drift flags.

Reads ``NodeContext.settings``:

- ``burn_in``: the host's burn-in records (gpufleet/results/burn_in.py), each with ``parsed`` (its samples
  file read by fleet_verdict) or ``load_problem`` (why it could not be read);
- ``burn_in_drift``: the drift flags the history store found for this host (``history.json``);
- ``gpufleet_burn_in_thresholds``: the inventory's overrides of gpufleet/checks/burn_in_limits.py's DEFAULTS.

Each record is judged by gpufleet/checks/burn_in_flags.py (``burn_in.samples``, ``burn_in.load``,
``burn_in.clock_sag``, ``burn_in.hot``, ``burn_in.throttle``, ``burn_in.power_cap``,
``burn_in.ecc``, ``burn_in.nvlink``); each drift flag becomes a ``burn_in.drift`` result. A node
with neither gets one ``burn_in`` skip. A record whose samples cannot be read is an ``error``
(the evidence is incomplete, never a silent pass).
"""

from __future__ import annotations

from typing import Any, cast

from gpufleet.checks.burn_in_flags import SETTING, ThresholdError, check_load, judge
from gpufleet.checks.registry import node_check
from gpufleet.checks.model import ERROR, FAIL, SKIP, STATUSES, WARN, CheckResult, NodeContext, result


def _records(node: NodeContext) -> list[dict[str, Any]]:
    return [record for record in node.settings.get("burn_in") or [] if isinstance(record, dict)]


def drift_results(flags: list[dict[str, Any]]) -> list[CheckResult]:
    """``burn_in.drift`` results from the history store's drift flags."""
    out = []
    for flag in flags:
        status = flag["status"] if flag.get("status") in (WARN, FAIL) else WARN
        item = result("burn_in.drift", status, str(flag.get("message") or "drift"), measured=flag.get("measured"),
                      expected=flag.get("expected"), threshold_source=flag.get("source"),
                      subject="GPU %s" % flag.get("gpu") if flag.get("gpu") is not None else None)
        # results.json names the drifting GPU beside the schema's fields, which CheckResult alone declares
        gpu = {"index": flag.get("gpu"), "uuid": flag.get("uuid"), "name": flag.get("name")}
        cast("dict[str, Any]", item)["gpu"] = gpu
        out.append(item)
    return out


@node_check("burn_in")
def check_burn_in(node: NodeContext) -> list[CheckResult]:
    """Every burn-in record of the node judged by gpufleet/checks/burn_in_flags.py, then the history's drift flags."""
    records = _records(node)
    drift = [flag for flag in node.settings.get("burn_in_drift") or [] if isinstance(flag, dict)]
    if not records and not drift:
        return [result("burn_in", SKIP, "not judged: no burn-in or health-check samples recorded")]
    out = []
    for record in records:
        name = str(record.get("name") or "burn_in")
        where = record.get("samples_path") or name
        parsed = record.get("parsed")
        if parsed is None:
            problem = record.get("load_problem") or "its samples were not read"
            out.append(result("burn_in.samples", ERROR, "%s: cannot judge the burn-in: %s" % (name, problem),
                              subject=name))
            out.extend(_tag(check_load(record.get("load")), name, len(records)))
            continue
        try:
            findings = judge(parsed, load=record.get("load"), settings=node.settings.get(SETTING), where=where)
        except ThresholdError as exc:
            return [result("burn_in", ERROR, "not judged: %s" % exc, threshold_source=SETTING)]
        out.extend(_tag(findings, name, len(records)))
    out.extend(drift_results(drift))
    for item in out:
        if item["status"] not in STATUSES:
            item["status"] = ERROR
    return out


def _tag(findings: list[CheckResult], name: str, count: int) -> list[CheckResult]:
    """With several records on a node, each result's subject names the record too."""
    if count <= 1:
        return findings
    for item in findings:
        item["subject"] = "%s %s" % (name, item["subject"]) if item.get("subject") else name
    return findings
