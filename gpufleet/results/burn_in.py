# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Burn-in records in a results directory (controller side).

A burn-in (or a health check's sampling) of one host is recorded as one entry of the host
record's ``burn_in`` list (``hosts/<host>.json``, docs/results-schema.md, docs/burn-in.md), with
its NVML samples kept verbatim as ``raw/<host>/burn_in/<name>.jsonl``::

    {"name": "burn_in", "kind": "burn_in" | "health_check",
     "samples_path": "raw/<host>/burn_in/<name>.jsonl" | null, "sampler_error": str | null,
     "load": {"tool": "dcgmi" | "gpu-burn" | "torch" | null, "outcome": str, "reason": str, ...} | null,
     "started": "2026-01-31T12:00:00Z", "duration_s": float | null, "recorded": time,
     "sampler": {"schema", "driver_version", "nvml_version", "binding", "interval_s", "host_time_start",
                 "samples", "ticks", "span_s", "bad_lines", "ended"},
     "gpus": [per-GPU summary, samples.summarise()]}

The checks (checks/burn_in.py) judge the samples file again at every judging, so a re-judging
with other thresholds needs nothing but the directory. :func:`judging_settings` is what
fleet_verdict hands the checks: the records with their samples read, and the drift flags the
history store wrote into ``history.json``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping
from typing import Any, Final, cast

from gpufleet.facts import nvml_samples as nvml
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.dcgmi_diag import parse_dcgmi_diag
from gpufleet.results.shapes import BurnInRecord, HostRecord, SamplerSummary
from gpufleet.results.store import RAW_DIR, ResultsError, RunDir, atomic_open, read_json, safe_name, utc_now

RECORDS_KEY: Final = "burn_in"
HISTORY_FILE = "history.json"
HISTORY_SCHEMA = "gpufleet.health-history/v1"
KINDS = ("burn_in", "health_check")
SAMPLES_DIR = "burn_in"
# The fields a caller may add to ``load`` besides tool/outcome/reason (kept as given, strings and numbers only).
LOAD_EXTRA = ("level", "rc", "command", "raw_output_path", "duration_s", "job_id")


def samples_file(run_path: str, host: str, name: str) -> str:
    """Absolute path of a record's samples file: ``raw/<host>/burn_in/<name>.jsonl``."""
    return os.path.join(run_path, RAW_DIR, safe_name(host), SAMPLES_DIR, safe_name(name) + ".jsonl")


def inside(run_path: str, relative: object) -> str | None:
    """The absolute path of run-relative ``relative`` when it stays inside the run directory, else None."""
    if not isinstance(relative, str) or not relative or os.path.isabs(relative):
        return None
    root = os.path.realpath(run_path)
    path = os.path.realpath(os.path.join(root, relative))
    return path if path.startswith(root + os.sep) else None


def copy_atomic(source: str, target: str) -> None:
    """Copy the file ``source`` to ``target`` so a reader sees the old file or the whole new one."""
    with atomic_open(target) as out, open(source, "rb") as src:
        shutil.copyfileobj(src, out, 1 << 20)


def write_lines_atomic(objects: Iterable[Mapping[str, Any]], target: str) -> None:
    """Write ``objects`` (dicts) as JSON Lines to ``target``, atomically."""
    with atomic_open(target, binary=False) as out:
        for item in objects:
            out.write(json.dumps(item, sort_keys=True, default=str) + "\n")


def clean_load(load: object) -> dict[str, Any] | None:
    """``load`` as recorded: None, or ``{tool, outcome, reason}`` plus the known extras. ValueError when malformed."""
    if load is None:
        return None
    if not isinstance(load, dict):
        raise ValueError("load must be a mapping {tool, outcome, reason} or null, got %s" % type(load).__name__)
    unknown = sorted(set(load) - {"tool", "outcome", "reason"} - set(LOAD_EXTRA))
    if unknown:
        raise ValueError("load: unknown key(s) %s (known: tool, outcome, reason, %s)" % (", ".join(unknown), ", ".join(LOAD_EXTRA)))
    tool = load.get("tool")
    if tool is not None and not isinstance(tool, str):
        raise ValueError("load.tool must be a string or null, got %r" % (tool,))
    outcome = load.get("outcome")
    if not isinstance(outcome, str) or not outcome:
        raise ValueError("load.outcome must be a string (ok, failed, hang, crash, skipped, ...), got %r" % (outcome,))
    out = {"tool": tool or None, "outcome": outcome, "reason": " ".join(str(load.get("reason") or "").split())[:2000]}
    for key in LOAD_EXTRA:
        if key in load:
            out[key] = load[key]
    return out


# The load outcome of a dcgmi diag that skipped tests: nothing failed, nothing verified either (burn_in.load: error).
NOT_VERIFIED = "not_verified"


def _test_words(tests: list, limit: int = 4) -> str:
    words = []
    for test in tests[:limit]:
        said = next((warning for entity in test["entities"] for warning in entity["warnings"]), "")
        words.append("%s/%s%s" % (test["category"], test["name"], ": %s" % said[:160] if said else ""))
    return ", ".join(words) + (" and %d more" % (len(tests) - limit) if len(tests) > limit else "")


def dcgmi_load(stdout: str | None, outcome: str | None, reason: str | None) -> dict[str, str]:
    """``{outcome, reason}`` of a ``dcgmi diag -j`` load from its JSON and bench_run's outcome and reason.

    DCGM's own word decides over the exit status: any test ``Fail`` -> ``failed`` (the failing tests and
    their first warning are the reason); else any test ``Skip``, no test at all, or a ``runtime_error``
    -> ``not_verified`` (a diagnostic that skipped its tests verified nothing: never ``ok``); else
    bench_run's outcome. A hang or a missing binary stays what it is; output that is not DCGM's JSON
    after an ``ok`` exit is ``not_verified`` with the parser's words.
    """
    outcome = str(outcome or "failed")
    reason = str(reason or "")
    if outcome not in ("ok", "failed", "crash"):
        return {"outcome": outcome, "reason": reason}
    try:
        parsed = parse_dcgmi_diag(stdout or "")
    except ParseError as exc:
        if outcome == "ok":
            return {"outcome": NOT_VERIFIED, "reason": "dcgmi diag -j: %s" % exc.message}
        return {"outcome": outcome, "reason": reason}
    return _dcgmi_tests_load(parsed, outcome, reason)


def _dcgmi_tests_load(parsed: dict, outcome: str, reason: str) -> dict[str, str]:
    """:func:`dcgmi_load` of a ``dcgmi diag -j`` that could be read (``parsed``): what its tests said decides."""
    tests = parsed["tests"]
    failed = [test for test in tests if test["status"] == "fail"]
    skipped = [test for test in tests if test["status"] == "skip"]
    other = [test for test in tests if test["status"] not in ("pass", "warn", "fail", "skip")]
    tally = "%d of %d test(s) passed" % (parsed["counts"].get("pass", 0) + parsed["counts"].get("warn", 0), len(tests))
    if failed:
        words = "dcgmi diag: Fail in %s" % _test_words(failed)
        if skipped:
            words += "; Skip in %s" % _test_words(skipped)
        return {"outcome": "failed", "reason": "%s (%s)" % (words, tally)}
    if parsed["runtime_error"]:
        said = " ".join(str(parsed["runtime_error"]).split())[:300]
        return {"outcome": NOT_VERIFIED, "reason": "dcgmi diag could not run its tests: %s" % said}
    if not tests:
        return {"outcome": NOT_VERIFIED, "reason": "dcgmi diag reported no test"}
    if skipped or other:
        words = _test_words(skipped + other)
        return {"outcome": NOT_VERIFIED, "reason": "dcgmi diag: Skip in %s (%s): not verified" % (words, tally)}
    if outcome != "ok":
        return {"outcome": outcome, "reason": reason}
    warned = [test for test in tests if test["status"] == "warn"]
    return {"outcome": "ok", "reason": "%s%s" % (tally, "; Warn in %s" % _test_words(warned) if warned else "")}


def sampler_summary(parsed: Mapping[str, Any]) -> SamplerSummary:
    """What the record keeps about the sampler run (the header and counts)."""
    header = parsed.get("header") or {}
    times = [sample["t"] for sample in parsed.get("samples") or []]
    end = parsed.get("end")
    return {
        "schema": header.get("schema"),
        "driver_version": header.get("driver_version"),
        "nvml_version": header.get("nvml_version"),
        "binding": header.get("binding"),
        "interval_s": header.get("interval_s"),
        "host_time_start": header.get("host_time_start"),
        "samples": len(times),
        "ticks": len(nvml.ticks(parsed.get("samples") or [])),
        "span_s": round(max(times) - min(times), 3) if times else None,
        "bad_lines": len(parsed.get("bad_lines") or []),
        "ended": end.get("reason") if end else None,
    }


def build_record(name: object, kind: str, samples_path: str | None, parsed: Mapping[str, Any] | None,
                 load: dict[str, Any] | None, started: str | None = None, duration_s: float | None = None,
                 sampler_error: str | None = None) -> BurnInRecord:
    """One burn-in record (module docstring)."""
    if kind not in KINDS:
        raise ValueError("kind must be one of %s, got %r" % (", ".join(KINDS), kind))
    return {
        "name": str(name),
        "kind": kind,
        "samples_path": samples_path,
        "sampler_error": sampler_error,
        "load": load,
        "started": started or utc_now(),
        "duration_s": duration_s,
        "recorded": utc_now(),
        "sampler": sampler_summary(parsed) if parsed is not None else None,
        "gpus": nvml.summarise(parsed) if parsed is not None else [],
    }


def sampler_objects(value: Any) -> list[dict[str, Any]]:
    """The sampler's JSON objects from a list of them, or from nvml_sample's registered result (``header``, ``samples``, ``end``)."""
    if isinstance(value, dict) and "header" in value:
        value = [value["header"]] + list(value.get("samples") or []) + ([value["end"]] if value.get("end") else [])
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ResultsError("sample_records must be the sampler's JSON objects (header, samples, end) or nvml_sample's registered result")
    return value


def record_burn_in(run: RunDir, host: str, name: str = "burn_in", samples_source: str | None = None,
                   sample_records: Any = None, load: object = None, kind: str | None = None, started: str | None = None,
                   duration_s: float | None = None,
                   sampler_error: str | None = None) -> tuple[BurnInRecord, dict[str, Any] | None]:
    """Write ``host``'s samples into ``run`` (a RunDir) and add (or replace, same name) its burn-in record.

    The samples come from ``samples_source`` (a file on the controller, e.g. fetched from the node;
    copied, or kept when it already is the target) or ``sample_records`` (the sampler's JSON objects,
    header first, or nvml_sample's registered result with inline samples). Neither, with ``sampler_error``, records a burn-in without samples. Returns
    ``(record, parsed samples or None)``.
    """
    load = clean_load(load)
    kind = kind or ("health_check" if load is None else "burn_in")
    target = samples_file(run.path, host, name)
    parsed = None
    if samples_source is not None:
        if not os.path.isfile(samples_source):
            raise ResultsError("samples file %s: not found on the controller" % samples_source)
        if os.path.realpath(samples_source) != os.path.realpath(target):
            copy_atomic(samples_source, target)
    elif sample_records is not None:
        sample_records = sampler_objects(sample_records)
        write_lines_atomic(sample_records, target)
    elif not sampler_error:
        raise ResultsError("no samples: give samples (a file), sample_records, or sampler_error saying why there are none")
    samples_path = None
    if samples_source is not None or sample_records is not None:
        parsed = nvml.load_file(target)
        samples_path = run.relative(target)
    record = build_record(name, kind, samples_path, parsed, load, started=started, duration_s=duration_s, sampler_error=sampler_error)
    host_record = run.read_host(host) or run.new_host_record(host)
    kept = [item for item in host_record.get(RECORDS_KEY) or [] if not (isinstance(item, dict) and item.get("name") == record["name"])]
    host_record[RECORDS_KEY] = kept + [record]
    run.write_host(host_record)
    return record, parsed


def records_of(host_record: Mapping[str, Any] | None) -> list[BurnInRecord]:
    """The burn-in records of a host record (a list of dicts: anything else in the list is left out)."""
    return [cast(BurnInRecord, item) for item in (host_record or {}).get(RECORDS_KEY) or [] if isinstance(item, dict)]


def load_samples(run_path: str, record: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """``(parsed samples, problem)`` of one record: the samples file read, or why it cannot be."""
    if record.get("samples_path") is None:
        return None, "no samples file recorded%s" % (": %s" % record["sampler_error"] if record.get("sampler_error") else "")
    path = inside(run_path, record["samples_path"])
    if path is None:
        return None, "samples path %r is not inside the results directory" % record["samples_path"]
    try:
        return nvml.load_file(path), None
    except nvml.SamplesError as exc:
        return None, str(exc)


def read_history(run_path: str) -> dict[str, Any] | None:
    """The run's ``history.json`` (written by the health_history action), or None."""
    path = os.path.join(run_path, HISTORY_FILE)
    if not os.path.exists(path):
        return None
    try:
        document = read_json(path)
    except ResultsError:
        return None
    return document if isinstance(document, dict) and document.get("schema") == HISTORY_SCHEMA else None


def judging_settings(run_path: str, host: str, host_record: HostRecord | None,
                     history: Mapping[str, Any] | None = None) -> dict[str, list[dict[str, Any]]]:
    """What checks/burn_in.py reads from ``NodeContext.settings`` for ``host``.

    ``burn_in``: its records, each with ``parsed`` (the samples read) or ``load_problem``;
    ``burn_in_drift``: the drift flags of ``history.json`` for this host (``history`` may be given
    already read, once for the whole fleet).
    """
    out = []
    for record in records_of(host_record):
        entry = dict(record)
        entry["parsed"], entry["load_problem"] = load_samples(run_path, record)
        out.append(entry)
    if history is None:
        history = read_history(run_path)
    drift = [flag for flag in (history or {}).get("flags") or [] if isinstance(flag, dict) and flag.get("host") == host]
    return {"burn_in": out, "burn_in_drift": drift}
