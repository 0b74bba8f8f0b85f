# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the report perftest writes with ``--out_json --out_json_file=FILE`` (KIND ``perftest-json``).

perftest (linux-rdma/perftest) has the option since release 4.5-0.11; its writer is a series of ``dprintf`` calls in
``src/perftest_parameters.c`` (``write_test_info_to_file`` and the bandwidth / latency report writers), so the
document is what those calls print, one member per line::

    {
    "test_info": {
    "test": "RDMA_Write_BW_Test",
    "Device": "mlx5_1",
    "Number_of_qps": 16,
    ...
    "Data_ex_method": "rdma_cm",
    "TOS": 41
    },
    "results": {
    "MsgSize": 65536,
    "n_iterations": 10384867,
    "BW_peak": 0.00,
    "BW_average": 181.46,
    "MsgRate": 0.346100
    }
    }

What the writer does that a reader must expect:

- It is not JSON before 24.01.0-0.38 (4.5-0.11 to 23.10.0-0.29): keys and most values unquoted, a comma after every
  member and after each object (``test_info: {``, ``TX_depth : 128,``, ``Device: "mlx5_0",``, ``},``). Such a
  document, and one of a later release that a quirk made invalid (``--output bandwidth`` leaves a trailing comma, a
  figure of 0/0 prints ``nan``), is read member by member, one per line, as the writer prints it
  (``document_syntax: "relaxed"``); a line that is none of ``{``, ``}``, ``},``, ``key: {`` or ``key: value`` is
  refused. A document that parses as JSON is ``document_syntax: "json"``.
- It holds ONE result: the file is opened with O_TRUNC at every report, so a sweep (``-a``) leaves the last size only
  (the text has every size). The document is written just before the text row, only when the run reached its
  report: a run that failed before leaves no document.
- The bandwidth unit is not written: ``BW_peak``/``BW_average`` are MB/s (2^20 bytes/s) by default and Gb/s with
  ``--report_gbits``. It is told from the document itself: perftest computes ``BW_average = MsgRate x MsgSize x
  10^6 / unit`` (unit 2^20 bytes or 1.25 x 10^8 bytes), so the ratio names the unit (``unit_printed``: ``MB/sec`` or
  ``Gb/sec``). A document whose ratio is neither is refused; all-zero figures need no unit (``unit_printed`` None).
- ``BW_peak`` is 0.00 when perftest did not measure it (``-D`` duration mode, ``-N``): a zero peak beside a non-zero
  average is None here (``peak_measured: False``), as the text parser reads ``BW peak won't be measured``.
- ``cuda_device`` is written for ``--use_cuda`` from 24.10.0-0.66 on (``gpu_direct: True``); an older document does
  not say, so ``gpu_direct`` is None unless ``Use_ROCm_memory``/``Use_MUSA_memory`` is ``ON``.
- Latency figures are microseconds (``-C`` would make them cycles and the document would not say; gpufleet never
  passes it). A duration-mode latency report has ``t_avg`` and ``tps_average`` only.

``parse_perftest_json(text)`` returns the keys of :mod:`gpufleet.parsers.perftest`'s results for the test the
document holds (``kind``: ``ib-bw`` or ``ib-lat``), one section: ``test`` (the text banner's spelling,
``RDMA_Write BW Test``), ``device``, ``link_type``, ``transport_type``, ``connection_type``, ``data_exchange``,
``qps``, ``mtu``, ``gid_index``, ``tx_depth``, ``rdma_cm``, ``settings`` (the ``test_info`` members as strings),
``side`` (``client`` where ``TX_depth`` is written, which perftest does for a client or a bidirectional run, else
``server``), ``interleaved`` (False), ``gpu_direct``, ``gpu_name``/``gpu_pci`` (None: the text's CUDA lines say them),
``warnings`` (perftest's ``WARNING1``/``WARNING2``), ``errors`` (empty), ``line`` (None), and ``results``: one row
``{bytes, iterations, bw_peak_gbps, bw_avg_gbps, msg_rate_mpps}`` (Gb/s, 10^9 bit/s) with ``unit_printed`` and
``peak_measured``, or ``{bytes, iterations, t_min_us, t_max_us, t_typical_us, t_avg_us, t_stdev_us, p99_us,
p99_9_us}`` (None for a figure the report has not; ``tps_average`` added where it has it). Also ``sections`` (that one
section), ``section_count`` (1), ``kind``, ``document_syntax``, ``cuda_device`` and ``cpu_util_percent``
(``--cpu_util``; None without).

Raises :class:`ParseError` for what cannot be used: empty input, more than :data:`MAX_CHARS`, nesting deeper than
:data:`~gpufleet.parsers.common.MAX_JSON_DEPTH`, a text that is neither JSON nor the writer's member-per-line form
(its line), a document cut off before its objects close, a second member of one name, and a missing or mistyped field,
named by its path in the document (``results.BW_peak: "fast" is not a figure``).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Dict, List, Optional, Tuple

from gpufleet.parsers.common import ParseError, bounded_number, parse_number, refuse_deep_json

KIND = "perftest-json"
# a report is a few hundred bytes; anything this large is not one
MAX_CHARS = 1024 * 1024
# bytes per second of one unit of BW_peak / BW_average: perftest's format_factor (MBS 0x100000, GBS 125000000)
UNIT_BYTES = (("MB/sec", 0x100000), ("Gb/sec", 125000000))
# a document whose BW_average / (MsgRate x MsgSize) is further than this factor from both units is not consistent
UNIT_TOLERANCE = 2.0
# testsStr and atomicTypesStr of src/perftest_parameters.c: the words of a test name that keep their underscores
VERBS = ("RDMA_Write_imm", "RDMA_Write", "RDMA_Read", "Send_imm", "Send", "Atomic")
ATOMIC_TYPES = ("CMP_AND_SWAP", "FETCH_AND_ADD")
# what a report holds instead of a row with --output bandwidth / message_rate / latency
SINGLE_FIGURE_KEYS = ("bw_avg", "msgRate_avg", "avg_lat")
_LAT_FIGURES = (("t_min_us", "t_min"), ("t_max_us", "t_max"), ("t_typical_us", "t_typical"), ("t_avg_us", "t_avg"),
                ("t_stdev_us", "t_stdev"), ("p99_us", "percentile_99"), ("p99_9_us", "percentile_99.9"))
_OPEN_RE = re.compile(r'^"?(?P<key>[A-Za-z_][\w .]*?)"?\s*:\s*\{$')
_MEMBER_RE = re.compile(r'^"?(?P<key>[A-Za-z_][\w .]*?)"?\s*:\s*(?P<value>[^{}\[\]]*?)\s*,?$')
_NUMBER_RE = re.compile(r"^-?\d+(?:\.\d*)?$")
_WORD_RE = re.compile(r"^[^\",{}\[\]:]+$")


def _error(path: str, message: str) -> ParseError:
    return ParseError("%s: %s" % (path, message), kind=KIND)


def _shown(value: Any) -> str:
    return json.dumps(value)[:40]


def _unique_keys(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    """``object_pairs_hook``: perftest writes each member once; a second one is refused, not silently kept."""
    out: Dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError("a second member %r" % key)
        out[key] = value
    return out


def _scalar(raw: str, line: int) -> Any:
    """A member's value as the writer prints it: ``"string"``, an integer, a ``%lf`` figure, or a bare word (the
    pre-24.01 writer's unquoted values; ``nan``/``inf`` stay words and are refused where a figure is expected)."""
    if raw.startswith('"'):
        try:
            value = json.loads(raw)
        except ValueError:
            value = None
        if not isinstance(value, str):
            raise ParseError("not a string: %s" % raw[:40], line=line, kind=KIND, text=raw)
        return value
    if _NUMBER_RE.match(raw):
        return parse_number(raw, line=line, kind=KIND)
    if _WORD_RE.match(raw):
        return raw
    raise ParseError("not a value perftest writes: %s" % raw[:40], line=line, kind=KIND, text=raw)


def _read_line(line: str, number: int, stack: List[Tuple[Dict[str, Any], str]], why: str) -> None:
    """One line inside the report, as the writer prints it: a closing brace, ``key: {`` or ``key: value``."""
    current, path = stack[-1]
    if line in ("}", "},"):
        stack.pop()
        return
    match = _OPEN_RE.match(line) or _MEMBER_RE.match(line)
    if match is None:
        raise ParseError("neither JSON (%s) nor a member of perftest's report" % why, line=number, kind=KIND, text=line)
    key = match.group("key").strip()
    if key in current:
        raise _error(path + key, "a second member of this name (line %d)" % number)
    if match.re is _OPEN_RE:
        current[key] = {}
        stack.append((current[key], "%s%s." % (path, key)))
    else:
        current[key] = _scalar(match.group("value"), number)


def _read_members(text: str, why: str) -> Dict[str, Any]:
    """The report read member by member, one per line (see the module docstring); ``why``: json's complaint."""
    root: Optional[Dict[str, Any]] = None
    stack: List[Tuple[Dict[str, Any], str]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if root is None:
            if line != "{":
                raise ParseError("neither JSON (%s) nor perftest's report: it does not begin with {" % why,
                                 line=number, kind=KIND, text=line)
            root = {}
            stack.append((root, ""))
        elif not stack:
            raise ParseError("text after the end of the report", line=number, kind=KIND, text=line)
        else:
            _read_line(line, number, stack, why)
    if root is None:
        raise ParseError("empty input", kind=KIND)
    if stack:
        where = stack[-1][1].rstrip(".") or "the report"
        raise ParseError("the report ends inside %s: a run ended while writing it leaves it open" % where, kind=KIND)
    return root


def _load(text: str) -> Tuple[Dict[str, Any], str]:
    """(document, ``json`` or ``relaxed``): refused before reading when empty, too large or nested too deep."""
    if not text or not text.strip():
        raise ParseError("empty input", kind=KIND)
    if len(text) > MAX_CHARS:
        raise ParseError("%d characters, more than the %d of any perftest report" % (len(text), MAX_CHARS), kind=KIND)
    refuse_deep_json(text, kind=KIND, what="the report")
    try:
        doc = json.loads(text, object_pairs_hook=_unique_keys)
        syntax = "json"
    except ValueError as exc:
        doc = _read_members(text, getattr(exc, "msg", str(exc)))
        syntax = "relaxed"
    if not isinstance(doc, dict):
        raise ParseError("the document is a JSON %s, not perftest's report object" % type(doc).__name__, kind=KIND)
    return doc, syntax


def _section(doc: Dict[str, Any], key: str) -> Dict[str, Any]:
    value = doc.get(key)
    if value is None:
        raise _error(key, "missing")
    if not isinstance(value, dict):
        raise _error(key, "%s is not an object" % _shown(value))
    return value


def _integer(block: Dict[str, Any], key: str, path: str, required: bool = False) -> Optional[int]:
    value = block.get(key)
    if value is None:
        if required:
            raise _error(path + key, "missing")
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _error(path + key, "%s is not a count" % _shown(value))
    return bounded_number(value, kind=KIND, what=path + key)


def _figure(block: Dict[str, Any], key: str, required: bool = True) -> Optional[float]:
    """A measured figure of ``results``: a finite number >= 0."""
    value = block.get(key)
    if value is None:
        if required:
            raise _error("results." + key, "missing")
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise _error("results." + key, "%s is not a figure" % _shown(value))
    return float(bounded_number(value, kind=KIND, what="results." + key))


def _text(block: Dict[str, Any], key: str) -> Optional[str]:
    value = block.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _error("test_info." + key, "%s is not a word" % _shown(value))
    return value


def banner(test: str) -> str:
    """The text banner's spelling of the document's test name: ``RDMA_Write_Bidirectional_BW_Test`` ->
    ``RDMA_Write Bidirectional BW Test`` (the verb and the atomic type keep their underscores)."""
    words = []
    rest = test
    for verb in VERBS:
        if rest.startswith(verb + "_"):
            words.append(verb)
            rest = rest[len(verb) + 1:]
            break
    for atomic in ATOMIC_TYPES:
        if words and rest.startswith(atomic + "_"):
            words.append(atomic)
            rest = rest[len(atomic) + 1:]
    return " ".join(words + [word for word in rest.split("_") if word])


def _kind(test: str) -> str:
    if test.endswith("_BW_Test"):
        return "ib-bw"
    if test.endswith("_Latency_Test"):
        return "ib-lat"
    raise _error("test_info.test", "%s is neither a BW nor a Latency test" % _shown(test))


def _unit(size: int, average: float, rate: float, peak: float) -> Tuple[Optional[str], float]:
    """(unit, Gb/s per unit) told from ``BW_average / (MsgRate x MsgSize)`` (= 10^6 / the unit's bytes per second)."""
    if average == 0 or rate == 0 or size == 0:
        if average == 0 and peak == 0:
            return None, 0.0
        raise _error("results.MsgRate", "%s beside BW_average %s cannot tell MB/s from Gb/s" % (rate, average))
    ratio = average / (rate * size)
    unit, unit_bytes = min(UNIT_BYTES, key=lambda item: abs(math.log(ratio * item[1] / 1e6)))
    if abs(math.log(ratio * unit_bytes / 1e6)) > math.log(UNIT_TOLERANCE):
        raise _error("results.BW_average", "%s is neither MB/s nor Gb/s of MsgRate %s x MsgSize %d"
                     % (average, rate, size))
    return unit, unit_bytes * 8 / 1e9


def _single_figure(results: Dict[str, Any]) -> None:
    for key in SINGLE_FIGURE_KEYS:
        if key in results and "MsgSize" not in results:
            raise _error("results.MsgSize", "missing: a report written with --output holds %s alone, not a row" % key)


def _bw(results: Dict[str, Any]) -> Dict[str, Any]:
    size = _integer(results, "MsgSize", "results.", required=True)
    iterations = _integer(results, "n_iterations", "results.", required=True)
    peak, average, rate = _figure(results, "BW_peak"), _figure(results, "BW_average"), _figure(results, "MsgRate")
    # required ones: _integer and _figure raised when one was missing
    assert size is not None and peak is not None and average is not None and rate is not None
    unit, factor = _unit(size, average, rate, peak)
    measured = not (peak == 0 and average > 0)
    row = {"bytes": size, "iterations": iterations, "bw_peak_gbps": peak * factor if measured else None,
           "bw_avg_gbps": average * factor, "msg_rate_mpps": rate}
    return {"unit_printed": unit, "peak_measured": measured, "results": [row]}


def _lat(results: Dict[str, Any]) -> Dict[str, Any]:
    row: Dict[str, Any] = {"bytes": _integer(results, "MsgSize", "results.", required=True),
                           "iterations": _integer(results, "n_iterations", "results.", required=True)}
    for name, key in _LAT_FIGURES:
        row[name] = _figure(results, key, required=key == "t_avg")
    if "tps_average" in results:
        row["tps_average"] = _figure(results, "tps_average")
    return {"results": [row]}


def _gpu_direct(info: Dict[str, Any]) -> Optional[bool]:
    if info.get("cuda_device") is not None or "ON" in (_text(info, "Use_ROCm_memory"), _text(info, "Use_MUSA_memory")):
        return True
    return None


def parse_perftest_json(text: str) -> Dict[str, Any]:
    """Read the ``--out_json`` report of one perftest run; see the module docstring for the keys."""
    doc, syntax = _load(text)
    info, results = _section(doc, "test_info"), _section(doc, "results")
    test = _text(info, "test")
    if test is None:
        raise _error("test_info.test", "missing")
    kind = _kind(test)
    _single_figure(results)
    rdma_cm = _text(info, "rdma_cm_QPs")
    section = {
        "test": banner(test),
        "line": None,
        "device": _text(info, "Device"),
        "link_type": _text(info, "Link_type"),
        "transport_type": _text(info, "Transport_type"),
        "connection_type": _text(info, "Connection_type"),
        "data_exchange": _text(info, "Data_ex_method"),
        "qps": _integer(info, "Number_of_qps", "test_info."),
        "mtu": _integer(info, "Mtu", "test_info."),
        "gid_index": _integer(info, "GID_index", "test_info."),
        "tx_depth": _integer(info, "TX_depth", "test_info."),
        "rdma_cm": None if rdma_cm is None else rdma_cm.upper() == "ON",
        "settings": {str(key): str(value) for key, value in info.items()},
        "side": "client" if info.get("TX_depth") is not None else "server",
        "interleaved": False,
        "gpu_direct": _gpu_direct(info),
        "gpu_name": None,
        "gpu_pci": None,
        "warnings": [str(info[key]) for key in ("WARNING1", "WARNING2") if info.get(key) is not None],
        "errors": [],
    }
    section.update(_bw(results) if kind == "ib-bw" else _lat(results))
    out = dict(section, sections=[dict(section)], section_count=1, kind=kind, document_syntax=syntax,
               cuda_device=_integer(info, "cuda_device", "test_info."),
               cpu_util_percent=_figure(results, "CPU_util", required=False))
    return out
