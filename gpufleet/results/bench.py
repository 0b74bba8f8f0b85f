# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark records that do not come from one bench_run (pure): IB counter snapshots, skipped benchmarks.

``ib_counters`` (action ``gpufleet.acceptance.ib_counters``) turns the raw sysfs strings a node
returned into numbers (:func:`snapshot`) and, around a network benchmark, writes one record of
kind ``ib_counters`` whose ``parsed`` is ``{benchmark, before, after, hw_before, hw_after}``
(:func:`counters_record`), each snapshot ``{"<device>/<port>": {counter: int or None}}``; the check
``bench_network.ib_counters`` compares them. ``bench_record`` writes a record for a benchmark that
was asked for but did not apply to a host (outcome ``skipped``) or for the side of a pair run
that failed without a record of its own (:func:`plain_record`). Fields: docs/results-schema.md.
"""

from __future__ import annotations

from gpufleet.facts.nic import parse_int


def port_label(device, port):
    """``mlx5_0/1``: how the checks name a port (as nic_inventory's summary does)."""
    return "%s/%s" % (device, port)


def snapshot(ports, taken):
    """``{taken, counters, hw_counters}`` from the module's raw ``ports`` (unreadable or ``N/A`` -> None)."""
    counters, hw_counters = {}, {}
    for entry in ports or []:
        label = port_label(entry.get("device"), entry.get("port"))
        counters[label] = {str(name): parse_int(value) for name, value in sorted((entry.get("counters") or {}).items())}
        hw_counters[label] = {str(name): parse_int(value) for name, value in sorted((entry.get("hw_counters") or {}).items())}
    return {"taken": taken, "counters": counters, "hw_counters": hw_counters}


def _base(name, kind, hosts, started):
    return {
        "name": str(name),
        "command": [],
        "environment": {},
        "message_size_bytes": None,
        "algorithm": None,
        "raw_output_path": None,
        "stderr_path": None,
        "parsed": None,
        "started": started,
        "duration_s": None,
        "kind": kind,
        "hosts": [str(host) for host in hosts],
        "outcome": "ok",
        "reason": "",
        "rc": None,
        "repeat": 1,
        "round": None,
        "group": None,
        "job_id": None,
    }


def counters_record(host, benchmark, before, after):
    """The ``ib_counters`` record of ``host`` for the snapshots ``before`` and ``after`` (:func:`snapshot`)."""
    before = before or {}
    after = after or {}
    record = _base("ib_counters %s" % benchmark, "ib_counters", [host], before.get("taken") or after.get("taken"))
    record["parsed"] = {
        "benchmark": str(benchmark),
        "before": before.get("counters"),
        "after": after.get("counters"),
        "hw_before": before.get("hw_counters"),
        "hw_after": after.get("hw_counters"),
        "before_taken": before.get("taken"),
        "after_taken": after.get("taken"),
    }
    return record


def plain_record(name, kind, hosts, started, outcome="skipped", reason="", **fields):
    """A record without output: ``outcome`` (``skipped`` by default) and ``reason``; ``fields`` set the rest."""
    record = _base(name, kind, hosts, started)
    record["outcome"] = outcome
    record["reason"] = str(reason or "")
    for key, value in fields.items():
        if key not in record:
            raise ValueError("unknown benchmark record field %s" % key)
        if value is not None:
            record[key] = value
    return record
