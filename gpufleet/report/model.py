# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The render model of the fleet acceptance report: a results directory read into plain data.

Pure and controller side: :func:`load_results` reads a run directory (schema
``gpufleet.results/v1``, docs/results-schema.md) and :func:`build_model` turns it into what the
templates show, so the same results can be rendered again without running anything:

- the fleet verdict and counts; nodes sorted failing first (REJECT, UNREACHABLE, INCOMPLETE, not
  judged, ACCEPT WITH WARNINGS, ACCEPT), each with its reasons (measured vs expected in words with
  their units, alike findings on many GPUs folded into one row), its required-evidence coverage and
  INCOMPLETE reasons (:func:`coverage_view`), and its claim beside what was measured;
- topology matrices grouped by fingerprint: identical matrices are shown once with their nodes;
- the GPU table with values that differ from the fleet majority (same GPU model) or the node
  majority flagged; the NIC table;
- benchmark charts when benchmark records exist (single-node all-reduce busbw against its
  floor, pairwise busbw heatmap, iperf3 alone vs concurrent), each as plain geometry;
- the cost to train reference models per offer (accepted nodes alike) when a claim carries
  ``price_per_node_hour`` (report/cost.py, the model of plan/training.py: the layout, memory and
  communication share behind each figure, every input measured, claimed or assumed; nodes not
  accepted apart), and the per-GPU throughput table of the gpu_compute records, fleet-relative
  outliers flagged.

Every string taken from a node stays a plain string here: escaping is the renderer's job
(render.py), never done twice and never skipped.

One node's data never takes the report down: any exception while building a node's row, its GPU
rows, its topology group or its benchmark bars is caught for that node alone and shown on its row
(``error``) while every other node renders; a fleet-wide view (the cost to train, the throughput
table, the burn-in charts) that raises is left out and named in ``problems``. A figure is drawn only
when it is a finite float (:func:`finite`): a 400-digit integer is no bar.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shlex
from collections import Counter
from typing import Any

from gpufleet.checks.benchmarks import ALLREDUCE_KINDS, benchmark_kind, hosts_of, size_words
from gpufleet.checks.model import ACCEPTED
from gpufleet.checks.profiles import load_profiles, profile_value
from gpufleet.report.charts_series import burn_in_view
from gpufleet.report.cost import NOT_JUDGED, ReferenceJobError, cost_document, cost_view, validate_job, verdict_of
from gpufleet.report.next_steps import next_step
from gpufleet.report.offers import largest_busbw
from gpufleet.report.throughput import throughput_rows
from gpufleet.results.gpu_compute import DTYPES, HBM_KERNELS
from gpufleet.results.slurm_drain import SLURM_FILE
from gpufleet.results.store import FLEET_FILE, SCHEMA, ResultsError, RunDir, read_json
from gpufleet.text import one_line

ACCEPT = "ACCEPT"
ACCEPT_WITH_WARNINGS = "ACCEPT WITH WARNINGS"
REJECT = "REJECT"
UNREACHABLE = "UNREACHABLE"
INCOMPLETE = "INCOMPLETE"
VERDICTS = (ACCEPT, ACCEPT_WITH_WARNINGS, INCOMPLETE, REJECT, UNREACHABLE)

# Failing first: what a reader must act on comes first, at 10 nodes or 1,000.
VERDICT_ORDER = {REJECT: 0, UNREACHABLE: 1, INCOMPLETE: 2, NOT_JUDGED: 3, ACCEPT_WITH_WARNINGS: 4, ACCEPT: 5}
VERDICT_CLASS = {REJECT: "reject", UNREACHABLE: "unreachable", INCOMPLETE: "incomplete", NOT_JUDGED: "notjudged",
                 ACCEPT_WITH_WARNINGS: "warn", ACCEPT: "accept"}
STATUS_ORDER = {"fail": 0, "error": 1, "warn": 2, "skip": 3, "pass": 4}
REASON_STATUSES = ("fail", "error", "warn")

# Link classes of `nvidia-smi topo -m` codes (gpufleet/facts/topology.py) and the colour class of each cell.
LINK_CSS = {
    "nvlink": "l-nv", "pcie_switch": "l-pix", "pcie_switches": "l-pxb", "host_bridge": "l-phb",
    "numa_node": "l-node", "cross_numa": "l-sys", "self": "l-self", "unknown": "l-unk",
}
LINK_LABEL = {
    "nvlink": "NV# NVLink", "pcie_switch": "PIX one PCIe bridge", "pcie_switches": "PXB several PCIe bridges",
    "host_bridge": "PHB PCIe host bridge", "numa_node": "NODE within a NUMA node", "cross_numa": "SYS across NUMA nodes",
    "self": "X self", "unknown": "other",
}
_PCIE_CODES = {"PIX": "pcie_switch", "PXB": "pcie_switches", "PHB": "host_bridge", "NODE": "numa_node", "SYS": "cross_numa", "SOC": "cross_numa"}
_NV_CODE = re.compile(r"^NV(\d+)$")

# GPU fields compared with the fleet's majority among GPUs of the same model, and with the node's majority.
GPU_FLEET_FIELDS = ("vbios_version", "board_part_number", "memory_total_mib", "power_limit_w", "clocks_max_sm_mhz", "driver_version")
GPU_NODE_FIELDS = ("name", "pcie_link_gen_current", "pcie_link_width_current", "ecc_mode_current", "mig_mode_current")
GPU_COLUMNS = (
    ("index", "#"), ("name", "model"), ("driver_version", "driver"), ("vbios_version", "VBIOS"),
    ("board_part_number", "board part"), ("memory_total_mib", "memory MiB"), ("power_limit_w", "power limit W"),
    ("clocks_max_sm_mhz", "max SM MHz"), ("pcie_link_gen_current", "PCIe gen"), ("pcie_link_width_current", "PCIe width"),
    ("ecc_mode_current", "ECC"), ("mig_mode_current", "MIG"), ("temperature_c", "temp C"), ("pci_bus_id", "bus id"),
    ("serial", "serial"),
)

# Check ids that judge each claim key (their worst status is the row's verdict).
CLAIM_CHECKS = {
    "gpu_model": ("gpu.model",),
    "gpu_count": ("gpu.count", "gpu.visible"),
    "gpu_memory_gb": ("gpu.memory",),
    "interconnect": ("topology.gpu_pairs",),
    "nvlinks_per_pair": ("topology.gpu_pairs", "nvlink.link_active"),
    "nics": ("network.nic_speed", "network.rdma_port_state"),
}

# Units of the figures a check measures and expects (a bare number in a report cell says nothing).
CHECK_UNITS = {
    "gpu.count": "GPUs", "gpu.memory": "MiB", "gpu.temperature": "C", "host.memlock": "B", "nvlink.link_speed": "GB/s",
    "network.nic_speed": "Gb/s", "network.rdma_port_state": "Gb/s", "benchmarks.allreduce_single": "GB/s",
    "benchmarks.allreduce_multi": "GB/s", "nvlink.link_active": "links",
}
_GPU_SUBJECT = re.compile(r"^GPU(\d+)$")

# Chart geometry (SVG user units).
CHART_WIDTH = 720
BAR_HEIGHT = 18
BAR_GAP = 6
LABEL_WIDTH = 230
HEAT_CELL = 34


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


def load_results(path):
    """``{"path", "run", "fleet", "hosts"}`` of the run directory at ``path``.

    ``fleet`` is None while the run is unfinished (no ``fleet.json``); ``hosts`` maps each host
    name to its record. ReportError when the directory has no ``run.json`` of this schema.
    """
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
    return {"path": run_dir.path, "run": run, "fleet": fleet, "hosts": run_dir.host_records(), "slurm": slurm}


def results_document(results, generated=None, model=None):
    """The run as one JSON document (``results.json``): schema, run, fleet and every host record; with the render
    ``model``, also ``cost_to_train`` (report/cost.py :func:`cost_document`) and ``gpu_throughput`` (per-GPU rows)."""
    document = {
        "schema": SCHEMA,
        "generated": generated,
        "run": results["run"],
        "fleet": results["fleet"],
        "hosts": {name: results["hosts"][name] for name in sorted(results["hosts"])},
    }
    if results.get("slurm") is not None:
        document["slurm"] = results["slurm"]
    if model is not None:
        document["cost_to_train"] = cost_document(model.get("cost"))
        throughput = model.get("throughput") or {}
        document["gpu_throughput"] = [{key: row[key] for key in ("host", "gpu", "name", "bus_id", "gemm_tflops", "hbm_gbs", "outlier",
                                                                 "findings")} for row in throughput.get("rows") or []]
    return document


# -- small helpers -------------------------------------------------------------------------


def _majority(values):
    """``(value, tie)``: the most common value, or ``(None, False)`` for no values.

    When several values are equally most common there is no majority: ``(text naming them, True)``.
    """
    counted = Counter(values)
    if not counted:
        return None, False
    best = max(counted.values())
    leaders = [value for value in dict.fromkeys(values) if counted[value] == best]
    if len(leaders) > 1:
        return "no majority: %s" % " / ".join(leaders), True
    return leaders[0], False


def _text(value):
    """A JSON value as short text for a table cell (None -> empty)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return ("%.3f" % value).rstrip("0").rstrip(".")
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def link_class(code):
    """The link class of a topology code (``NV12`` -> nvlink, ``SYS`` -> cross_numa, ``X`` -> self)."""
    code = str(code or "")
    if _NV_CODE.match(code):
        return "nvlink"
    if code == "X":
        return "self"
    return _PCIE_CODES.get(code, "unknown")


def _group(record, name):
    facts = record.get("facts") or {}
    value = facts.get(name)
    return value if isinstance(value, dict) else None


def not_measured(record, group):
    """Why ``record`` has no ``group`` facts, for a table to show instead of a zero ("" when it has them, even empty:
    a node with no NIC is a measured zero)."""
    if _group(record, group) is not None:
        return ""
    if record.get("unreachable"):
        return "not measured: the node was unreachable"
    error = (record.get("fact_errors") or {}).get(group)
    if error:
        return "not measured: the %s facts could not be gathered (%s)" % (group, one_line(str(error))[:200])
    return "not measured: %s facts not gathered" % group


def _gpus(record):
    gpu = _group(record, "gpu")
    return [item for item in (gpu or {}).get("gpus") or [] if isinstance(item, dict)]


def _worst_status(checks, ids):
    statuses = [item.get("status") for item in checks if item.get("id") in ids]
    if not statuses:
        return None
    return min(statuses, key=lambda status: STATUS_ORDER.get(status, 9))


def finite(value):
    """A figure as a finite float; None for anything else (text, a bool, an int too large for a float, inf, NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def error_words(exc: Exception) -> str:
    """An exception in one line, its type first and its text cut (a message may quote a 400-digit figure)."""
    text = " ".join(str(exc).split())
    return "%s: %s" % (type(exc).__name__, text[:300] + ("..." if len(text) > 300 else ""))


def _note_error(errors, host, what, exc) -> None:
    """Record in ``errors`` (host -> [text]) that ``what`` of ``host`` could not be built."""
    if errors is not None:
        errors.setdefault(str(host), []).append("%s could not be shown: %s" % (what, error_words(exc)))


# -- per node ------------------------------------------------------------------------------


def _claim_rows(record):
    """Claim beside measurement: ``[{key, claimed, measured, status}]`` (status of the checks that judged it)."""
    claim = record.get("claim")
    if not isinstance(claim, dict):
        return []
    checks = record.get("checks") or []
    gpu = _group(record, "gpu") or {}
    topology = _group(record, "topology") or {}
    summary = topology.get("summary") or {}
    gpus = _gpus(record)
    names = sorted({str(item.get("name")) for item in gpus if item.get("name")})
    memories = [item.get("memory_total_mib") for item in gpus if isinstance(item.get("memory_total_mib"), (int, float))]
    measured = {
        "gpu_model": ", ".join(names) if names else None,
        "gpu_count": gpu.get("gpu_count") if gpu else summary.get("gpu_count"),
        "gpu_memory_gb": ("%.1f GiB (%d MiB, smallest GPU)" % (min(memories) / 1024.0, min(memories))) if memories else None,
        "interconnect": _interconnect_measured(summary) if summary else None,
        "nvlinks_per_pair": ("NV%s..NV%s" % (summary.get("min_nvlinks"), summary.get("max_nvlinks"))
                             if summary.get("min_nvlinks") is not None else ("no NVLink pair" if summary else None)),
        "nics": _nics_measured(record),
        "price_per_node_hour": None,
        "rack": None,
    }
    rows = []
    for key in ("gpu_model", "gpu_count", "gpu_memory_gb", "interconnect", "nvlinks_per_pair", "nics", "price_per_node_hour", "rack"):
        if key not in claim:
            continue
        claimed = claim[key]
        if key == "nics" and isinstance(claimed, list):
            claimed = "; ".join("%sx %s Gb/s %s %s" % (_text(nic.get("count")), _text(nic.get("gbps")), _text(nic.get("role")), _text(nic.get("type")))
                                for nic in claimed if isinstance(nic, dict))
        rows.append({"key": key, "claimed": _text(claimed), "measured": _text(measured.get(key)),
                     "status": _worst_status(checks, CLAIM_CHECKS.get(key, ()))})
    return rows


def _interconnect_measured(summary):
    pairs = summary.get("pair_count")
    nvlink = summary.get("nvlink_pairs")
    if pairs is None:
        return None
    classes = summary.get("link_classes") or {}
    detail = ", ".join("%s %s" % (count, name) for name, count in sorted(classes.items()))
    if pairs and nvlink == pairs:
        return "NVLink between all %d GPU pairs (%s)" % (pairs, detail)
    return "%s of %s GPU pairs NVLink (%s)" % (nvlink, pairs, detail)


def _nics_measured(record):
    nic = _group(record, "nic")
    if not nic:
        return None
    parts = []
    rates = Counter()
    for device in nic.get("rdma") or []:
        for port in device.get("ports") or []:
            if port.get("state") == "Active":
                rates[(port.get("rate_gbps"), port.get("link_layer"))] += 1
    for (rate, layer), count in sorted(rates.items(), key=lambda item: str(item[0])):
        parts.append("%dx %s Gb/s %s active" % (count, _text(rate) or "?", layer or "RDMA"))
    speeds = Counter()
    for item in nic.get("interfaces") or []:
        if item.get("virtual") or item.get("rdma_device"):
            continue
        if item.get("operstate") == "up" and item.get("speed_mbps"):
            speeds[item["speed_mbps"]] += 1
    for speed, count in sorted(speeds.items()):
        parts.append("%dx %s Gb/s Ethernet up" % (count, _text(speed / 1000.0)))
    return "; ".join(parts) if parts else "no active RDMA port or Ethernet link"


def _nic_rows(record):
    nic = _group(record, "nic") or {}
    rows = []
    for item in nic.get("interfaces") or []:
        if not isinstance(item, dict):
            continue
        pcie = item.get("pcie") or {}
        rows.append({
            "name": _text(item.get("name")), "driver": _text(item.get("driver")), "state": _text(item.get("operstate")),
            "speed": _text(item["speed_mbps"] / 1000.0) + " Gb/s" if isinstance(item.get("speed_mbps"), (int, float)) else "",
            "rdma": "%s/%s" % (item.get("rdma_device"), item.get("rdma_port")) if item.get("rdma_device") else "",
            "pcie": ("Gen%s x%s (max Gen%s x%s)" % (pcie.get("gen_current"), pcie.get("width_current"), pcie.get("gen_max"), pcie.get("width_max"))
                     if pcie else ""),
            "numa": _text(item.get("numa_node")), "virtual": _text(item.get("virtual_kind")) if item.get("virtual") else "",
        })
    ports = []
    for device in nic.get("rdma") or []:
        for port in device.get("ports") or []:
            ports.append({
                "port": "%s/%s" % (device.get("device"), port.get("port")), "state": _text(port.get("state")),
                "physical": _text(port.get("physical_state")), "rate": _text(port.get("rate_gbps")) + (" Gb/s" if port.get("rate_gbps") is not None else ""),
                "link_layer": _text(port.get("link_layer")), "firmware": _text(device.get("fw_ver")),
                "errors": ", ".join("%s %s" % (name, _text(count)) for name, count in sorted((port.get("errors") or {}).items())),
            })
    return rows, ports


def figure_text(value, unit=None):
    """A measured or expected figure in words, with its unit: ``8 GPUs``, ``65536 B``, ``hw_slowdown, sw_power_cap``,
    ``port_rcv_errors 14, link_downed 255``; never raw JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return "%s %s" % (_text(value), unit) if unit else _text(value)
    if isinstance(value, list):
        return ", ".join(figure_text(item, unit) for item in value) if value else "none"
    if isinstance(value, dict):
        return ", ".join("%s %s" % (key, figure_text(item)) for key, item in value.items()) if value else "none"
    return str(value)


def gpu_ranges(indices):
    """``GPU0\u20137`` for GPUs 0..7, ``GPU0\u20132, GPU5`` otherwise (indices sorted, deduplicated)."""
    parts, ordered = [], sorted(set(indices))
    start = previous = None
    for index in ordered + [None]:
        if start is not None and (index is None or index != previous + 1):
            parts.append("GPU%s" % start if start == previous else "GPU%s\u2013%s" % (start, previous))
            start = None
        if index is not None and start is None:
            start = index
        previous = index
    return ", ".join(parts)


def _without_subject(text, subject):
    """``text`` without its leading ``subject`` (``GPU3: x`` / ``GPU3 x`` -> ``x``), else None."""
    if not text.startswith(subject):
        return None
    rest = text[len(subject):]
    if rest.startswith(": "):
        return rest[2:]
    return rest[1:] if rest.startswith(" ") else None


def fold_gpus(rows, subject_key, text_key, same_keys):
    """Rows alike on every GPU of a node folded into one (``GPU0\u20137: HW Slowdown active``).

    Rows whose ``subject_key`` is ``GPU<n>`` and whose ``text_key`` starts with it fold when every key of
    ``same_keys`` and the rest of the text agree; the folded row names the GPU range in both. Order is kept.
    """
    groups, out = {}, []
    for row in rows:
        match = _GPU_SUBJECT.match(str(row.get(subject_key) or ""))
        rest = _without_subject(str(row.get(text_key) or ""), row[subject_key]) if match else None
        if rest is None:
            out.append(row)
            continue
        key = tuple(row.get(name) for name in same_keys) + (rest,)
        if key not in groups:
            groups[key] = {"row": row, "rest": rest, "indices": []}
            out.append(groups[key])
        groups[key]["indices"].append(int(match.group(1)))
    folded = []
    for entry in out:
        if "indices" not in entry:
            folded.append(entry)
            continue
        row = dict(entry["row"])
        if len(entry["indices"]) > 1:
            label = gpu_ranges(entry["indices"])
            row[subject_key] = label
            row[text_key] = "%s: %s" % (label, entry["rest"])
            row["folded"] = len(entry["indices"])
        folded.append(row)
    return folded


def _reason(item):
    unit = CHECK_UNITS.get(str(item.get("id")))
    return {
        "id": _text(item.get("id")), "status": _text(item.get("status")), "subject": _text(item.get("subject")),
        "measured": figure_text(item.get("measured"), unit), "expected": figure_text(item.get("expected"), unit),
        "source": _text(item.get("threshold_source")), "message": _text(item.get("message")),
    }


def _reasons(items):
    """Report rows of check results, identical findings on many GPUs of the node folded into one row."""
    alike = ("id", "status", "measured", "expected", "source")
    return fold_gpus([_reason(item) for item in items], "subject", "message", alike)


def coverage_view(record):
    """The node's required evidence in words: ``{known, claim, required, judged, skipped, failed, text, incomplete}``.

    ``incomplete`` lists why the node is INCOMPLETE, per-GPU items alike on many GPUs folded
    (``NVLink GPU0\u20137: nvlink -s listed no link``). ``known`` is False for a record judged before coverage existed.
    """
    coverage = record.get("coverage") if isinstance(record.get("coverage"), dict) else None
    claim = record.get("claim") is not None
    if coverage is None:
        return {"known": False, "claim": claim, "required": 0, "judged": 0, "skipped": 0, "failed": 0, "text": "",
                "incomplete": []}
    rows = []
    items = [item for item in coverage.get("items") or [] if isinstance(item, dict)]
    for item in items:
        if item.get("status") != "unverified":
            continue
        label, subject = str(item.get("label") or item.get("item")), item.get("subject")
        reason = _text(item.get("reason"))
        # the fix rides on the reason, so alike GPUs still fold into one row
        reason = "%s (fix: %s)" % (reason, item["fix"]) if item.get("fix") else reason
        if subject and label.endswith(" " + str(subject)):
            base = label[:-len(str(subject)) - 1]
            # the reason's own GPU prefix ("GPU3: nvlink -s listed no link") is dropped so alike reasons fold
            reason = _without_subject(reason, str(subject)) or reason
            rows.append({"subject": str(subject), "text": "%s: %s" % (subject, reason), "base": base})
        else:
            rows.append({"subject": None, "text": "%s: %s" % (label, reason), "base": None})
    incomplete = [row["text"] if row["base"] is None else "%s %s" % (row["base"], row["text"])
                  for row in fold_gpus(rows, "subject", "text", ("base",))]
    listed = [str(reason) for reason in coverage.get("incomplete") or []]
    # reasons that are no required item ("nothing was judged") come as coverage lists them
    labels = tuple(str(item.get("label")) + ":" for item in items)
    incomplete += [reason for reason in listed if not reason.startswith(labels)] if labels else listed
    required, judged = int(coverage.get("required") or 0), int(coverage.get("judged") or 0)
    skipped = int(coverage.get("skipped") or 0)
    text = "%d of %d required judged" % (judged, required)
    if skipped:
        text += ", %d not verified" % skipped
    return {"known": True, "claim": bool(coverage.get("claim", claim)), "required": required, "judged": judged,
            "skipped": skipped, "failed": int(coverage.get("failed") or 0), "text": text, "incomplete": incomplete,
            "level": _text(coverage.get("level")), "label": _text(coverage.get("label"))}


def _other_checks(checks):
    """The checks that are not reasons (pass, skip), by status: ``[{status, count, checks}]`` with the check ids (and subjects).

    Their messages stay in hosts/<host>.json, results.json and junit.xml: listing every message of every
    node made the HTML of 1,024 nodes 15 MB larger (docs/performance.md).
    """
    by_status = {}
    for item in checks:
        if item.get("status") in REASON_STATUSES:
            continue
        name = _text(item.get("id")) + (" [%s]" % _text(item.get("subject")) if item.get("subject") not in (None, "") else "")
        by_status.setdefault(_text(item.get("status")), []).append(name)
    return [{"status": status, "count": len(names), "checks": ", ".join(names)}
            for status, names in sorted(by_status.items(), key=lambda pair: STATUS_ORDER.get(pair[0], 9))]


def _node(index, record):
    checks = [item for item in record.get("checks") or [] if isinstance(item, dict)]
    verdict = verdict_of(record)
    reasons = sorted((item for item in checks if item.get("status") in REASON_STATUSES),
                     key=lambda item: STATUS_ORDER.get(item.get("status"), 9))
    coverage = coverage_view(record)
    profile = record.get("profile") or {}
    nic_rows, rdma_rows = _nic_rows(record)
    return {
        "anchor": "node-%d" % index,
        "error": "",
        "host": str(record.get("host")),
        "verdict": verdict,
        "verdict_class": VERDICT_CLASS[verdict],
        "unreachable": _text(record.get("unreachable")),
        "profile": _text(profile.get("name")),
        "profile_reason": _text(profile.get("reason")),
        "reasons": _reasons(reasons),
        "coverage": coverage,
        # a node judged against no claim says so wherever its verdict is shown
        "claim_note": "" if coverage["claim"] else "judged against no claim",
        # level quick: an ACCEPT rests on the facts alone ("static checks only", gpufleet/plan/levels.py)
        "level_label": coverage.get("label") or "" if verdict in ACCEPTED else "",
        "checks": [_reason(item) for item in sorted(checks, key=lambda item: STATUS_ORDER.get(item.get("status"), 9))],
        "other_checks": _other_checks(checks),
        "status_counts": dict(Counter(str(item.get("status")) for item in checks)),
        "fact_errors": [{"group": str(group), "message": _text(message)} for group, message in sorted((record.get("fact_errors") or {}).items())],
        "claim_rows": _claim_rows(record),
        "nic_rows": nic_rows,
        "rdma_rows": rdma_rows,
        # what the NIC table shows instead of counts of zero (not_measured)
        "nic_not_measured": not_measured(record, "nic"),
        # a node no check judged (unreachable) has no counts: the summary shows "not judged", never 0 failures
        "judged": bool(checks),
        "gpu_rows": [],
        "benchmarks": [{"name": _text(item.get("name")), "started": _text(item.get("started")), "duration_s": _text(item.get("duration_s")),
                        "algorithm": _text(item.get("algorithm")), "message_size_bytes": _text(item.get("message_size_bytes")),
                        "command": " ".join(str(part) for part in item.get("command") or []), "raw_output_path": _text(item.get("raw_output_path"))}
                       for item in record.get("benchmarks") or [] if isinstance(item, dict)],
    }


def node_row(index, record):
    """The node's row (:func:`_node`); when building it raises, a row with the recorded verdict and ``error`` saying
    why its details are missing: one node's data never stops the others from rendering."""
    try:
        return _node(index, record)
    except Exception as exc:  # pylint: disable=broad-exception-caught  # any node data may be hostile
        return _failed_node(index, record, exc)


def _failed_node(index, record, exc):
    verdict = verdict_of(record)
    coverage = {"known": False, "claim": record.get("claim") is not None, "required": 0, "judged": 0, "skipped": 0,
                "failed": 0, "text": "", "incomplete": [], "level": "", "label": ""}
    return {
        "anchor": "node-%d" % index, "host": str(record.get("host")), "verdict": verdict,
        "verdict_class": VERDICT_CLASS[verdict], "unreachable": "", "profile": "", "profile_reason": "",
        "error": "this node's details could not be shown: %s" % error_words(exc),
        "reasons": [], "coverage": coverage, "claim_note": "", "level_label": "", "checks": [], "other_checks": [],
        "status_counts": {}, "fact_errors": [], "claim_rows": [], "nic_rows": [], "rdma_rows": [], "gpu_rows": [],
        "benchmarks": [], "nic_not_measured": "not shown: this node's details could not be read", "judged": False,
    }


# -- topology ------------------------------------------------------------------------------


def topology_fingerprint(topology):
    """A short digest of a node's matrix (device names and every cell): identical matrices share it."""
    names = [str(name) for name in topology.get("names") or []]
    links = topology.get("links") or {}
    cells = [[str((links.get(row) or {}).get(col, "")) for col in names] for row in names]
    digest = hashlib.sha256(json.dumps([names, cells], separators=(",", ":")).encode("utf-8")).hexdigest()
    return digest[:12]


def _topology_group(topology, fingerprint):
    names = [str(name) for name in topology["names"]]
    links = topology.get("links") or {}
    rows = []
    for row in names:
        cells = []
        for col in names:
            code = str((links.get(row) or {}).get(col, ""))
            cells.append({"code": code, "css": LINK_CSS[link_class(code)]})
        rows.append({"name": row, "cells": cells})
    summary = topology.get("summary") or {}
    return {
        "fingerprint": fingerprint, "hosts": [], "names": names, "rows": rows,
        "classes": sorted({link_class(cell["code"]) for row in rows for cell in row["cells"]} - {"self"}),
        "summary": "%s GPUs, %s NICs; GPU pairs: %s" % (
            _text(summary.get("gpu_count")), _text(summary.get("nic_count")),
            ", ".join("%s %s" % (count, name) for name, count in sorted((summary.get("link_classes") or {}).items()))),
    }


def topology_groups(records, errors=None):
    """Matrices grouped by fingerprint, largest group first: ``[{fingerprint, hosts, names, rows, legend, majority}]``.
    A node whose matrix cannot be drawn is left out, the reason in ``errors`` (host -> [text])."""
    groups = {}
    for record in records:
        topology = _group(record, "topology")
        if not topology or not topology.get("names"):
            continue
        try:
            fingerprint = topology_fingerprint(topology)
            entry = groups.get(fingerprint) or _topology_group(topology, fingerprint)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # one node's matrix, not the section
            _note_error(errors, record.get("host"), "its topology matrix", exc)
            continue
        groups[fingerprint] = entry
        entry["hosts"].append(str(record.get("host")))
    ordered = sorted(groups.values(), key=lambda entry: (-len(entry["hosts"]), entry["hosts"][0]))
    for position, entry in enumerate(ordered):
        # "most common" only when strictly larger than the next group (a tie has no majority)
        entry["majority"] = position == 0 and (len(ordered) == 1 or len(entry["hosts"]) > len(ordered[1]["hosts"]))
        entry["legend"] = [{"css": LINK_CSS[name], "label": LINK_LABEL[name]} for name in entry["classes"]]
    return ordered


# -- GPUs ----------------------------------------------------------------------------------


def _gpu_values(record):
    gpu = _group(record, "gpu") or {}
    rows = []
    for item in _gpus(record):
        values = {field: item.get(field) for field, _label in GPU_COLUMNS}
        values["driver_version"] = gpu.get("driver_version")
        rows.append(values)
    return rows


def gpu_table(records, errors=None):
    """``(rows by host, flagged)``: every GPU's fields, with values unlike the fleet's or the node's majority flagged.

    A field of GPU_FLEET_FIELDS is held against the majority of the fleet's GPUs of the same
    model (a mixed fleet is not flagged for being mixed); a field of GPU_NODE_FIELDS against the
    majority of the GPUs of its own node. ``flagged`` lists ``{host, gpu, field, value, majority, scope}``.
    A node whose GPU rows cannot be built has none, the reason in ``errors`` (host -> [text]).
    """
    per_host = {}
    for record in records:
        try:
            per_host[str(record.get("host"))] = _gpu_values(record)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # one node's GPUs, not the table
            _note_error(errors, record.get("host"), "its GPU rows", exc)
    fleet_majority = {}
    for field in GPU_FLEET_FIELDS:
        by_model = {}
        for rows in per_host.values():
            for values in rows:
                if values.get(field) is not None:
                    # keyed by the name as text: a name of another type (a forged record) is a model like any other
                    by_model.setdefault(_text(values.get("name")), []).append(_text(values[field]))
        fleet_majority[field] = {model: _majority(seen) for model, seen in by_model.items()}
    flagged = []
    table = {}
    for host, rows in per_host.items():
        try:
            table[host], found = _gpu_cells(host, rows, fleet_majority)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # one node's GPUs, not the table
            _note_error(errors, host, "its GPU rows", exc)
            continue
        flagged += found
    return table, flagged


def _gpu_cells(host, rows, fleet_majority):
    """``(cells per GPU, flagged)`` of one node's GPU rows (:func:`gpu_table`)."""
    node_majority = {field: _majority([_text(values[field]) for values in rows if values.get(field) is not None])
                     for field in GPU_NODE_FIELDS}
    out, flagged = [], []
    for values in rows:
        cells = []
        for field, _label in GPU_COLUMNS:
            value = values.get(field)
            text = _text(value)
            (majority, tie), scope = (None, False), None
            if value is not None and field in GPU_FLEET_FIELDS:
                (majority, tie), scope = fleet_majority[field].get(_text(values.get("name")), (None, False)), "fleet"
            elif value is not None and field in GPU_NODE_FIELDS:
                (majority, tie), scope = node_majority[field], "node"
            flag = majority is not None and (tie or text != majority)
            if flag:
                flagged.append({"host": host, "gpu": _text(values.get("index")), "field": field, "value": text,
                                "majority": majority, "scope": scope})
            cells.append({"text": text, "flag": flag, "majority": majority if flag else None,
                          "scope": scope if flag else None})
        out.append(cells)
    return out, flagged


# -- benchmarks ----------------------------------------------------------------------------


def _busbw(parsed):
    """The judged busbw (GB/s) of an nccl-tests parse: out-of-place at the largest size, else the maximum."""
    if not isinstance(parsed, dict) or parsed.get("failed"):
        return None
    for key in ("busbw_at_largest_size_gbs", "max_busbw_gbs"):
        value = finite(parsed.get(key))
        if value is not None and value > 0:
            return value
    return None


def _hosts_of(parsed):
    hosts = parsed.get("hosts") if isinstance(parsed, dict) else None
    return [str(host) for host in hosts] if isinstance(hosts, list) else []


def classify_benchmark(host, record):
    """What a benchmark record is for the charts: ``(kind, data)`` or ``(None, None)``.

    The record's kind is checks/benchmarks.py :func:`benchmark_kind` (docs/report.md): an
    ``allreduce_single`` run is ``single``, ``allreduce_pair`` a ``pair`` (the other host of
    ``parsed.hosts``, else of the record's hosts, is the peer), ``allreduce_multi`` a ``multi``-node
    run; ``iperf3`` and ``iperf3_concurrent`` are ``iperf`` alone and concurrent.
    """
    kind = benchmark_kind(record)
    name = str(record.get("name") or "")
    parsed = record.get("parsed")
    if kind in ALLREDUCE_KINDS:
        busbw = _busbw(parsed)
        if busbw is None:
            return None, None
        hosts = list(dict.fromkeys(_hosts_of(parsed)))
        ranks = parsed.get("ranks") if isinstance(parsed.get("ranks"), int) else None
        data = {"host": host, "busbw": busbw, "ranks": ranks, "hosts": hosts, "size": record.get("message_size_bytes") or parsed.get("largest_size_bytes")}
        if kind == "allreduce_single":
            return "single", data
        if kind == "allreduce_pair":
            peers = [other for other in hosts or hosts_of(record) if other != host]
            if not peers:
                return None, None  # a pair cell needs both ends
            data["peer"] = peers[0]
            return "pair", data
        return "multi", data
    if kind in ("iperf3", "iperf3_concurrent"):
        if not isinstance(parsed, dict):
            return None, None
        bps = finite(parsed.get("received_bps") or parsed.get("sent_bps"))
        if bps is None or bps <= 0:
            return None, None
        peer = parsed.get("remote_host")
        mode = "concurrent" if kind == "iperf3_concurrent" else "alone"
        return "iperf", {"host": host, "peer": _text(peer) or name, "gbps": bps / 1e9, "mode": mode}
    return None, None


def _single_floor(record, profiles):
    """``(floor GB/s, source)`` for a node's single-node all-reduce: a judged check first, else its profile."""
    for item in record.get("checks") or []:
        check_id = str(item.get("id"))
        if "allreduce" in check_id and "single" in check_id and finite(item.get("expected")) is not None:
            return finite(item["expected"]), _text(item.get("threshold_source"))
    name = (record.get("profile") or {}).get("name")
    threshold = profile_value((profiles or {}).get(name), "thresholds.allreduce_single_node")[0] if name else None
    if isinstance(threshold, dict) and finite(threshold.get("floor")) is not None:
        return finite(threshold["floor"]), "profile %s: %s" % (name, _text(threshold.get("source")))
    return None, None


def bar_chart(items, value_key, unit, floor_key=None):
    """Horizontal bars, scaled to the largest value or floor: geometry only, labels stay data."""
    top = max([item[value_key] for item in items] + [item.get(floor_key) or 0 for item in items] if floor_key else [item[value_key] for item in items])
    top = top or 1.0
    span = CHART_WIDTH - LABEL_WIDTH - 90
    bars = []
    for position, item in enumerate(items):
        y = BAR_GAP + position * (BAR_HEIGHT + BAR_GAP)
        floor = item.get(floor_key) if floor_key else None
        below = floor is not None and item[value_key] < floor
        bars.append({
            "label": item["label"], "y": y, "text_y": y + BAR_HEIGHT - 5, "x": LABEL_WIDTH, "width": round(span * item[value_key] / top, 1),
            "value": "%.1f %s" % (item[value_key], unit), "value_x": LABEL_WIDTH + round(span * item[value_key] / top, 1) + 4,
            "css": item.get("css") or ("bar-bad" if below else "bar-ok"),
            "floor_x": None if floor is None else round(LABEL_WIDTH + span * float(floor) / top, 1),
            "floor": None if floor is None else "{0:.1f} {1}".format(float(floor), unit),
        })
    return {"width": CHART_WIDTH, "height": BAR_GAP + len(items) * (BAR_HEIGHT + BAR_GAP), "bars": bars, "label_x": LABEL_WIDTH - 6}


def heatmap(pairs, hosts):
    """The pairwise busbw matrix: ``{hosts, rows: [{host, cells: [{value, css, x, y}]}], ...}``."""
    values = {}
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
            if value is None:
                css = "h-none"
            elif median and value < 0.9 * median:
                css = "h-bad"
            elif median and value < median:
                css = "h-mid"
            else:
                css = "h-good"
            cells.append({"value": "%.0f" % value if value is not None else "", "full": "%.1f GB/s" % value if value is not None else "",
                          "css": css, "x": LABEL_WIDTH + col_index * HEAT_CELL, "y": 20 + row_index * HEAT_CELL})
        rows.append({"host": row, "y": 20 + row_index * HEAT_CELL + HEAT_CELL // 2 + 4, "cells": cells})
    return {"hosts": hosts, "rows": rows, "cell": HEAT_CELL, "label_x": LABEL_WIDTH - 6,
            "width": LABEL_WIDTH + len(hosts) * HEAT_CELL + 10, "height": 30 + len(hosts) * HEAT_CELL,
            "median": "%.1f GB/s" % median if median is not None else None,
            "columns": [{"host": host, "x": LABEL_WIDTH + index * HEAT_CELL + HEAT_CELL // 2} for index, host in enumerate(hosts)]}


def _classified(record, profiles):
    """``{kind: [data]}`` of one host record's benchmark records (:func:`classify_benchmark`)."""
    host = str(record.get("host"))
    found = {"single": [], "pair": [], "multi": [], "iperf": []}
    for bench in record.get("benchmarks") or []:
        if not isinstance(bench, dict):
            continue
        kind, data = classify_benchmark(host, bench)
        if kind == "single":
            data["floor"], data["floor_source"] = _single_floor(record, profiles)
        elif kind == "multi":
            # the run's inventory hosts (``hosts`` holds the names its output printed) and what identifies it,
            # for one row per run however many host records hold it
            data.update(run_hosts=hosts_of(bench), name=bench.get("name"), started=bench.get("started"),
                        repeat=bench.get("repeat"))
        if kind is not None:
            found[kind].append(data)
    return found


def benchmark_views(records, profiles, errors=None):
    """Charts from the benchmark records; each key is None when there is nothing to draw. A node whose records cannot
    be read adds nothing, the reason in ``errors`` (host -> [text])."""
    single, pairs, multi, iperf = [], [], [], []
    for record in records:
        try:
            found = _classified(record, profiles)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # one node's records, not the charts
            _note_error(errors, record.get("host"), "its benchmark records", exc)
            continue
        single += found["single"]
        pairs += found["pair"]
        multi += found["multi"]
        iperf += found["iperf"]
    single_chart = pairwise = iperf_chart = None
    ratios = []
    if single:
        best = {}
        for item in single:
            if item["host"] not in best or item["busbw"] > best[item["host"]]["busbw"]:
                best[item["host"]] = item
        ordered = sorted(best.values(), key=lambda item: (item["floor"] is None or item["busbw"] >= item["floor"], item["busbw"]))
        single_chart = bar_chart([dict(item, label=item["host"]) for item in ordered], "busbw", "GB/s", floor_key="floor")
        single_chart["sources"] = sorted({item["floor_source"] for item in ordered if item["floor_source"]})
    if pairs:
        pairwise = heatmap(pairs, sorted({pair["host"] for pair in pairs} | {pair["peer"] for pair in pairs}))
    if iperf:
        items = []
        for item in sorted(iperf, key=lambda entry: (entry["host"], entry["peer"], entry["mode"])):
            items.append({"label": "%s \u2192 %s (%s)" % (item["host"], item["peer"], item["mode"]), "gbps": item["gbps"],
                          "css": "bar-alone" if item["mode"] == "alone" else "bar-conc"})
        iperf_chart = bar_chart(items, "gbps", "Gb/s")
        for (host, peer), modes in _by_pair(iperf).items():
            if "alone" in modes and "concurrent" in modes and modes["alone"] > 0:
                ratios.append({"host": host, "peer": peer, "alone": "%.2f Gb/s" % modes["alone"], "concurrent": "%.2f Gb/s" % modes["concurrent"],
                               "ratio": "%.2f" % (modes["concurrent"] / modes["alone"])})
    multi_chart, multi_table = multi_node_view(records, multi)
    return {"records": sum(len(record.get("benchmarks") or []) for record in records), "single": single_chart, "pairwise": pairwise,
            "iperf": iperf_chart, "iperf_ratios": ratios, "single_rows": single, "multi_rows": multi,
            "multi": multi_chart, "multi_table": multi_table}


def _multi_judged(records: list, name, run_hosts: list, busbw: float) -> dict | None:
    """The ``benchmarks.allreduce_multi`` result of a run, from one of its hosts; None when none judged it.

    checks/benchmarks.py judges a run alike on each of its hosts, every message naming it ``<name> over <hosts>``;
    of those, the one whose measured figure is the run's busbw, else one with no figure (a socket fallback)."""
    by_host = {str(record.get("host")): record for record in records}
    where = "%s over %s" % (name, ", ".join(run_hosts))
    found = [item for host in run_hosts for item in (by_host.get(host) or {}).get("checks") or []
             if isinstance(item, dict) and item.get("id") == "benchmarks.allreduce_multi"
             and where in str(item.get("message"))]

    def figure(item):
        return finite(item.get("measured"))

    same = [item for item in found if figure(item) is not None and abs(figure(item) - busbw) < 1e-6]
    return (same or [item for item in found if figure(item) is None] or [None])[0]


def multi_node_view(records, multi):
    """``(chart, table rows)`` of the multi-node all-reduce runs, one per run, below their floor first; ``(None, [])``
    when there is none. The floor and status are the check's (benchmarks.allreduce_multi), not computed again."""
    runs = {}
    for item in multi:
        key = (item.get("name"), item.get("started"), tuple(item["run_hosts"]), item.get("repeat"))
        runs.setdefault(key, item)
    if not runs:
        return None, []
    items = []
    for item in runs.values():
        run_hosts = item["run_hosts"] or item["hosts"] or [item["host"]]
        judged = _multi_judged(records, item.get("name"), run_hosts, item["busbw"])
        floor = finite((judged or {}).get("expected"))
        others = len(run_hosts) - 1
        label = "%s + %d node%s" % (run_hosts[0], others, "" if others == 1 else "s") if others else run_hosts[0]
        items.append(dict(item, run_hosts=run_hosts, floor=floor, label=label,
                          floor_source=_text((judged or {}).get("threshold_source")),
                          status=(judged or {}).get("status") or "not judged"))
    # below the floor first, as the single-node chart
    items.sort(key=lambda item: (item["floor"] is None or item["busbw"] >= item["floor"], item["run_hosts"],
                                 item["busbw"]))
    chart = bar_chart(items, "busbw", "GB/s", floor_key="floor")
    chart["sources"] = sorted({item["floor_source"] for item in items if item["floor_source"]})
    table = [{"hosts": ", ".join(item["run_hosts"]), "first_host": item["run_hosts"][0],
              "nodes": len(item["run_hosts"]), "ranks": "" if item["ranks"] is None else item["ranks"],
              "size": size_words(item["size"]) if isinstance(item["size"], int) else "",
              "busbw": "%s GB/s" % _text(round(item["busbw"], 2)),
              "floor": "" if item["floor"] is None else "%s GB/s" % _text(round(item["floor"], 2)),
              "status": item["status"]}
             for item in items]
    return chart, table


def _by_pair(iperf):
    pairs = {}
    for item in iperf:
        modes = pairs.setdefault((item["host"], item["peer"]), {})
        modes[item["mode"]] = max(modes.get(item["mode"], 0.0), item["gbps"])
    return pairs


# -- cost to train and per-GPU throughput (the arithmetic: report/cost.py) -----------------------


def cost_chart_view(records, job=None):
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
        able = [row for row in view["rows"] if row["estimates"][position]["cost"] is not None]
        ordered = sorted(able, key=lambda row, at=position: (row["estimates"][at]["cost"], row["label"]))
        if not ordered:
            continue
        items = [{"label": row["label"], "cost_k": row["estimates"][position]["cost"] / 1000.0,
                  "css": "bar-ok" if not row["assumed"] else "bar-assumed"} for row in ordered]
        chart = _wide_labels(bar_chart(items, "cost_k", "k$"), items, "cost_k")
        for drawn, row in zip(chart["bars"], ordered):
            cell = row["cells"][position]
            drawn["value"] = "%s, %s days on %s, %s communication" % (
                cell["cost"], cell["days"], cell["nodes"], cell["comm_share"])
        charts.append({"model": model, "chart": chart})
    view["charts"] = charts
    view["tokens"] = "{:,.0f} tokens".format(view["job"]["tokens"])
    view["batch_tokens"] = "{:,.0f}".format(view["job"]["global_batch_tokens"])
    view["model_specs"] = ["%s: %s billion parameters, %d layers, hidden %d, %d heads, sequence %d, vocabulary %d"
                           % (model["name"], "{:.4g}".format(model["parameters"] / 1e9), model["layers"],
                              model["hidden"], model["heads"], model["seq_len"], model["vocab"])
                           for model in view["job"]["models"]]
    return view


def _not_measured(inputs):
    """``assumed: GEMM rate per GPU, ...; claimed: price per node-hour``: what an offer's figures rest on unmeasured."""
    kinds = []
    for kind in ("assumed", "claimed", "unknown"):
        names = [INPUT_NAMES.get(name, name) for name, item in inputs.items() if item["kind"] == kind]
        if names:
            kinds.append("%s: %s" % (kind, ", ".join(names)))
    return "; ".join(kinds)


def _layout_text(layout):
    text = ("tp %(tp)d \u00b7 pp %(pp)d \u00b7 dp %(dp)d, ZeRO-%(zero_stage)d, micro-batch %(micro_batch)d, "
            "recompute %(recompute)s" % layout)
    if layout.get("interleave", 1) > 1:
        text += ", interleave %d" % layout["interleave"]
    return text


def _cost_cell(item):
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


INPUT_NAMES = {"gpu_model": "GPU model", "gpus_per_node": "GPUs per node", "gpu_memory_gb": "memory per GPU",
               "nvlink_domain_gpus": "NVLink domain (GPUs)", "gemm_tflops": "GEMM rate per GPU",
               "intra_node_busbw_gbs": "all-reduce busbw in a node", "inter_node_busbw_gbs": "all-reduce busbw "
               "across nodes", "price_per_node_hour": "price per node-hour"}


def _input_line(name, item):
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
        shown = "%s GB" % _text(value)
    else:
        shown = _text(value)
    return {"name": INPUT_NAMES.get(name, name), "value": shown, "kind": item["kind"], "source": item["source"]}


# the cost chart's labels (GPU model, interconnect, price) and values (cost and its caveats) are long: wider columns
COST_LABEL_WIDTH, COST_BAR_SPAN, COST_VALUE_WIDTH = 470, 330, 440


def _wide_labels(chart, items, value_key):
    """``chart`` (bar_chart's geometry) redrawn with COST_LABEL_WIDTH for the labels and room for long values."""
    top = max(item[value_key] for item in items) or 1.0
    for drawn, item in zip(chart["bars"], items):
        width = round(COST_BAR_SPAN * item[value_key] / top, 1)
        drawn.update(x=COST_LABEL_WIDTH, width=width, value_x=COST_LABEL_WIDTH + width + 4)
    chart.update(width=COST_LABEL_WIDTH + COST_BAR_SPAN + COST_VALUE_WIDTH, label_x=COST_LABEL_WIDTH - 6)
    return chart


def throughput_view(records):
    """The per-GPU throughput table (report/throughput.py :func:`throughput_rows`) with display text; None when no
    record."""
    rows = throughput_rows(records)
    if not rows:
        return None
    for row in rows:
        row["cells"] = [_text(round(row["gemm_tflops"][key], 1)) if key in row["gemm_tflops"] else "" for key in DTYPES] + \
                       [_text(round(row["hbm_gbs"][key], 1)) if key in row["hbm_gbs"] else "" for key in HBM_KERNELS]
    return {"columns": ["%s TFLOP/s" % key for key in DTYPES] + ["HBM %s GB/s" % key for key in HBM_KERNELS], "rows": rows,
            "outliers": sum(1 for row in rows if row["outlier"])}


def reference_job(results, job=None):
    """``(job, problem)``: ``job`` (a mapping, e.g. from the CLI) else run.json ``settings.reference_job`` checked against
    report/cost.py's defaults; an invalid one gives the defaults and the problem in words."""
    value = job if job is not None else ((results.get("run") or {}).get("settings") or {}).get("reference_job")
    try:
        return validate_job(value), None
    except ReferenceJobError as exc:
        return validate_job(None), "%s: the defaults are used" % exc


# -- the whole model -----------------------------------------------------------------------


def load_profile_thresholds(profiles_dir=None):
    """The profiles (by name) for benchmark floors; {} when they cannot be loaded (the charts then show no floor)."""
    try:
        loaded = load_profiles(profiles_dir) if profiles_dir else load_profiles()
    except Exception:  # pylint: disable=broad-exception-caught
        return {}
    if isinstance(loaded, dict):
        return loaded
    return {item.get("name"): item for item in loaded or [] if isinstance(item, dict)}


# the benchmark section when its charts cannot be drawn at all
NO_BENCHMARKS = {"records": 0, "single": None, "pairwise": None, "iperf": None, "iperf_ratios": [], "single_rows": [],
                 "multi_rows": [], "multi": None, "multi_table": []}


def _section(problems, what, build, empty=None):
    """``build()``; when it raises, ``empty`` and a line in ``problems``: a fleet-wide view that some node's data broke
    is left out, never the report."""
    try:
        return build()
    except Exception as exc:  # pylint: disable=broad-exception-caught  # the report renders without this view
        problems.append("the %s could not be drawn: %s" % (what, error_words(exc)))
        return empty


def slurm_words(slurm: Any, host: str) -> str:
    """What ``--slurm-drain`` did to the host's node, with the command as run (slurm.json); "" for nothing."""
    for action in (slurm or {}).get("actions") or [] if isinstance(slurm, dict) else []:
        if not isinstance(action, dict) or action.get("host") != host:
            continue
        command = action.get("command")
        if command:
            done = "" if action.get("rc") == 0 else " (failed, exit %s: %s)" % (action.get("rc"), action.get("output"))
            return "%s: %s%s" % (_text(action.get("action")), shlex.join(str(word) for word in command), done)
        return "%s: %s" % (_text(action.get("action")), _text(action.get("why")))
    return ""


def build_model(results, profiles=None, title=None, job=None):
    """The render model of ``results`` (from :func:`load_results`); ``job``: the reference job of the cost view
    (report/cost.py), else run.json ``settings.reference_job``, else the defaults. ``problems`` names a view left
    out; a node's ``error`` what of it could not be shown (the module docstring)."""
    run = results.get("run") or {}
    fleet = results.get("fleet")
    records = [results["hosts"][name] for name in sorted(results.get("hosts") or {})]
    ordered = sorted(records, key=lambda record: (VERDICT_ORDER[verdict_of(record)], str(record.get("host"))))
    errors, problems = {}, []
    nodes = [node_row(index, record) for index, record in enumerate(ordered)]
    gpu_rows, flagged = _section(problems, "GPU table", lambda: gpu_table(ordered, errors), ({}, []))
    benchmarks = _section(problems, "benchmark charts", lambda: benchmark_views(ordered, profiles, errors),
                          dict(NO_BENCHMARKS))
    topology = _section(problems, "topology matrices", lambda: topology_groups(ordered, errors), [])
    job, cost_problem = reference_job(results, job)
    where = str(results.get("path") or "RESULTS_DIR")
    for node in nodes:
        node["next_step"] = next_step(node["verdict"], node["host"], where, node["coverage"].get("incomplete") or [])
        node["slurm"] = slurm_words(results.get("slurm"), node["host"])
        node["gpu_rows"] = gpu_rows.get(node["host"], [])
        node["flagged"] = sum(1 for item in flagged if item["host"] == node["host"])
        node["error"] = "; ".join(text for text in [node["error"]] + errors.get(node["host"], []) if text)
    counts = Counter(node["verdict"] for node in nodes)
    if fleet:
        verdict = fleet.get("verdict") or NOT_JUDGED
        fleet_counts = fleet.get("counts") or {}
        note = None
    else:
        verdict = NOT_JUDGED
        fleet_counts = {name: counts.get(name, 0) for name in VERDICTS}
        note = "the run has no fleet.json (status %s): it was interrupted or is still running; node verdicts are as recorded so far" % _text(run.get("status"))
    status_totals = Counter()
    for node in nodes:
        status_totals.update(node["status_counts"])
    return {
        "title": title or "gpufleet acceptance report",
        "run": {key: _text(run.get(key)) for key in ("run_id", "started", "finished", "status", "playbook", "gpufleet_version", "ansible_version")},
        "inventory": ", ".join(str(item) for item in run.get("inventory") or []),
        "fleet": {
            "verdict": verdict,
            "verdict_class": VERDICT_CLASS.get(verdict, "notjudged"),
            "counts": [{"verdict": name, "count": int(fleet_counts.get(name, 0) or 0), "css": VERDICT_CLASS[name]} for name in
                       (REJECT, UNREACHABLE, INCOMPLETE, ACCEPT_WITH_WARNINGS, ACCEPT)],
            "not_judged": counts.get(NOT_JUDGED, 0),
            "nodes": len(nodes),
            # how many nodes can be used, first: the fleet's verdict is its worst node's
            "acceptable": sum(1 for node in nodes if node["verdict"] in ACCEPTED),
            "note": note,
            "level": _text((fleet or {}).get("level") or (run.get("settings") or {}).get("level")),
            "label": _text((fleet or {}).get("label")),
        },
        "status_totals": [{"status": status, "count": status_totals.get(status, 0)} for status in ("fail", "error", "warn", "skip", "pass")],
        "nodes": nodes,
        "failing": [node for node in nodes if node["verdict"] in (REJECT, UNREACHABLE, INCOMPLETE, NOT_JUDGED)],
        "topology_groups": topology,
        "gpu_columns": [label for _field, label in GPU_COLUMNS],
        "gpu_flagged": flagged,
        "benchmarks": benchmarks,
        "cost": _section(problems, "cost to train", lambda: cost_chart_view(ordered, job)),
        "cost_problem": cost_problem,
        "throughput": _section(problems, "GPU throughput table", lambda: throughput_view(ordered)),
        # the burn-in section (report/charts_series.py): None when the run has no burn-in record and no history
        "burn_in": _section(problems, "burn-in charts", lambda: burn_in_view(results)),
        "problems": problems,
    }
