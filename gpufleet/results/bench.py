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
that failed without a record of its own (:func:`plain_record`, :func:`build_plain_record`).
``bench_run`` parses a run's output (:func:`parse_output`; the JSON document of nccl-tests or perftest first where
the run wrote one, :func:`parse_run`) and records it with its raw output (:func:`record_run`) and, where the NVML
sampler ran beside it, the sampler's per-GPU summary of the run (:func:`run_samples`), or records the node unreachable (:func:`record_unreachable`). Fields:
docs/results-schema.md.
"""

from __future__ import annotations

import calendar
import math
import os
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any, cast

from gpufleet.facts import nvml_samples
from gpufleet.facts.nic import parse_int
from gpufleet.facts.raw import first_line
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.registry import parse
from gpufleet.results.shapes import BenchmarkRecord
from gpufleet.results.store import BENCHMARK_KINDS, BENCHMARK_OUTCOMES, RunDir, utc_now

# The record name the report expects for each kind (report/benchmark_view.py classify_benchmark reads the name's start).
KIND_NAMES = {
    "allreduce_single": "all_reduce_perf",
    "allreduce_multi": "all_reduce_perf",
    "allreduce_pair": "all_reduce_perf",
    "iperf3": "iperf3",
    "iperf3_concurrent": "iperf3 concurrent",
    "ib_write_bw": "ib_write_bw",
    "ib_write_lat": "ib_write_lat",
    "nvbandwidth": "nvbandwidth",
    "gpu_compute": "gpubench",
}


def port_label(device: object, port: object) -> str:
    """``mlx5_0/1``: how the checks name a port (as gpufleet.facts.nic's summary does)."""
    return "%s/%s" % (device, port)


def snapshot(ports: Iterable[Mapping[str, Any]] | None, taken: Any) -> dict[str, Any]:
    """``{taken, counters, hw_counters}`` from the module's raw ``ports`` (unreadable or ``N/A`` -> None)."""
    counters: dict[str, dict[str, int | None]] = {}
    hw_counters: dict[str, dict[str, int | None]] = {}
    for entry in ports or []:
        label = port_label(entry.get("device"), entry.get("port"))
        counters[label] = {str(name): parse_int(value) for name, value in sorted((entry.get("counters") or {}).items())}
        hw_counters[label] = {str(name): parse_int(value) for name, value in sorted((entry.get("hw_counters") or {}).items())}
    return {"taken": taken, "counters": counters, "hw_counters": hw_counters}


def _base(name: object, kind: str | None, hosts: Iterable[object], started: Any) -> BenchmarkRecord:
    """A record of ``kind`` without output: every field, outcome ``ok``, the rest empty."""
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


def counters_record(host: str, benchmark: object, before: Mapping[str, Any] | None,
                    after: Mapping[str, Any] | None) -> BenchmarkRecord:
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


def plain_record(name: object, kind: str | None, hosts: Iterable[object], started: Any, outcome: str = "skipped",
                 reason: object = "", **fields: Any) -> BenchmarkRecord:
    """A record without output: ``outcome`` (``skipped`` by default) and ``reason``; ``fields`` set the rest (those
    that are not None); ValueError naming a field no record has."""
    record = _base(name, kind, hosts, started)
    record["outcome"] = outcome
    record["reason"] = str(reason or "")
    for key in fields:
        if key not in record:
            raise ValueError("unknown benchmark record field %s" % key)
    # every key is one of the record's (checked above)
    return cast(BenchmarkRecord, {**record, **{key: value for key, value in fields.items() if value is not None}})


def _int_or_none(value: Any, key: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError("%s must be an integer, got %r" % (key, value)) from None


def _plain_outcome(args: Mapping[str, Any], fields: dict[str, Any]) -> tuple[Any, Any, Any]:
    """``(outcome, reason, started)`` of a bench_record: from the registered bench_run ``result`` (whose command, rc,
    duration and job id go into ``fields``) where the task gives one, else the task's own (``skipped`` by default)."""
    run = args.get("result")
    if run is None:
        return args.get("outcome") or "skipped", args.get("reason") or "", utc_now()
    if not isinstance(run, dict) or "outcome" not in run:
        raise ValueError("result must be a registered bench_run result (it has no outcome)")
    fields.update({"command": [str(part) for part in run.get("cmd") or []], "rc": run.get("rc"),
                   "duration_s": run.get("duration_s"), "job_id": run.get("job_id")})
    return run.get("outcome"), args.get("reason") or run.get("reason") or "", run.get("started") or utc_now()


def build_plain_record(args: Mapping[str, Any], host: str) -> BenchmarkRecord:
    """The record bench_record writes for the task's ``args`` on ``host`` (ValueError naming the bad option)."""
    kind = args.get("kind")
    if kind not in BENCHMARK_KINDS:
        raise ValueError("kind must be one of %s, got %r" % (", ".join(BENCHMARK_KINDS), kind))
    hosts = args.get("hosts") or [host]
    if not isinstance(hosts, list):
        raise ValueError("hosts must be a list of inventory names")
    fields = {"repeat": _int_or_none(args.get("repeat"), "repeat") or 1, "round": _int_or_none(args.get("round"), "round"),
              "group": str(args["group"]) if args.get("group") else None}
    outcome, reason, started = _plain_outcome(args, fields)
    if outcome not in BENCHMARK_OUTCOMES:
        raise ValueError("outcome must be one of %s, got %r" % (", ".join(BENCHMARK_OUTCOMES), outcome))
    if outcome == "skipped" and not str(reason).strip():
        raise ValueError("reason is required for a skipped benchmark: say why it does not apply")
    name = args.get("name") or KIND_NAMES.get(kind, kind)
    return plain_record(name, kind, hosts, started, outcome=outcome, reason=first_line(str(reason)) if reason else "", **fields)


def record_counters(run_dir: str, host: str, benchmark: str, before: dict, after: dict) -> BenchmarkRecord | None:
    """Write the ``ib_counters`` record of ``host`` into ``run_dir``; None (nothing written) when neither snapshot has a port."""
    if not after.get("counters") and not (before.get("counters") or {}):
        return None
    record = counters_record(host, benchmark, before, after)
    RunDir.open(run_dir).add_benchmark(host, record)
    return record


def record_name(args: dict) -> str:
    """The record's name: ``name``, else the kind's, else the program's basename (a launcher is not guessed past)."""
    if args.get("name"):
        return str(args["name"])
    if args.get("kind") in KIND_NAMES:
        return KIND_NAMES[args["kind"]]
    argv = args.get("argv") or ["benchmark"]
    return os.path.basename(str(argv[0])) or "benchmark"


def parse_output(kind: str | None, stdout: str | None) -> tuple[Any, str | None]:
    """(parsed, error): the registry parser's result for ``stdout``, or why there is none."""
    if not kind:
        return None, None
    text = stdout or ""
    if not text.strip():
        return None, "no output to parse"
    try:
        return parse(kind, text), None
    except ParseError as exc:
        where = " line %d:" % exc.line if exc.line is not None else ""
        return None, "cannot read the output as %s:%s %s" % (kind, where, exc.message)


# An nccl-tests binary: all_reduce_perf, all_gather_perf... (a NAME_SUFFIX build: all_reduce_perf_mpi)
NCCL_TESTS_BINARY_RE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*_perf(?:_[A-Za-z0-9]+)?$")
# What only the text has, kept from it under the document's reading: every rank's device line (the document keeps
# each process's first) and NCCL's WARN lines (the document has only NCCL's last error).
TEXT_KEPT_KEYS = ("devices", "warnings")
_HALF_FIGURES = (("time_us", "time"), ("algbw_gbs", "bandwidth"), ("busbw_gbs", "bandwidth"))
_ROW_CELLS = ("size_bytes", "count", "type", "redop", "root")


def _first_named(argv: list | None, name_re: re.Pattern[str]) -> str | None:
    """The first element of ``argv`` whose file name matches ``name_re`` (after any launcher); None."""
    for item in argv or []:
        if name_re.match(os.path.basename(str(item))):
            return str(item)
    return None


def nccl_tests_binary(argv: list | None) -> str | None:
    """The first element of ``argv`` named like an nccl-tests binary (``<name>_perf``), after any launcher; None."""
    return _first_named(argv, NCCL_TESTS_BINARY_RE)


def _printed_step(value: float, cell: str) -> float:
    """Half a unit of the last digit nccl-tests prints of a figure of this size in a ``cell`` of its table, in the
    coarsest of its layouts: ``time`` (2.17.1: ``%.2f``, ``%.1f`` from 100 us, ``%.0f`` from 10000; 2.17.3
    ``getFloatStr(7)``: ``%.2f``, ``%.1f`` from 10^4, ``%.0f`` from 10^5, ``%.1e`` from 10^7), ``bandwidth`` (2.17.1:
    ``%.2f``; 2.17.3 ``getFloatStr(6)``: ``%.1f`` from 10^3, ``%.0f`` from 10^4, ``%.0e`` from 10^6) or ``average``
    (``%g``: six significant digits)."""
    magnitude = abs(value)
    exponent = math.floor(math.log10(magnitude)) if magnitude > 0 else 0
    if cell == "average":
        return 0.5 * 10.0 ** (exponent - 5)
    # (below, half a unit of the last printed digit) in rising order; past the last: e-notation
    steps = ((100, 0.005), (10000, 0.05), (1e7, 0.5)) if cell == "time" else ((1000, 0.005), (10000, 0.05), (1e6, 0.5))
    for below, step in steps:
        if magnitude < below:
            return step
    return (0.05 if cell == "time" else 0.5) * 10.0 ** exponent


def same_figure(from_json: float | int | None, from_text: float | int | None, cell: str = "bandwidth") -> bool:
    """Whether the text's printed figure is the document's (``%lf``: to 1e-6) as the table rounds it in ``cell``."""
    if from_json is None or from_text is None:
        return from_json is None and from_text is None
    step = _printed_step(float(from_json), cell)
    return abs(float(from_json) - float(from_text)) <= step + 1e-6 + 1e-9 * abs(float(from_json))


def _half_disagreements(path: str, from_json: dict | None, from_text: dict | None) -> list:
    if (from_json is None) != (from_text is None):
        return [{"field": path, "json": from_json, "text": from_text}]
    if from_json is None or from_text is None:  # both None
        return []
    out = [{"field": "%s.%s" % (path, key), "json": from_json[key], "text": from_text.get(key)}
           for key, cell in _HALF_FIGURES if not same_figure(from_json[key], from_text.get(key), cell)]
    wrong_json, wrong_text = from_json.get("wrong"), from_text.get("wrong")
    # %6g prints a count of a million or more in e-notation: the text's is then approximate
    if (wrong_json is None) != (wrong_text is None) or (
            wrong_json is not None and abs(wrong_json - wrong_text) > 1e-5 * max(1.0, abs(wrong_json))):
        out.append({"field": path + ".wrong", "json": wrong_json, "text": wrong_text})
    return out


def json_text_disagreements(from_json: dict, from_text: dict | None) -> list:
    """``[{field, json, text}]``: where the table of the same run says otherwise than its JSON document (beyond the
    table's rounding): rows, their cells and figures, the average bus bandwidth, out-of-bounds values, ranks."""
    if not from_text:
        return []
    out = []
    rows_json, rows_text = from_json.get("rows") or [], from_text.get("rows") or []
    if len(rows_json) != len(rows_text):
        out.append({"field": "rows", "json": len(rows_json), "text": len(rows_text)})
    for index, (row_json, row_text) in enumerate(zip(rows_json, rows_text)):
        path = "rows[%d]" % index
        out += [{"field": "%s.%s" % (path, key), "json": row_json.get(key), "text": row_text.get(key)}
                for key in _ROW_CELLS if row_json.get(key) != row_text.get(key)]
        for half in ("out_of_place", "in_place"):
            out += _half_disagreements("%s.%s" % (path, half), row_json.get(half), row_text.get(half))
    if not same_figure(from_json.get("avg_busbw_gbs"), from_text.get("avg_busbw_gbs"), "average"):
        out.append({"field": "avg_busbw_gbs", "json": from_json.get("avg_busbw_gbs"),
                    "text": from_text.get("avg_busbw_gbs")})
    for key in ("out_of_bounds", "ranks"):
        if from_text.get(key) is not None and from_json.get(key) != from_text.get(key):
            out.append({"field": key, "json": from_json.get(key), "text": from_text.get(key)})
    return out


def merge_nccl_readings(from_json: dict, from_text: dict | None) -> dict:
    """One record of a run read both ways: the document's figures and fields, the text's where the document has
    nothing (NCCL's INFO lines, the nccl-tests version line) and for :data:`TEXT_KEPT_KEYS`; failed when either says
    so, the text's cause first (it has the WARN lines)."""
    merged = dict(from_text or {})
    for key, value in from_json.items():
        if key in merged and (value is None or key in TEXT_KEPT_KEYS and merged[key]):
            continue
        merged[key] = value
    if from_text:
        merged["failed"] = bool(from_json.get("failed") or from_text.get("failed"))
        seen = {item.get("text") for item in from_text.get("errors") or []}
        merged["errors"] = list(from_text.get("errors") or []) + [
            item for item in from_json.get("errors") or [] if item.get("text") not in seen]
        causes = (from_text.get("cause"), from_json.get("cause"))
        merged["cause"] = (causes[0] or causes[1]) if merged["failed"] else None
    merged["parsed_from"] = "json"
    merged["json_fallback_reason"] = None
    merged["json_text_disagreements"] = json_text_disagreements(from_json, from_text)
    return merged


# A perftest binary: ib_write_bw, ib_read_lat... (linux-rdma/perftest's InfiniBand tests)
PERFTEST_BINARY_RE = re.compile(r"^ib_(?:write|read|send|atomic)_(?:bw|lat)$")
# What only the text of a perftest run has, kept from it under the report's reading: the banner's settings as printed,
# every warning and error line (the report has only the PCIe ordering warning), the CUDA device lines, and the
# sections of a capture that holds several
PERFTEST_TEXT_KEPT = ("settings", "warnings", "errors", "gpu_name", "gpu_pci", "sections", "section_count",
                      "interleaved", "line")
# the banner's settings compared between the report and the text of the same run
PERFTEST_SETTINGS = ("device", "link_type", "connection_type", "qps", "mtu", "gid_index", "tx_depth")


def perftest_binary(argv: list | None) -> str | None:
    """The first element of ``argv`` named like a perftest binary (``ib_write_bw``, ``ib_read_lat``...); None."""
    return _first_named(argv, PERFTEST_BINARY_RE)


def _same_cell(from_json: Any, from_text: Any) -> bool:
    """perftest prints a figure with the same format in its report and its table: the same number, or both None."""
    if from_json is None or from_text is None:
        return from_json is None and from_text is None
    return abs(float(from_json) - float(from_text)) <= 1e-9 * max(1.0, abs(float(from_json)))


def perftest_disagreements(from_json: dict, from_text: dict | None) -> list:
    """``[{field, json, text}]``: where the text of the same run says otherwise than its report: the report's row
    (``results[bytes=N].<figure>``, or the whole row when the text has no row of that size) and the banner's
    settings. Sizes only the text has are no disagreement: the report keeps the last size of a sweep."""
    if not from_text:
        return []
    out = []
    text_rows = {row.get("bytes"): row for row in from_text.get("results") or []}
    for row in from_json.get("results") or []:
        path = "results[bytes=%s]" % row["bytes"]
        other = text_rows.get(row["bytes"])
        if other is None:
            out.append({"field": path, "json": row, "text": None})
            continue
        out += [{"field": "%s.%s" % (path, key), "json": value, "text": other.get(key)}
                for key, value in row.items() if not _same_cell(value, other.get(key))]
    for key in PERFTEST_SETTINGS:
        if None not in (from_json.get(key), from_text.get(key)) and from_json[key] != from_text[key]:
            out.append({"field": key, "json": from_json[key], "text": from_text[key]})
    return out


def merge_perftest_readings(from_json: dict, from_text: dict | None) -> dict:
    """One record of a perftest run read both ways: the report's row and settings, the text's where the report has
    nothing and for :data:`PERFTEST_TEXT_KEPT`; the rows are the text's with the report's row in place of the text's
    row of its size (a sweep's report keeps its last size only)."""
    merged = dict(from_text or {})
    for key, value in from_json.items():
        if key in merged and (value is None or key in PERFTEST_TEXT_KEPT):
            continue
        merged[key] = value
    rows = {row["bytes"]: row for row in from_json.get("results") or []}
    text_rows = (from_text or {}).get("results") or []
    merged["results"] = [rows.get(row.get("bytes"), row) for row in text_rows] + [
        row for size, row in rows.items() if size not in {item.get("bytes") for item in text_rows}]
    merged["parsed_from"] = "json"
    merged["json_fallback_reason"] = None
    merged["json_text_disagreements"] = perftest_disagreements(from_json, from_text)
    return merged


# parse_kind -> the KIND of the JSON document its tool writes, and how that reading and the text's make one record
JSON_READINGS = {
    "nccl": ("nccl-json", merge_nccl_readings),
    "ib-bw": ("perftest-json", merge_perftest_readings),
    "ib-lat": ("perftest-json", merge_perftest_readings),
}


def _read_document(kind: str, document: str) -> dict:
    """The document read as its KIND; a perftest report of the other test (a latency report for ``ib-bw``) refused."""
    json_kind = JSON_READINGS[kind][0]
    reading = parse(json_kind, document)
    if reading.get("kind") not in (None, kind):
        raise ParseError("the document reports %s (%s), not an %s run" % (reading.get("test"), reading["kind"], kind),
                         kind=json_kind)
    return reading


def parse_run(kind: str | None, stdout: str | None, node_json: dict | None) -> tuple[Any, str | None]:
    """(parsed, error) of a run whose tool may have written a JSON document (``node_json``, the runner's, with
    ``document`` and ``reason``): the document read as its KIND (:data:`JSON_READINGS`) where there is one, merged
    with the text's reading; else the text alone. ``parsed_from`` says which, ``json_fallback_reason`` why not the
    document, ``json_text_disagreements`` where the two differ (the document's figure is kept)."""
    from_text, error = parse_output(kind, stdout)
    if kind not in JSON_READINGS:
        return from_text, error
    node_json = node_json or {}
    why = node_json.get("reason") or "no JSON document was asked for"
    if node_json.get("document") is not None:
        try:
            return JSON_READINGS[kind][1](_read_document(kind, node_json["document"]), from_text), None
        except ParseError as exc:
            where = " line %d:" % exc.line if exc.line is not None else ""
            why = "the document could not be read as %s:%s %s" % (JSON_READINGS[kind][0], where, exc.message)
    if from_text is None:
        return None, error
    return dict(from_text, parsed_from="text", json_fallback_reason=why, json_text_disagreements=[]), None


def parse_nccl_run(stdout: str | None, nccl_json: dict | None) -> tuple[Any, str | None]:
    """:func:`parse_run` of an nccl-tests run (``nccl_json``: the runner's, with ``document`` and ``reason``)."""
    return parse_run("nccl", stdout, nccl_json)


def unreadable_output(kind: str, stdout: str, error: str | None) -> str:
    """The reason of a run that exited 0 with output its parser refused, naming the output's first line.

    all_reduce_perf given an unknown option prints ``invalid option`` and its usage text and exits 0: no
    sweep ran, and only the output says so.
    """
    first = next((line.strip() for line in stdout.splitlines() if line.strip()), "")
    return ("exited 0 without %s results: its output begins %r (%s)" % (kind, first[:120], error))[:300]


# Outcomes whose reason the node took from the output's last line, where nccl-tests prints its backtrace.
_CAUSE_OUTCOMES = ("failed", "crash", "hang")


def run_reason(outcome: str | None, node_reason: str | None, parsed: Any) -> str:
    """The record's reason: the node's, led by the parser's ``cause`` for a run that failed.

    The cause is the NCCL WARN / ``Test NCCL failure ... 'unhandled cuda error'`` line (parsers/nccl_tests.py).

    The node words a failure from the output's last line (``exit status 3: .. host pid 7: Test failure
    common.cu:891``: the last frame of nccl-tests' backtrace); the cause is what says why. The node's
    own words follow in brackets, cut to their status (``exit status 3``, ``killed by SIGSEGV``).
    """
    node_reason = str(node_reason or "")
    cause = parsed.get("cause") if isinstance(parsed, dict) else None
    if outcome not in _CAUSE_OUTCOMES or not cause:
        return node_reason
    status = node_reason.split(": ", 1)[0] if node_reason.startswith("exit status") else node_reason[:120]
    return ("%s (%s)" % (cause, status) if status else str(cause))[:300]


def _epoch(started: str | None) -> float | None:
    """Epoch seconds of the runner's ``started`` (ISO 8601 UTC, whole seconds), None when it is not one."""
    try:
        return float(calendar.timegm(time.strptime(str(started), "%Y-%m-%dT%H:%M:%SZ")))
    except (TypeError, ValueError):
        return None


def run_window(module_result: dict) -> tuple[float, float] | None:
    """``(start, end)`` epoch seconds of a run on the node's clock, or None when the runner did not say.

    ``started`` is cut to the second, so the window opens at that second and closes a second after ``duration_s``.
    """
    start = _epoch(module_result.get("started"))
    duration = module_result.get("duration_s")
    if start is None or isinstance(duration, bool) or not isinstance(duration, (int, float)):
        return None
    return start, start + float(duration) + 1.0


def samples_cover(parsed_samples: dict, window: tuple[float, float] | None) -> bool:
    """Whether a sampler's output (:func:`gpufleet.facts.nvml_samples.parse_text`) holds the whole run: it ended
    (its trailer), or it took a tick at or after the run's end. Without a window, any sample covers it."""
    if parsed_samples.get("end"):
        return True
    times = [sample["t"] for sample in parsed_samples.get("samples") or [] if sample.get("t") is not None]
    if window is None:
        return bool(times)
    return bool(times) and max(times) >= window[1] - 1.0


def run_samples(text: str, window: tuple[float, float] | None) -> list | None:
    """The per-GPU summary (nvml_samples.summarise) of the NVML samples taken while a run went on, from the sampler's
    JSON Lines ``text``; the samples before the run started and after it ended are left out (the sampler may run a
    little longer: its duration is the run's expected length). None when no sample falls in the run."""
    parsed = nvml_samples.parse_text(text or "")
    samples = parsed.get("samples") or []
    if window is not None:
        samples = [sample for sample in samples if sample.get("t") is not None and window[0] <= sample["t"] <= window[1]]
    if not samples:
        return None
    return nvml_samples.summarise(dict(parsed, samples=samples))


def _failed_without_figures(parsed: Any) -> bool:
    """True for a parsed output that says its run failed and holds no result row: no figure to judge."""
    return isinstance(parsed, dict) and parsed.get("failed") is True and not parsed.get("rows")


def build_run_record(args: Mapping[str, Any], result: Mapping[str, Any], name: str, raw_path: str | None,
                     stderr_path: str | None, parsed: Any, unreadable: str | None = None) -> BenchmarkRecord:
    """The benchmark record (gpufleet.results.store.BENCHMARK_FIELDS) of one bench_run: its ``args`` and the node's ``result``.

    ``unreadable``: why the output of the run could not be parsed (:func:`unreadable_output`); a run the node
    called ``ok`` is then ``failed`` with that reason, never an ok run without a figure; so is one whose output
    says it failed and holds no result row (its cause as the reason).
    """
    env = {str(key): str(value) for key, value in (args.get("env") or {}).items()}
    host = args["record_host"]
    algorithm = args.get("algorithm") or env.get("NCCL_ALGO")
    outcome, reason = result.get("outcome"), run_reason(result.get("outcome"), result.get("reason"), parsed)
    if unreadable and outcome == "ok":
        outcome, reason = "failed", unreadable
    elif outcome == "ok" and _failed_without_figures(parsed):
        # nccl-tests exits 0 after its own argument errors (``invalid option '?'`` and the usage text)
        outcome, reason = "failed", ("exited 0, but its output says it failed: %s" % parsed.get("cause"))[:300]
    return {
        "name": name,
        "command": [str(part) for part in (result.get("cmd") or args.get("argv") or [])],
        "environment": env,
        "message_size_bytes": args.get("message_size_bytes"),
        "algorithm": str(algorithm) if algorithm else None,
        "raw_output_path": raw_path,
        "stderr_path": stderr_path,
        "parsed": parsed,
        "started": result.get("started") or utc_now(),
        "duration_s": result.get("duration_s"),
        "kind": args.get("kind"),
        "hosts": [str(item) for item in (args.get("hosts") or [host])],
        "outcome": outcome,
        "reason": reason,
        "rc": result.get("rc"),
        "repeat": int(args.get("repeat") or 1),
        "round": args.get("round"),
        "group": args.get("group"),
        "job_id": args.get("job_id"),
    }


def reconnected_words(lost: str, ended: list | None) -> str:
    """The record's ``reconnected``: the first attempt's lost connection (gpufleet/adapter/connection.py describe_loss),
    and what of it the second attempt ended on the node before running again."""
    pids = [str(item.get("pid")) for item in (ended or []) if isinstance(item, dict)]
    left = ("ended %d process(es) the first attempt left (pid %s)" % (len(pids), ", ".join(pids)) if pids
            else "the first attempt left no process")
    return ("%s; reconnected once and ran it again: %s" % (lost, left))[:500]


def record_run(args: dict, module_result: dict, parsed: Any, samples: list | None = None) -> BenchmarkRecord:
    """Write one bench_run's raw output and record into ``args["run_dir"]`` under ``args["record_host"]``; return the record.

    ``samples``: the NVML sampler's per-GPU summary of the run (:func:`run_samples`), kept in the record's ``samples``.
    """
    run = RunDir.open(args["run_dir"])
    host = args["record_host"]
    name = record_name(args)
    key = "%s.%s" % (name, args.get("job_id") or "run")
    raw_path = run.write_benchmark_raw(host, key, module_result.get("stdout") or "")
    stderr_path = run.write_benchmark_raw(host, key + ".stderr", module_result["stderr"]) if module_result.get("stderr") else None
    stdout, unreadable = module_result.get("stdout") or "", None
    if parsed is None and args.get("parse_kind") and stdout.strip():
        # the parser refused the output (ParseError): parse_output says why
        unreadable = unreadable_output(args["parse_kind"], stdout, parse_output(args["parse_kind"], stdout)[1])
    record = build_run_record(args, module_result, name, raw_path, stderr_path, parsed, unreadable=unreadable)
    if samples:
        record["samples"] = samples
    if module_result.get("reconnected"):
        record["reconnected"] = str(module_result["reconnected"])
    run.add_benchmark(host, record)
    return record


def record_unreachable(args: dict, message: str) -> BenchmarkRecord:
    """Write the record of a bench_run whose node could not be reached (outcome ``unreachable``); return it."""
    reason = message.strip().splitlines()[-1][:300] if message.strip() else "unreachable"
    record = build_run_record(args, {"outcome": "unreachable", "reason": reason, "rc": None, "duration_s": None}, record_name(args),
                              None, None, None)
    RunDir.open(args["run_dir"]).add_benchmark(args["record_host"], record)
    return record
