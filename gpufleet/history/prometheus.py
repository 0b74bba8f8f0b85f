# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node's latest NVML metrics in the Prometheus text exposition format (version 0.0.4).

Written by the health check into node_exporter's textfile-collector directory on each node
(``<dir>/gpufleet.prom``), so the fleet's own monitoring scrapes what gpufleet last measured.
Every metric has ``# HELP`` and ``# TYPE`` lines and per-GPU labels ``gpu`` (index), ``uuid``
and ``name``; names carry their base unit (``_celsius``, ``_hertz``, ``_watts``, ``_seconds``)
and counters end in ``_total`` (Prometheus naming conventions). A value NVML did not give
(null) is left out, never written as 0. No sample timestamps: the textfile collector refuses them.

Label values come from the node (a GPU's name is whatever its driver says), so they are escaped
as the format requires: backslash -> ``\\\\``, double quote -> ``\\"``, line feed -> ``\\n``; other
control characters (which the format has no escape for) become a space, and text that is not
valid UTF-8 is replaced.

:func:`prometheus_text` renders one host of a results directory (the action ``health_prometheus``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpufleet.checks.burn_in import drift_results
from gpufleet.checks.burn_in_flags import judge
from gpufleet.facts import nvml_samples as nvml
from gpufleet.results.burn_in import load_samples, read_history, records_of
from gpufleet.results.gpu_compute import gpu_figures
from gpufleet.results.shapes import HostRecord
from gpufleet.results.store import ResultsError, RunDir

PREFIX = "gpufleet_"
FILE_NAME = "gpufleet.prom"

# (name, type, help, per-GPU value reader)
GAUGES = (
    ("gpu_temperature_celsius", "GPU core temperature (NVML, the latest sample).", lambda sample: sample.get("temperature_c")),
    ("gpu_sm_clock_hertz", "GPU SM clock (NVML, the latest sample).",
     lambda sample: None if sample.get("sm_clock_mhz") is None else sample["sm_clock_mhz"] * 1000000),
    ("gpu_power_watts", "GPU board power draw (NVML, the latest sample).", lambda sample: sample.get("power_w")),
)

# The gpu_compute benchmark's per-GPU figures: (name, figures key, label name, scale to base units, help).
THROUGHPUT_GAUGES = (
    ("gpu_gemm_flops_per_second", "gemm_tflops", "dtype", 1e12,
     "Dense matrix-multiply throughput of the GPU per precision (gpu_compute benchmark, the latest run)."),
    ("gpu_memory_bandwidth_bytes_per_second", "hbm_gbs", "kernel", 1e9,
     "GPU memory (HBM) bandwidth per streaming kernel (gpu_compute benchmark, the latest run)."),
)


# A metric's labels: (name, value) pairs, in the order they are written
Labels = list[tuple[str, Any]]


def escape_label(value: object) -> str:
    """A label value as the exposition format needs it (module docstring)."""
    text = str(value).encode("utf-8", "replace").decode("utf-8")
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif char == '"':
            out.append('\\"')
        elif char == "\n":
            out.append("\\n")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(" ")
        else:
            out.append(char)
    return "".join(out)


def escape_help(text: object) -> str:
    """HELP text: backslash and line feed escaped."""
    return str(text).replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    """A sample value: integers as integers, floats in Go/Prometheus syntax (NaN, +Inf, -Inf)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _labels(pairs: Labels) -> str:
    return "{%s}" % ",".join('%s="%s"' % (name, escape_label(value)) for name, value in pairs)


def latest(parsed: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per GPU in the samples: ``{"ident": {index, uuid, name, pci_bus_id}, "sample": its last sample}``, by index."""
    series = nvml.by_gpu(parsed.get("samples") or [])
    return [{"ident": nvml.gpu_identity(index, series[index], parsed.get("header")), "sample": series[index][-1]} for index in sorted(series)]


def _family(name: str, kind: str, text: str, lines: list[str]) -> str:
    """One metric family: its HELP and TYPE lines and its samples; nothing for a family without samples."""
    if not lines:
        return ""
    return "# HELP %s%s %s\n# TYPE %s%s %s\n%s" % (PREFIX, name, escape_help(text), PREFIX, name, kind, "".join(lines))


def _gpu_labels(ident: Mapping[str, Any]) -> Labels:
    """The labels of every per-GPU metric: ``gpu`` (index), ``uuid``, ``name``."""
    return [("gpu", ident["index"]), ("uuid", ident.get("uuid") or ""), ("name", ident.get("name") or "")]


def _sample(name: str, labels: Labels, value: float) -> str:
    return "%s%s%s %s\n" % (PREFIX, name, _labels(labels), format_value(value))


def _gauges(gpus: list[dict[str, Any]]) -> list[str]:
    """The GAUGES of the latest samples, one family each."""
    families = []
    for name, text, read in GAUGES:
        values = [(item, read(item["sample"])) for item in gpus]
        families.append(_family(name, "gauge", text, [_sample(name, _gpu_labels(item["ident"]), value)
                                                      for item, value in values if value is not None]))
    return families


def _counters(gpus: list[dict[str, Any]]) -> list[str]:
    """The clock-event, ECC and NVLink counters of the latest samples, and whether each GPU is lost."""
    clock, ecc, nvlink = [], [], []
    for item in gpus:
        sample, labels = item["sample"], _gpu_labels(item["ident"])
        for event in nvml.CLOCK_EVENTS:
            value = (sample.get("clock_event_ns") or {}).get(event)
            if value is not None:
                clock.append(_sample("gpu_clock_event_seconds_total", labels + [("reason", event)], value / 1e9))
        for field in nvml.ECC_FIELDS:
            value = (sample.get("ecc") or {}).get(field)
            if value is not None:
                scope, kind = field.split("_", 1)
                ecc.append(_sample("gpu_ecc_errors_total", labels + [("scope", scope), ("type", kind)], value))
        for field in nvml.NVLINK_FIELDS:
            value = (sample.get("nvlink") or {}).get(field)
            if value is not None:
                nvlink.append(_sample("gpu_nvlink_errors_total", labels + [("type", field)], value))
    lost = ["%sgpu_lost%s %d\n" % (PREFIX, _labels(_gpu_labels(item["ident"])),
                                   1 if nvml.gpu_lost(item["sample"]) else 0) for item in gpus]
    return [
        _family("gpu_clock_event_seconds_total", "counter", "Time the GPU's clocks were held down, per reason, since "
                "the driver loaded (NVML clock-event counters).", clock),
        _family("gpu_ecc_errors_total", "counter",
                "ECC errors (volatile: since the driver loaded; aggregate: over the GPU's life).", ecc),
        _family("gpu_nvlink_errors_total", "counter",
                "NVLink error counters summed over the GPU's active links, since the driver loaded.", nvlink),
        _family("gpu_lost", "gauge", "1 when NVML said the GPU is lost (GPU_IS_LOST) in the latest sample.", lost),
    ]


def _findings(gpus: list[dict[str, Any]], findings: Iterable[Mapping[str, Any]]) -> str:
    """``gpufleet_gpu_findings{status}``: per GPU, how many findings of each status (warn, fail) name it."""
    counts: dict[tuple[Any, str], int] = {}
    for finding in findings:
        gpu = finding.get("gpu") if isinstance(finding.get("gpu"), dict) else None
        if gpu is None or finding.get("status") not in ("warn", "fail"):
            continue
        key = (gpu.get("index"), finding["status"])
        counts[key] = counts.get(key, 0) + 1
    lines = []
    for item in gpus:
        for status in ("warn", "fail"):
            labels = _labels(_gpu_labels(item["ident"]) + [("status", status)])
            lines.append("%sgpu_findings%s %d\n" % (PREFIX, labels, counts.get((item["ident"]["index"], status), 0)))
    return _family("gpu_findings", "gauge",
                   "Burn-in and health findings of the GPU in gpufleet's latest judging, by status.", lines)


def _throughput(gpus: list[dict[str, Any]], throughput: Iterable[Mapping[str, Any]] | None) -> list[str]:
    """The THROUGHPUT_GAUGES of the gpu_compute benchmark's figures, per GPU (labelled with the samples' UUIDs)."""
    uuids = {item["ident"]["index"]: item["ident"].get("uuid") or "" for item in gpus}
    families = []
    for name, field, label, scale, text in THROUGHPUT_GAUGES:
        lines = []
        for gpu in throughput or []:
            ident = {"index": gpu.get("index"), "uuid": uuids.get(gpu.get("index"), ""), "name": gpu.get("name") or ""}
            for key, value in sorted((gpu.get(field) or {}).items()):
                lines.append(_sample(name, _gpu_labels(ident) + [(label, key)], value * scale))
        families.append(_family(name, "gauge", text, lines))
    return families


def render(gpus: list[dict[str, Any]], findings: Iterable[Mapping[str, Any]] | None = None,
           sampled_at: float | None = None, throughput: Iterable[Mapping[str, Any]] | None = None) -> str:
    """The exposition text for ``gpus`` (:func:`latest`).

    ``findings``: check results with a ``gpu`` key (flags.judge / the host's burn_in checks);
    each GPU gets ``gpufleet_gpu_findings{status="warn"|"fail"}`` counts. ``sampled_at``: epoch
    seconds of the samples, as ``gpufleet_health_last_sample_timestamp_seconds``. ``throughput``: the host's latest
    gpu_compute figures per GPU (report/cost.py ``gpu_figures``), as the THROUGHPUT_GAUGES.
    """
    families = _gauges(gpus) + _counters(gpus)
    if findings is not None:
        families.append(_findings(gpus, findings))
    # the gpu_compute benchmark's figures (report/cost.py gpu_figures), so their trend is kept between weekly checks
    families += _throughput(gpus, throughput)
    if sampled_at is not None:
        families.append(_family("health_last_sample_timestamp_seconds", "gauge",
                                "When gpufleet last sampled this node (Unix time).",
                                ["%shealth_last_sample_timestamp_seconds %s\n" % (PREFIX, format_value(sampled_at))]))
    return "".join(families)


def render_samples(parsed: Mapping[str, Any], findings: Iterable[Mapping[str, Any]] | None = None,
                   throughput: Iterable[Mapping[str, Any]] | None = None) -> str:
    """:func:`render` of a whole sampler run: the last sample of each GPU, stamped with the last sample's time."""
    gpus = latest(parsed)
    times = [sample["t"] for sample in parsed.get("samples") or []]
    return render(gpus, findings=findings, sampled_at=max(times) if times else None, throughput=throughput)


def host_findings(host_record: HostRecord, parsed: dict[str, Any], load: Any, thresholds: Any,
                  drift: list[dict[str, Any]]) -> Sequence[Mapping[str, Any]]:
    """The GPU findings to count: the host's judged burn_in checks when it has been judged, else a fresh judging."""
    judged = [item for item in host_record.get("checks") or [] if isinstance(item, dict) and str(item.get("id", "")).startswith("burn_in")]
    if judged:
        return judged
    return judge(parsed, load=load, settings=thresholds) + drift_results(drift)


def prometheus_text(run: RunDir, host: str, record_name: str | None = None,
                    thresholds: Any = None) -> tuple[str, int]:
    """``(content, gpus)`` for ``host`` of ``run`` (a RunDir). ResultsError when it has no readable samples."""
    host_record = run.read_host(host)
    entries = records_of(host_record)
    if record_name is not None:
        entries = [entry for entry in entries if entry.get("name") == record_name]
    if not entries or host_record is None:
        raise ResultsError("host %s has no burn-in record%s in %s" % (host, " named %s" % record_name if record_name else "", run.path))
    entry = entries[-1]
    parsed, problem = load_samples(run.path, entry)
    if parsed is None:
        raise ResultsError("host %s, burn-in record %s: %s" % (host, entry.get("name"), problem))
    drift = [flag for flag in (read_history(run.path) or {}).get("flags") or [] if isinstance(flag, dict) and flag.get("host") == host]
    findings = host_findings(host_record, parsed, entry.get("load"), thresholds, drift)
    return render_samples(parsed, findings=findings, throughput=gpu_figures(host_record)), len(latest(parsed))
