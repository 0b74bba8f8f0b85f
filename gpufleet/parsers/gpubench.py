# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for gpubench, gpufleet's per-GPU GEMM and HBM bandwidth benchmark (roles/gpu_bench/files/gpubench.cu).

``parse_gpubench(text)`` (KIND ``gpubench``) reads the program's line format, version 1.1 (one record per line,
``key=value`` words; ``name=`` and ``msg=`` take the rest of the line)::

    gpubench version=1.1 cuda=12.4 driver=550.54.15 order=PCI_BUS_ID
    gpu index=0 bus_id=00000000:18:00.0 cc=9.0 sms=132 l2_mib=50 name=NVIDIA H100 80GB HBM3
    gemm index=0 dtype=bf16 size=8192 init=normal warmup_s=1.50 iters=120 seconds=3.012 tflops=712.3
    gemm index=0 dtype=fp8 size=8192 init=normal fast_accum=0 warmup_s=1.50 iters=240 seconds=3.004 tflops=1402.6
    hbm index=0 test=copy bytes=4294967296 grid=1056 threads=256 iters=200 seconds=0.291 gbs=2950.1
    sustained index=0 dtype=bf16 size=8192 seconds=30.0 windows=30 tflops=705.2 first=712.0 last=698.1 min=695.3
    error index=3 test=fp8 msg=not supported on this part (compute capability 8.0 < 8.9)
    error index=5 test=bf16 msg=timeout: no result within the 25.0 s deadline of this test; no further test on this GPU
    end gpus=8

and version 1.0 outputs (old results: no ``order``, ``sms``, ``l2_mib``, ``fast_accum`` or ``sustained``; CUDA's
``0000:18:00.0`` bus id form). A GPU's ``gpu`` line comes before its other records; the lines of different GPUs may
interleave (the binary streams them).

Returns ``{"tool": "gpubench", "version", "cuda" (str|None), "driver" (str|None), "order" (str|None), "gpus":
[{"index", "name", "bus_id" (as printed), "cc" (str|None), "sms" (int|None), "l2_mib" (float|None),
"gemm_tflops": {dtype: float}, "fast_accum": {dtype: 0|1}, "hbm_gbs": {test: float}, "sustained": {"dtype",
"tflops" (the mean), "first", "last", "min" (1-s windows, TFLOP/s), "seconds", "windows"} | None}], "errors":
[str]}``. An ``error`` line becomes ``"gpu 3 fp8: <msg>"`` (``"<msg>"`` without ``index``: an error of the whole
run, whose first one is also the result's ``cause``, as nccl-tests' parser names why a run failed, so the benchmark
record's reason gives it); a timeout is such an error (``"gpu 5 bf16: timeout: ..."``) and the GPU's other figures
stay. An output without its ``end`` line (the run was cut off) adds the error ``"output ends before the end line:
the run did not finish"``. Blank lines and ``#`` comments are ignored (so are ``gpubench-standin`` comments of the
CPU test double). A foreign line (common's ``foreign_line``: a prompt, a banner or rule, a note) where an unknown
record, a text before the header or a line after ``end`` would be refused is skipped and listed in
``ignored_lines`` (``[{line, text, why}]``, present only when there is one).

Raises ParseError (1-based line): empty input; a first record that is not the ``gpubench`` header; an unknown
record; a word without ``=``; a missing or unparseable field; a figure that is not a finite number >= 0; an unknown
dtype or HBM test; a ``fast_accum`` other than 0 or 1, or on a dtype other than fp8; a GPU declared twice, or a
figure for a GPU not declared before it, or given twice; anything after ``end``; an ``end`` whose GPU count differs
from the GPU lines.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterator

from gpufleet.parsers.common import IgnoredLine, ParseError, skip_foreign, with_ignored

KIND = "gpubench"
DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32")
HBM_TESTS = ("copy", "triad")
# The words that take the rest of their line (free text: a GPU name, an error message).
_REST_OF_LINE = ("name", "msg")
_RECORDS = ("gpubench", "gpu", "gemm", "hbm", "sustained", "error", "end")
# Only FP8 GEMMs have the choice of accumulation (cuBLASLt's CUBLASLT_MATMUL_DESC_FAST_ACCUM).
_FAST_ACCUM_DTYPES = ("fp8",)
_SUSTAINED_FIGURES = ("tflops", "first", "last", "min", "seconds")


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


class _Line:
    """One record's fields with its line number and text, so that every complaint names the line."""

    def __init__(self, fields: dict[str, str], number: int, raw: str):
        self.fields, self.number, self.raw = fields, number, raw

    def fail(self, message: str) -> ParseError:
        return _fail(message, self.number, self.raw)

    def need(self, key: str) -> str:
        value = self.fields.get(key)
        if value is None or value == "":
            raise self.fail("missing field %s" % key)
        return value

    def count(self, key: str) -> int:
        value = self.need(key)
        if not value.isdigit():
            raise self.fail("%s must be a whole number >= 0, got %r" % (key, value))
        return int(value)

    def figure(self, key: str) -> float:
        value = self.need(key)
        try:
            figure = float(value)
        except ValueError:
            raise self.fail("%s must be a number, got %r" % (key, value)) from None
        if not math.isfinite(figure) or figure < 0:
            raise self.fail("%s must be a finite number >= 0, got %r" % (key, value))
        return figure

    def optional(self, key: str, read: Callable[[str], Any]) -> Any:
        return read(key) if self.fields.get(key) not in (None, "") else None

    def known(self, key: str, names: tuple[str, ...]) -> str:
        name = self.need(key)
        if name not in names:
            raise self.fail("unknown %s %r (known: %s)" % (key, name, ", ".join(names)))
        return name


def _version_or_none(value: str | None) -> str | None:
    return None if value in (None, "", "unknown") else value


def _header(result: dict[str, Any], line: _Line) -> None:
    result["version"] = line.need("version")
    result["cuda"] = _version_or_none(line.fields.get("cuda"))
    result["driver"] = _version_or_none(line.fields.get("driver"))
    result["order"] = line.fields.get("order") or None


def _gpu(result: dict[str, Any], gpus: dict[int, dict[str, Any]], line: _Line) -> None:
    index = line.count("index")
    if index in gpus:
        raise line.fail("GPU %d declared twice" % index)
    gpus[index] = {"index": index, "name": line.need("name"), "bus_id": line.fields.get("bus_id") or None,
                   "cc": line.fields.get("cc") or None, "sms": line.optional("sms", line.count),
                   "l2_mib": line.optional("l2_mib", line.figure), "gemm_tflops": {}, "fast_accum": {},
                   "hbm_gbs": {}, "sustained": None}
    result["gpus"].append(gpus[index])


def _declared(gpus: dict[int, dict[str, Any]], line: _Line) -> dict[str, Any]:
    index = line.count("index")
    if index not in gpus:
        raise line.fail("a figure for GPU %d before its gpu line" % index)
    return gpus[index]


def _fast_accum(gpu: dict[str, Any], dtype: str, line: _Line) -> None:
    value = line.fields.get("fast_accum")
    if value is None:
        return  # version 1.0, or a dtype without the choice
    if dtype not in _FAST_ACCUM_DTYPES:
        raise line.fail("fast_accum is given only for %s, not %s" % (", ".join(_FAST_ACCUM_DTYPES), dtype))
    if value not in ("0", "1"):
        raise line.fail("fast_accum must be 0 or 1, got %r" % value)
    gpu["fast_accum"][dtype] = int(value)


def _gemm(gpus: dict[int, dict[str, Any]], line: _Line) -> None:
    gpu = _declared(gpus, line)
    dtype = line.known("dtype", DTYPES)
    if dtype in gpu["gemm_tflops"]:
        raise line.fail("GPU %d %s given twice" % (gpu["index"], dtype))
    gpu["gemm_tflops"][dtype] = line.figure("tflops")
    _fast_accum(gpu, dtype, line)


def _hbm(gpus: dict[int, dict[str, Any]], line: _Line) -> None:
    gpu = _declared(gpus, line)
    test = line.known("test", HBM_TESTS)
    if test in gpu["hbm_gbs"]:
        raise line.fail("GPU %d %s given twice" % (gpu["index"], test))
    gpu["hbm_gbs"][test] = line.figure("gbs")


def _sustained(gpus: dict[int, dict[str, Any]], line: _Line) -> None:
    gpu = _declared(gpus, line)
    if gpu["sustained"] is not None:
        raise line.fail("GPU %d sustained given twice" % gpu["index"])
    figures = {key: line.figure(key) for key in _SUSTAINED_FIGURES}
    gpu["sustained"] = dict(figures, dtype=line.known("dtype", DTYPES), windows=line.optional("windows", line.count))


def _error(result: dict[str, Any], line: _Line) -> None:
    message = line.fields.get("msg") or "error without a message"
    if "index" not in line.fields:
        result["errors"].append(message)
        # an error of the whole run (no GPU named: no device, no driver) is why it failed
        result.setdefault("cause", message)
        return
    where = "gpu %d" % line.count("index")
    test = line.fields.get("test")
    result["errors"].append("%s %s: %s" % (where, test, message) if test else "%s: %s" % (where, message))


def _end(gpus: dict[int, dict[str, Any]], line: _Line) -> None:
    count = line.need("gpus")
    if not count.isdigit() or int(count) != len(gpus):
        raise line.fail("end says %s GPUs, %d gpu lines were read" % (count, len(gpus)))


def _record(result: dict[str, Any], gpus: dict[int, dict[str, Any]], record: str, line: _Line) -> None:
    if record == "gpu":
        _gpu(result, gpus, line)
    elif record == "gemm":
        _gemm(gpus, line)
    elif record == "hbm":
        _hbm(gpus, line)
    elif record == "sustained":
        _sustained(gpus, line)
    elif record == "error":
        _error(result, line)
    else:
        _end(gpus, line)


def _lines(text: str) -> Iterator[tuple[int, str, str, str]]:
    """``(number, raw, record, rest)`` of every line that holds a record (not blank, not a ``#`` comment)."""
    for number, raw in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        line = raw.strip()
        if line and not line.startswith("#"):
            record, _space, rest = line.partition(" ")
            yield number, raw, record, rest


def parse_gpubench(text: str) -> dict[str, Any]:
    """The figures of one gpubench run; ParseError naming the line on anything it cannot read with certainty."""
    if not (text or "").strip():
        raise ParseError("empty input", kind=KIND)
    result: dict[str, Any] = {"tool": "gpubench", "version": None, "cuda": None, "driver": None, "order": None,
                              "gpus": [], "errors": []}
    gpus: dict[int, dict[str, Any]] = {}
    ignored: list[IgnoredLine] = []
    header_seen = ended = False
    for number, raw, record, rest in _lines(text):
        unread = ended or (not header_seen and record != "gpubench") or record not in _RECORDS
        if unread and skip_foreign(ignored, number, raw):
            continue
        if ended:
            raise _fail("output after the end line", number, raw)
        if not header_seen and record != "gpubench":
            raise _fail("not gpubench output: the first record must be the 'gpubench version=...' header", number, raw)
        if record not in _RECORDS:
            raise _fail("unknown record %r" % record, number, raw)
        line = _Line(_fields(rest, number, raw), number, raw)
        if record == "gpubench":
            if header_seen:
                raise line.fail("a second gpubench header")
            header_seen = True
            _header(result, line)
            continue
        _record(result, gpus, record, line)
        ended = record == "end"
    if not header_seen:
        raise ParseError("no gpubench header", kind=KIND)
    if not ended:
        result["errors"].append("output ends before the end line: the run did not finish")
    return with_ignored(result, ignored)
