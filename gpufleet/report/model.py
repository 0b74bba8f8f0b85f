# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The render model of the fleet acceptance report: a results directory read into plain data.

Pure and controller side: :func:`load_results` reads a run directory (schema
``gpufleet.results/v1``, docs/results-schema.md) and :func:`build_model` turns it into what the
templates show, so the same results can be rendered again without running anything. Each section
is built by its module of gpufleet/report/ and assembled here:

- the fleet verdict and counts (fleet.py); nodes sorted failing first (REJECT, UNREACHABLE, INCOMPLETE,
  not judged, ACCEPT WITH WARNINGS, ACCEPT), each with its reasons (reasons.py: measured vs expected in
  words with their units, alike findings on many GPUs folded into one row), its required-evidence
  coverage and INCOMPLETE reasons (coverage.py :func:`coverage_view`), and its claim beside what was
  measured (claims.py; the node's row: nodes.py);
- topology matrices grouped by fingerprint (topology_view.py): identical matrices are shown once with
  their nodes;
- the GPU table (gpu_view.py) with values that differ from the fleet majority (same GPU model) or the
  node majority flagged; the NIC table (claims.py);
- benchmark charts when benchmark records exist (benchmark_view.py: single-node all-reduce busbw
  against its floor, pairwise busbw heatmap, iperf3 alone vs concurrent), each as plain geometry
  (bars.py);
- the cost to train reference models per offer (accepted nodes alike) when a claim carries
  ``price_per_node_hour`` (report/cost.py, the model of plan/training.py, shown by cost_chart.py: the
  layout, memory and communication share behind each figure, every input measured, claimed or
  assumed; nodes not accepted apart), and the per-GPU throughput table of the gpu_compute records,
  fleet-relative outliers flagged (throughput.py);
- the burn-in charts (charts_series.py).

Every string taken from a node stays a plain string here: escaping is the renderer's job
(render.py), never done twice and never skipped.

One node's data never takes the report down: any exception while building a node's row, its GPU
rows, its topology group or its benchmark bars is caught for that node alone and shown on its row
(``error``) while every other node renders; a fleet-wide view (the cost to train, the throughput
table, the burn-in charts) that raises is left out and named in ``problems``. A figure is drawn only
when it is a finite float (common.py :func:`finite`): a 400-digit integer is no bar.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any, Callable

from gpufleet.checks.profiles import load_profiles
from gpufleet.report.benchmark_view import NO_BENCHMARKS, benchmark_views, classify_benchmark
from gpufleet.report.charts_series import burn_in_view
from gpufleet.report.common import (ACCEPT, ACCEPT_WITH_WARNINGS, INCOMPLETE, NOT_JUDGED, REJECT, UNREACHABLE,
                                    VERDICT_CLASS, VERDICT_ORDER, VERDICTS, NodeErrors, Record, View, cell_text,
                                    error_words, finite)
from gpufleet.report.cost import cost_document, verdict_of
from gpufleet.report.cost_chart import cost_chart_view, reference_job
from gpufleet.report.coverage import coverage_view
from gpufleet.report.fleet import fleet_view, status_totals
from gpufleet.report.gpu_view import GPU_COLUMNS, gpu_table
from gpufleet.report.next_steps import next_step
from gpufleet.report.nodes import node_row, not_measured, slurm_words
from gpufleet.report.reasons import figure_text, fold_gpus, gpu_ranges, other_checks
from gpufleet.report.throughput import throughput_view
from gpufleet.report.topology_view import link_class, topology_fingerprint, topology_groups
from gpufleet.results.compact import DOCUMENT_SCHEMA, compact_hosts, document_fields
from gpufleet.results.slurm_drain import SLURM_FILE
from gpufleet.results.store import FLEET_FILE, SCHEMA, ResultsError, RunDir, read_json

# The names other code imports from here (render.py, cli/common.py, plugins/action/render_report.py, the tests):
# the model's entry points, and each section's builder where it now lives.
__all__ = [
    "ACCEPT", "ACCEPT_WITH_WARNINGS", "INCOMPLETE", "NOT_JUDGED", "REJECT", "UNREACHABLE", "VERDICTS", "VERDICT_ORDER",
    "VERDICT_CLASS", "ReportError", "build_model", "document_views", "load_results", "results_document",
    "load_profile_thresholds",
    "error_words", "finite", "figure_text", "fold_gpus", "gpu_ranges", "coverage_view", "node_row", "not_measured",
    "slurm_words", "gpu_table", "topology_groups", "topology_fingerprint", "link_class", "benchmark_views",
    "classify_benchmark", "cost_chart_view", "throughput_view", "reference_job",
]
# tests/unit/gpufleet/report/test_report_scale.py reads the other-checks rows by their former private name
_other_checks = other_checks

RUN_FIELDS = ("run_id", "started", "finished", "status", "playbook", "gpufleet_version", "ansible_version")
# the verdicts of the nodes listed under "failing" (the ones not accepted)
FAILING = (REJECT, UNREACHABLE, INCOMPLETE, NOT_JUDGED)


class ReportError(Exception):
    """A directory that is not a readable gpufleet results directory; the message names the file."""


# -- reading -------------------------------------------------------------------------------


def _optional_json(directory: str, name: str) -> Any:
    """The JSON document ``name`` of the results directory, None where it is not there (a run still going: no
    fleet.json; no --slurm-drain: no slurm.json); ReportError naming the file when it cannot be read."""
    path = os.path.join(directory, name)
    if not os.path.exists(path):
        return None
    try:
        return read_json(path)
    except ResultsError as exc:
        raise ReportError(str(exc)) from None


def load_run(path: str) -> dict[str, Any]:
    """``{"path", "run", "fleet", "slurm", "hosts": {}}`` of the run directory at ``path``: :func:`load_results`
    without the host records (report/digest.py reads them one at a time)."""
    if not os.path.isdir(path):
        raise ReportError("%s: not a directory (expected a gpufleet results directory with run.json)" % path)
    try:
        run_dir = RunDir.open(path)
        run = run_dir.read_run()
    except ResultsError as exc:
        raise ReportError("%s is not a gpufleet results directory: %s" % (path, exc)) from None
    fleet_path = os.path.join(run_dir.path, FLEET_FILE)
    fleet = _optional_json(run_dir.path, FLEET_FILE)
    # a fleet.json that is there but not this schema's document (null included) is refused, never read as absent
    if os.path.exists(fleet_path) and (not isinstance(fleet, dict) or fleet.get("schema") != SCHEMA):
        raise ReportError("%s: schema %r, this gpufleet reads %s" % (fleet_path, (fleet or {}).get("schema"), SCHEMA))
    slurm = _optional_json(run_dir.path, SLURM_FILE)
    return {"path": run_dir.path, "run": run, "fleet": fleet, "hosts": {}, "slurm": slurm}


def load_results(path: str) -> dict[str, Any]:
    """``{"path", "run", "fleet", "hosts", "slurm"}`` of the run directory at ``path``.

    ``fleet`` is None while the run is unfinished (no ``fleet.json``); ``hosts`` maps each host
    name to its record without its raw index and health re-reads. ReportError when the directory has no
    ``run.json`` of this schema.
    """
    results = load_run(path)
    # the readings no view shows nor results.json keeps (the checks judged them): a sixth of 10,000 records' memory
    results["hosts"] = RunDir.open(results["path"]).host_records(without=("raw", "health_after"))
    return results


# the per-GPU fields of results.json's gpu_throughput rows
THROUGHPUT_FIELDS = ("host", "gpu", "name", "bus_id", "gemm_tflops", "hbm_gbs", "outlier", "findings")


def _document(results: dict[str, Any], schema: str, generated: str | None, **parts: Any) -> dict[str, Any]:
    """The run as one JSON document of ``schema``: run, fleet, ``parts`` (its hosts), and slurm.json when there is
    one."""
    document = {"schema": schema, "generated": generated, "run": results["run"], "fleet": results["fleet"], **parts}
    if results.get("slurm") is not None:
        document["slurm"] = results["slurm"]
    return document


def run_document(results: dict[str, Any], generated: str | None = None) -> dict[str, Any]:
    """The run in full as one JSON document (schema ``gpufleet.results/v1``: the CLI's ``--output json``): run,
    fleet, every host record as ``hosts/<host>.json`` holds it, and slurm.json when there is one."""
    hosts = {name: results["hosts"][name] for name in sorted(results["hosts"])}
    return _document(results, SCHEMA, generated, hosts=hosts)


def results_document(results: dict[str, Any], generated: str | None = None, model: View | None = None,
                     compacted: tuple[dict[str, Any], list[Any]] | None = None) -> dict[str, Any]:
    """``results.json`` (schema ``gpufleet.results/v2``, gpufleet/results/compact.py): run, fleet, and every host
    record without its readings (facts, raw index, health re-reads, parsed benchmark outputs), its checks and coverage
    items as rows of ``values``; with the render ``model``, also ``cost_to_train`` (report/cost.py
    :func:`cost_document`) and ``gpu_throughput`` (per-GPU rows); ``compacted``: the hosts and values already
    compacted (report/digest.py: ``results["hosts"]`` then holds cut-down records)."""
    hosts, values = compacted or compact_hosts(results["hosts"])
    document = _document(results, DOCUMENT_SCHEMA, generated, fields=document_fields(), values=values, hosts=hosts)
    if model is not None:
        document["cost_to_train"] = cost_document(model.get("cost"))
        throughput = model.get("throughput") or {}
        document["gpu_throughput"] = [{key: row[key] for key in THROUGHPUT_FIELDS}
                                      for row in throughput.get("rows") or []]
    return document


def load_profile_thresholds(profiles_dir: str | None = None) -> dict[Any, Any]:
    """The profiles (by name) for benchmark floors; {} when they cannot be loaded (the charts then show no floor)."""
    try:
        loaded = load_profiles(profiles_dir) if profiles_dir else load_profiles()
    except Exception:  # pylint: disable=broad-exception-caught
        return {}
    if isinstance(loaded, dict):
        return loaded
    return {item.get("name"): item for item in loaded or [] if isinstance(item, dict)}


# -- the whole model -----------------------------------------------------------------------


def _section(problems: list[str], what: str, build: Callable[[], Any], empty: Any = None) -> Any:
    """``build()``; when it raises, ``empty`` and a line in ``problems``: a fleet-wide view that some node's data broke
    is left out, never the report."""
    try:
        return build()
    except Exception as exc:  # pylint: disable=broad-exception-caught  # the report renders without this view
        problems.append("the %s could not be drawn: %s" % (what, error_words(exc)))
        return empty


def _complete_nodes(nodes: list[View], results: dict[str, Any], gpu_rows: dict[str, Any],
                    flagged: list[dict[str, Any]], errors: NodeErrors) -> None:
    """Each node's row completed with what the fleet-wide sections found for it: its next step, what
    ``--slurm-drain`` did, its GPU rows, how many of its GPU values are flagged, and what could not be shown."""
    where = str(results.get("path") or "RESULTS_DIR")
    # counted and looked up once per fleet: a scan per node was N x N (11 s of a 10,000-node report's profile)
    slurm = slurm_words(results.get("slurm"))
    flagged_per_host = Counter(item["host"] for item in flagged)
    for node in nodes:
        node["next_step"] = next_step(node["verdict"], node["host"], where, node["coverage"].get("incomplete") or [])
        node["slurm"] = slurm.get(node["host"], "")
        node["gpu_rows"] = gpu_rows.get(node["host"], [])
        node["flagged"] = flagged_per_host[node["host"]]
        node["error"] = "; ".join(text for text in [node["error"]] + errors.get(node["host"], []) if text)


def _node_rows(ordered: list[Record], rows: dict[str, View] | None) -> list[View]:
    """Each node's row (nodes.py ``node_row``), in order: those already made (report/digest.py) or made here; its
    anchor by its place."""
    if rows is None:
        return [node_row(index, record) for index, record in enumerate(ordered)]
    nodes = [rows[record["host"]] for record in ordered]
    for index, node in enumerate(nodes):
        node["anchor"] = "node-%d" % index
    return nodes


def _ordered(results: dict[str, Any]) -> list[Record]:
    """The host records, failing first (by verdict, then host)."""
    records = [results["hosts"][name] for name in sorted(results.get("hosts") or {})]
    return sorted(records, key=lambda record: (VERDICT_ORDER[verdict_of(record)], str(record.get("host"))))


def document_views(results: dict[str, Any], job: Any = None, ordered: list[Record] | None = None) -> View:
    """The views of the model results.json keeps (:func:`results_document`), ``cost`` and ``throughput``, made from
    the records alone: results.json can be written before the rest of the model is built (report/writers.py); and
    ``cost_problem``, what was wrong with the reference job asked for; ``problems``, each view left out, named."""
    ordered = _ordered(results) if ordered is None else ordered
    job, cost_problem = reference_job(results, job)
    problems: list[str] = []
    return {"cost": _section(problems, "cost to train", lambda: cost_chart_view(ordered, job)),
            "cost_problem": cost_problem,
            "throughput": _section(problems, "GPU throughput table", lambda: throughput_view(ordered)),
            "problems": problems}


def build_model(results: dict[str, Any], profiles: dict[str, Any] | None = None, title: str | None = None,
                job: Any = None, rows: dict[str, View] | None = None, views: View | None = None) -> View:
    """The render model of ``results`` (from :func:`load_results`); ``job``: the reference job of the cost view
    (report/cost.py), else run.json ``settings.reference_job``, else the defaults. ``problems`` names a view left
    out; a node's ``error`` what of it could not be shown (the module docstring). ``rows``: each host's row made as
    its record was read (report/digest.py), ``results["hosts"]`` then holding the records as the views read them;
    ``views``: :func:`document_views` already made (for ``job``)."""
    run = results.get("run") or {}
    ordered = _ordered(results)
    errors: NodeErrors = {}
    problems: list[str] = []
    nodes = _node_rows(ordered, rows)
    gpu_rows, flagged = _section(problems, "GPU table", lambda: gpu_table(ordered, errors), ({}, []))
    benchmarks = _section(problems, "benchmark charts", lambda: benchmark_views(ordered, profiles, errors),
                          dict(NO_BENCHMARKS))
    topology = _section(problems, "topology matrices", lambda: topology_groups(ordered, errors), [])
    kept = document_views(results, job, ordered) if views is None else views
    problems.extend(kept["problems"])
    _complete_nodes(nodes, results, gpu_rows, flagged, errors)
    fleet = fleet_view(results.get("fleet"), run, nodes)
    totals = status_totals(nodes)
    return {
        "title": title or "gpufleet acceptance report",
        "run": {key: cell_text(run.get(key)) for key in RUN_FIELDS},
        "inventory": ", ".join(str(item) for item in run.get("inventory") or []),
        "fleet": fleet,
        "status_totals": totals,
        "nodes": nodes,
        "failing": [node for node in nodes if node["verdict"] in FAILING],
        "topology_groups": topology,
        "gpu_columns": [label for _field, label in GPU_COLUMNS],
        "gpu_flagged": flagged,
        "benchmarks": benchmarks,
        "cost": kept["cost"],
        "cost_problem": kept["cost_problem"],
        "throughput": kept["throughput"],
        # the burn-in section (report/charts_series.py): None when the run has no burn-in record and no history
        "burn_in": _section(problems, "burn-in charts", lambda: burn_in_view(results)),
        "problems": problems,
    }
