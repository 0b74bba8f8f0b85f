# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for nvbandwidth (github.com/NVIDIA/nvbandwidth) plain-text output.

``parse_nvbandwidth(text)`` (KIND ``nvbandwidth``) returns:

- ``version`` (str|None): ``nvbandwidth Version: v0.7`` -> ``"v0.7"``.
- ``git_version`` (str|None): ``Built from Git version:`` (None when empty).
- ``cuda_runtime_version`` / ``cuda_driver_version`` (int|None), ``driver_version`` (str|None).
- ``devices`` (list of dict): ``{index (int), name (str), pci (str|None)}`` from the
  ``Device 0: NVIDIA H100 80GB HBM3 (00000000:1b:00)`` lines (empty when not printed).
- ``device_count`` (int|None): ``len(devices)``; None when no device line was printed.
- ``testcases`` (list of dict), in output order:

  - ``name`` (str): from ``Running <name>.`` (also the old ``Running benchmark <name>.``).
  - ``status`` (str): ``"ok"`` (a matrix was read), ``"waived"`` (``Waived: ...``) or
    ``"error"`` (an error line followed instead of the matrix).
  - ``message`` (str|None): the waiver or error text.
  - ``description`` (str|None): the line above the matrix, e.g.
    ``memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)``.
  - ``unit`` (str|None): the last parenthesised word of the description (``GB/s``, ``ns``).
  - ``columns`` (list of str) / ``rows`` (list of str): the labels as printed.
  - ``matrix`` (dict): ``{row_label: {column_label: float|None}}``; ``N/A`` -> None.
  - ``sum`` (float|None): the ``SUM <name> <value>`` (or ``&&&& PERF <name> <value>``) line.

- ``warnings`` (list of str): ``Warning: ...`` / ``NOTE: ...`` lines.
- ``ignored_lines`` (list of dict, ONLY when one was skipped): ``{line, text, why}`` of each foreign
  line (common's ``foreign_line``: a prompt, a banner, a note, an elision); between a description and
  its header or between a matrix's rows such a line is skipped, not taken for the end of the matrix.

Variants handled: the README-era output without version/device header and without SUM;
label column widths as printed by any version; TABs; CRLF; ANSI escapes; prompt/command
lines; srun/mpirun rank prefixes (one rank); VERBOSE ``MIN/MAX/AVG`` lines.

Raises ParseError (1-based line): empty input; no ``Running`` testcase and no matrix; a
matrix row whose cell count differs from the column header, a cell that is not a number or
N/A; a square GPU-by-GPU matrix with missing rows or a matrix cut off at the end of the text
(truncated); a ``SUM`` line that does not equal the sum of the matrix (rows missing); a
``SUM`` naming another testcase; several rank prefixes interleaved.
"""

from __future__ import annotations

import re
from typing import Any

from gpufleet.parsers.common import (
    IgnoredLine,
    ParseError,
    foreign_line,
    is_not_available,
    skip_foreign,
    strip_rank_prefix,
    with_ignored,
)

KIND = "nvbandwidth"

_RUNNING_RE = re.compile(r"^Running\s+(?:benchmark\s+)?(?P<name>\S+?)\.?\s*$")
_DESCRIPTION_RE = re.compile(r"^(?:memcpy|memory latency|memory)\b.*\((?P<unit>[^()]+)\)\s*$")
_SUM_RE = re.compile(r"^(?:SUM|&&&& PERF)\s+(?P<name>\S+)\s+(?P<value>[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(?P<unit>\S*)\s*$")
_STATS_RE = re.compile(r"^(?:MIN|MAX|AVG)\s+\S+\s+\S+\s*$")
_DEVICE_RE = re.compile(r"^Device\s+(?P<index>\d+):\s*(?P<name>.*?)\s*(?:\((?P<pci>[0-9a-fA-F]+:[0-9a-fA-F]+:[0-9a-fA-F.]+)\))?\s*$")
_VERSION_RE = re.compile(r"^nvbandwidth Version:\s*(?P<v>\S*)")
_GIT_RE = re.compile(r"^Built from Git version:\s*(?P<v>.*)$")
_CUDA_RUNTIME_RE = re.compile(r"^CUDA Runtime Version:\s*(?P<v>\d+)")
_CUDA_DRIVER_RE = re.compile(r"^CUDA Driver Version:\s*(?P<v>\d+)")
_DRIVER_RE = re.compile(r"^Driver Version:\s*(?P<v>\S+)")
_STATUS_RE = re.compile(r"^(?P<status>Waived|ERROR|Error|Failed|FAILED)\b\s*[:.]?\s*(?P<msg>.*)$")
_NUMBER_RE = re.compile(r"^[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")


def _err(message: str, line: int | None = None, text: str | None = None) -> ParseError:
    return ParseError(message, line=line, kind=KIND, text=text)


def _prepare(text: str) -> list[tuple[int, str]]:
    return [(n, line.replace("\t", "    ")) for n, line in strip_rank_prefix(text, KIND)]


def _new_testcase(name: str | None, line: int) -> dict[str, Any]:
    return {"name": name, "status": None, "message": None, "description": None, "unit": None,
            "columns": [], "rows": [], "matrix": {}, "sum": None, "_line": line, "_last": line}


def _is_gpu_square(description: str | None) -> bool:
    if not description:
        return False
    entities = re.findall(r"(CPU|GPU)\((?:row|rows|column|columns)\)", description)
    return len(entities) == 2 and entities[0] == entities[1] == "GPU"


class _Reader:
    """One pass over nvbandwidth's output: each line goes to the first step that takes it (see read_line).

    ``state`` is None | "desc" (waiting for the matrix header) | "matrix" (reading rows) | "done" | "summed".
    """

    def __init__(self) -> None:
        self.result: dict[str, Any] = {
            "version": None, "git_version": None, "cuda_runtime_version": None, "cuda_driver_version": None,
            "driver_version": None, "devices": [], "device_count": None, "testcases": [], "warnings": []}
        self.testcases: list[dict[str, Any]] = self.result["testcases"]
        self.ignored: list[IgnoredLine] = []
        self.current: dict[str, Any] | None = None
        self.state: str | None = None

    def read_line(self, n: int, stripped: str) -> None:
        current = self.current
        if current is not None and stripped and not foreign_line(stripped):
            current.update(_last=n)
        if not stripped:
            if self.state == "matrix" and current is not None and current.get("rows"):
                self.state = "done"
            return
        # the order is the precedence: a testcase's start before its matrix lines, ...
        steps = (self._running, self._description, self._sum, self._matrix, self._stats, self._status,
                 self._header, self._warning, self._error)
        for step in steps:
            if step(n, stripped):
                return
        # Anything else (prompt lines, banners, continuation text) carries no figures; the foreign ones are listed.
        skip_foreign(self.ignored, n, stripped)

    def _start(self, name: str | None, n: int) -> dict[str, Any]:
        self.current = _new_testcase(name, n)
        self.testcases.append(self.current)
        return self.current

    def _running(self, n: int, stripped: str) -> bool:
        match = _RUNNING_RE.match(stripped)
        if not match:
            return False
        _close(self.current, self.state, n - 1)
        self._start(match.group("name"), n)
        self.state = None
        return True

    def _description(self, n: int, stripped: str) -> bool:
        match = _DESCRIPTION_RE.match(stripped)
        if not match:
            return False
        current = self.current
        if current is None:
            current = self._start(None, n)
        elif current["description"] is not None:
            _close(current, self.state, n - 1)
            current = self._start(current["name"], n)
        current["description"] = stripped
        current["unit"] = match.group("unit").strip()
        self.state = "desc"
        return True

    def _sum(self, n: int, stripped: str) -> bool:
        match = _SUM_RE.match(stripped)
        if not match:
            return False
        current = self.current
        if current is None or current["description"] is None:
            raise _err("SUM line without a matrix", line=n, text=stripped)
        if current["name"] is not None and match.group("name") != current["name"]:
            raise _err("SUM names %r inside testcase %r" % (match.group("name"), current["name"]), line=n,
                       text=stripped)
        if current["name"] is None:
            current["name"] = match.group("name")
        current["sum"] = float(match.group("value"))
        _close(current, "done", n)
        _check_sum(current, n, stripped)
        self.state = "summed"
        return True

    def _matrix(self, n: int, stripped: str) -> bool:
        if self.state not in ("desc", "matrix"):
            return False
        # A foreign line between a matrix's rows would end the matrix early (its rows then read as missing).
        if skip_foreign(self.ignored, n, stripped):
            return True
        assert self.current is not None  # a description started one
        if _matrix_line(self.current, self.state, n, stripped):
            self.state = "matrix"
            return True
        _close(self.current, self.state, n - 1)
        self.state = "done"
        return False  # the line ended the matrix: the later steps read it

    def _stats(self, n: int, stripped: str) -> bool:
        return bool(_STATS_RE.match(stripped))

    def _status(self, n: int, stripped: str) -> bool:
        match = _STATUS_RE.match(stripped)
        current = self.current
        if not match or current is None or current["status"] is not None or current["rows"]:
            return False
        current["status"] = "waived" if match.group("status").lower() == "waived" else "error"
        current["message"] = match.group("msg").strip() or stripped
        return True

    def _header(self, n: int, stripped: str) -> bool:
        return _header_line(self.result, stripped)

    def _warning(self, n: int, stripped: str) -> bool:
        lowered = stripped.lower()
        if not (lowered.startswith("warning") or lowered.startswith("note")):
            return False
        self.result["warnings"].append(stripped)
        return True

    def _error(self, n: int, stripped: str) -> bool:
        current = self.current
        if current is None or current["status"] is not None or current["rows"] or current["description"] is not None \
                or not re.search(r"\berror\b|\bfail", stripped.lower()):
            return False
        current["status"] = "error"
        current["message"] = stripped
        return True


def parse_nvbandwidth(text: str) -> dict[str, Any]:
    """Parse nvbandwidth text output; see the module docstring for the keys."""
    pairs = _prepare(text)
    reader = _Reader()
    last_line = max(n for n, line in pairs if line.strip())
    for n, line in pairs:
        reader.read_line(n, line.strip())
    _close(reader.current, reader.state, last_line)
    result, testcases = reader.result, reader.testcases
    if not testcases:
        raise _err("no nvbandwidth testcase found")
    for testcase in testcases:
        if testcase["status"] is None:
            if not testcase["rows"]:
                raise _err("testcase %r printed no result (truncated?)" % testcase["name"], line=testcase["_last"])
            testcase["status"] = "ok"
        testcase.pop("_line")
        testcase.pop("_last")
        testcase.pop("_closed", None)
    if result["devices"]:
        result["device_count"] = len(result["devices"])
    return with_ignored(result, reader.ignored)


def _header_line(result: dict[str, Any], stripped: str) -> bool:
    for regex, key, cast in ((_VERSION_RE, "version", str), (_CUDA_RUNTIME_RE, "cuda_runtime_version", int),
                             (_CUDA_DRIVER_RE, "cuda_driver_version", int), (_DRIVER_RE, "driver_version", str)):
        match = regex.match(stripped)
        if match:
            result[key] = cast(match.group("v")) if match.group("v") else None
            return True
    match = _GIT_RE.match(stripped)
    if match:
        result["git_version"] = match.group("v").strip() or None
        return True
    match = _DEVICE_RE.match(stripped)
    if match:
        result["devices"].append({"index": int(match.group("index")), "name": match.group("name"),
                                  "pci": match.group("pci")})
        return True
    return False


def _is_cell(token: str) -> bool:
    return bool(_NUMBER_RE.match(token)) or is_not_available(token)


def _matrix_line(current: dict[str, Any], state: str, n: int, stripped: str) -> bool:
    """Consume a column-header or row line of the current matrix; False if it is neither."""
    tokens = stripped.split()
    if state == "desc":
        if not all(re.fullmatch(r"[\w.:/-]+", t) for t in tokens):
            raise _err("expected the matrix column header after the description", line=n, text=stripped)
        current["columns"] = tokens
        return True
    if len(tokens) < 2 or not re.fullmatch(r"[\w.:/-]+", tokens[0]) or not _is_cell(tokens[1]):
        return False
    label, cells = tokens[0], tokens[1:]
    for cell in cells:
        if not _is_cell(cell):
            raise _err("unreadable matrix cell %r" % cell, line=n, text=stripped)
    if len(cells) != len(current["columns"]):
        raise _err("matrix row has %d cells, the header has %d columns (truncated?)" % (len(cells), len(current["columns"])),
                   line=n, text=stripped)
    if label in current["matrix"]:
        raise _err("second matrix row labelled %r" % label, line=n, text=stripped)
    current["rows"].append(label)
    current["matrix"][label] = {
        col: (None if is_not_available(cell) else float(cell)) for col, cell in zip(current["columns"], cells)
    }
    return True


def _close(current: dict[str, Any] | None, state: str | None, line: int) -> None:
    """Checks when a matrix ends: no description without matrix, complete GPU x GPU matrices."""
    if current is None or current.get("_closed"):
        return
    if state == "desc":
        raise _err("matrix description without a matrix (truncated?)", line=line)
    if not current["rows"]:
        return
    current["_closed"] = True
    if _is_gpu_square(current["description"]) and len(current["rows"]) != len(current["columns"]):
        raise _err("GPU x GPU matrix has %d rows for %d columns (truncated?)" % (len(current["rows"]), len(current["columns"])),
                   line=line)


def _check_sum(current: dict[str, Any], n: int, stripped: str) -> None:
    values = [v for row in current["matrix"].values() for v in row.values() if v is not None]
    if not current["rows"]:
        raise _err("SUM line without matrix rows", line=n, text=stripped)
    cells = sum(len(row) for row in current["matrix"].values())
    tolerance = 0.005 * cells + 0.011
    if abs(sum(values) - current["sum"]) > max(tolerance, abs(current["sum"]) * 1e-6):
        raise _err("SUM %s does not equal the matrix total %.2f (rows missing?)" % (current["sum"], sum(values)),
                   line=n, text=stripped)
