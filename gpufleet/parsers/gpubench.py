# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for gpubench, gpufleet's per-GPU GEMM and HBM bandwidth benchmark (roles/gpu_bench/files/gpubench.cu).

``parse_gpubench(text)`` (KIND ``gpubench``) reads the program's line format (one record per line, ``key=value``
words; ``name=`` and ``msg=`` take the rest of the line)::

    gpubench version=1.0 cuda=12.4 driver=550.54.15
    gpu index=0 bus_id=00000000:18:00.0 cc=9.0 name=NVIDIA H100 80GB HBM3
    gemm index=0 dtype=bf16 size=8192 iters=120 seconds=1.853 tflops=712.3
    hbm index=0 test=copy bytes=2147483648 iters=200 seconds=0.291 gbs=2950.1
    error index=3 test=fp8 msg=not supported on this part (compute capability 8.0 < 8.9)
    end gpus=8

and returns ``{"tool": "gpubench", "version", "cuda" (str|None), "driver" (str|None), "gpus": [{"index", "name",
"bus_id", "gemm_tflops": {dtype: float}, "hbm_gbs": {test: float}}], "errors": [str]}``. An ``error`` line becomes
``"gpu 3 fp8: <msg>"`` (``"<msg>"`` without ``index``: an error of the whole run, whose first one is also the
result's ``cause``, as nccl-tests' parser names why a run failed, so the benchmark record's reason gives it); an
output without its ``end`` line (the run was cut off) adds the error ``"output ends before the end line: the run did
not finish"``. Blank lines and ``#`` comments are
ignored (so are ``gpubench-standin`` comments of the CPU test double).

Raises ParseError (1-based line): empty input; a first record that is not the ``gpubench`` header; an unknown
record; a word without ``=``; a missing or unparseable field; a figure that is not a finite number >= 0; an unknown
dtype or HBM test; a GPU declared twice, or a figure for a GPU not declared before it, or given twice; anything
after ``end``; an ``end`` whose GPU count differs from the GPU lines.
"""

from __future__ import annotations

import math
from typing import Any

from gpufleet.parsers.common import ParseError

KIND = "gpubench"
DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32")
HBM_TESTS = ("copy", "triad")
# The words that take the rest of their line (free text: a GPU name, an error message).
_REST_OF_LINE = ("name", "msg")
_RECORDS = ("gpubench", "gpu", "gemm", "hbm", "error", "end")


def _fail(message: str, line: int, text: str | None = None) -> ParseError:
    return ParseError(message, line=line, kind=KIND, text=text)


def _fields(rest: str, number: int, raw: str) -> dict[str, str]:
    """``key=value`` words of a record; a ``name=``/``msg=`` word takes the rest of the line."""
    fields: dict[str, str] = {}
    remaining = rest.strip()
    while remaining:
        word, _space, after = remaining.partition(" ")
        key, equals, value = word.partition("=")
        if not equals or not key:
            raise _fail("expected key=value, got %r" % word, number, raw)
        if key in fields:
            raise _fail("field %s given twice" % key, number, raw)
        if key in _REST_OF_LINE:
            fields[key] = remaining[len(key) + 1:].strip()
            break
        fields[key] = value
        remaining = after.strip()
    return fields


def _need(fields: dict[str, str], key: str, number: int, raw: str) -> str:
    value = fields.get(key)
    if value is None or value == "":
        raise _fail("missing field %s" % key, number, raw)
    return value


def _index(fields: dict[str, str], number: int, raw: str) -> int:
    value = _need(fields, "index", number, raw)
    if not value.isdigit():
        raise _fail("index must be a GPU number, got %r" % value, number, raw)
    return int(value)


def _figure(fields: dict[str, str], key: str, number: int, raw: str) -> float:
    value = _need(fields, key, number, raw)
    try:
        figure = float(value)
    except ValueError:
        raise _fail("%s must be a number, got %r" % (key, value), number, raw) from None
    if not math.isfinite(figure) or figure < 0:
        raise _fail("%s must be a finite number >= 0, got %r" % (key, value), number, raw)
    return figure


def _version_or_none(value: str | None) -> str | None:
    return None if value in (None, "", "unknown") else value


def parse_gpubench(text: str) -> dict[str, Any]:
    """The figures of one gpubench run; ParseError naming the line on anything it cannot read with certainty."""
    if not (text or "").strip():
        raise ParseError("empty input", kind=KIND)
    result: dict[str, Any] = {"tool": "gpubench", "version": None, "cuda": None, "driver": None, "gpus": [],
                              "errors": []}
    gpus: dict[int, dict[str, Any]] = {}
    header_seen = ended = False
    for number, raw in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        record, _space, rest = line.partition(" ")
        if ended:
            raise _fail("output after the end line", number, raw)
        if not header_seen and record != "gpubench":
            raise _fail("not gpubench output: the first record must be the 'gpubench version=...' header", number, raw)
        if record not in _RECORDS:
            raise _fail("unknown record %r" % record, number, raw)
        fields = _fields(rest, number, raw)
        if record == "gpubench":
            if header_seen:
                raise _fail("a second gpubench header", number, raw)
            header_seen = True
            result["version"] = _need(fields, "version", number, raw)
            result["cuda"] = _version_or_none(fields.get("cuda"))
            result["driver"] = _version_or_none(fields.get("driver"))
        elif record == "gpu":
            index = _index(fields, number, raw)
            if index in gpus:
                raise _fail("GPU %d declared twice" % index, number, raw)
            gpus[index] = {"index": index, "name": _need(fields, "name", number, raw),
                           "bus_id": fields.get("bus_id") or None, "gemm_tflops": {}, "hbm_gbs": {}}
            result["gpus"].append(gpus[index])
        elif record in ("gemm", "hbm"):
            index = _index(fields, number, raw)
            if index not in gpus:
                raise _fail("a figure for GPU %d before its gpu line" % index, number, raw)
            key, known, table, figure_key = (("dtype", DTYPES, "gemm_tflops", "tflops") if record == "gemm"
                                             else ("test", HBM_TESTS, "hbm_gbs", "gbs"))
            name = _need(fields, key, number, raw)
            if name not in known:
                raise _fail("unknown %s %r (known: %s)" % (key, name, ", ".join(known)), number, raw)
            if name in gpus[index][table]:
                raise _fail("GPU %d %s given twice" % (index, name), number, raw)
            gpus[index][table][name] = _figure(fields, figure_key, number, raw)
        elif record == "error":
            message = fields.get("msg") or "error without a message"
            if "index" in fields:
                where = "gpu %d" % _index(fields, number, raw)
                result["errors"].append("%s %s: %s" % (where, fields["test"], message) if fields.get("test")
                                        else "%s: %s" % (where, message))
            else:
                result["errors"].append(message)
                # an error of the whole run (no GPU named: no device, no driver) is why it failed
                result.setdefault("cause", message)
        else:  # end
            count = _need(fields, "gpus", number, raw)
            if not count.isdigit() or int(count) != len(gpus):
                raise _fail("end says %s GPUs, %d gpu lines were read" % (count, len(gpus)), number, raw)
            ended = True
    if not header_seen:
        raise ParseError("no gpubench header", kind=KIND)
    if not ended:
        result["errors"].append("output ends before the end line: the run did not finish")
    return result
