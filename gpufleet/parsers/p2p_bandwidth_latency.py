# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the CUDA sample ``p2pBandwidthLatencyTest``.

``parse_p2p_bandwidth_latency(text)`` (KIND ``p2p-bandwidth``) returns:

- ``devices`` (list of dict): ``{index (int), name (str), pci (str), pci_domain_id,
  pci_bus_id, pci_device_id (int)}`` from ``Device: 0, NVIDIA A100 80GB PCIe, pciBusID: 0,
  pciDeviceID: 0, pciDomainID:1``. The sample prints the ids with ``%x``: they are read as
  hexadecimal, and ``pci`` is ``"%04x:%02x:%02x"`` (domain:bus:device), e.g. ``"0000:21:00"``.
- ``device_count`` (int): ``len(devices)`` (or the matrix size when no device line).
- ``peer_access`` (list of dict): ``{src, dst (int), can_access (bool)}`` from
  ``Device=0 CAN|CANNOT Access Peer Device=1``.
- ``connectivity_matrix`` (dict): ``{src: {dst: int 0|1}}`` (``P2P Connectivity Matrix``).
- Bandwidth matrices in GB/s and latency matrices in microseconds, each ``{src: {dst:
  float}}`` with device indices as strings (JSON keys), present only when printed:
  ``unidirectional_p2p_disabled_gbs``, ``unidirectional_p2p_enabled_gbs`` (P2P writes,
  also the older title without ``(P2P Writes)``), ``unidirectional_p2p_enabled_reads_gbs``
  (``--p2p_read``), ``bidirectional_p2p_disabled_gbs``, ``bidirectional_p2p_enabled_gbs``,
  ``latency_p2p_disabled_gpu_us``, ``latency_p2p_disabled_cpu_us``,
  ``latency_p2p_enabled_gpu_us``, ``latency_p2p_enabled_cpu_us``,
  ``latency_p2p_enabled_reads_gpu_us``, ``latency_p2p_enabled_reads_cpu_us``.
- ``matrices`` (list of str): the matrix keys present, in output order.
- ``complete`` (bool): the closing ``NOTE: The CUDA Samples are not meant for performance
  measurements`` line was seen (the run reached its end).
- ``errors`` (list of str): CUDA error lines (``Cuda failure ...``, ``CUDA error ...``).
- ``ignored_lines`` (list of dict, ONLY when one was skipped): ``{line, text, why}`` of each foreign
  line (common's ``foreign_line``: a prompt, a banner, a note, an elision); inside a matrix such a
  line is skipped instead of refused.

Variants handled: TAB after the row label in the connectivity matrix, trailing spaces,
CRLF, ANSI escapes, prompt/command lines, srun/mpirun rank prefixes (one rank).

Raises ParseError (1-based line): empty input; no device line and no matrix (a CUDA error
printed instead of results is quoted); a matrix row with a wrong label or cell count, a cell
that is not a number; a matrix with missing rows (truncated) or a different size than the
device list; a latency GPU matrix without its CPU matrix; the same matrix twice; a
connectivity cell other than 0/1; several rank prefixes interleaved.
"""

from __future__ import annotations

import re
from typing import Any

from gpufleet.parsers.common import IgnoredLine, ParseError, skip_foreign, strip_rank_prefix, with_ignored

KIND = "p2p-bandwidth"

_DEVICE_RE = re.compile(
    r"^Device:\s*(?P<index>\d+),\s*(?P<name>.*?),\s*pciBusID:\s*(?P<bus>[0-9a-fA-F]+),\s*"
    r"pciDeviceID:\s*(?P<dev>[0-9a-fA-F]+),\s*pciDomainID:\s*(?P<dom>[0-9a-fA-F]+)\s*$"
)
_ACCESS_RE = re.compile(r"^Device=(?P<src>\d+)\s+(?P<can>CAN|CANNOT)\s+Access Peer Device=(?P<dst>\d+)\s*$")
_TITLES = [
    (re.compile(r"^P2P Connectivity Matrix$"), "connectivity_matrix"),
    (re.compile(r"^Unidirectional P2P=Disabled Bandwidth Matrix \(GB/s\)$"), "unidirectional_p2p_disabled_gbs"),
    (re.compile(r"^Unidirectional P2P=Enabled Bandwidth (?:\(P2P Writes\) )?Matrix \(GB/s\)$"), "unidirectional_p2p_enabled_gbs"),
    (re.compile(r"^Unidirectional P2P=Enabled Bandwidth \(P2P Reads\) Matrix \(GB/s\)$"), "unidirectional_p2p_enabled_reads_gbs"),
    (re.compile(r"^Bidirectional P2P=Disabled Bandwidth Matrix \(GB/s\)$"), "bidirectional_p2p_disabled_gbs"),
    (re.compile(r"^Bidirectional P2P=Enabled Bandwidth Matrix \(GB/s\)$"), "bidirectional_p2p_enabled_gbs"),
    (re.compile(r"^P2P=Disabled Latency Matrix \(us\)$"), "latency_p2p_disabled"),
    (re.compile(r"^P2P=Enabled Latency (?:\(P2P Writes\) )?Matrix \(us\)$"), "latency_p2p_enabled"),
    (re.compile(r"^P2P=Enabled Latency \(P2P Reads\) Matrix \(us\)$"), "latency_p2p_enabled_reads"),
]
_MATRIX_HEADER_RE = re.compile(r"^(?P<corner>D\\D|GPU|CPU)((?:\s+\d+)+)\s*$")
_NUMBER_RE = re.compile(r"^\d+(?:\.\d+)?$")
_END_RE = re.compile(r"^NOTE: The CUDA Samples are not meant for performance measurements")
_ERROR_RE = re.compile(r"cuda failure|cuda error|error:|\bfailed\b|code=\d+", re.IGNORECASE)


def _err(message: str, line: int | None = None, text: str | None = None) -> ParseError:
    return ParseError(message, line=line, kind=KIND, text=text)


class _Matrix:
    """A matrix being read: its result key, column labels and rows."""

    def __init__(self, key: str, title_line: int) -> None:
        self.key = key
        self.title_line = title_line
        self.columns: list[str] | None = None
        self.rows: dict[str, dict[str, int | float]] = {}
        self.last_line = title_line

    def wants_rows(self) -> bool:
        """True between the matrix's header and its last row."""
        return self.columns is not None and len(self.rows) < len(self.columns)


class _Reader:
    """One pass over the sample's output: each line goes to the first step that takes it (see read_line)."""

    def __init__(self) -> None:
        self.result: dict[str, Any] = {"devices": [], "device_count": None, "peer_access": [], "matrices": [],
                                       "complete": False, "errors": []}
        self.matrices: list[_Matrix] = []  # finished ones
        self.current: _Matrix | None = None  # the one being read
        self.latency_base: str | None = None  # "latency_p2p_disabled" etc. while inside a latency block
        self.ignored: list[IgnoredLine] = []

    def read_line(self, n: int, stripped: str) -> None:
        # the order is the precedence: a title or a header before a row, a row before a device line, ...
        steps = (self._title, self._header, self._matrix_row, self._device, self._peer_access, self._end,
                 self._inside_matrix, self._error)
        for step in steps:
            if step(n, stripped):
                return
        # Other lines (the sample's banner, NOTE text, prompts) carry no figures; the foreign ones are listed.
        skip_foreign(self.ignored, n, stripped)

    def finish(self) -> None:
        """Close the matrix being read: refuse one cut short or printed twice."""
        matrix = self.current
        if matrix is None:
            return
        if matrix.columns is None:
            raise _err("matrix title without a matrix (truncated?)", line=matrix.last_line)
        size = len(matrix.columns)
        if len(matrix.rows) != size:
            raise _err("%s has %d rows for %d columns (truncated?)" % (matrix.key, len(matrix.rows), size),
                       line=matrix.last_line)
        if any(m.key == matrix.key for m in self.matrices):
            raise _err("%s printed twice" % matrix.key, line=matrix.title_line)
        self.matrices.append(matrix)

    def check_latency_pair(self, line: int) -> None:
        """A latency block's GPU matrix must have its CPU matrix after it."""
        base = self.latency_base
        if base is not None and not any(m.key == base + "_cpu_us" for m in self.matrices):
            raise _err("%s has a GPU matrix but no CPU matrix (truncated?)" % base, line=line)

    def _title(self, n: int, stripped: str) -> bool:
        title = next((key for regex, key in _TITLES if regex.match(stripped)), None)
        if title is None:
            return False
        self.finish()
        self.check_latency_pair(n - 1)
        if title.startswith("latency_"):
            self.latency_base = title
            self.current = _Matrix(title + "_gpu_us", n)
        else:
            self.latency_base = None
            self.current = _Matrix(title, n)
        return True

    def _header(self, n: int, stripped: str) -> bool:
        header = _MATRIX_HEADER_RE.match(stripped)
        if not header:
            return False
        corner = header.group("corner")
        if corner == "CPU":
            if self.latency_base is None or self.current is None or not self.current.key.endswith("_gpu_us"):
                raise _err("CPU latency matrix outside a latency block", line=n, text=stripped)
            self.finish()
            self.current = _Matrix(self.latency_base + "_cpu_us", n)
        current = self.current
        if current is None or current.columns is not None:
            raise _err("matrix header without a title", line=n, text=stripped)
        if (corner == "GPU") != current.key.endswith("_gpu_us"):
            raise _err("unexpected %s header under %s" % (corner, current.key), line=n, text=stripped)
        current.columns = header.group(2).split()
        if current.columns != [str(i) for i in range(len(current.columns))]:
            raise _err("matrix columns are not 0..N-1", line=n, text=stripped)
        current.last_line = n
        return True

    def _matrix_row(self, n: int, stripped: str) -> bool:
        if self.current is None or not self.current.wants_rows() or not re.match(r"^\d+\s", stripped + " "):
            return False
        _row(self.current, stripped, n)
        return True

    def _device(self, n: int, stripped: str) -> bool:
        match = _DEVICE_RE.match(stripped)
        if not match:
            return False
        dom, bus, dev = (int(match.group(g), 16) for g in ("dom", "bus", "dev"))
        self.result["devices"].append({"index": int(match.group("index")), "name": match.group("name"),
                                       "pci": "%04x:%02x:%02x" % (dom, bus, dev),
                                       "pci_domain_id": dom, "pci_bus_id": bus, "pci_device_id": dev})
        return True

    def _peer_access(self, n: int, stripped: str) -> bool:
        match = _ACCESS_RE.match(stripped)
        if not match:
            return False
        self.result["peer_access"].append({"src": int(match.group("src")), "dst": int(match.group("dst")),
                                           "can_access": match.group("can") == "CAN"})
        return True

    def _end(self, n: int, stripped: str) -> bool:
        if not _END_RE.match(stripped):
            return False
        self.result["complete"] = True
        return True

    def _inside_matrix(self, n: int, stripped: str) -> bool:
        if self.current is None or not self.current.wants_rows():
            return False
        if skip_foreign(self.ignored, n, stripped):
            return True
        raise _err("unexpected line inside %s" % self.current.key, line=n, text=stripped)

    def _error(self, n: int, stripped: str) -> bool:
        if not _ERROR_RE.search(stripped):
            return False
        self.result["errors"].append(stripped)
        return True


def _check_found(result: dict[str, Any], matrices: list[_Matrix], last_line: int) -> None:
    """Refuse a text with neither matrices nor devices, and a device list whose matrices were cut off."""
    if not matrices and not result["devices"]:
        if result["errors"]:
            raise _err("p2pBandwidthLatencyTest printed an error instead of results: %s" % result["errors"][0])
        raise _err("no p2pBandwidthLatencyTest output found")
    if not matrices and not result["errors"] and not result["complete"]:
        raise _err("device list but no matrix (truncated?)", line=last_line)


def parse_p2p_bandwidth_latency(text: str) -> dict[str, Any]:
    """Parse p2pBandwidthLatencyTest output; see the module docstring for the keys."""
    pairs = strip_rank_prefix(text, KIND)
    reader = _Reader()
    last_line = max(n for n, line in pairs if line.strip())
    for n, raw in pairs:
        stripped = raw.replace("\t", "    ").strip()
        if stripped:
            reader.read_line(n, stripped)
    reader.finish()
    reader.check_latency_pair(last_line)
    result, matrices = reader.result, reader.matrices
    _check_found(result, matrices, last_line)
    count = len(result["devices"]) or None
    for matrix in matrices:
        size = len(matrix.columns or [])
        if count is not None and size != count:
            raise _err("%s is %sx%s but %s devices were listed" % (matrix.key, size, size, count), line=matrix.title_line)
        if count is None:
            count = size
        result[matrix.key] = matrix.rows
        result["matrices"].append(matrix.key)
    result["device_count"] = count
    return with_ignored(result, reader.ignored)


def _row(matrix: _Matrix, stripped: str, n: int) -> None:
    columns = matrix.columns or []
    tokens = stripped.split()
    expected = str(len(matrix.rows))
    if tokens[0] != expected:
        raise _err("%s row labelled %s, expected %s" % (matrix.key, tokens[0], expected), line=n, text=stripped)
    cells = tokens[1:]
    if len(cells) != len(columns):
        raise _err("%s row has %d cells for %d columns" % (matrix.key, len(cells), len(columns)), line=n, text=stripped)
    values: dict[str, int | float] = {}
    for column, cell in zip(columns, cells):
        if not _NUMBER_RE.match(cell):
            raise _err("%s cell %r is not a number" % (matrix.key, cell), line=n, text=stripped)
        if matrix.key == "connectivity_matrix":
            if cell not in ("0", "1"):
                raise _err("connectivity cell %r is not 0 or 1" % cell, line=n, text=stripped)
            values[column] = int(cell)
        else:
            values[column] = float(cell)
    matrix.rows[tokens[0]] = values
    matrix.last_line = n
