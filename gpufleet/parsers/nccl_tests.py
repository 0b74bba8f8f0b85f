# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for nccl-tests output (KIND ``nccl``): all_reduce_perf and its siblings
(all_gather, reduce_scatter, alltoall, broadcast, reduce, sendrecv, gather, scatter,
hypercube).

``parse_nccl_tests(text)`` returns a dict with these keys (a public contract):

- ``failed`` (bool): the run did not produce a trustworthy result: a ``Test NCCL failure`` /
  ``Test CUDA failure`` / ``Test failure`` line, an argument error of nccl-tests (``invalid size
  specified for 'minbytes'``, ``invalid option``), ``Out of bounds values : N FAILED``, no
  result row at all (hang or crash after the header, MPI/UCX launch failure), an abort
  (``Abort COMPLETE``, ``MPI_ABORT``, segfault), an error line printed by the launcher, a
  ``damaged`` table, or ``single_rank_runs``.
- ``errors`` (list[{line, text, lines, count, hosts, ranks, source}]): one entry per error, in the
  order of its first line: failure lines, launcher/UCX/MPI error lines (a message wrapped over a
  few lines is joined), NCCL WARN lines (multi-line WARNs joined) and the parser's own findings
  (``no result rows``...; ``line`` is None for those about the whole text). The same error printed
  by several ranks (``host: Test NCCL failure common.cu:1005 ...`` of 8 hosts, NCCL's
  ``host:pid:tid [dev]`` WARNs, `` .. host pid N:`` backtraces, Open MPI's ``[host:pid]`` lines,
  srun's ``srun: error: host: task N: ...``) is one entry: ``line`` and ``text`` its first line,
  ``lines`` every line of it (1-based in the text as given; ``[]`` for a finding about the whole
  text), ``count`` how many, ``hosts`` the distinct hosts of their prefixes, ``ranks`` the ranks of
  their launcher prefixes (``srun -l``, ``--tag-output``) or srun task numbers. ``source``:
  ``rank`` (what a rank printed: nccl-tests, NCCL, CUDA, UCX, a signal), ``launcher`` (what mpirun,
  srun, slurmstepd, ssh or the shell said about the job: ``Primary job  terminated normally ...``,
  ``mpirun detected that one or more processes exited with non-zero status``, ``srun: error: ...
  task N: Exited with exit code 1``) or ``parser`` (its findings).
- ``cause`` (str|None): for a failed run, why it failed in one line: the first error a rank printed
  (its ``rank`` entries: an argument error, a ``Test NCCL failure common.cu:1005 '...'`` line, an NCCL
  WARN with file and line...) — an NCCL WARN with the first ``Test NCCL failure ... 'unhandled cuda
  error'`` line after ``; `` when there is one; routine WARNs (``Could not find a path for pattern N,
  falling back to simple order``) and the ``.. host pid N: Test failure file.cu:line`` backtrace lines
  nccl-tests prints last never are. A run that printed its table header and nothing after it (no
  error, no row) is ``hung: the table header was printed and no result row followed`` (with ``;
  before it: `` and the first rank error before the header, if any). For a ``damaged`` table:
  ``result row at line N cut by: `` and what cut it (the rank's error when that was it). Only when no
  rank said anything: the first launcher line, else the parser's first finding. Never a launcher's
  closing summary while a rank's error exists, wherever it is in the text. None for a run that did
  not fail.
- ``warnings`` (list[{line, text, host}]): the NCCL WARN lines alone.
- ``ranks`` (int|None): number of ranks: the largest of (highest ``Rank N`` of the
  ``# Using devices`` lines + 1) and the largest ``nranks N`` of NCCL INFO lines.
- ``hosts`` (list[str]): distinct host names of the device lines (else of the NCCL lines).
- ``devices`` (list[{rank, group, pid, host, device, bus_id, name, line}]): the
  ``#  Rank N Group G Pid P on HOST device D [BUS] NAME`` lines (``group`` None in the old
  format without Group; ``bus_id`` as printed: ``0x18``, ``0000:61:00``, ``0x00`` under
  Hyper-V).
- ``devices_compact`` (bool): fewer device lines than ranks (nccl-tests >= 2.17 prints only
  the first and last rank of each node).
- ``collective`` (str|None): ``all_reduce_perf``... from ``# Collective test starting:`` /
  ``concluded:``, else from the command line in the text, else None.
- ``nccl_version`` (str|None): ``2.16.2`` from ``NCCL version 2.16.2+cuda11.6`` (also in INFO
  lines), else from the banner's ``nccl-library=22903``; ``nccl_version_full`` (str|None) as
  printed.
- ``nccl_tests_version`` (str|None): from ``# nccl-tests version 2.17.9 ...``.
- ``params`` (dict|None): from the ``# nThread`` line: ``nthread``, ``ngpus``, ``min_bytes``,
  ``max_bytes``, ``step`` (int), ``step_kind`` (``factor``|``bytes``), ``warmup_iters``,
  ``iters``, ``agg_iters``, ``validation``, ``graph`` (ints; None when not printed).
- ``reduced_max_bytes`` (int|None): ``# Reducing maxBytes to N due to memory limitation``.
- ``header_format`` (``"new"``|``"old"``|None): ``new`` has ``root`` and ``#wrong`` columns,
  ``old`` (nccl-tests < 2.0) an ``error`` column; None when no column header was seen (the
  format is then inferred per row from the cell count).
- ``rows`` (list[dict]): one per result row, in order: ``{line, size_bytes, count, type,
  redop, root, out_of_place: {time_us, algbw_gbs, busbw_gbs, wrong}, in_place: {...}}``.
  ``redop``/``root`` are None when the format has no such column. ``wrong`` is an int
  (``#wrong``), a float for ``#wrong`` printed in e-notation (``1.04858e+06``, approximate)
  and for the old ``error`` column (max. error, e.g. ``7e-07``), None when printed ``N/A``
  (``validation: 0``).
- ``avg_busbw_gbs`` (int|float|None): ``# Avg bus bandwidth`` (None when absent).
- ``max_busbw_gbs`` (float|None): highest out-of-place or in-place busbw over all rows.
- ``largest_size_bytes`` (int|None) and ``busbw_at_largest_size_gbs`` (float|None):
  out-of-place busbw of the (last) row with the largest size: what judges compare.
- ``wrong_total`` (int|float|None): sum of the non-None ``#wrong`` cells (None for the old
  ``error`` column or when every cell is N/A); ``max_error`` (float|None): largest old
  ``error`` cell.
- ``validated`` (bool|None): False when the run did not check its results: ``validation: 0``
  in the ``# nThread`` line (``-c 0``; nccl-tests then prints ``#wrong`` as ``N/A``, older
  versions as ``0``) or every ``#wrong`` cell ``N/A``; True when ``validation`` is 1 or more, or
  (without that line) a ``#wrong``/``error`` cell holds a number; None without rows or header.
- ``out_of_bounds`` (int|None) and ``out_of_bounds_status`` (``"OK"``|``"FAILED"``|None):
  ``# Out of bounds values : 108 FAILED``.
- ``complete`` (bool): the footer (``Out of bounds values``, ``Avg bus bandwidth`` or
  ``Collective test concluded``) was seen after the rows. A recording that stops in the
  table is ``complete: False`` (but not ``failed`` by that alone).
- ``single_rank`` (bool): one rank (``ranks == 1``, or busbw 0.00 on every row while
  algbw > 0): busbw is meaningless and algbw of in-place rows absurd.
- ``interleaved`` (bool): rows of the same size/type/op repeat or go back in size within
  one table, or rows came from more than one launcher rank prefix: several independent
  runs printed into one output.
- ``single_rank_runs`` (bool): ``interleaved`` and ``single_rank`` (or rows from several
  launcher ranks): nccl-tests built without ``MPI=1`` launched by mpirun/srun; each process
  ran alone. Sets ``failed``; never read as one multi-rank result.
- ``tables`` (int): number of column headers seen.
- ``elided`` (bool) and ``elided_lines`` (list[int]): author elision lines (``...``,
  ``[...]``) skipped.
- ``nccl_blocks`` (list[{title, line, lines}]): NCCL's own multi-line blocks, skipped: the INFO line that announced
  each (``Enabled NCCL Func/Proto/Algo Matrix:``, NCCL >= 2.24) and the numbers of its lines, which carry no NCCL
  prefix and would otherwise read as broken result rows.
- ``damaged`` (dict|None): the first result row that another process's output (an NCCL line, INFO
  included, an error line of a rank or a launcher, Open MPI's ``[host:pid]`` lines) cut:
  ``{line, text, row, by_line, by}``: the line (stripped), the row's cells before the cut, and the
  line and text of what cut it. nccl-tests prints a row in three parts (size .. root, then each
  half); a rank's error lands after any part, on the same line with or without a space
  (``  -1host: Test NCCL failure ...``, ``14.87  0  [node2:1234] *** Process received signal ***``)
  or, for a WARN, which NCCL starts on a new line, on the next non-blank line. The row is no figure,
  the rows before it are kept, the rows after it are not read, the cut text is read as the line it
  is (an NCCL WARN is in ``warnings``); sets ``failed``. A row cut short at the end of the text (a
  recording cut there) still raises.
- ``rank_prefix`` (str|None): launcher prefix seen: ``srun``, ``mpirun-tag-output``,
  ``mpi-rank``.
- ``debug`` (dict|None): :func:`parse_nccl_debug` of the same text when NCCL INFO/WARN/TRACE
  lines are present; ``transports`` (dict), ``using_network`` (str|None) and
  ``fallback_to_socket`` (bool|None) copy its keys (``{}``/None/None without debug lines).

Raises :class:`ParseError` naming the line for a result row with the wrong number of cells
or a cell that is not a number (a placeholder such as ``...`` or ``<masked>`` is never read as a
value) when no other process's output cut it (``damaged``), and (without a line) for empty input or text with no
nccl-tests content, NCCL line or error message at all.
"""

from __future__ import annotations

import re
from typing import Any

from gpufleet.collection import module_utils
from gpufleet.parsers.common import ImplausibleNumber, ParseError, parse_number
from gpufleet.parsers.nccl_debug import (
    PreparedLine,
    collect_nccl_debug,
    is_elision,
    join_warnings,
    match_nccl_line,
    prepare_lines,
    version_of,
)

KIND = "nccl"

_INT_RE = re.compile(r"^[-+]?\d+$")
_FLOAT_RE = re.compile(r"^[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?$")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NA = ("N/A", "n/a", "NA")

_BANNER_RE = re.compile(r"^#?\s*nccl-tests version (\S+)(?:.*?nccl-library=(\d+))?")
_COLLECTIVE_RE = re.compile(r"^#?\s*Collective test (starting|concluded):\s*(\S+)")
_NTHREAD_RE = re.compile(r"^#?\s*nThread\s+\d+\s+nGpus\s+\d+")
_USING_DEVICES_RE = re.compile(r"^#?\s*Using devices\s*$")
_DEVICE_RE = re.compile(
    r"^#?\s*Rank\s+(?P<rank>\d+)\s+(?:Group\s+(?P<group>\d+)\s+)?Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)\s+"
    r"device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<name>.*?)\s*$"
)
_REDUCING_RE = re.compile(r"^#?\s*Reducing maxBytes to (\d+)")
_OOB_RE = re.compile(r"^#?\s*Out of bounds values\s*:\s*(\S+)\s+(OK|FAILED)\b")
_AVG_RE = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*(\S+)")
_COMMAND_PERF_RE = re.compile(r"\b([a-z][a-z0-9_]*_perf)\b")

# nccl-tests' own refusals of its arguments and set-up (src/common.cu, util.cu; getopt's words for an unknown
# option), printed by every rank before any result; one line each, never joined with the usage text that follows.
_ARGUMENT_ERROR_RE = re.compile(
    r"invalid size specified for '\w+'|invalid sizes for 'minbytes' and 'maxbytes'|invalid option\b|"
    r"unrecognized option\b|option requires an argument\b|Invalid number of GPUs\b|Incompatible NCCL versions\b"
)
_LAUNCHER_WORDS = module_utils("launcher_words")
# Failure lines (searched in lines that are neither NCCL lines nor rows): the test's, a rank's, and the launcher's
# (the table the node's bench_process.classify reads too).
_FAILURE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"Test (?:NCCL |CUDA )?failure"),
    re.compile(r"Test timeout \(\d+s\)"),
    _ARGUMENT_ERROR_RE,
    re.compile(r"UCX\s+ERROR"),
    re.compile(r"\*\*\* Process received signal \*\*\*"),
    re.compile(r"Segmentation fault|Bus error|core dumped|\bAborted\b|\bKilled\b"),
    re.compile(r"error while loading shared libraries"),
    re.compile(r"(?:^|\s)ERROR\b"),
    re.compile(r"^(?:\S+:\s*)?(?:Error|error)\b\s*:"),
    *_LAUNCHER_WORDS.LAUNCHER_PATTERNS,
    *_LAUNCHER_WORDS.MISSING_PATTERNS,
    *_LAUNCHER_WORDS.LAUNCHER_FAILURE_PATTERNS,
)
# Error lines of a single line: the lines after them are never joined to them.
_ONE_LINE_RE = re.compile(
    r"Test (?:NCCL |CUDA )?failure|Test timeout|\*\*\* Process received signal|" + _ARGUMENT_ERROR_RE.pattern
)
# What a launcher says about the job (its closing summaries, its own failures to start it), never a rank's words:
# the cause of a failure only when no rank said anything. The table is the node's too (bench_process.classify); this
# parser has always told a launcher's line by its words in any case.
_LAUNCHER_LINE_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern.pattern, pattern.flags | re.IGNORECASE) for pattern in _LAUNCHER_WORDS.LAUNCHER_LINE_PATTERNS)
# NCCL's multi-line blocks: an INFO line announces each and its lines follow without NCCL's prefix (NCCL >= 2.24
# prints "Enabled NCCL Func/Proto/Algo Matrix:" under NCCL_DEBUG=INFO, one row per function: "    AllReduce |  1  2  1
# |  1  1  0 ..."). Without this a block printed inside the results table read as broken result rows.
_NCCL_BLOCKS = (("Func/Proto/Algo matrix", re.compile(r"Enabled NCCL Func/Proto/Algo Matrix:\s*$")),)
_BLOCK_ROW_RE = re.compile(r"^\s*[A-Za-z][A-Za-z/ ]*\|[^|]*\|[^|]*$")
# NCCL INFO lines that mean the communicator died.
_NCCL_ABORT_RE = re.compile(r"Abort COMPLETE|NCCL failure|Cuda failure")
# A WARN NCCL prints on healthy runs too (graph search on machines without NVLink), never a failure's cause.
_ROUTINE_WARN_RE = re.compile(r"Could not find a path for pattern \d+, falling back to simple order")
# The stack nccl-tests unwinds after a failure (`` .. host pid N: Test failure common.cu:937``): where, not why.
_BACKTRACE_RE = re.compile(r"^\.\.\s+\S+\s+pid\s+\d+:\s+Test failure\b")
_TEST_FAILURE_RE = re.compile(r"Test (?:NCCL |CUDA )?failure\b")
_WALL_CLOCK_RE = re.compile(r"^\[\d{4}-\d\d-\d\d[ T][\d:.]+\]\s*")
# What a rank puts before its words, different on every rank: NCCL's ``host:pid:tid [dev] ``, nccl-tests'
# ``host: `` (``Test NCCL failure``) and `` .. host pid N: `` (its backtrace), Open MPI's ``[host:pid] ``, and
# srun's ``srun: error: host: task N: ``. Without it the same error of 8 ranks reads as one text.
_RANK_PREFIX_RE = re.compile(
    r"^(?:(?P<nccl>[^\s:\[\]]+):\d+:\d+\s+\[-?\d+\]\s+|\.\.\s+(?P<trace>\S+)\s+pid\s+\d+:\s+|"
    r"\[(?P<ompi>[^\s:\[\]]+):\d+\]\s+|(?P<test>[^\s:\[\]]+):\s+(?=Test\b)|"
    r"(?P<launcher>srun: error:)\s+(?P<srun>[^\s:]+):\s+tasks?\s+(?P<task>[\d,\[\]-]+):\s+)"
)
# Where another process's output starts inside a result row: NCCL's ``host:pid:tid [dev]``, Open MPI's
# ``[host:pid]``, nccl-tests' ``host: Test`` and `` .. host pid N:``, ``***``, an mpirun --tag-output prefix.
_FOREIGN_START_RE = re.compile(
    r"(?:\[\d{4}-\d\d-\d\d[ T][\d:.]+\]\s*)?(?:[^\s:\[\]]+:\d+:\d+\s+\[-?\d+\]|\[[^\s\[\]]+:\d+\]|"
    r"[^\s:\[\]]+:\s+Test\s|\.\.\s+\S+\s+pid\s+\d+:|\*\*\*|\[\d+,\d+\]<std(?:out|err|diag)>:)"
)
_LEADING_NUMBER_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
HUNG = "hung: the table header was printed and no result row followed"


def _plain(text: object) -> str:
    """An error's text without NCCL's wall clock."""
    return _WALL_CLOCK_RE.sub("", str(text)).strip()


def _rank_cause(entries: list[dict[str, Any]]) -> str | None:
    """The first error a rank printed; a WARN with the first ``Test NCCL failure`` line after ``; ``."""
    if not entries:
        return None
    first = _plain(entries[0]["text"])
    test = next((_plain(entry["text"]) for entry in entries if _TEST_FAILURE_RE.search(entry["text"])), None)
    if " NCCL WARN " in " %s " % first and test:
        return "%s; %s" % (first[:200], test[:150])
    return first[:300]


def _damage_cause(damaged: dict[str, Any], entries: list[dict[str, Any]], cause: str | None) -> str:
    """The cause of a run one of whose result rows another process's output cut (``damaged``)."""
    damage = "result row at line %d cut by: %s" % (damaged["line"], damaged["by"][:200])
    first = entries[0]["line"] if entries else None
    if first is not None and first in (damaged["line"], damaged["by_line"]):
        return "result row at line %d cut by: %s" % (damaged["line"], cause)
    if first is not None and first < damaged["line"]:
        said = cause is not None and _plain(damaged["by"]) in cause  # a rank's line came first: cause is its text
        return "%s; %s" % (cause, "it cut the result row at line %d" % damaged["line"] if said else damage)
    return "%s; %s" % (damage, cause) if cause else damage


def _cause(errors: list[dict[str, Any]], damaged: dict[str, Any] | None = None) -> str | None:
    """Why a failed run failed, in one line (module docstring, ``cause``)."""
    parser = [_plain(entry["text"]) for entry in errors if entry["source"] == "parser"]
    rank = [entry for entry in errors if entry["source"] == "rank" and _plain(entry["text"])
            and not _BACKTRACE_RE.match(_plain(entry["text"])) and not _ROUTINE_WARN_RE.search(entry["text"])]
    cause = _rank_cause(rank)
    if HUNG in parser:
        return ("%s; before it: %s" % (HUNG, cause) if cause else HUNG)[:300]
    if damaged:
        return _damage_cause(damaged, rank, cause)[:300]
    if cause:
        return cause
    launcher = next((_plain(entry["text"]) for entry in errors if entry["source"] == "launcher"), None)
    other = next((text for text in parser if text), None)
    return (launcher or other or "")[:300] or None


def _error_key(item: dict[str, Any]) -> tuple[tuple[str, str], str | None, int | None]:
    """``(key, host, task)`` of an error line: the same key for the same error printed by different ranks."""
    text = _plain(item["text"])
    match = _RANK_PREFIX_RE.match(text)
    if not match:
        return (item["source"], " ".join(text.split())), None, None
    host = next((match.group(name) for name in ("nccl", "trace", "ompi", "test", "srun") if match.group(name)), None)
    task = match.group("task")
    body = (match.group("launcher") or "") + " " + text[match.end():]
    return (item["source"], " ".join(body.split())), host, int(task) if task and task.isdigit() else None


def _group_errors(items: list[dict[str, Any]], rank_of: dict[int, int | None]) -> list[dict[str, Any]]:
    """One entry per error: the same error line printed by several ranks (in line order) becomes one, its lines,
    hosts and ranks listed. The parser's findings are never merged."""
    entries: list[dict[str, Any]] = []
    by_key: dict[tuple[str, str], dict[str, Any]] = {}
    for item in items:
        key: tuple[str, str] | None
        host: str | None
        task: int | None
        key, host, task = _error_key(item) if item["source"] != "parser" else (None, None, None)
        entry = by_key.get(key) if key is not None else None
        if entry is None:
            entry = {"line": item["line"], "text": item["text"], "lines": [], "count": 0, "hosts": [], "ranks": [],
                     "source": item["source"]}
            entries.append(entry)
            if key is not None:
                by_key[key] = entry
        if item["line"] is not None:
            entry["lines"].append(item["line"])
        entry["count"] += 1
        rank = rank_of.get(item["line"]) if task is None else task
        if host is not None and host not in entry["hosts"]:
            entry["hosts"].append(host)
        if rank is not None and rank not in entry["ranks"]:
            entry["ranks"].append(rank)
    return entries


def _number(cell: str, number: int, what: str) -> int | float | None:
    """int when integral in the source, float otherwise; anything else is damage, and so is a figure above common's
    MAX_NUMBER (2^64-1: a 400-digit busbw), which no run prints."""
    if _INT_RE.match(cell) or _FLOAT_RE.match(cell):
        try:
            return parse_number(cell, line=number, kind=KIND)
        except ImplausibleNumber as exc:
            raise ParseError("%s: %s" % (what, exc.message), line=number, kind=KIND) from None
    raise ParseError("%s is not a number: %r" % (what, cell), line=number, kind=KIND)


def _wrong_cell(cell: str, number: int) -> int | float | None:
    if cell in _NA:
        return None
    return _number(cell, number, "#wrong/error")


def _header_names(line: str) -> list[str] | None:
    """Column names of a ``#  size  count  type ...`` header line, else None."""
    body = line.lstrip("#").split()
    if len(body) >= 10 and body[0] == "size" and body[1] == "count" and "busbw" in body and "time" in body:
        return body
    return None


def _layout_from_header(names: list[str], number: int) -> tuple[list[str], str]:
    """(leading field names, format) from the column names; 8 value columns follow."""
    lead = names[:-8]
    values = names[-8:]
    known = {"size", "count", "type", "redop", "root"}
    if not lead or not set(lead) <= known or lead[:2] != ["size", "count"]:
        raise ParseError("unknown nccl-tests column header", line=number, kind=KIND)
    if values[0::4] != ["time", "time"] or values[1::4] != ["algbw", "algbw"] or values[2::4] != ["busbw", "busbw"]:
        raise ParseError("unknown nccl-tests column header", line=number, kind=KIND)
    fmt = "old" if values[3] == "error" else "new"
    return lead, fmt


def _layout_from_cells(cells: list[str], number: int) -> tuple[list[str], str]:
    """Layout of a row seen without a column header, from its cell count."""
    if len(cells) == 13:
        return ["size", "count", "type", "redop", "root"], "new"
    if len(cells) == 12:
        if _INT_RE.match(cells[3]):
            return ["size", "count", "type", "root"], "old"
        return ["size", "count", "type", "redop"], "old"
    raise ParseError("result row has %d cells, expected 12 or 13" % len(cells), line=number, kind=KIND)


def _parse_row(cells: list[str], number: int, lead: list[str], fmt: str) -> dict[str, Any]:
    if len(cells) != len(lead) + 8:
        raise ParseError("result row has %d cells, expected %d" % (len(cells), len(lead) + 8), line=number, kind=KIND)
    fields = dict(zip(lead, cells))
    size = _number(fields["size"], number, "size")
    count = _number(fields["count"], number, "count")
    if not isinstance(size, int) or not isinstance(count, int) or size < 0 or count < 0:
        raise ParseError("size/count must be non-negative integers", line=number, kind=KIND)
    if not _IDENT_RE.match(fields["type"]):
        raise ParseError("bad data type %r" % fields["type"], line=number, kind=KIND)
    redop = fields.get("redop")
    if redop is not None and not _IDENT_RE.match(redop):
        raise ParseError("bad reduction op %r" % redop, line=number, kind=KIND)
    root = None
    if "root" in fields:
        root = _number(fields["root"], number, "root")
        if not isinstance(root, int):
            raise ParseError("root is not an integer: %r" % fields["root"], line=number, kind=KIND)
    values = cells[len(lead):]
    halves = []
    for offset in (0, 4):
        time_us = _number(values[offset], number, "time")
        algbw = _number(values[offset + 1], number, "algbw")
        busbw = _number(values[offset + 2], number, "busbw")
        wrong = _wrong_cell(values[offset + 3], number)
        if fmt == "new" and isinstance(wrong, float) and "e" not in values[offset + 3].lower():
            raise ParseError("#wrong is not a count: %r" % values[offset + 3], line=number, kind=KIND)
        halves.append({"time_us": time_us, "algbw_gbs": algbw, "busbw_gbs": busbw, "wrong": wrong})
    return {
        "line": number,
        "size_bytes": size,
        "count": count,
        "type": fields["type"],
        "redop": redop,
        "root": root,
        "out_of_place": halves[0],
        "in_place": halves[1],
    }


def _params(line: str) -> dict[str, Any]:
    def grab(pattern: str) -> int | None:
        match = re.search(pattern, line)
        return int(match.group(1)) if match else None

    step = re.search(r"step:\s*(\d+)\((\w+)\)", line)
    return {
        "nthread": grab(r"nThread\s+(\d+)"),
        "ngpus": grab(r"nGpus\s+(\d+)"),
        "min_bytes": grab(r"minBytes\s+(\d+)"),
        "max_bytes": grab(r"maxBytes\s+(\d+)"),
        "step": int(step.group(1)) if step else None,
        "step_kind": step.group(2) if step else None,
        "warmup_iters": grab(r"warmup iters:\s*(\d+)"),
        "iters": grab(r"(?<!warmup )(?<!agg )\biters:\s*(\d+)"),
        "agg_iters": grab(r"agg iters:\s*(\d+)"),
        "validation": grab(r"validation:\s*(\d+)"),
        "graph": grab(r"graph:\s*(\d+)"),
    }


def _library_version(text: str) -> str:
    """nccl-library=22903 -> '2.29.3' (NCCL_VERSION_CODE = major*10000 + minor*100 + patch)."""
    code = int(text)
    if code >= 10000:
        return "%d.%d.%d" % (code // 10000, (code // 100) % 100, code % 100)
    return "%d.%d.%d" % (code // 1000, (code // 100) % 10, code % 100)


def _device(match: re.Match[str], number: int) -> dict[str, Any]:
    """One "#  Rank  0 Group  0 Pid ... on host device  0 [bus] name" line as a device entry."""
    return {
        "rank": int(match.group("rank")),
        "group": int(match.group("group")) if match.group("group") is not None else None,
        "pid": int(match.group("pid")),
        "host": match.group("host"),
        "device": int(match.group("device")),
        "bus_id": match.group("bus"),
        "name": match.group("name"),
        "line": number,
    }


def _is_row_candidate(line: str) -> bool:
    """A line meant as a result row: integer size and count, or mostly numeric cells.

    Launcher prose that starts with a digit (``2 total processes killed``, ``1. Hostfile``)
    is not a row; a row with a damaged cell still is, so that it raises.
    """
    cells = line.split()
    if len(cells) < 3:
        return False
    if _INT_RE.match(cells[0]) and _INT_RE.match(cells[1]):
        return True
    numeric = sum(1 for cell in cells if _FLOAT_RE.match(cell) or cell in _NA)
    return len(cells) >= 8 and numeric * 2 >= len(cells)


_KIND_OF_COLUMN = {"size": "int", "count": "int", "type": "name", "redop": "name", "root": "int"}
_VALUE_KINDS = ["number", "number", "number", "wrong"] * 2


def _cell_kinds(lead: list[str] | None) -> list[str]:
    """What each cell of a row holds: ``int``, ``name`` (type, redop), ``number``, ``wrong`` (a number or N/A); without
    a header the new layout, its 4th cell a redop or (old layout) a root."""
    if lead is None:
        return ["int", "int", "name", "name-or-int"] + _VALUE_KINDS
    return [_KIND_OF_COLUMN[name] for name in lead] + _VALUE_KINDS


def _cell_fits(cell: str, kind: str) -> bool:
    if kind == "int":
        return bool(_INT_RE.match(cell))
    if kind == "name":
        return bool(_IDENT_RE.match(cell))
    if kind == "name-or-int":
        return bool(_IDENT_RE.match(cell) or _INT_RE.match(cell))
    return bool(_FLOAT_RE.match(cell)) or (kind == "wrong" and cell in _NA)


def _cells_fit(cells: list[str], kinds: list[str]) -> bool:
    """The cells are the first cells of a row: as many as a row has at most, each of its column's kind."""
    return 2 <= len(cells) <= len(kinds) and all(_cell_fits(cell, kind) for cell, kind in zip(cells, kinds))


def _is_foreign(text: str) -> bool:
    """``text`` begins with another process's output: an NCCL line, a rank's or a launcher's error line."""
    if _FOREIGN_START_RE.match(text) or match_nccl_line(text):
        return True
    return any(pattern.match(text) for pattern in _FAILURE_PATTERNS)


def _fused_split(line: str, kinds: list[str]) -> tuple[str, str] | None:
    """``(row part, other part)`` of a result row that another process's output continues on the same line, else None.

    nccl-tests prints a row in three parts (size .. root, then each half's cells) and an error of any rank lands
    after any of them, with or without a space (``    -1host: Test NCCL failure ...``, ``8.50[node2:1234] ***``).
    """
    cells = list(re.finditer(r"\S+", line))
    for index, match in enumerate(cells):
        cell = match.group()
        kind = kinds[index] if index < len(kinds) else None
        fits = kind is not None and _cell_fits(cell, kind)
        # where the other output may begin in this cell: before it (a cell that is no number), or after its number
        cuts = []
        number = _LEADING_NUMBER_RE.match(cell)
        if index >= 2 and kind is not None and not fits and number and _cell_fits(number.group(), kind):
            cuts.append(number.end())
        if index >= 2 and (not fits or kind in ("name", "name-or-int")):
            cuts.append(0)
        for cut in cuts:
            rest = line[match.start() + cut:]
            if _is_foreign(rest):
                return line[:match.start() + cut].rstrip(), rest
        if not fits:
            return None
    return None


def _new_result() -> dict[str, Any]:
    return {
        "failed": False,
        "errors": [],
        "cause": None,
        "warnings": [],
        "ranks": None,
        "hosts": [],
        "devices": [],
        "devices_compact": False,
        "collective": None,
        "nccl_version": None,
        "nccl_version_full": None,
        "nccl_tests_version": None,
        "params": None,
        "reduced_max_bytes": None,
        "header_format": None,
        "rows": [],
        "avg_busbw_gbs": None,
        "max_busbw_gbs": None,
        "largest_size_bytes": None,
        "busbw_at_largest_size_gbs": None,
        "wrong_total": None,
        "max_error": None,
        "validated": None,
        "out_of_bounds": None,
        "out_of_bounds_status": None,
        "complete": False,
        "single_rank": False,
        "interleaved": False,
        "single_rank_runs": False,
        "tables": 0,
        "elided": False,
        "elided_lines": [],
        "nccl_blocks": [],
        "damaged": None,
        "rank_prefix": None,
        "debug": None,
        "transports": {},
        "using_network": None,
        "fallback_to_socket": None,
    }


class _Reader:
    """Walks the prepared lines once and fills the result."""

    def __init__(self, lines: list[PreparedLine]) -> None:
        self.lines = lines
        self.res = _new_result()
        self.layout: tuple[list[str], str] | None = None  # (lead, fmt) from the current column header
        self.header_line: int | None = None
        self.recognised = False
        self.failure = False
        self.command_collective: str | None = None
        self.row_prefix_ranks: set[int] = set()
        # (type, redop, root) -> the last row's size; (type, redop, root, size) of every row: a repeat is interleaving
        self.last_size: dict[tuple[Any, ...], int] = {}
        self.seen_keys: set[tuple[Any, ...]] = set()
        self.footer_after_rows = False
        self.consumed: set[int] = set()
        self.block: dict[str, Any] | None = None  # the NCCL multi-line block being skipped: {"title", "line", "lines"}

    def error(self, number: int | None, text: str, source: str | None = None) -> None:
        """An error line (``source`` rank or launcher, from its text) or, with ``source="parser"``, a finding."""
        if source is None:
            plain = _plain(text)
            source = "launcher" if any(p.search(plain) for p in _LAUNCHER_LINE_PATTERNS) else "rank"
        self.res["errors"].append({"line": number, "text": text, "source": source})

    def read(self) -> None:
        warnings = join_warnings(self.lines)
        for number, (text, host, used) in warnings.items():
            self.consumed.update(used)
            self.res["warnings"].append({"line": number, "text": text, "host": host})
        index = 0
        while index < len(self.lines):
            number, line, kind, rank = self.lines[index]
            if number in self.consumed:
                index += 1
                continue
            if kind and self.res["rank_prefix"] is None:
                self.res["rank_prefix"] = kind
            index = self.read_line(index, number, line, rank)

    def read_line(self, index: int, number: int, line: str, rank: int | None) -> int:
        """Classify one line; return the index of the next line to read."""
        stripped = line.strip()
        if self.block is not None and self.in_block(self.block, number, line):
            return index + 1
        if not stripped:
            return index + 1
        if is_elision(stripped):
            self.res["elided"] = True
            self.res["elided_lines"].append(number)
            return index + 1
        match = match_nccl_line(stripped)
        if match:
            self.recognised = True
            self.open_block(number, match.group("msg"))
            if match.group("level") == "WARN":
                text = next((w["text"] for w in self.res["warnings"] if w["line"] == number), stripped)
                self.error(number, text)
            elif _NCCL_ABORT_RE.search(match.group("msg")):
                self.failure = True
                self.error(number, stripped)
            return index + 1
        ver, full = version_of(stripped)
        if ver:
            self.recognised = True
            if self.res["nccl_version"] is None:
                self.res["nccl_version"], self.res["nccl_version_full"] = ver, full
            return index + 1
        if self.read_comment(number, stripped):
            self.recognised = True
            return index + 1
        if _is_row_candidate(stripped):
            self.recognised = True
            if self.res["damaged"] is None:  # after a damaged row the table is not read on
                self.read_row(index, number, stripped, rank)
            return index + 1
        return self.read_other(index, number, stripped)

    def open_block(self, number: int, message: str) -> None:
        """An INFO line that announces one of NCCL's multi-line blocks (:data:`_NCCL_BLOCKS`): its lines follow,
        without NCCL's prefix, up to a blank line."""
        for title, pattern in _NCCL_BLOCKS:
            if pattern.search(message):
                self.block = {"title": title, "line": number, "lines": []}
                self.res["nccl_blocks"].append(self.block)
                return

    def in_block(self, block: dict[str, Any], number: int, line: str) -> bool:
        """True for a line of the open block (kept in ``nccl_blocks``); a blank line or any other line closes it
        (an INFO line of another rank between two of its lines is read as such, the block stays open)."""
        if _BLOCK_ROW_RE.match(line):
            block["lines"].append(number)
            return True
        if match_nccl_line(line.strip()):
            return False
        self.block = None
        return not line.strip()

    def read_comment(self, number: int, stripped: str) -> bool:
        """Banner, device, header and footer lines (``#`` possibly lost); True if read."""
        res = self.res
        match = _BANNER_RE.match(stripped)
        if match:
            res["nccl_tests_version"] = match.group(1)
            if match.group(2) and res["nccl_version"] is None:
                res["nccl_version"] = _library_version(match.group(2))
            return True
        match = _COLLECTIVE_RE.match(stripped)
        if match:
            res["collective"] = match.group(2)
            if match.group(1) == "concluded" and res["rows"]:
                self.footer_after_rows = True
            return True
        if _NTHREAD_RE.match(stripped):
            res["params"] = _params(stripped)
            return True
        if _USING_DEVICES_RE.match(stripped):
            return True
        match = _DEVICE_RE.match(stripped)
        if match:
            res["devices"].append(_device(match, number))
            return True
        match = _REDUCING_RE.match(stripped)
        if match:
            res["reduced_max_bytes"] = int(match.group(1))
            return True
        match = _OOB_RE.match(stripped)
        if match:
            res["out_of_bounds"] = _number(match.group(1), number, "out of bounds values")
            res["out_of_bounds_status"] = match.group(2)
            if match.group(2) == "FAILED":
                self.failure = True
                self.error(number, stripped)
            self.footer_after_rows = self.footer_after_rows or bool(res["rows"])
            return True
        match = _AVG_RE.match(stripped)
        if match:
            res["avg_busbw_gbs"] = _number(match.group(1), number, "Avg bus bandwidth")
            self.footer_after_rows = self.footer_after_rows or bool(res["rows"])
            return True
        names = _header_names(stripped)
        if names:
            self.layout = _layout_from_header(names, number)
            self.header_line = number
            res["tables"] += 1
            res["header_format"] = self.layout[1]
            self.last_size = {}
            self.seen_keys = set()
            return True
        return stripped.startswith("#")

    def read_row(self, index: int, number: int, stripped: str, rank: int | None) -> None:
        cells = stripped.split()
        fused = _fused_split(stripped, _cell_kinds(self.layout[0] if self.layout else None))
        if fused is not None:
            self.damage(number, stripped, fused[0], number, fused[1])
            return
        layout = self.layout
        if layout is None and len(cells) >= 12:
            layout = _layout_from_cells(cells, number)
        if layout is None or len(cells) < len(layout[0]) + 8:
            cut_by = self.cut_by(index, cells, layout[0] if layout is not None else None)
            if cut_by is not None:
                self.damage(number, stripped, stripped, cut_by[0], cut_by[1])
                return
            if layout is None:
                layout = _layout_from_cells(cells, number)  # raises (fewer than 12 cells), naming the line
        lead, fmt = layout
        row = _parse_row(cells, number, lead, fmt)
        row["_fmt"] = fmt
        key = (row["type"], row["redop"], row["root"])
        full_key = key + (row["size_bytes"],)
        if full_key in self.seen_keys or row["size_bytes"] < self.last_size.get(key, -1):
            self.res["interleaved"] = True
        self.seen_keys.add(full_key)
        self.last_size[key] = row["size_bytes"]
        if rank is not None:
            self.row_prefix_ranks.add(rank)
        self.res["rows"].append(row)

    def cut_by(self, index: int, cells: list[str], lead: list[str] | None) -> tuple[int, str] | None:
        """``(line, text)`` of the other process's line that follows a row cut short (nccl-tests prints a row in
        three parts; a WARN starts on a new line), else None: a row cut at the end of the text is a recording cut."""
        if not _cells_fit(cells, _cell_kinds(lead)):
            return None
        for number, line, _kind, _rank in self.lines[index + 1:]:
            text = line.strip()
            if text:
                return (number, text) if _is_foreign(text) else None
        return None

    def damage(self, number: int, text: str, row_text: str, by_line: int, by_text: str) -> None:
        """A result row cut by another process's output: not a figure; the table is not read on (``damaged``)."""
        self.failure = True
        self.res["damaged"] = {"line": number, "text": text, "row": row_text.strip(), "by_line": by_line, "by": by_text}
        self.error(number, "result row cut by other output: %s" % text if by_line == number else
                   "result row cut by the output on line %d: %s" % (by_line, text), source="parser")
        if by_line != number:
            return  # the line that cut it is read as itself
        match = match_nccl_line(by_text)
        if match and match.group("level") == "WARN":
            self.res["warnings"].append({"line": number, "text": by_text, "host": match.group("host")})
            self.error(number, by_text)
        elif match and _NCCL_ABORT_RE.search(match.group("msg")):
            self.error(number, by_text)
        elif not match and any(pattern.search(by_text) for pattern in _FAILURE_PATTERNS):
            self.error(number, by_text)

    def read_other(self, index: int, number: int, stripped: str) -> int:
        """Command lines, launcher messages and error text."""
        match = _COMMAND_PERF_RE.search(stripped)
        if match and self.command_collective is None:
            self.command_collective = match.group(1)
        if any(pattern.search(stripped) for pattern in _FAILURE_PATTERNS) and not re.match(r"^\S*\s*Warning\b", stripped):
            self.recognised = True
            self.failure = True
            parts = [stripped]
            follow = index + 1
            while follow < len(self.lines) and len(parts) < 4 and not _ONE_LINE_RE.search(stripped):
                nxt = self.lines[follow][1].strip()
                if not nxt or nxt.startswith("#") or match_nccl_line(nxt) or _is_row_candidate(nxt) or is_elision(nxt):
                    break
                if any(pattern.search(nxt) for pattern in _FAILURE_PATTERNS) or nxt.startswith(("..", "-----")):
                    break
                parts.append(nxt)
                follow += 1
            self.error(number, re.sub(r"\s+", " ", " ".join(parts)))
            return follow
        return index + 1

    def finish(self) -> dict[str, Any]:
        res = self.res
        debug = collect_nccl_debug(self.lines)
        if not self.recognised and debug is None:
            raise ParseError("no nccl-tests output, NCCL line or error message found", kind=KIND)
        self._summarise(debug)
        return res

    def _summarise(self, debug: dict[str, Any] | None) -> None:
        res = self.res
        self._adopt_debug(debug)
        if res["collective"] is None:
            res["collective"] = self.command_collective
        self._ranks_and_hosts(debug)
        self._summarise_rows()
        res["complete"] = self.footer_after_rows
        self._findings()
        res["failed"] = self.failure
        res["errors"].sort(key=lambda item: (item["line"] is None, item["line"] or 0))
        res["warnings"].sort(key=lambda item: item["line"])
        res["errors"] = _group_errors(res["errors"], {number: rank for number, _line, _kind, rank in self.lines})
        res["cause"] = _cause(res["errors"], res["damaged"]) if res["failed"] else None
        res["validated"] = self._validated()

    def _adopt_debug(self, debug: dict[str, Any] | None) -> None:
        """The NCCL lines' findings (transports, network, version when the banner had none)."""
        res = self.res
        if debug is not None and debug["nccl_lines"]:
            res["debug"] = debug
            res["transports"] = dict(debug["transports"])
            res["using_network"] = debug["using_network"]
            res["fallback_to_socket"] = debug["fallback_to_socket"]
            if res["nccl_version"] is None and debug is not None and debug["nccl_version"]:
                res["nccl_version"], res["nccl_version_full"] = debug["nccl_version"], debug["nccl_version_full"]

    def _ranks_and_hosts(self, debug: dict[str, Any] | None) -> None:
        """The run's rank count (device lines or NCCL's nranks, the larger) and its hosts."""
        res = self.res
        candidates = []
        if res["devices"]:
            candidates.append(max(dev["rank"] for dev in res["devices"]) + 1)
        if debug is not None and debug["nranks"] is not None:
            candidates.append(debug["nranks"])
        res["ranks"] = max(candidates) if candidates else None
        res["devices_compact"] = bool(res["devices"]) and res["ranks"] is not None and len(res["devices"]) < res["ranks"]
        for dev in res["devices"]:
            if dev["host"] not in res["hosts"]:
                res["hosts"].append(dev["host"])
        if not res["hosts"] and debug is not None:
            res["hosts"] = list(debug["hosts"])

    def _findings(self) -> None:
        """The parser's own findings about the whole run: no result row (a hang when nothing followed the header),
        rows of independent single-rank runs."""
        res = self.res
        if not res["rows"]:
            self.failure = True
            after = [item for item in res["errors"] if item["line"] is not None and self.header_line is not None
                     and item["line"] > self.header_line and not _ROUTINE_WARN_RE.search(item["text"])]
            if self.header_line is None:
                text = "no result rows in the output (hang, crash or launch failure)"
            else:
                text = "no result rows after the table header" if after else HUNG
            self.error(self.header_line, text, source="parser")
        if res["single_rank_runs"]:
            self.failure = True
            first = next((row["line"] for row in res["rows"]), None)
            text = "rows of independent single-rank runs are interleaved (nccl-tests built without MPI=1?)"
            self.error(first, text, source="parser")

    def _validated(self) -> bool | None:
        """False: the run did not check its results (-c 0); True: it did; None: cannot tell."""
        validation = (self.res["params"] or {}).get("validation")
        if validation is not None:
            return bool(validation > 0)
        cells = [half["wrong"] for row in self.res["rows"] for half in (row["out_of_place"], row["in_place"])]
        if not cells:
            return None
        return any(cell is not None for cell in cells)

    def _summarise_rows(self) -> None:
        res = self.res
        rows = res["rows"]
        fmts = {row.pop("_fmt") for row in rows}
        if not rows:
            return
        _bandwidth_figures(res, rows, fmts)
        res["single_rank"] = res["ranks"] == 1 or _busbw_zero(rows)
        if len(self.row_prefix_ranks) > 1:
            res["interleaved"] = True
        res["single_rank_runs"] = res["interleaved"] and (res["single_rank"] or len(self.row_prefix_ranks) > 1)


def _bandwidth_figures(res: dict[str, Any], rows: list[dict[str, Any]], fmts: set[str]) -> None:
    """The largest busbw, the busbw at the largest size, and the #wrong total (new format) or max error (old)."""
    halves = [half for row in rows for half in (row["out_of_place"], row["in_place"])]
    res["max_busbw_gbs"] = max(half["busbw_gbs"] for half in halves)
    largest = max(row["size_bytes"] for row in rows)
    res["largest_size_bytes"] = largest
    at_largest = [row for row in rows if row["size_bytes"] == largest][-1]
    res["busbw_at_largest_size_gbs"] = at_largest["out_of_place"]["busbw_gbs"]
    wrongs = [half["wrong"] for half in halves if half["wrong"] is not None]
    if "old" in fmts:
        res["max_error"] = max(wrongs) if wrongs else None
    elif wrongs:
        res["wrong_total"] = sum(wrongs)


def _busbw_zero(rows: list[dict[str, Any]]) -> bool:
    """Every sized row moved data (algbw) with a busbw of 0: what one rank alone prints."""
    sized = [row for row in rows if row["size_bytes"] > 0]
    return bool(sized) and all(
        row["out_of_place"]["busbw_gbs"] == 0 and row["in_place"]["busbw_gbs"] == 0 for row in sized
    ) and any(row["out_of_place"]["algbw_gbs"] > 0 for row in sized)


def parse_nccl_tests(text: str) -> dict[str, Any]:
    """Parse nccl-tests output; see the module docstring for the keys."""
    lines = prepare_lines(text)
    reader = _Reader(lines)
    reader.read()
    return reader.finish()
