# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's bar charts and heatmap as plain geometry (SVG user units): the templates draw them, labels stay
data (escaped by the renderer)."""

from __future__ import annotations

from typing import Any

from gpufleet.report.common import View

# Chart geometry (SVG user units).
CHART_WIDTH = 720
BAR_HEIGHT = 18
BAR_GAP = 6
LABEL_WIDTH = 230
HEAT_CELL = 34


def bar_chart(items: list[dict[str, Any]], value_key: str, unit: str, floor_key: str | None = None) -> View:
    """Horizontal bars, scaled to the largest value or floor: geometry only, labels stay data."""
    values = [item[value_key] for item in items]
    top = max(values + [item.get(floor_key) or 0 for item in items] if floor_key else values)
    top = top or 1.0
    span = CHART_WIDTH - LABEL_WIDTH - 90
    bars = []
    for position, item in enumerate(items):
        y = BAR_GAP + position * (BAR_HEIGHT + BAR_GAP)
        floor = item.get(floor_key) if floor_key else None
        below = floor is not None and item[value_key] < floor
        width = round(span * item[value_key] / top, 1)
        bars.append({
            "label": item["label"], "y": y, "text_y": y + BAR_HEIGHT - 5, "x": LABEL_WIDTH, "width": width,
            "value": "%.1f %s" % (item[value_key], unit), "value_x": LABEL_WIDTH + width + 4,
            "css": item.get("css") or ("bar-bad" if below else "bar-ok"),
            "floor_x": None if floor is None else round(LABEL_WIDTH + span * float(floor) / top, 1),
            "floor": None if floor is None else "{0:.1f} {1}".format(float(floor), unit),
        })
    return {"width": CHART_WIDTH, "height": BAR_GAP + len(items) * (BAR_HEIGHT + BAR_GAP), "bars": bars,
            "label_x": LABEL_WIDTH - 6}


def _heat_css(value: float | None, median: float | None) -> str:
    """A heatmap cell's colour class: none, below 90 % of the median, below the median, else good."""
    if value is None:
        return "h-none"
    if median and value < 0.9 * median:
        return "h-bad"
    if median and value < median:
        return "h-mid"
    return "h-good"


def heatmap(pairs: list[dict[str, Any]], hosts: list[str]) -> View:
    """The pairwise busbw matrix: ``{hosts, rows: [{host, cells: [{value, css, x, y}]}], ...}``."""
    values: dict[tuple[str, ...], float] = {}
    for pair in pairs:
        key = tuple(sorted((pair["host"], pair["peer"])))
        values[key] = max(values.get(key, 0.0), pair["busbw"])
    measured = sorted(values.values())
    median = measured[len(measured) // 2] if measured else None
    rows = []
    for row_index, row in enumerate(hosts):
        cells = []
        for col_index, col in enumerate(hosts):
            value = values.get(tuple(sorted((row, col)))) if row != col else None
            cells.append({"value": "%.0f" % value if value is not None else "",
                          "full": "%.1f GB/s" % value if value is not None else "",
                          "css": _heat_css(value, median), "x": LABEL_WIDTH + col_index * HEAT_CELL,
                          "y": 20 + row_index * HEAT_CELL})
        rows.append({"host": row, "y": 20 + row_index * HEAT_CELL + HEAT_CELL // 2 + 4, "cells": cells})
    return {"hosts": hosts, "rows": rows, "cell": HEAT_CELL, "label_x": LABEL_WIDTH - 6,
            "width": LABEL_WIDTH + len(hosts) * HEAT_CELL + 10, "height": 30 + len(hosts) * HEAT_CELL,
            "median": "%.1f GB/s" % median if median is not None else None,
            "columns": [{"host": host, "x": LABEL_WIDTH + index * HEAT_CELL + HEAT_CELL // 2}
                        for index, host in enumerate(hosts)]}
