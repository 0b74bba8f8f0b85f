# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's benchmark section, drawn when benchmark records exist: single-node all-reduce busbw against its
floor, the pairwise busbw heatmap, iperf3 alone vs concurrent, and the multi-node all-reduce runs with the floor
and status their check gave them. A figure is drawn only when it is a finite float (common.finite)."""

from __future__ import annotations

from typing import Any

from gpufleet.checks.benchmarks import ALLREDUCE_KINDS, benchmark_kind, hosts_of, size_words
from gpufleet.checks.profiles import profile_value
from gpufleet.report.bars import bar_chart, heatmap
from gpufleet.report.common import NodeErrors, Record, View, cell_text, finite, note_error

# the benchmark section when its charts cannot be drawn at all
NO_BENCHMARKS: View = {"records": 0, "single": None, "pairwise": None, "iperf": None, "iperf_ratios": [],
                       "single_rows": [], "multi_rows": [], "multi": None, "multi_table": []}
# the kinds of chart data :func:`classify_benchmark` gives, in the order they are gathered
CHART_KINDS = ("single", "pair", "multi", "iperf")


def _busbw(parsed: Any) -> float | None:
    """The judged busbw (GB/s) of an nccl-tests parse: out-of-place at the largest size, else the maximum."""
    if not isinstance(parsed, dict) or parsed.get("failed"):
        return None
    for key in ("busbw_at_largest_size_gbs", "max_busbw_gbs"):
        value = finite(parsed.get(key))
        if value is not None and value > 0:
            return value
    return None


def _hosts_of(parsed: Any) -> list[str]:
    hosts = parsed.get("hosts") if isinstance(parsed, dict) else None
    return [str(host) for host in hosts] if isinstance(hosts, list) else []


def classify_benchmark(host: str, record: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
    """What a benchmark record is for the charts: ``(kind, data)`` or ``(None, None)``.

    The record's kind is checks/benchmarks.py :func:`benchmark_kind` (docs/report.md): an
    ``allreduce_single`` run is ``single``, ``allreduce_pair`` a ``pair`` (the other host of
    ``parsed.hosts``, else of the record's hosts, is the peer), ``allreduce_multi`` a ``multi``-node
    run; ``iperf3`` and ``iperf3_concurrent`` are ``iperf`` alone and concurrent.
    """
    kind = benchmark_kind(record)
    if kind in ALLREDUCE_KINDS:
        return _allreduce_data(host, kind, record)
    if kind in ("iperf3", "iperf3_concurrent"):
        return _iperf_data(host, kind, record)
    return None, None


def _allreduce_data(host: str, kind: str, record: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
    parsed = record.get("parsed")
    busbw = _busbw(parsed)
    if busbw is None or not isinstance(parsed, dict):  # a busbw comes only from a parse (a mapping)
        return None, None
    hosts = list(dict.fromkeys(_hosts_of(parsed)))
    ranks = parsed.get("ranks") if isinstance(parsed.get("ranks"), int) else None
    data = {"host": host, "busbw": busbw, "ranks": ranks, "hosts": hosts,
            "size": record.get("message_size_bytes") or parsed.get("largest_size_bytes")}
    if kind == "allreduce_single":
        return "single", data
    if kind == "allreduce_pair":
        peers = [other for other in hosts or hosts_of(record) if other != host]
        if not peers:
            return None, None  # a pair cell needs both ends
        data["peer"] = peers[0]
        return "pair", data
    return "multi", data


def _iperf_data(host: str, kind: str, record: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
    parsed = record.get("parsed")
    if not isinstance(parsed, dict):
        return None, None
    bps = finite(parsed.get("received_bps") or parsed.get("sent_bps"))
    if bps is None or bps <= 0:
        return None, None
    peer = parsed.get("remote_host")
    mode = "concurrent" if kind == "iperf3_concurrent" else "alone"
    name = str(record.get("name") or "")
    return "iperf", {"host": host, "peer": cell_text(peer) or name, "gbps": bps / 1e9, "mode": mode}


def _single_floor(record: Record, profiles: dict[str, Any] | None) -> tuple[float | None, str | None]:
    """``(floor GB/s, source)`` for a node's single-node all-reduce: a judged check first, else its profile."""
    for item in record.get("checks") or []:
        check_id = str(item.get("id"))
        if "allreduce" in check_id and "single" in check_id and finite(item.get("expected")) is not None:
            return finite(item["expected"]), cell_text(item.get("threshold_source"))
    name = (record.get("profile") or {}).get("name")
    threshold = profile_value((profiles or {}).get(name), "thresholds.allreduce_single_node")[0] if name else None
    if isinstance(threshold, dict) and finite(threshold.get("floor")) is not None:
        return finite(threshold["floor"]), "profile %s: %s" % (name, cell_text(threshold.get("source")))
    return None, None


def _classified(record: Record, profiles: dict[str, Any] | None) -> dict[str, list[dict[str, Any]]]:
    """``{kind: [data]}`` of one host record's benchmark records (:func:`classify_benchmark`)."""
    host = str(record.get("host"))
    found: dict[str, list[dict[str, Any]]] = {kind: [] for kind in CHART_KINDS}
    for bench in record.get("benchmarks") or []:
        if not isinstance(bench, dict):
            continue
        kind, data = classify_benchmark(host, bench)
        if kind is None or data is None:
            continue
        if kind == "single":
            data["floor"], data["floor_source"] = _single_floor(record, profiles)
        elif kind == "multi":
            # the run's inventory hosts (``hosts`` holds the names its output printed) and what identifies it,
            # for one row per run however many host records hold it
            data.update(run_hosts=hosts_of(bench), name=bench.get("name"), started=bench.get("started"),
                        repeat=bench.get("repeat"))
        found[kind].append(data)
    return found


def benchmark_views(records: list[Record], profiles: dict[str, Any] | None,
                    errors: NodeErrors | None = None) -> View:
    """Charts from the benchmark records; each key is None when there is nothing to draw. A node whose records cannot
    be read adds nothing, the reason in ``errors`` (host -> [text])."""
    found: dict[str, list[dict[str, Any]]] = {kind: [] for kind in CHART_KINDS}
    for record in records:
        try:
            classified = _classified(record, profiles)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # one node's records, not the charts
            note_error(errors, record.get("host"), "its benchmark records", exc)
            continue
        for kind in CHART_KINDS:
            found[kind] += classified[kind]
    single, pairs, multi, iperf = (found[kind] for kind in CHART_KINDS)
    single_chart = _single_chart(single) if single else None
    pairwise = heatmap(pairs, sorted({pair["host"] for pair in pairs} | {pair["peer"] for pair in pairs})) \
        if pairs else None
    iperf_chart, ratios = _iperf_view(iperf) if iperf else (None, [])
    multi_chart, multi_table = multi_node_view(records, multi)
    return {"records": sum(len(record.get("benchmarks") or []) for record in records), "single": single_chart,
            "pairwise": pairwise, "iperf": iperf_chart, "iperf_ratios": ratios, "single_rows": single,
            "multi_rows": multi, "multi": multi_chart, "multi_table": multi_table}


def _single_chart(single: list[dict[str, Any]]) -> View:
    """Each node's best single-node all-reduce against its floor, those below it first."""
    best: dict[str, dict[str, Any]] = {}
    for item in single:
        if item["host"] not in best or item["busbw"] > best[item["host"]]["busbw"]:
            best[item["host"]] = item
    ordered = sorted(best.values(),
                     key=lambda item: (item["floor"] is None or item["busbw"] >= item["floor"], item["busbw"]))
    chart = bar_chart([dict(item, label=item["host"]) for item in ordered], "busbw", "GB/s", floor_key="floor")
    chart["sources"] = sorted({item["floor_source"] for item in ordered if item["floor_source"]})
    return chart


def _iperf_view(iperf: list[dict[str, Any]]) -> tuple[View, list[dict[str, str]]]:
    """``(chart, ratios)``: every iperf3 run, and per pair measured both ways its concurrent/alone ratio."""
    items = []
    for item in sorted(iperf, key=lambda entry: (entry["host"], entry["peer"], entry["mode"])):
        items.append({"label": "%s \u2192 %s (%s)" % (item["host"], item["peer"], item["mode"]), "gbps": item["gbps"],
                      "css": "bar-alone" if item["mode"] == "alone" else "bar-conc"})
    chart = bar_chart(items, "gbps", "Gb/s")
    ratios = []
    for (host, peer), modes in _by_pair(iperf).items():
        if "alone" in modes and "concurrent" in modes and modes["alone"] > 0:
            ratios.append({"host": host, "peer": peer, "alone": "%.2f Gb/s" % modes["alone"],
                           "concurrent": "%.2f Gb/s" % modes["concurrent"],
                           "ratio": "%.2f" % (modes["concurrent"] / modes["alone"])})
    return chart, ratios


def _multi_judged(records: list[Record], name: Any, run_hosts: list[str], busbw: float) -> dict[str, Any] | None:
    """The ``benchmarks.allreduce_multi`` result of a run, from one of its hosts; None when none judged it.

    checks/benchmarks.py judges a run alike on each of its hosts, every message naming it ``<name> over <hosts>``;
    of those, the one whose measured figure is the run's busbw, else one with no figure (a socket fallback)."""
    by_host = {str(record.get("host")): record for record in records}
    where = "%s over %s" % (name, ", ".join(run_hosts))
    found = [item for host in run_hosts for item in (by_host.get(host) or {}).get("checks") or []
             if isinstance(item, dict) and item.get("id") == "benchmarks.allreduce_multi"
             and where in str(item.get("message"))]
    same = [item for item in found if _close_to(finite(item.get("measured")), busbw)]
    chosen = same or [item for item in found if finite(item.get("measured")) is None]
    return chosen[0] if chosen else None


def _close_to(figure: float | None, busbw: float) -> bool:
    return figure is not None and abs(figure - busbw) < 1e-6


def multi_node_view(records: list[Record], multi: list[dict[str, Any]]) -> tuple[View | None, list[dict[str, Any]]]:
    """``(chart, table rows)`` of the multi-node all-reduce runs, one per run, below their floor first; ``(None, [])``
    when there is none. The floor and status are the check's (benchmarks.allreduce_multi), not computed again."""
    runs: dict[tuple[Any, ...], dict[str, Any]] = {}
    for item in multi:
        key = (item.get("name"), item.get("started"), tuple(item["run_hosts"]), item.get("repeat"))
        runs.setdefault(key, item)
    if not runs:
        return None, []
    items = [_multi_run(records, item) for item in runs.values()]
    # below the floor first, as the single-node chart
    items.sort(key=lambda item: (item["floor"] is None or item["busbw"] >= item["floor"], item["run_hosts"],
                                 item["busbw"]))
    chart = bar_chart(items, "busbw", "GB/s", floor_key="floor")
    chart["sources"] = sorted({item["floor_source"] for item in items if item["floor_source"]})
    table = [{"hosts": ", ".join(item["run_hosts"]), "first_host": item["run_hosts"][0],
              "nodes": len(item["run_hosts"]), "ranks": "" if item["ranks"] is None else item["ranks"],
              "size": size_words(item["size"]) if isinstance(item["size"], int) else "",
              "busbw": "%s GB/s" % cell_text(round(item["busbw"], 2)),
              "floor": "" if item["floor"] is None else "%s GB/s" % cell_text(round(item["floor"], 2)),
              "status": item["status"]}
             for item in items]
    return chart, table


def _multi_run(records: list[Record], item: dict[str, Any]) -> dict[str, Any]:
    """One multi-node run with its label and the floor, source and status of the check that judged it."""
    run_hosts = item["run_hosts"] or item["hosts"] or [item["host"]]
    judged = _multi_judged(records, item.get("name"), run_hosts, item["busbw"])
    floor = finite((judged or {}).get("expected"))
    others = len(run_hosts) - 1
    label = "%s + %d node%s" % (run_hosts[0], others, "" if others == 1 else "s") if others else run_hosts[0]
    return dict(item, run_hosts=run_hosts, floor=floor, label=label,
                floor_source=cell_text((judged or {}).get("threshold_source")),
                status=(judged or {}).get("status") or "not judged")


def _by_pair(iperf: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, float]]:
    pairs: dict[tuple[str, str], dict[str, float]] = {}
    for item in iperf:
        modes = pairs.setdefault((item["host"], item["peer"]), {})
        modes[item["mode"]] = max(modes.get(item["mode"], 0.0), item["gbps"])
    return pairs
