# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the JSON document nccl-tests writes with ``-J FILE`` (KIND ``nccl-json``; nccl-tests 2.17.3 and later,
document ``version`` 1 to 3, written by rank 0 only).

The writer is an ad-hoc printf in nccl-tests' ``src/util.cu``, so the document has odd types that this reader
expects and normalises: ``root`` is a string padded to six characters (``"    -1"``), ``nwrong`` a float (``0.000000``)
or null (validation off), a NaN figure the string ``"nan"``, the ``okay`` flags the strings ``"true"``/``"false"``
(``"unchecked"`` for the average bandwidth without ``-G``'s check), and version 1 spells the average
``average_bus_bandwidith`` / ``bandwidith``. Top level: ``version``, ``start_time``, ``args``, ``env``,
``nccl_version`` (NCCL_VERSION_CODE, e.g. 22903), ``config`` (the ``# nThread`` line's settings and ``devices``, one
per process: ``rank``, ``group``, ``pid``, ``hostname``, ``device``, ``device_hex``, ``device_info``), ``results``
(one object per table row: ``size``, ``count``, ``type``, ``redop``, ``root``, ``out_of_place`` and ``in_place``
each ``{time|cpu_time, alg_bw, bus_bw, nwrong}``, ``actual_iterations``, ``experiment_name``), ``out_of_bounds``,
``average_bus_bandwidth``, ``errors`` (NCCL's last error) and ``end_time`` (written when the run finalises: a run
that was killed leaves no ``end_time``, or no complete document at all).

``parse_nccl_tests_json(text)`` returns the keys of :func:`gpufleet.parsers.nccl_tests.parse_nccl_tests` that the
document can fill, the same rows (``{size_bytes, count, type, redop, root, out_of_place: {time_us, algbw_gbs,
busbw_gbs, wrong}, in_place, iterations, path}``, a NaN figure None), plus ``json_version``, ``args``,
``start_time`` and ``end_time``. ``failed`` is True for errors in the document, out-of-bounds values, no row, or no
``end_time``; ``cause`` is then the first error. Keys only the text has (NCCL's INFO lines, ``nccl_tests_version``)
are None or empty here: the text stays the source of those.

Raises :class:`ParseError` for what the document cannot be read as: empty input, text that is not one JSON
document (the line and column of the break), nesting deeper than :data:`MAX_DEPTH`, and any field of the wrong type,
named by its path in the document (``results[3].out_of_place.bus_bw``), as the text parser names a line.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, List, Optional, Tuple

from gpufleet.parsers.common import ParseError, json_depth

KIND = "nccl-json"
# nccl-tests writes 4 levels (results[i].out_of_place.bitwise...); anything much deeper is not its document
MAX_DEPTH = 32
MAX_CHARS = 64 * 1024 * 1024
BANDWIDTH_KEYS = ("average_bus_bandwidth", "average_bus_bandwidith")  # version 1 misspells it
_FIGURES = (("time_us", ("time", "cpu_time")), ("algbw_gbs", ("alg_bw",)), ("busbw_gbs", ("bus_bw",)))


def _error(path: str, message: str) -> ParseError:
    return ParseError("%s: %s" % (path, message), kind=KIND)


def _load(text: str) -> Dict[str, Any]:
    if not text or not text.strip():
        raise ParseError("empty input", kind=KIND)
    if len(text) > MAX_CHARS:
        raise ParseError("%d characters, more than the %d this reader takes" % (len(text), MAX_CHARS), kind=KIND)
    deepest = json_depth(text)  # before json.loads, which recurses
    if deepest > MAX_DEPTH:
        raise ParseError("nested %d deep, deeper than the %d of any nccl-tests document" % (deepest, MAX_DEPTH),
                         kind=KIND)
    try:
        doc = json.loads(text)
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        where = " (column %s)" % exc.colno if hasattr(exc, "colno") else ""
        raise ParseError("not one complete JSON document: %s%s: a run that was cut off leaves it open, its text "
                         "output is the record" % (getattr(exc, "msg", exc), where), line=line, kind=KIND) from None
    if not isinstance(doc, dict):
        raise ParseError("the document is a JSON %s, not nccl-tests' object" % type(doc).__name__, kind=KIND)
    return doc


def _get(doc: Dict[str, Any], key: str, path: str, kinds: Tuple[type, ...], required: bool = True) -> Any:
    if key not in doc or doc[key] is None:
        if required:
            raise _error(path + key, "missing")
        return None
    value = doc[key]
    if not isinstance(value, kinds) or isinstance(value, bool):
        raise _error(path + key, "%s is not a %s" % (json.dumps(value)[:40], "/".join(kind.__name__ for kind in kinds)))
    return value


def _integer(value: Any, path: str) -> int:
    """An integer field, as nccl-tests writes it: a JSON integer, a float with no fraction (``0.000000``), or a
    string of digits padded with spaces (``"    -1"``)."""
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise _error(path, "%s is not an integer" % json.dumps(value)[:40]) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _error(path, "%s is not an integer" % json.dumps(value)[:40])
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        raise _error(path, "%s is not an integer" % value)
    return int(value)


def _figure(value: Any, path: str) -> Optional[float]:
    """A measured figure: a finite number >= 0; the writer's ``"nan"`` is no figure (None)."""
    if isinstance(value, str) and value.strip().lower() == "nan":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise _error(path, "%s is not a figure" % json.dumps(value)[:40])
    return float(value)


def _flag(value: Any, path: str) -> Optional[bool]:
    """``okay``: the strings "true"/"false" (a JSON bool accepted); "unchecked" is None."""
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return bool(value == "true")
    if value == "unchecked":
        return None
    raise _error(path, "%s is not true, false or unchecked" % json.dumps(value)[:40])


def _half(doc: Dict[str, Any], key: str, path: str) -> Optional[Dict[str, Any]]:
    """One half of a row (``out_of_place`` or ``in_place``); None when the writer left it null."""
    half = _get(doc, key, path, (dict,), required=False)
    if half is None:
        return None
    where = "%s%s." % (path, key)
    out: Dict[str, Any] = {}
    for name, keys in _FIGURES:
        found = [item for item in keys if item in half]
        if not found:
            raise _error(where + keys[0], "missing")
        out[name] = _figure(half[found[0]], where + found[0])
    wrong = half.get("nwrong")
    out["wrong"] = None if wrong is None else _integer(wrong, where + "nwrong")
    return out


def _row(doc: Any, path: str) -> Dict[str, Any]:
    if not isinstance(doc, dict):
        raise _error(path, "a result row must be an object")
    where = path + "."
    return {
        "size_bytes": _integer(_get(doc, "size", where, (int, float, str)), where + "size"),
        "count": _integer(_get(doc, "count", where, (int, float, str)), where + "count"),
        "type": _get(doc, "type", where, (str,)).strip(),
        "redop": (_get(doc, "redop", where, (str,), required=False) or "").strip() or None,
        "root": _integer(doc["root"], where + "root") if doc.get("root") is not None else None,
        "out_of_place": _half(doc, "out_of_place", where),
        "in_place": _half(doc, "in_place", where),
        "iterations": (_integer(doc["actual_iterations"], where + "actual_iterations")
                       if doc.get("actual_iterations") is not None else None),
        "path": path,
    }


def _devices(config: Dict[str, Any]) -> List[Dict[str, Any]]:
    out = []
    for index, item in enumerate(_get(config, "devices", "config.", (list,), required=False) or []):
        where = "config.devices[%d]." % index
        if not isinstance(item, dict):
            raise _error(where[:-1], "a device must be an object")
        out.append({
            "rank": _integer(_get(item, "rank", where, (int,)), where + "rank"),
            "group": _integer(item["group"], where + "group") if item.get("group") is not None else None,
            "pid": _integer(item["pid"], where + "pid") if item.get("pid") is not None else None,
            "host": _get(item, "hostname", where, (str,)),
            "device": _integer(_get(item, "device", where, (int,)), where + "device"),
            "bus_id": _get(item, "device_hex", where, (str,), required=False),
            "name": (_get(item, "device_info", where, (str,), required=False) or "").strip() or None,
        })
    return out


def _params(config: Dict[str, Any]) -> Dict[str, Any]:
    def number(key: str) -> Optional[int]:
        value = config.get(key)
        return None if value is None else _integer(value, "config." + key)

    factor = number("step_factor")
    return {"nthread": number("nthreads"), "ngpus": number("ngpus"), "min_bytes": number("minimum_bytes"),
            "max_bytes": number("maximum_bytes"), "step": factor if factor is not None else number("step_bytes"),
            "step_kind": "factor" if factor is not None else "bytes", "warmup_iters": number("warmup_iters"),
            "iters": number("iterations"), "agg_iters": number("aggregated_iterations"),
            "validation": number("validation"), "graph": number("graph")}


def _nccl_version(code: Optional[int]) -> Optional[str]:
    """NCCL_VERSION_CODE as a release: 22903 -> 2.29.3 (major * 10000 + minor * 100 + patch since NCCL 2.9)."""
    if code is None or code <= 0:
        return None
    if code >= 10000:
        return "%d.%d.%d" % (code // 10000, code // 100 % 100, code % 100)
    return "%d.%d.%d" % (code // 1000, code // 100 % 10, code % 100)


def _summary(doc: Dict[str, Any]) -> Tuple[Optional[int], Optional[str], Optional[float], Optional[bool]]:
    bounds = _get(doc, "out_of_bounds", "", (dict,), required=False)
    count = status = None
    if bounds is not None:
        count = _integer(_get(bounds, "count", "out_of_bounds.", (int, float, str)), "out_of_bounds.count")
        okay = _flag(bounds.get("okay"), "out_of_bounds.okay") if "okay" in bounds else None
        status = "OK" if (okay if okay is not None else count == 0) else "FAILED"
    average = None
    okay_average = None
    for key in BANDWIDTH_KEYS:
        block = _get(doc, key, "", (dict,), required=False)
        if block is None:
            continue
        figure_key = "bandwidth" if "bandwidth" in block else "bandwidith"
        average = _figure(_get(block, figure_key, key + ".", (int, float, str)), "%s.%s" % (key, figure_key))
        okay_average = _flag(block.get("okay", "unchecked"), key + ".okay")
        break
    return count, status, average, okay_average


def _figures(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    busbw = [half["busbw_gbs"] for row in rows for half in (row["out_of_place"], row["in_place"])
             if half and half["busbw_gbs"] is not None]
    wrong = [half["wrong"] for row in rows for half in (row["out_of_place"], row["in_place"])
             if half and half["wrong"] is not None]
    largest = max((row["size_bytes"] for row in rows), default=None)
    at_largest = [row for row in rows if row["size_bytes"] == largest and row["out_of_place"]]
    return {
        "max_busbw_gbs": max(busbw) if busbw else None,
        "largest_size_bytes": largest,
        "busbw_at_largest_size_gbs": at_largest[-1]["out_of_place"]["busbw_gbs"] if at_largest else None,
        "wrong_total": sum(wrong) if wrong else None,
    }


def _list(doc: Dict[str, Any], key: str) -> List[Any]:
    """The document's list ``key``; [] when absent (a value of another type raises, naming it)."""
    value: List[Any] = _get(doc, key, "", (list,), required=False) or []
    return value


def _findings(rows: List[Dict[str, Any]], end_time: Optional[str], out_of_bounds: Any) -> List[str]:
    """What the document itself says is wrong with the run: no rows, no end time, out-of-bounds values."""
    findings = []
    if not rows:
        findings.append("no result rows")
    if end_time is None:
        findings.append("no end_time: the run did not finish writing its document")
    if out_of_bounds:
        findings.append("out of bounds values: %d" % out_of_bounds)
    return findings


def _validated(validation: Optional[int], rows: List[Dict[str, Any]]) -> Optional[bool]:
    """False: the run did not check its results (-c 0); True: it did; None: cannot tell (no rows)."""
    if validation is not None:
        return validation > 0
    has_wrong = any(half and half["wrong"] is not None
                    for row in rows for half in (row["out_of_place"], row["in_place"]))
    return has_wrong if rows else None


def parse_nccl_tests_json(text: str) -> Dict[str, Any]:
    """Read the ``-J`` document of one nccl-tests run; see the module docstring for the keys."""
    doc = _load(text)
    version = _integer(_get(doc, "version", "", (int, float, str)), "version")
    config = _get(doc, "config", "", (dict,), required=False) or {}
    rows = [_row(item, "results[%d]" % index) for index, item in enumerate(_list(doc, "results"))]
    args = [str(arg) for arg in _list(doc, "args")]
    devices = _devices(config)
    params = _params(config)
    errors = [{"line": None, "text": str(item)} for item in _list(doc, "errors") if str(item).strip()]
    out_of_bounds, status, average, _okay = _summary(doc)
    end_time = _get(doc, "end_time", "", (str,), required=False)
    findings = _findings(rows, end_time, out_of_bounds)
    failed = bool(errors or findings)
    per_process = (params["nthread"] or 1) * (params["ngpus"] or 1)
    nccl_version = _integer(doc["nccl_version"], "nccl_version") if doc.get("nccl_version") is not None else None
    out = {
        "failed": failed,
        "errors": errors + [{"line": None, "text": finding} for finding in findings],
        "cause": (errors[0]["text"] if errors else findings[0]) if failed else None,
        "warnings": [],
        "ranks": per_process * len(devices) if devices else None,
        "hosts": sorted({device["host"] for device in devices}),
        "devices": devices,
        "collective": os.path.basename(args[0]) if args else None,
        "nccl_version": _nccl_version(nccl_version),
        "nccl_tests_version": None,
        "params": params if config else None,
        "rows": rows,
        "avg_busbw_gbs": average,
        "out_of_bounds": out_of_bounds,
        "out_of_bounds_status": status,
        "validated": _validated(params["validation"], rows),
        "complete": end_time is not None and bool(rows),
        "json_version": version,
        "args": args,
        "start_time": _get(doc, "start_time", "", (str,), required=False),
        "end_time": end_time,
    }
    out.update(_figures(rows))
    return out
