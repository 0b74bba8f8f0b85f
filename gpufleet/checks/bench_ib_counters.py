# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""IB port counters read before and after a network benchmark (pure): the steps of ``bench_network.ib_counters``.

Growth of an IB PortCounters error counter (checks/network.py ``COUNTER_MAX``) fails naming the port; a saturated
error counter (at its PortCounters width) cannot show growth: it warns (the facts check network.ib_port_errors fails
it); growth of an mlx5 transport-error hw_counter (checks/bench_net_floors.py ``HW_ERROR_COUNTERS``) warns.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from gpufleet.checks.bench_net_floors import HW_COUNTER_SOURCE, HW_ERROR_COUNTERS
from gpufleet.checks.bench_net_records import parsed_or_empty
from gpufleet.checks.bench_records import Record
from gpufleet.checks.model import ERROR, FAIL, PASS, WARN, CheckResult, result
from gpufleet.checks.network import COUNTER_MAX, COUNTER_SOURCE

IB_COUNTERS_CHECK = "bench_network.ib_counters"

# A counter that grew: (port, counter, before, after)
Growth = tuple[str, str, int, int]


def counter_growth(before: Optional[dict[str, Any]], after: Optional[dict[str, Any]],
                   names: Optional[Iterable[str]] = None) -> list[Growth]:
    """``[(port, counter, before, after)]`` of counters (default the IB error counters) that grew (``before`` and
    ``after`` are ``{port: {counter: int}}``)."""
    counters = sorted(COUNTER_MAX) if names is None else sorted(names)
    grown = []
    for port in sorted(after or {}):
        for counter in counters:
            old = ((before or {}).get(port) or {}).get(counter)
            new = ((after or {})[port] or {}).get(counter)
            if isinstance(old, int) and isinstance(new, int) and new > old:
                grown.append((port, counter, old, new))
    return grown


def _grown_words(grown: list[Growth]) -> str:
    return "; ".join("%s %s %d -> %d" % item for item in grown)


def snapshot_results(rec: Record) -> list[CheckResult]:
    """The results of one before/after snapshot pair around a benchmark."""
    parsed = parsed_or_empty(rec)
    around = parsed.get("benchmark") or rec.get("name")
    if parsed.get("before") is None or parsed.get("after") is None:
        return [result(IB_COUNTERS_CHECK, ERROR, "counters around %s: a snapshot is missing" % around, subject=around)]
    out = []
    grown = counter_growth(parsed["before"], parsed["after"])
    if grown:
        ports = sorted({item[0] for item in grown})
        out.append(result(IB_COUNTERS_CHECK, FAIL, "error counters grew during %s on port %s: %s" % (
            around, ", ".join(ports), _grown_words(grown)), measured=sum(item[3] - item[2] for item in grown),
            expected=0, threshold_source=COUNTER_SOURCE, subject=", ".join(ports)))
    hw_grown = counter_growth(parsed.get("hw_before"), parsed.get("hw_after"), HW_ERROR_COUNTERS)
    if hw_grown:
        ports = sorted({item[0] for item in hw_grown})
        out.append(result(IB_COUNTERS_CHECK, WARN, "transport error hw_counters grew during %s on port %s: %s" % (
            around, ", ".join(ports), _grown_words(hw_grown)), measured=len(hw_grown), expected=0,
            threshold_source=HW_COUNTER_SOURCE, subject=", ".join(ports)))
    saturated = _saturated(parsed["after"])
    if saturated:
        out.append(result(IB_COUNTERS_CHECK, WARN, "counters around %s: %s saturated, their growth cannot be seen "
                          "(network.ib_port_errors judges them)" % (
                              around, ", ".join("%s %s" % item for item in saturated)),
                          measured=len(saturated), expected=0, threshold_source=COUNTER_SOURCE,
                          subject=", ".join(sorted({port for port, _counter in saturated}))))
    if not grown:
        words = "no IB error counter grew during %s (%d ports)" % (around, len(parsed["after"]))
        out.append(result(IB_COUNTERS_CHECK, PASS, words, measured=0, expected=0, threshold_source=COUNTER_SOURCE,
                          subject=around))
    return out


def _saturated(after: dict[str, Any]) -> list[tuple[str, str]]:
    """``[(port, counter)]`` of the error counters at their PortCounters width after the benchmark."""
    return [(port, counter) for port, counters in sorted(after.items())
            for counter, value in sorted((counters or {}).items())
            if counter in COUNTER_MAX and value == COUNTER_MAX[counter]]
