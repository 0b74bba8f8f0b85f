# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's cost-to-train section in words and bars: the arithmetic is report/cost.py :func:`cost_view` (the
model of plan/training.py); here each figure gets its display text, the layout, memory and communication share
behind it, and what it rests on unmeasured (assumed, claimed)."""

from __future__ import annotations

from typing import Any

from gpufleet.report.bars import bar_chart
from gpufleet.report.common import View, cell_text
from gpufleet.report.cost import ReferenceJobError, cost_view, validate_job
from gpufleet.report.offers import largest_busbw

INPUT_NAMES = {"gpu_model": "GPU model", "gpus_per_node": "GPUs per node", "gpu_memory_gb": "memory per GPU",
               "nvlink_domain_gpus": "NVLink domain (GPUs)", "gemm_tflops": "GEMM rate per GPU",
               "intra_node_busbw_gbs": "all-reduce busbw in a node", "inter_node_busbw_gbs": "all-reduce busbw "
               "across nodes", "price_per_node_hour": "price per node-hour"}

# the cost chart's labels (GPU model, interconnect, price) and values (cost and its caveats) are long: wider columns
COST_LABEL_WIDTH, COST_BAR_SPAN, COST_VALUE_WIDTH = 470, 330, 440


def cost_chart_view(records: list[dict[str, Any]], job: dict[str, Any] | None = None) -> View | None:
    """The cost-to-train view (report/cost.py :func:`cost_view`) with display text: per reference model a bar chart
    of the offers that can train it, cheapest first, and per offer the layout, memory and communication share behind
    each figure; None when no claim has a price."""
    view = cost_view(records, job)
    if view is None:
        return None
    for row in view["rows"]:
        row["cells"] = [_cost_cell(item) for item in row["estimates"]]
        row["sources"] = [_input_line(name, item) for name, item in row["inputs"].items()]
        row["assumed"] = [INPUT_NAMES.get(name, name) for name, item in row["inputs"].items()
                          if item["kind"] != "measured"]
        row["not_measured"] = _not_measured(row["inputs"])
    charts = []
    for position, model in enumerate(view["models"]):
        chart = _model_chart(view["rows"], position, model)
        if chart is not None:
            charts.append(chart)
    view["charts"] = charts
    view["tokens"] = "{:,.0f} tokens".format(view["job"]["tokens"])
    view["batch_tokens"] = "{:,.0f}".format(view["job"]["global_batch_tokens"])
    view["model_specs"] = ["%s: %s billion parameters, %d layers, hidden %d, %d heads, sequence %d, vocabulary %d"
                           % (model["name"], "{:.4g}".format(model["parameters"] / 1e9), model["layers"],
                              model["hidden"], model["heads"], model["seq_len"], model["vocab"])
                           for model in view["job"]["models"]]
    return view


def _model_chart(rows: list[dict[str, Any]], position: int, model: Any) -> dict[str, Any] | None:
    """``{model, chart}``: the offers that can train the model at ``position``, cheapest first; None for none."""
    able = [row for row in rows if row["estimates"][position]["cost"] is not None]
    ordered = sorted(able, key=lambda row: (row["estimates"][position]["cost"], row["label"]))
    if not ordered:
        return None
    items = [{"label": row["label"], "cost_k": row["estimates"][position]["cost"] / 1000.0,
              "css": "bar-ok" if not row["assumed"] else "bar-assumed"} for row in ordered]
    chart = _wide_labels(bar_chart(items, "cost_k", "k$"), items, "cost_k")
    for drawn, row in zip(chart["bars"], ordered):
        cell = row["cells"][position]
        drawn["value"] = "%s, %s days on %s, %s communication" % (
            cell["cost"], cell["days"], cell["nodes"], cell["comm_share"])
    return {"model": model, "chart": chart}


def _not_measured(inputs: dict[str, Any]) -> str:
    """``assumed: GEMM rate per GPU, ...; claimed: price per node-hour``: what an offer's figures rest on unmeasured."""
    kinds = []
    for kind in ("assumed", "claimed", "unknown"):
        names = [INPUT_NAMES.get(name, name) for name, item in inputs.items() if item["kind"] == kind]
        if names:
            kinds.append("%s: %s" % (kind, ", ".join(names)))
    return "; ".join(kinds)


def _layout_text(layout: dict[str, Any]) -> str:
    text = ("tp %(tp)d \u00b7 pp %(pp)d \u00b7 dp %(dp)d, ZeRO-%(zero_stage)d, micro-batch %(micro_batch)d, "
            "recompute %(recompute)s" % layout)
    if layout.get("interleave", 1) > 1:
        text += ", interleave %d" % layout["interleave"]
    return text


def _cost_cell(item: dict[str, Any]) -> dict[str, Any]:
    """One model on one offer, in words: the cost and what it rests on, or why it cannot be trained."""
    if not item["feasible"]:
        return {"feasible": False, "reason": item["reason"], "cost": None, "nodes": None}
    times = item["step_time_s"]
    return {"feasible": True, "cost": "${:,.0f}".format(item["cost"]), "days": "{:,.1f}".format(item["days"]),
            "gpu_hours": "{:,.0f}".format(item["gpu_hours"]),
            "nodes": "%d node%s" % (item["nodes"], "s" if item["nodes"] != 1 else ""),
            "layout": _layout_text(item["parallelism"]), "memory": "%.1f GB" % item["memory_per_gpu_gb"],
            "comm_share": "%.1f %%" % (100.0 * item["communication_share"]),
            "step": "step %.2f s: compute %.2f, tensor-parallel %.2f, bubble %.2f, data-parallel %.2f"
                    % (times["total"], times["compute"], times["tp_comm"], times["pp_bubble"], times["dp_comm"]),
            "mfu": "" if item["mfu"] is None else "MFU %.1f %%" % (100.0 * item["mfu"])}


def _input_line(name: str, item: dict[str, Any]) -> dict[str, Any]:
    """One input of an offer's figures: its name, value in words, kind (measured, claimed, assumed) and source."""
    value = item["value"]
    if isinstance(value, list):
        shown = "%d sizes, %.1f GB/s at the largest" % (len(value), largest_busbw(value))
    elif name == "gemm_tflops":
        shown = "%.1f TFLOP/s" % value
    elif name.endswith("busbw_gbs"):
        shown = "%.1f GB/s" % value
    elif name == "price_per_node_hour":
        shown = "$%.2f" % value
    elif name == "gpu_memory_gb":
        shown = "%s GB" % cell_text(value)
    else:
        shown = cell_text(value)
    return {"name": INPUT_NAMES.get(name, name), "value": shown, "kind": item["kind"], "source": item["source"]}


def _wide_labels(chart: View, items: list[dict[str, Any]], value_key: str) -> View:
    """``chart`` (bar_chart's geometry) redrawn with COST_LABEL_WIDTH for the labels and room for long values."""
    top = max(item[value_key] for item in items) or 1.0
    for drawn, item in zip(chart["bars"], items):
        width = round(COST_BAR_SPAN * item[value_key] / top, 1)
        drawn.update(x=COST_LABEL_WIDTH, width=width, value_x=COST_LABEL_WIDTH + width + 4)
    chart.update(width=COST_LABEL_WIDTH + COST_BAR_SPAN + COST_VALUE_WIDTH, label_x=COST_LABEL_WIDTH - 6)
    return chart


def reference_job(results: dict[str, Any], job: Any = None) -> tuple[dict[str, Any], str | None]:
    """``(job, problem)``: ``job`` (a mapping, e.g. from the CLI) else run.json ``settings.reference_job`` checked
    against report/cost.py's defaults; an invalid one gives the defaults and the problem in words."""
    value = job if job is not None else ((results.get("run") or {}).get("settings") or {}).get("reference_job")
    try:
        return validate_job(value), None
    except ReferenceJobError as exc:
        return validate_job(None), "%s: the defaults are used" % exc
