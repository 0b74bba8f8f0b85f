# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's burn-in section: per-GPU time series of a run and per-GPU trends over runs (pure geometry).

:func:`burn_in_view` reads, from a results directory already loaded by report/model.py
``load_results``:

- each host's burn-in records (``hosts/<host>.json`` ``burn_in``, gpufleet/results/burn_in.py) and their samples
  files -> per node a table of per-GPU figures and three line charts over the run (temperature,
  SM clock, power), one line per GPU;
- ``history.json`` (written by the health_history action from the SQLite history) -> per node three
  trend charts (p95 temperature, SM clock median, mean power), one point per run per GPU, and the
  drift flags.

It returns None when the run has neither, so the report shows no empty section. Charts are plain
geometry and text (numbers, GPU labels as given by the node): the templates draw them with
autoescape on, and no node string is ever marked safe.

Size: a time-series line keeps at most ``MAX_POINTS`` points (longer runs are averaged in equal
buckets of consecutive samples); series charts are drawn for at most ``MAX_SERIES_NODES`` nodes and
trends for ``MAX_TREND_NODES`` (nodes with a burn-in finding first), the others keep their table.
"""

from __future__ import annotations

import os
from typing import Any

from gpufleet.results import burn_in as burnin_records
from gpufleet.facts import nvml_samples as nvml

MAX_POINTS = 240
MAX_SERIES_NODES = 16
MAX_TREND_NODES = 32

# Geometry (SVG user units): plot area [X0, X1] x [Y0, Y1], legend right of it.
WIDTH, HEIGHT = 760, 200
X0, X1, Y0, Y1 = 80.0, 580.0, 20.0, 170.0
LEGEND_X = 600
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")

SERIES_METRICS = (("temperature_c", "temperature", "C"), ("sm_clock_mhz", "SM clock", "MHz"), ("power_w", "power", "W"))
TREND_METRICS = (("temp_p95_c", "p95 temperature", "C"), ("sm_clock_median_mhz", "SM clock median", "MHz"),
                 ("power_mean_w", "mean power", "W"))
SEVERITY = ("fail", "error", "warn")
TABLE_FIELDS = ("temp_p95_c", "temp_max_c", "sm_clock_median_mhz", "sm_clock_min_mhz", "power_mean_w", "samples")
TABLE_HEADINGS = ["p95 temp C", "max temp C", "SM clock median MHz", "SM clock min MHz", "mean power W", "samples"]

# a point of a line: (x value, y value, its title or None)
Point = tuple[float, float, Any]


def _num(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return ("%.1f" % value).rstrip("0").rstrip(".")
    return str(value)


def gpu_label(index: Any, uuid: Any) -> str:
    return "GPU %s%s" % (index, " (%s)" % uuid if uuid else "")


def scale(low: float, high: float) -> tuple[float, float]:
    """``(low, high)`` of the y axis: the values' range, widened by 1 on each side when flat."""
    if low == high:
        return low - 1.0, high + 1.0
    return float(low), float(high)


def y_of(value: float, low: float, high: float) -> float:
    return round(Y1 - (float(value) - low) / (high - low) * (Y1 - Y0), 1)


def x_of(position: float, first: float, last: float) -> float:
    if last == first:
        return round((X0 + X1) / 2.0, 1)
    return round(X0 + (float(position) - first) / (last - first) * (X1 - X0), 1)


def downsample(points: list[tuple[float, float]], limit: int = MAX_POINTS) -> list[tuple[float, float]]:
    """At most ``limit`` points: consecutive points averaged in equal buckets (time and value)."""
    if len(points) <= limit:
        return list(points)
    size = -(-len(points) // limit)
    out = []
    for start in range(0, len(points), size):
        bucket = points[start:start + size]
        out.append((sum(t for t, _v in bucket) / len(bucket), sum(v for _t, v in bucket) / len(bucket)))
    return out


def _axis(low: float, high: float, unit: str) -> list[dict[str, Any]]:
    middle = (low + high) / 2.0
    return [{"y": y_of(value, low, high), "label": "%s %s" % (_num(round(value, 1)), unit)}
            for value in (high, middle, low)]


def line_chart(title: str, unit: str, lines: list[dict[str, Any]], x_words: str,
               dots: bool = False) -> dict[str, Any] | None:
    """A chart: ``lines`` is ``[{"label", "legend", "points": [(x value, y value, point title)]}]`` in GPU order."""
    xs = [x for line in lines for x, _y, _title in line["points"]]
    ys = [y for line in lines for _x, y, _title in line["points"]]
    if not xs:
        return None
    low, high = scale(min(ys), max(ys))
    first, last = min(xs), max(xs)
    series = []
    for position, line in enumerate(lines):
        placed = [(x_of(x, first, last), y_of(y, low, high), text) for x, y, text in line["points"]]
        series.append({
            "label": line["label"], "legend": line.get("legend") or line["label"],
            "color": PALETTE[position % len(PALETTE)],
            "points": " ".join("%s,%s" % (x, y) for x, y, _text in placed),
            "dots": [{"x": x, "y": y, "title": text} for x, y, text in placed] if dots else [],
            "legend_y": 28 + 16 * position,
        })
    return {"title": title, "unit": unit, "width": WIDTH, "height": max(HEIGHT, 40 + 16 * len(lines)), "x0": X0,
            "x1": X1, "y0": Y0, "y1": Y1, "legend_x": LEGEND_X, "y_ticks": _axis(low, high, unit), "x_words": x_words,
            "series": series}


# -- one run: time series ---------------------------------------------------------------------


def series_charts(parsed: dict[str, Any]) -> list[dict[str, Any]]:
    """The three time-series charts of a sampler run (seconds since its first sample on x)."""
    by_gpu = nvml.by_gpu(parsed.get("samples") or [])
    times = [sample["t"] for sample in parsed.get("samples") or []]
    if not times:
        return []
    start = min(times)
    charts = []
    for field, words, unit in SERIES_METRICS:
        lines = []
        for index in sorted(by_gpu):
            ident = nvml.gpu_identity(index, by_gpu[index], parsed.get("header"))
            points = downsample([(t - start, value) for t, value in nvml.values(by_gpu[index], field)])
            if points:
                lines.append({"label": gpu_label(index, ident.get("uuid")), "legend": "GPU %s" % index,
                              "points": [(t, value, None) for t, value in points]})
        chart = line_chart("%s (%s) over the run" % (words, unit), unit, lines,
                           "seconds since the first sample, 0 to %s" % _num(round(max(times) - start, 1)))
        if chart:
            charts.append(chart)
    return charts


def _findings(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for item in record.get("checks") or []
            if isinstance(item, dict) and str(item.get("id", "")).startswith("burn_in")
            and item.get("status") in ("fail", "warn", "error")]


def _table(record_entry: dict[str, Any], findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    flagged: dict[Any, list[str]] = {}
    for item in findings:
        gpu = item.get("gpu")
        if not isinstance(gpu, dict):
            gpu = {}
        if gpu.get("index") is not None:
            flagged.setdefault(gpu["index"], []).append("%s %s" % (item.get("status"), item.get("id")))
    rows = []
    for summary in record_entry.get("gpus") or []:
        if not isinstance(summary, dict):
            continue
        rows.append({"gpu": _num(summary.get("index")), "uuid": _num(summary.get("uuid")),
                     "name": _num(summary.get("name")), "cells": [_num(summary.get(field)) for field in TABLE_FIELDS],
                     "lost": bool(summary.get("lost")), "flags": "; ".join(flagged.get(summary.get("index"), []))})
    return rows


# -- over runs: trends ------------------------------------------------------------------------


def trend_charts(gpus: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Three trend charts from one host's history series (``history.json`` ``series[host]``): one point per run."""
    runs = sorted({(point.get("started") or "", point.get("run_id") or "")
                   for gpu in gpus for point in gpu.get("points") or []})
    position = {run: number for number, run in enumerate(runs)}
    charts = []
    for field, words, unit in TREND_METRICS:
        lines = []
        for gpu in sorted(gpus, key=lambda item: (item.get("index") is None, item.get("index"), str(item.get("uuid")))):
            label = gpu_label(gpu.get("index"), gpu.get("uuid"))
            points = _trend_points(gpu, field, label, unit, position)
            if points:
                lines.append({"label": label, "legend": "GPU %s" % gpu.get("index"), "points": points})
        chart = line_chart("%s (%s), one point per run" % (words, unit), unit, lines,
                           "%d run(s): %s to %s" % (len(runs), runs[0][1], runs[-1][1]) if runs else "", dots=True)
        if chart:
            charts.append(chart)
    return charts


def _trend_points(gpu: dict[str, Any], field: str, label: str, unit: str,
                  position: dict[tuple[Any, Any], int]) -> list[Point]:
    """One GPU's points of ``field``, one per run (x: the run's place in ``position``), each titled with its run."""
    points: list[Point] = []
    for point in gpu.get("points") or []:
        value = point.get(field)
        if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        key = (point.get("started") or "", point.get("run_id") or "")
        points.append((position[key], value, "%s: run %s (%s): %s %s" % (
            label, point.get("run_id"), point.get("started"), _num(value), unit)))
    return points


# -- the section --------------------------------------------------------------------------------


def burn_in_view(results: dict[str, Any]) -> dict[str, Any] | None:
    """The burn-in section's model, or None when the run has no burn-in record and no history."""
    path = results.get("path")
    hosts = results.get("hosts") or {}
    history = burnin_records.read_history(path) if path and os.path.isdir(path) else None
    entries = _entries(hosts)
    series = (history or {}).get("series") or {}
    if not entries and not series:
        return None
    entries.sort(key=lambda item: (not item["findings"], item["host"]))
    nodes = [_node_view(path, number, item) for number, item in enumerate(entries)]
    trends = _history_views(history or {}, series)
    return {
        "nodes": nodes,
        "table_fields": list(TABLE_HEADINGS),
        "trends": trends["trends"],
        "trend_note": trends["trend_note"],
        "series_note": _left_out_note("time series of %d more node(s) are left out (their samples are in raw/)",
                                      len(entries), MAX_SERIES_NODES),
        "drift": trends["drift"],
        "history_db": _num((history or {}).get("db")),
        "history_runs": (history or {}).get("runs") or 0,
    }


def _history_views(history: dict[str, Any], series: dict[str, Any]) -> dict[str, Any]:
    """``{trends, trend_note, drift}`` of ``history.json``: the trend charts of at most MAX_TREND_NODES hosts (those
    with a drift flag first) and the drift flags as rows."""
    flags = [flag for flag in history.get("flags") or [] if isinstance(flag, dict)]
    flagged_hosts = {flag.get("host") for flag in flags}
    trend_hosts = sorted(series, key=lambda host: (host not in flagged_hosts, host))
    trends = [{"host": host, "charts": trend_charts([gpu for gpu in series[host] if isinstance(gpu, dict)])}
              for host in trend_hosts[:MAX_TREND_NODES]]
    drift = [{"host": _num(flag.get("host")), "gpu": gpu_label(flag.get("gpu"), flag.get("uuid")),
              "status": _num(flag.get("status")), "message": _num(flag.get("message"))} for flag in flags]
    return {"trends": trends, "drift": drift,
            "trend_note": _left_out_note("trends of %d more node(s) are in the history store only",
                                         len(trend_hosts), MAX_TREND_NODES)}


def _entries(hosts: dict[str, Any]) -> list[dict[str, Any]]:
    """``[{host, record, findings}]``: every burn-in record of every host, with the host's burn-in findings."""
    entries = []
    for host in sorted(hosts):
        record = hosts[host]
        for entry in burnin_records.records_of(record):
            findings = _findings(record)
            entries.append({"host": host, "record": entry, "findings": findings})
    return entries


def _left_out_note(words: str, count: int, limit: int) -> str | None:
    """``words`` naming how many of ``count`` are past ``limit``; None when none is."""
    return words % (count - limit) if count > limit else None


def _node_view(path: Any, number: int, item: dict[str, Any]) -> dict[str, Any]:
    """One burn-in record of a node: its load, findings, per-GPU table, and (the first MAX_SERIES_NODES, nodes with
    a finding first) its time-series charts."""
    entry = item["record"]
    load = entry.get("load") if isinstance(entry.get("load"), dict) else None
    charts: list[dict[str, Any]] = []
    problem = None
    if number < MAX_SERIES_NODES:
        parsed, problem = burnin_records.load_samples(path, entry)
        charts = series_charts(parsed) if parsed else []
    findings = item["findings"]
    return {
        "host": item["host"], "name": _num(entry.get("name")), "kind": _num(entry.get("kind")),
        "tool": _num((load or {}).get("tool")) or ("no load" if load is None else "none"),
        "outcome": _num((load or {}).get("outcome")), "samples_path": _num(entry.get("samples_path")),
        "started": _num(entry.get("started")), "problem": _num(problem),
        "findings": [{"id": _num(finding.get("id")), "status": _num(finding.get("status")),
                      "message": _num(finding.get("message"))} for finding in findings],
        "worst": min((str(finding.get("status")) for finding in findings), key=SEVERITY.index) if findings else None,
        "rows": _table(entry, findings), "charts": charts, "charted": number < MAX_SERIES_NODES,
    }
