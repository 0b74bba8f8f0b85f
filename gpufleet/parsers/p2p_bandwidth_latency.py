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

from gpufleet.parsers.common import ParseError, skip_foreign, strip_rank_prefix, with_ignored

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


def _err(message, line=None, text=None):
    return ParseError(message, line=line, kind=KIND, text=text)


class _Matrix:
    """A matrix being read: its result key, column labels and rows."""

    def __init__(self, key, title_line):
        self.key = key
        self.title_line = title_line
        self.columns = None
        self.rows = {}
        self.last_line = title_line


def parse_p2p_bandwidth_latency(text):
    """Parse p2pBandwidthLatencyTest output; see the module docstring for the keys."""
    pairs = strip_rank_prefix(text, KIND)
    result = {"devices": [], "device_count": None, "peer_access": [], "matrices": [], "complete": False, "errors": []}
    matrices = []  # finished _Matrix objects
    current = None  # _Matrix being read
    latency_base = None  # "latency_p2p_disabled" etc. while inside a latency block
    ignored = []
    last_line = max(n for n, line in pairs if line.strip())

    def finish(matrix):
        if matrix is None:
            return
        if matrix.columns is None:
            raise _err("matrix title without a matrix (truncated?)", line=matrix.last_line)
        size = len(matrix.columns)
        if len(matrix.rows) != size:
            raise _err("%s has %d rows for %d columns (truncated?)" % (matrix.key, len(matrix.rows), size),
                       line=matrix.last_line)
        if any(m.key == matrix.key for m in matrices):
            raise _err("%s printed twice" % matrix.key, line=matrix.title_line)
        matrices.append(matrix)

    for n, raw in pairs:
        stripped = raw.replace("\t", "    ").strip()
        if not stripped:
            continue
        title = next((key for regex, key in _TITLES if regex.match(stripped)), None)
        if title is not None:
            finish(current)
            if latency_base is not None and not any(m.key == latency_base + "_cpu_us" for m in matrices):
                raise _err("%s has a GPU matrix but no CPU matrix (truncated?)" % latency_base, line=n - 1)
            if title.startswith("latency_"):
                latency_base = title
                current = _Matrix(title + "_gpu_us", n)
            else:
                latency_base = None
                current = _Matrix(title, n)
            continue
        header = _MATRIX_HEADER_RE.match(stripped)
        if header:
            corner = header.group("corner")
            if corner == "CPU":
                if latency_base is None or current is None or not current.key.endswith("_gpu_us"):
                    raise _err("CPU latency matrix outside a latency block", line=n, text=stripped)
                finish(current)
                current = _Matrix(latency_base + "_cpu_us", n)
            if current is None or current.columns is not None:
                raise _err("matrix header without a title", line=n, text=stripped)
            if (corner == "GPU") != current.key.endswith("_gpu_us"):
                raise _err("unexpected %s header under %s" % (corner, current.key), line=n, text=stripped)
            current.columns = header.group(2).split()
            if current.columns != [str(i) for i in range(len(current.columns))]:
                raise _err("matrix columns are not 0..N-1", line=n, text=stripped)
            current.last_line = n
            continue
        if current is not None and current.columns is not None and re.match(r"^\d+\s", stripped + " ") \
                and len(current.rows) < len(current.columns):
            _row(current, stripped, n)
            continue
        match = _DEVICE_RE.match(stripped)
        if match:
            index = int(match.group("index"))
            dom, bus, dev = (int(match.group(g), 16) for g in ("dom", "bus", "dev"))
            result["devices"].append({"index": index, "name": match.group("name"),
                                      "pci": "%04x:%02x:%02x" % (dom, bus, dev),
                                      "pci_domain_id": dom, "pci_bus_id": bus, "pci_device_id": dev})
            continue
        match = _ACCESS_RE.match(stripped)
        if match:
            result["peer_access"].append({"src": int(match.group("src")), "dst": int(match.group("dst")),
                                          "can_access": match.group("can") == "CAN"})
            continue
        if _END_RE.match(stripped):
            result["complete"] = True
            continue
        if current is not None and current.columns is not None and len(current.rows) < len(current.columns):
            if skip_foreign(ignored, n, stripped):
                continue
            raise _err("unexpected line inside %s" % current.key, line=n, text=stripped)
        if _ERROR_RE.search(stripped):
            result["errors"].append(stripped)
            continue
        # Other lines (the sample's banner, NOTE text, prompts) carry no figures; the foreign ones are listed.
        skip_foreign(ignored, n, stripped)
    finish(current)
    if latency_base is not None and not any(m.key == latency_base + "_cpu_us" for m in matrices):
        raise _err("%s has a GPU matrix but no CPU matrix (truncated?)" % latency_base, line=last_line)
    if not matrices and not result["devices"]:
        if result["errors"]:
            raise _err("p2pBandwidthLatencyTest printed an error instead of results: %s" % result["errors"][0])
        raise _err("no p2pBandwidthLatencyTest output found")
    if not matrices and not result["errors"] and not result["complete"]:
        raise _err("device list but no matrix (truncated?)", line=last_line)
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
    return with_ignored(result, ignored)


def _row(matrix, stripped, n):
    tokens = stripped.split()
    expected = str(len(matrix.rows))
    if tokens[0] != expected:
        raise _err("%s row labelled %s, expected %s" % (matrix.key, tokens[0], expected), line=n, text=stripped)
    cells = tokens[1:]
    if len(cells) != len(matrix.columns):
        raise _err("%s row has %d cells for %d columns" % (matrix.key, len(cells), len(matrix.columns)), line=n, text=stripped)
    values = {}
    for column, cell in zip(matrix.columns, cells):
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
