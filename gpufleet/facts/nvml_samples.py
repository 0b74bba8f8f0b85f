# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVML sample records (``gpufleet.nvml-samples/v1``) read on the controller: parse, group, summarise.

The node-side sampler (module ``nvml_sample``) writes JSON Lines: a header, one line per GPU per
tick, and a trailer when it ends normally (the contract: docs/nvml-sampler.md). Nothing from the
node is trusted: every value is type-checked here, a value of the wrong type (or NaN/Infinity)
becomes null and is counted as a bad field, a line that is not JSON is counted as a bad line, and
null is never read as 0.

- :func:`parse_text` / :func:`load_file` -> ``{"header", "samples", "end", "bad_lines", "bad_fields"}``
- :func:`ticks` groups the samples of one tick (one line per GPU) together;
- :func:`counter_growth` and :func:`clock_event_deltas` read cumulative counters by their deltas,
  with counter resets (a later value below an earlier one: a driver reload) handled;
- :func:`summarise` gives the per-GPU summary the history store and the report keep.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

SCHEMA = "gpufleet.nvml-samples/v1"

CLOCK_EVENTS = ("sw_power_cap", "sw_thermal", "hw_slowdown", "hw_thermal", "hw_power_brake", "sync_boost")
ECC_FIELDS = ("volatile_corrected", "volatile_uncorrected", "aggregate_corrected", "aggregate_uncorrected")
NVLINK_FIELDS = ("replay", "recovery", "crc_flit", "crc_data")
GAUGES = ("temperature_c", "sm_clock_mhz", "power_w")
# The cumulative counters summarised per GPU (``ecc.volatile_corrected``, ...), by group.
COUNTER_GROUPS = (("ecc", ECC_FIELDS), ("nvlink", NVLINK_FIELDS), ("clock_event_ns", CLOCK_EVENTS))

# A file larger than this is not read whole (24 h at 1 s on 8 GPUs is ~700,000 lines of ~600 bytes).
MAX_FILE_BYTES = 1 << 30


class SamplesError(Exception):
    """A samples file that cannot be read at all; the message names the file."""


def _number(value: Any) -> float | None:
    """An int/float that is finite, else None (bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _count(value: Any) -> int | None:
    """A cumulative counter: a whole number >= 0, else None."""
    value = _number(value)
    if value is None or value < 0:
        return None
    return int(value)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _group(raw: Any, names: tuple[str, ...], read: Callable[[Any], int | None],
           bad: list[str]) -> dict[str, int | None]:
    raw = raw if isinstance(raw, dict) else {}
    out: dict[str, int | None] = {}
    for name in names:
        value = raw.get(name)
        out[name] = read(value)
        if value is not None and out[name] is None:
            bad.append(name)
    return out


def normalise_sample(raw: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``(sample, bad field names)``: a sample line with every value checked against the contract."""
    bad: list[str] = []
    sample: dict[str, Any] = {"type": "sample", "t": _number(raw.get("t")), "gpu": raw.get("gpu"),
                              "uuid": _text(raw.get("uuid"))}
    if isinstance(sample["gpu"], bool) or not isinstance(sample["gpu"], int):
        sample["gpu"] = None
    for name in GAUGES:
        value = raw.get(name)
        sample[name] = _number(value)
        if value is not None and sample[name] is None:
            bad.append(name)
    sample["clock_event_ns"] = _group(raw.get("clock_event_ns"), CLOCK_EVENTS, _count, bad)
    sample["ecc"] = _group(raw.get("ecc"), ECC_FIELDS, _count, bad)
    sample["nvlink"] = _group(raw.get("nvlink"), NVLINK_FIELDS, _count, bad)
    errors = raw.get("errors")
    sample["errors"] = {str(key): str(value) for key, value in errors.items()} if isinstance(errors, dict) else {}
    return sample, bad


def _normalise_header(raw: dict[str, Any]) -> dict[str, Any]:
    gpus = []
    listed = raw.get("gpus")
    for item in listed if isinstance(listed, list) else []:
        if not isinstance(item, dict) or isinstance(item.get("index"), bool) or not isinstance(item.get("index"), int):
            continue
        gpus.append({"index": item["index"], "uuid": _text(item.get("uuid")), "name": _text(item.get("name")),
                     "pci_bus_id": _text(item.get("pci_bus_id"))})
    return {
        "type": "header",
        "schema": _text(raw.get("schema")),
        "host_time_start": _number(raw.get("host_time_start")),
        "interval_s": _number(raw.get("interval_s")),
        "driver_version": _text(raw.get("driver_version")),
        "nvml_version": _text(raw.get("nvml_version")),
        "binding": _text(raw.get("binding")),
        "gpus": gpus,
    }


def parse_lines(lines: Iterable[str]) -> dict[str, Any]:
    """Read JSON Lines (an iterable of str) into ``{"header", "samples", "end", "bad_lines", "bad_fields", "lines"}``.

    ``bad_lines`` lists ``[line number, why]`` for lines that are not a JSON object of a known type
    or a sample without a GPU index or time; ``bad_fields`` counts the values that had the wrong type
    (they became null). A second header is a bad line (one file, one sampler run).
    """
    out: dict[str, Any] = {"header": None, "samples": [], "end": None, "bad_lines": [], "bad_fields": 0, "lines": 0}
    for number, line in enumerate(lines, 1):
        out["lines"] = number
        line = line.strip()
        if not line:
            continue
        try:
            raw = json.loads(line)
        except ValueError as exc:
            out["bad_lines"].append([number, "not JSON: %s" % str(exc)[:80]])
            continue
        if not isinstance(raw, dict):
            out["bad_lines"].append([number, "not a JSON object"])
            continue
        kind = raw.get("type")
        if kind == "header":
            if out["header"] is not None:
                out["bad_lines"].append([number, "a second header"])
                continue
            out["header"] = _normalise_header(raw)
        elif kind == "sample":
            sample, bad = normalise_sample(raw)
            if sample["gpu"] is None or sample["t"] is None:
                out["bad_lines"].append([number, "a sample without a GPU index or time"])
                continue
            out["bad_fields"] += len(bad)
            out["samples"].append(sample)
        elif kind == "end":
            out["end"] = {"type": "end", "t": _number(raw.get("t")), "samples": _count(raw.get("samples")),
                          "reason": _text(raw.get("reason"))}
            if raw.get("error") is not None:
                out["end"]["error"] = _text(raw.get("error"))
        else:
            out["bad_lines"].append([number, "unknown line type %r" % str(kind)[:40]])
    return out


def parse_text(text: Any) -> dict[str, Any]:
    """:func:`parse_lines` of a whole text."""
    return parse_lines(str(text).splitlines())


def load_file(path: str) -> dict[str, Any]:
    """:func:`parse_lines` of the file at ``path``; SamplesError naming it when it cannot be read."""
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise SamplesError("%s: %d bytes, more than the %d this reader takes" % (path, size, MAX_FILE_BYTES))
        with open(path, "r", encoding="utf-8", errors="replace") as stream:
            return parse_lines(stream)
    except OSError as exc:
        raise SamplesError("%s: %s" % (path, exc.strerror or exc)) from None


# -- series ----------------------------------------------------------------------------------


def gpu_lost(sample: Mapping[str, Any]) -> bool:
    """True when the sampler marked the GPU lost (NVML_ERROR_GPU_IS_LOST) on this line."""
    lost: bool = sample.get("errors", {}).get("*") == "gpu_lost"
    return lost


def ticks(samples: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The samples grouped by tick, in file order: ``[{"t": earliest time, "gpus": {index: sample}}]``.

    The sampler writes one line per GPU per tick, the GPUs of a tick together: a tick ends when a
    GPU index already seen in it comes again. (Grouping by time would split a tick whose GPUs were
    read a few milliseconds apart.)
    """
    out: list[dict[str, Any]] = []
    current: dict[str, Any] = {"t": None, "gpus": {}}
    for sample in samples:
        if not out or sample["gpu"] in current["gpus"]:
            current = {"t": sample["t"], "gpus": {}}
            out.append(current)
        current["gpus"][sample["gpu"]] = sample
        current["t"] = min(current["t"], sample["t"])
    return out


def by_gpu(samples: Iterable[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """``{index: [sample, ...]}`` in file order."""
    out: dict[int, list[dict[str, Any]]] = {}
    for sample in samples:
        out.setdefault(sample["gpu"], []).append(sample)
    return out


def gpu_identity(index: int, series: Iterable[Mapping[str, Any]] | None,
                 header: Mapping[str, Any] | None) -> dict[str, Any]:
    """``{"index", "uuid", "name", "pci_bus_id"}`` of a GPU from the header, else from its samples."""
    listed = next((item for item in (header or {}).get("gpus") or [] if item["index"] == index), None) or {}
    uuid = listed.get("uuid") or next((sample["uuid"] for sample in series or [] if sample.get("uuid")), None)
    return {"index": index, "uuid": uuid, "name": listed.get("name"), "pci_bus_id": listed.get("pci_bus_id")}


def values(series: Iterable[Mapping[str, Any]], path: str | tuple[str, str]) -> list[tuple[float, Any]]:
    """The non-null values of one field along a series, with their times: ``[(t, value)]``.

    ``path`` is a field (``"temperature_c"``) or ``(group, field)`` (``("ecc", "volatile_corrected")``).
    """
    out = []
    for sample in series:
        value = sample.get(path) if isinstance(path, str) else (sample.get(path[0]) or {}).get(path[1])
        if value is not None:
            out.append((sample["t"], value))
    return out


def counter_growth(points: Sequence[tuple[float, float]]) -> tuple[float | None, int]:
    """How much a cumulative counter grew along ``points`` (``[(t, value)]``, nulls already left out).

    Sums the increase between consecutive known values. A value lower than the one before it is a
    reset (the driver was reloaded and the counter started again from 0): the counter grew by the
    new value since the reset, as Prometheus' ``increase()`` reads it. Never negative. Returns
    ``(growth, resets)``; growth is None when fewer than two values are known.
    """
    if len(points) < 2:
        return None, 0
    growth: float = 0
    resets = 0
    for (_t0, before), (_t1, after) in zip(points, points[1:]):
        if after < before:
            resets += 1
            growth += after
        else:
            growth += after - before
    return growth, resets


def clock_event_deltas(points: Sequence[tuple[float, float]]) -> tuple[float, float, int]:
    """``(event ns, wall ns, resets)`` of a cumulative clock-event counter along ``points``.

    Each step adds the counter's increase (a reset counts the new value, as :func:`counter_growth`)
    capped at the wall time of the step: a counter of time cannot advance faster than time, and the
    cap keeps a reset or a bad value from making a share above 1. ``wall`` sums the steps judged.
    """
    event, wall, resets = 0.0, 0.0, 0
    for (t0, before), (t1, after) in zip(points, points[1:]):
        step = max(0.0, (t1 - t0) * 1e9)
        if after < before:
            resets += 1
            increase = after
        else:
            increase = after - before
        event += min(float(increase), step)
        wall += step
    return event, wall, resets


def median(items: Iterable[float]) -> float | None:
    """The middle value (the mean of the two middle ones for an even count); None for no values."""
    items = sorted(items)
    if not items:
        return None
    middle = len(items) // 2
    if len(items) % 2:
        return items[middle]
    return (items[middle - 1] + items[middle]) / 2.0


def percentile(items: Iterable[float], share: float) -> float | None:
    """The nearest-rank percentile: the smallest value with at least ``share`` of the values at or below it."""
    items = sorted(items)
    if not items:
        return None
    rank = max(1, int(math.ceil(share * len(items) - 1e-9)))
    return items[min(rank, len(items)) - 1]


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(float(value), digits)


def summarise(parsed: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per GPU: ``{index, uuid, name, samples, lost, t_first, t_last, temp_*, sm_clock_*, power_*, counters_start,
    counters_end}``.

    Temperatures in C (mean, min, max, p95 nearest-rank), SM clock in MHz (median, min, max), power
    in W (mean, max), each over the GPU's non-null values (null when it has none); counters are the
    first and last known value of each (``ecc.volatile_corrected``, ``nvlink.replay``, ...).
    """
    header = parsed.get("header")
    series_of = by_gpu(parsed.get("samples") or [])
    indexes = sorted(set(series_of) | {item["index"] for item in (header or {}).get("gpus") or []})
    out = []
    for index in indexes:
        series = series_of.get(index, [])
        summary = gpu_identity(index, series, header)
        summary.update({
            "samples": len(series),
            "lost": any(gpu_lost(sample) for sample in series),
            "t_first": series[0]["t"] if series else None,
            "t_last": series[-1]["t"] if series else None,
        })
        summary.update(_gauges(series))
        summary["counters_start"], summary["counters_end"] = _counter_ends(series)
        out.append(summary)
    return out


def _gauges(series: list[dict[str, Any]]) -> dict[str, float | None]:
    """The temperature, SM clock and power statistics of one GPU's series (see :func:`summarise`)."""
    temps = [value for _t, value in values(series, "temperature_c")]
    clocks = [value for _t, value in values(series, "sm_clock_mhz")]
    power = [value for _t, value in values(series, "power_w")]
    return {
        "temp_mean_c": _round(sum(temps) / len(temps)) if temps else None,
        "temp_min_c": min(temps) if temps else None,
        "temp_max_c": max(temps) if temps else None,
        "temp_p95_c": percentile(temps, 0.95),
        "sm_clock_median_mhz": _round(median(clocks)),
        "sm_clock_min_mhz": min(clocks) if clocks else None,
        "sm_clock_max_mhz": max(clocks) if clocks else None,
        "power_mean_w": _round(sum(power) / len(power)) if power else None,
        "power_max_w": _round(max(power)) if power else None,
    }


def _counter_ends(series: list[dict[str, Any]]) -> tuple[dict[str, int | None], dict[str, int | None]]:
    """``(first, last)`` known value of each counter of one GPU's series, by ``group.field``."""
    start: dict[str, int | None] = {}
    end: dict[str, int | None] = {}
    for group, names in COUNTER_GROUPS:
        for name in names:
            known = values(series, (group, name))
            key = "%s.%s" % (group, name)
            start[key] = known[0][1] if known else None
            end[key] = known[-1][1] if known else None
    return start, end
