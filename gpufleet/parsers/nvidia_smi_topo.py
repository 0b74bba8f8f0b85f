# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the ``nvidia-smi topo`` matrices.

KIND ``topo`` -- :func:`parse_topo_matrix` reads ``nvidia-smi topo -m`` and
``nvidia-smi topo -mp`` (PCIe-only). It returns::

    {
      "format": "m" | "mp" | None,   # from the command line if pasted, else NV# cells / legend; None = cannot tell
      "gpus": [                      # rows whose name is GPU<n>, in matrix order
        {"name": "GPU0",             # as printed
         "cpu_affinity": str|None,   # cell as printed ("0-51,104-155", "0,2,4,6,8,10", "N/A");
                                     # None = blank or no column
         "numa_affinity": str|None,  # cell as printed ("0", "0-3", "N/A"); None = blank or no column
         "numa_nodes": [int]|None,   # numa_affinity expanded ("0-3" -> [0, 1, 2, 3]); None for N/A / blank / no column
         "gpu_numa_id": int|None},   # "GPU NUMA ID" column; None for N/A / blank / no column
      ],
      "nics": [                      # every other row (NIC<n>, or mlx5_0/mlx4_0 on old drivers), in matrix order
        {"name": "NIC0",             # the matrix name as printed
         "device": str|None,         # RDMA device: from "NIC Legend" (NIC0: mlx5_0), or the name itself when the
                                     # header already uses device names; None when a NIC<n> has no legend entry
         "cpu_affinity": str|None,   # as for GPUs (nvidia-smi leaves these blank today -> None)
         "numa_affinity": str|None},
      ],
      "names": [str],                # all matrix names in header order (GPUs first, then NICs)
      "links": {NAME: {NAME: CODE}}, # every row/column pair; CODE exactly as printed: X, NV12, PIX, PXB, PHB, NODE,
                                     # SYS, old SOC (kept as printed; consumers map SOC to SYS)
      "columns": [str],              # affinity column titles present, in header order
                                     # ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
      "legend": {CODE: str}|None,    # "Legend:" entries as printed ("NV#": "Connection traversing ..."); None if absent
      "nic_legend": {NAME: str}|None # "NIC Legend:" entries (NIC0 -> mlx5_0); None if absent
      "notes": [str],                # what the matrix does not show ("no NIC rows: ...", "no NUMA Affinity
                                     # column: ..."): the GPU part it shows is judged alone; [] when complete
      "ignored_lines": [{line, text, why}]  # ONLY when a foreign line was skipped (as in topo-p2p's result)
    }

KIND ``topo-p2p`` -- :func:`parse_p2p_matrix` reads ``nvidia-smi topo -p2p r|w|n|a|p``::

    {
      "mode": "r"|"w"|"n"|"a"|"p"|None,  # from the pasted command line; None when not pasted
      "capability": "read"|"write"|"nvlink"|"atomics"|"pcie"|None,
      "gpus": [str],                     # matrix names in order ("GPU0", ...)
      "status": {GPU: {GPU: CODE}},      # CODE as printed: X, OK, CNS, CNR, GNS, TNS, NS, DR, U
      "ok": {GPU: {GPU: bool|None}},     # True for OK, False for any other status, None on the diagonal
      "all_ok": bool,                    # every off-diagonal pair is OK (True for a single GPU)
      "legend": {CODE: str}|None,        # "Legend:" entries as printed; None if absent
    }

Both accept tab-separated output as nvidia-smi prints it and re-spaced copies, CRLF,
ANSI escapes, trailing whitespace, leading prompt/command lines and ``srun -l`` /
``mpirun --tag-output`` rank prefixes. Foreign lines (common's ``foreign_line``) before the
header, where a row is due, inside a legend and after the matrix are skipped and listed.
Anything that cannot be read with certainty raises :class:`ParseError` naming the 1-based
line (see docs/parsers/nvidia_smi_topo.md), among it a header naming more than 32 GPUs (common's
``MAX_GPUS_PER_NODE``, NV_MAX_DEVICES) or more than :data:`MAX_OTHER_DEVICES` other devices, refused
before any row is read.
"""

from __future__ import annotations

import re
from typing import AbstractSet, Any, Callable

from gpufleet.parsers.common import (
    MAX_GPUS_PER_NODE,
    IgnoredLine,
    ParseError,
    foreign_line,
    is_not_available,
    parse_number,
    skip_foreign,
    strip_rank_prefix,
    with_ignored,
)

KIND_TOPO = "topo"
KIND_P2P = "topo-p2p"

# Link codes of `topo -m` across driver generations (SOC before ~R384, NODE after).
_TOPO_CODES = frozenset({"X", "SYS", "SOC", "NODE", "PHB", "PXB", "PIX"})
_NV_RE = re.compile(r"NV\d+\Z")
# Statuses of `topo -p2p`.
_P2P_CODES = frozenset({"X", "OK", "CNS", "CNR", "GNS", "TNS", "NS", "DR", "U"})
_P2P_MODES = {"r": "read", "w": "write", "n": "nvlink", "a": "atomics", "p": "pcie"}

# Affinity column titles (multi-word) in the header, as word tuples.
_TITLES = (
    ("CPU", "Affinity"),
    ("NUMA", "Affinity"),
    ("GPU", "NUMA", "ID"),
)
_CPU_AFFINITY = "CPU Affinity"
_NUMA_AFFINITY = "NUMA Affinity"
_GPU_NUMA_ID = "GPU NUMA ID"

_GPU_NAME_RE = re.compile(r"GPU\d+\Z")
_NIC_NAME_RE = re.compile(r"NIC\d+\Z")
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]*\Z")
_DEVICE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*\Z")
_LIST_RE = re.compile(r"\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*\Z")
_MAX_NUMA_NODES = 4096
# Devices other than GPUs a matrix may name (NICs; a host lists each RDMA device, virtual functions included). With
# MAX_GPUS_PER_NODE (32, NV_MAX_DEVICES) it bounds the matrix before a row is read: a 1,000-GPU header is refused
# cheaply instead of becoming a million cells and half a million GPU pairs in the host record.
MAX_OTHER_DEVICES = 256

_LEGEND_HEAD_RE = re.compile(r"^\s*Legend\s*:\s*$")
_NIC_LEGEND_HEAD_RE = re.compile(r"^\s*NIC\s+Legend\s*:\s*$")
_LEGEND_ENTRY_RE = re.compile(r"^\s*([A-Z][A-Za-z0-9#]*)\s*=\s*(.*?)\s*$")
_NIC_LEGEND_ENTRY_RE = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_TOPO_CMD_RE = re.compile(r"\btopo\s+(-mp|--matrix_pcie?|-m|--matrix)(?=\s|$)")
_P2P_CMD_RE = re.compile(r"\btopo\s+(?:-p2p|--p2pstatus)\s*([A-Za-z]+)?")
_ERROR_RE = re.compile(
    r"\b(ERROR|NVML|Failed|failed|Unable|unable|not supported|Not Supported|No devices|"
    r"command not found|Insufficient Permissions|driver)\b"
)


# The cells after a row's link codes, read into the row's record: (line number, name, line, cells, tab-separated).
RowValues = Callable[[int, str, str, list[str], bool], dict[str, Any]]


def _fail(message: str, line: int | None = None, kind: str = KIND_TOPO, text: str | None = None) -> ParseError:
    return ParseError(message, line=line, kind=kind, text=text)


def _split_row(line: str) -> tuple[list[str], bool]:
    """Cells of a matrix row: by tabs when the row has tabs, else by runs of spaces.

    Returns ``(cells, tabbed)``. Tab cells are stripped and may be empty (blank
    affinity cells); leading empty cells (an indented row) are dropped.
    """
    if "\t" in line:
        cells = [cell.strip() for cell in line.split("\t")]
        while cells and cells[0] == "":
            cells.pop(0)
        return cells, True
    return line.split(), False


def _is_header_candidate(line: str) -> bool:
    tokens = line.split()
    return bool(tokens) and bool(_GPU_NAME_RE.match(tokens[0]))


def _parse_header(number: int, line: str, kind: str, codes: AbstractSet[str],
                  allow_titles: bool) -> tuple[list[str], list[str]]:
    """Split a header into matrix names and affinity column titles."""
    tokens = line.split()
    _check_size(tokens, number, kind, line)
    names: list[str] = []
    titles: list[str] = []
    i = 0
    while i < len(tokens):
        title = None
        for words in _TITLES:
            if tuple(tokens[i:i + len(words)]) == words:
                title = " ".join(words)
                i += len(words)
                break
        if title is not None:
            if not allow_titles:
                raise _fail("unexpected column %r in a p2p matrix header" % title, line=number, kind=kind, text=line)
            if title in titles:
                raise _fail("column %r twice in the header" % title, line=number, kind=kind, text=line)
            titles.append(title)
            continue
        token = tokens[i]
        i += 1
        if titles:
            raise _fail("unknown header column %r after the affinity columns" % token, line=number, kind=kind,
                        text=line)
        if not _NAME_RE.match(token) or _is_code(token, codes):
            raise _fail("header cell %r is not a device name" % token, line=number, kind=kind, text=line)
        if token in names:
            raise _fail("device %r twice in the header" % token, line=number, kind=kind, text=line)
        if names and _GPU_NAME_RE.match(token) and not _GPU_NAME_RE.match(names[-1]):
            raise _fail("GPU column %r after non-GPU columns" % token, line=number, kind=kind, text=line)
        names.append(token)
    order = [title for title in (_CPU_AFFINITY, _NUMA_AFFINITY, _GPU_NUMA_ID) if title in titles]
    if titles != order:
        raise _fail("affinity columns in an unknown order: %s" % ", ".join(titles), line=number, kind=kind, text=line)
    return names, titles


def _check_size(tokens: list[str], number: int, kind: str, line: str) -> None:
    """A header naming more GPUs than one system holds, or more other devices than MAX_OTHER_DEVICES, is refused
    before its names are read one by one (a 100,000-name header would cost a quadratic duplicate check)."""
    gpus = sum(1 for token in tokens if _GPU_NAME_RE.match(token))
    if gpus > MAX_GPUS_PER_NODE:
        raise _fail("a matrix of %d GPUs: more than the %d one system can hold (NV_MAX_DEVICES)"
                    % (gpus, MAX_GPUS_PER_NODE), line=number, kind=kind, text=line)
    title_words = sum(len(words) for words in _TITLES)
    if len(tokens) - gpus - title_words > MAX_OTHER_DEVICES:
        raise _fail("a matrix of %d devices besides its GPUs: more than the %d this reader takes"
                    % (len(tokens) - gpus - title_words, MAX_OTHER_DEVICES), line=number, kind=kind, text=line)


def _is_code(cell: str, codes: AbstractSet[str]) -> bool:
    return cell in codes or bool(_NV_RE.match(cell)) and "NV#" in codes


def _find_header(lines: list[tuple[int, str]], kind: str, what: str) -> int:
    """Index in ``lines`` of the header row; raise quoting the tool's message if none."""
    for index, (_number, line) in enumerate(lines):
        if _is_header_candidate(line):
            return index
    first = None
    for number, line in lines:
        if not line.strip():
            continue
        if first is None:
            first = (number, line)
        if _ERROR_RE.search(line):
            raise _fail("no %s; the tool printed: %s" % (what, line.strip()), line=number, kind=kind, text=line)
    if first is None:
        raise _fail("empty input: no %s" % what, kind=kind)
    # the first line is shown once, by the error itself (its text)
    raise _fail("no %s (no header row starting with GPU0)" % what, line=first[0], kind=kind, text=first[1])


def _find_legend(lines: list[tuple[int, str]], start: int) -> dict[str, str] | None:
    """The ``Legend:`` codes after ``start``, read leniently (None if absent).

    Only used to learn codes a newer driver's legend defines before the rows are
    checked; :func:`_read_sections` reads the legend strictly after the rows.
    """
    legend: dict[str, str] | None = None
    for _number, line in lines[start:]:
        if legend is None:
            if _LEGEND_HEAD_RE.match(line):
                legend = {}
            continue
        match = _LEGEND_ENTRY_RE.match(line)
        if match:
            legend[match.group(1)] = match.group(2)
        elif line.strip() and not foreign_line(line):
            break
    return legend


def _read_sections(lines: list[tuple[int, str]], start: int, kind: str,
                   ignored: list[IgnoredLine]) -> tuple[dict[str, str] | None, dict[str, tuple[str, int]] | None]:
    """Read what follows the matrix: ``Legend:`` and ``NIC Legend:`` blocks.

    Returns ``(legend, nic_legend)``: ``{code: text}|None`` and ``{NICn: (device, line)}|None``.
    Other trailing text is ignored, except a second matrix header, which raises (two outputs in
    one text); a foreign line (a prompt, a note) is listed in ``ignored`` and does not end a block.
    """
    legend: dict[str, str] | None = None
    nic_legend: dict[str, tuple[str, int]] | None = None
    section = None
    for number, line in lines[start:]:
        stripped = line.strip()
        if not stripped:
            continue
        if _LEGEND_HEAD_RE.match(line):
            if legend is not None:
                raise _fail("a second 'Legend:' block", line=number, kind=kind, text=line)
            legend = {}
            section = "legend"
            continue
        if _NIC_LEGEND_HEAD_RE.match(line):
            if nic_legend is not None:
                raise _fail("a second 'NIC Legend:' block", line=number, kind=kind, text=line)
            nic_legend = {}
            section = "nic"
            continue
        if section == "legend" and legend is not None:
            match = _LEGEND_ENTRY_RE.match(line)
            if match:
                legend[match.group(1)] = match.group(2)
                continue
        if section == "nic" and nic_legend is not None and stripped.startswith("NIC"):
            match = _NIC_LEGEND_ENTRY_RE.match(line)
            if not match or not _DEVICE_RE.match(match.group(2)):
                raise _fail("unreadable NIC Legend entry", line=number, kind=kind, text=line)
            name = match.group(1)
            if name in nic_legend:
                raise _fail("%s twice in the NIC Legend" % name, line=number, kind=kind, text=line)
            nic_legend[name] = (match.group(2), number)
            continue
        if skip_foreign(ignored, number, line):
            continue
        section = None
        if _is_header_candidate(line):
            raise _fail("a second matrix follows the first; parse one output at a time", line=number, kind=kind,
                        text=line)
    return legend, nic_legend


def _codes_with_legend(base: AbstractSet[str], legend: dict[str, str] | None) -> set[str]:
    """Known codes plus any code this output's own legend defines (a newer driver's).

    Codes of the other matrix (p2p ``OK``/``CNS``... in a ``topo -m`` text) are never added.
    """
    codes = set(base) | {"NV#"}
    if legend:
        codes.update(code for code in legend if "#" not in code and code not in _P2P_CODES)
    return codes


def _read_rows(lines: list[tuple[int, str]], header_index: int, names: list[str], kind: str, codes: AbstractSet[str],
               ignored: list[IgnoredLine], row_values: RowValues | None = None,
               ) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, Any]], int]:
    """Read and check one row per matrix name after the header, in order.

    Each row is checked completely (link codes, X on the diagonal only, symmetric with
    the rows above, then ``row_values`` for its trailing cells) before the next one, so
    an error names the first damaged line. A foreign line where a row is due is listed in
    ``ignored`` and passed over. Returns ``(links, values, next_index)``:
    ``{name: {name: code}}``, ``{name: row_values(...) result}`` and the index after the rows.
    """
    links: dict[str, dict[str, str]] = {}
    values: dict[str, dict[str, Any]] = {}
    index = header_index + 1
    last_number = lines[header_index][0]
    for i, expected in enumerate(names):
        while index < len(lines) and skip_foreign(ignored, *lines[index]):
            index += 1
        if index >= len(lines):
            raise _fail("matrix ends before the row of %s (%d of %d rows)" % (expected, i, len(names)),
                        line=last_number + 1, kind=kind)
        number, line = lines[index]
        cells, tabbed = _split_row(line)
        row = _row_codes(cells, i, names, codes, (number, line, kind))
        _check_row_against(row, i, names, links, (number, line, kind))
        links[expected] = dict(zip(names, row))
        rest = cells[1 + len(names):]
        if row_values is not None:
            values[expected] = row_values(number, expected, line, rest, tabbed)
        elif any(rest):
            extra = [cell for cell in rest if cell][0]
            raise _fail("row %s has an extra cell %r beyond the %d header columns" % (expected, extra, len(names)),
                        line=number, kind=kind, text=line)
        last_number = number
        index += 1
    _check_no_extra_row(lines, index, names, codes, kind)
    return links, values, index


def _row_codes(cells: list[str], position: int, names: list[str], codes: AbstractSet[str],
               where: tuple[int, str, str]) -> list[str]:
    """The link codes of the row of ``names[position]``: the row must be there, named so, all link codes, complete.
    ``where`` is (line number, line, kind)."""
    number, line, kind = where
    expected = names[position]
    if not cells:
        raise _fail("matrix ends before the row of %s (%d of %d rows)" % (expected, position, len(names)),
                    line=number, kind=kind, text=line)
    if cells[0] != expected:
        raise _fail("row %r where the row of %s was expected (rows must match the header)" % (cells[0], expected),
                    line=number, kind=kind, text=line)
    row = cells[1:1 + len(names)]
    for cell in row:
        if not _is_code(cell, codes):
            raise _fail("cell %r is not a link code" % cell, line=number, kind=kind, text=line)
    if len(row) < len(names):
        raise _fail("row %s has %d link cells, the header has %d devices" % (expected, len(row), len(names)),
                    line=number, kind=kind, text=line)
    return row


def _check_row_against(row: list[str], position: int, names: list[str], links: dict[str, dict[str, str]],
                       where: tuple[int, str, str]) -> None:
    """X on the diagonal only, and each code the same as its mirror in the rows above (``links``)."""
    number, line, kind = where
    expected = names[position]
    for j, cell in enumerate(row):
        if position == j and cell != "X":
            raise _fail("diagonal cell of %s is %r, expected X" % (expected, cell), line=number, kind=kind, text=line)
        if position != j and cell == "X":
            raise _fail("X off the diagonal (%s, %s): cells shifted" % (expected, names[j]), line=number, kind=kind,
                        text=line)
        if j < position and cell != links[names[j]][expected]:
            raise _fail("%s->%s is %s but %s->%s is %s (matrix not symmetric)"
                        % (expected, names[j], cell, names[j], expected, links[names[j]][expected]),
                        line=number, kind=kind, text=line)


def _check_no_extra_row(lines: list[tuple[int, str]], index: int, names: list[str], codes: AbstractSet[str],
                        kind: str) -> None:
    """A row of link codes right after the last one the header names: the matrix is not square."""
    if index < len(lines):
        number, line = lines[index]
        cells, _tabbed = _split_row(line)
        if len(cells) > 1 and _is_code(cells[1], codes):
            raise _fail("extra row %r after the %d rows the header names (matrix is not square)"
                        % (cells[0], len(names)), line=number, kind=kind, text=line)


def _affinity_cells(number: int, line: str, rest: list[str], tabbed: bool, titles: list[str]) -> dict[str, str | None]:
    """Map the cells after the link codes onto the affinity titles.

    Tab-separated rows keep empty cells, so blank values are located exactly;
    nvidia-smi writes an extra empty cell before "GPU NUMA ID" (``0\\t\\tN/A``).
    Space-separated rows cannot show where a blank cell was: they must carry either
    no affinity cells or one per title.
    """
    if not titles:
        return {}
    if all(cell == "" for cell in rest):
        return {title: None for title in titles}
    cells = list(rest)
    if tabbed:
        while len(cells) > len(titles) and cells[-1] == "":
            cells.pop()
        if len(cells) == len(titles) + 1 and _GPU_NUMA_ID in titles:
            pad = titles.index(_GPU_NUMA_ID)
            if cells[pad] == "":
                del cells[pad]
        if len(cells) != len(titles):
            raise _fail("%d cells after the link codes for %d affinity columns (%s)"
                        % (len(cells), len(titles), ", ".join(titles)), line=number, kind=KIND_TOPO, text=line)
    elif len(cells) != len(titles):
        raise _fail("%d cells after the link codes for %d affinity columns (%s); in space-separated text a blank "
                    "affinity cell cannot be located" % (len(cells), len(titles), ", ".join(titles)),
                    line=number, kind=KIND_TOPO, text=line)
    return {title: (cell if cell != "" else None) for title, cell in zip(titles, cells)}


def _check_list(value: str | None, title: str, number: int, line: str) -> None:
    """An affinity cell must be a CPU/NUMA list (``0-3,8``) or a no-value spelling."""
    if value is None or is_not_available(value):
        return
    if not _LIST_RE.match(value):
        raise _fail("%s %r is not a CPU/NUMA list" % (title, value), line=number, kind=KIND_TOPO, text=line)


def _expand_list(value: str | None, number: int, line: str) -> list[int] | None:
    """``"0-3,8"`` -> ``[0, 1, 2, 3, 8]``; None for blank / N/A. ``value`` passed :func:`_check_list`."""
    if value is None or is_not_available(value):
        return None
    nodes: list[int] = []
    for part in value.split(","):
        low_text, _sep, high_text = part.partition("-")
        low = _node_number(low_text, number)
        high = _node_number(high_text, number) if high_text else low
        if high < low or high - low >= _MAX_NUMA_NODES or len(nodes) + high - low >= _MAX_NUMA_NODES:
            raise _fail("NUMA Affinity %r is not a plausible node list" % value, line=number, kind=KIND_TOPO, text=line)
        nodes.extend(range(low, high + 1))
    return nodes


def _node_number(text: str, number: int) -> int:
    """A node number of a list _check_list matched (digits only), bounded by common's parse_number."""
    value = parse_number(text, line=number, kind=KIND_TOPO)
    assert isinstance(value, int)  # _LIST_RE matched digits
    return value


def _foreign_before(lines: list[tuple[int, str]], header_index: int) -> list[IgnoredLine]:
    """The foreign lines before the header (a prompt, a banner), as ``ignored_lines`` entries.

    Other text there (a heading of the author's) stays unread and unlisted, as before.
    """
    ignored: list[IgnoredLine] = []
    for number, line in lines[:header_index]:
        skip_foreign(ignored, number, line)
    return ignored


def _missing_parts(nics: list[dict[str, Any]], titles: list[str]) -> list[str]:
    """Notes on what a ``topo -m`` matrix does not show: the checks judge the GPU part it does show."""
    notes = []
    if not nics:
        notes.append("no NIC rows: the GPU-to-NIC paths are not judged from this matrix")
    if _CPU_AFFINITY not in titles:
        notes.append("no CPU Affinity column: the matrix gives no CPU list per GPU")
    if _NUMA_AFFINITY not in titles:
        notes.append("no NUMA Affinity column: the GPUs' NUMA placement is not judged from this matrix")
    return notes


def _topo_format(lines: list[tuple[int, str]], header_index: int, links: dict[str, dict[str, str]],
                 legend: dict[str, str] | None) -> str | None:
    for _number, line in lines[:header_index]:
        match = _TOPO_CMD_RE.search(line)
        if match:
            return "mp" if match.group(1) in ("-mp", "--matrix_pci", "--matrix_pcie") else "m"
    if any(_NV_RE.match(code) for row in links.values() for code in row.values()):
        return "m"
    if legend:
        return "m" if "NV#" in legend else "mp"
    return None


def _topo_row_values(titles: list[str], codes: AbstractSet[str], names: list[str]) -> RowValues:
    """The per-row reader of the affinity cells of a ``topo -m`` row."""

    def read(number: int, name: str, line: str, rest: list[str], tabbed: bool) -> dict[str, Any]:
        if not titles and any(rest):
            extra = [cell for cell in rest if cell][0]
            what = "link code" if _is_code(extra, codes) else "cell"
            raise _fail("row %s has an extra %s %r beyond the %d header columns" % (name, what, extra, len(names)),
                        line=number, kind=KIND_TOPO, text=line)
        values = _affinity_cells(number, line, rest, tabbed, titles)
        cpu = values.get(_CPU_AFFINITY)
        numa = values.get(_NUMA_AFFINITY)
        _check_list(cpu, _CPU_AFFINITY, number, line)
        _check_list(numa, _NUMA_AFFINITY, number, line)
        gpu_numa = values.get(_GPU_NUMA_ID)
        if not _GPU_NAME_RE.match(name):
            if not is_not_available(gpu_numa):
                raise _fail("NIC row %s has a GPU NUMA ID %r" % (name, gpu_numa), line=number, kind=KIND_TOPO,
                            text=line)
            return {"name": name, "cpu_affinity": cpu, "numa_affinity": numa}
        number_value = parse_number(gpu_numa, line=number, kind=KIND_TOPO)
        if isinstance(number_value, float) or (number_value is not None and number_value < 0):
            raise _fail("GPU NUMA ID %r is not a node number" % gpu_numa, line=number, kind=KIND_TOPO, text=line)
        return {
            "name": name,
            "cpu_affinity": cpu,
            "numa_affinity": numa,
            "numa_nodes": _expand_list(numa, number, line),
            "gpu_numa_id": number_value,
        }

    return read


def parse_topo_matrix(text: str) -> dict[str, Any]:
    """Parse ``nvidia-smi topo -m`` / ``topo -mp`` text; see the module docstring for the keys."""
    lines = strip_rank_prefix(text, KIND_TOPO)
    header_index = _find_header(lines, KIND_TOPO, "topology matrix")
    ignored = _foreign_before(lines, header_index)
    header_number, header_line = lines[header_index]
    names, titles = _parse_header(header_number, header_line, KIND_TOPO, _codes_with_legend(_TOPO_CODES, None),
                                  allow_titles=True)
    # The legend follows the matrix; peek at it so codes it defines are accepted.
    codes = _codes_with_legend(_TOPO_CODES, _find_legend(lines, header_index + 1))
    links, values, next_index = _read_rows(lines, header_index, names, KIND_TOPO, codes, ignored,
                                           _topo_row_values(titles, codes, names))
    legend, nic_entries = _read_sections(lines, next_index, KIND_TOPO, ignored)
    nic_legend = None
    if nic_entries is not None:
        nic_legend = {}
        for nic, (device, number) in nic_entries.items():
            if nic not in names:
                raise _fail("NIC Legend names %s, which is not in the matrix" % nic, line=number, kind=KIND_TOPO)
            nic_legend[nic] = device

    gpus: list[dict[str, Any]] = []
    nics: list[dict[str, Any]] = []
    for name in names:
        entry = values[name]
        if _GPU_NAME_RE.match(name):
            gpus.append(entry)
        else:
            rdma_device = (nic_legend or {}).get(name) if _NIC_NAME_RE.match(name) else name
            nics.append({"name": name, "device": rdma_device, "cpu_affinity": entry["cpu_affinity"],
                         "numa_affinity": entry["numa_affinity"]})

    return with_ignored({
        "format": _topo_format(lines, header_index, links, legend),
        "gpus": gpus,
        "nics": nics,
        "names": list(names),
        "links": links,
        "columns": list(titles),
        "legend": legend,
        "nic_legend": nic_legend,
        "notes": _missing_parts(nics, titles),
    }, ignored)


def parse_p2p_matrix(text: str) -> dict[str, Any]:
    """Parse ``nvidia-smi topo -p2p r|w|n|a|p`` text; see the module docstring for the keys."""
    lines = strip_rank_prefix(text, KIND_P2P)
    header_index = _find_header(lines, KIND_P2P, "p2p status matrix")
    ignored = _foreign_before(lines, header_index)
    header_number, header_line = lines[header_index]
    names, _titles = _parse_header(header_number, header_line, KIND_P2P, _P2P_CODES | {"NV#"}, allow_titles=False)
    for name in names:
        if not _GPU_NAME_RE.match(name):
            raise _fail("p2p header column %r is not a GPU" % name, line=header_number, kind=KIND_P2P, text=header_line)
    codes = set(_P2P_CODES)
    codes.update(code for code in (_find_legend(lines, header_index + 1) or {})
                 if "#" not in code and code not in _TOPO_CODES)
    status, _values, next_index = _read_rows(lines, header_index, names, KIND_P2P, codes, ignored)
    legend, nic_entries = _read_sections(lines, next_index, KIND_P2P, ignored)
    if nic_entries:
        raise _fail("a NIC Legend in a p2p status output", line=min(n for _d, n in nic_entries.values()), kind=KIND_P2P)

    mode = None
    for number, line in lines[:header_index]:
        match = _P2P_CMD_RE.search(line)
        if match:
            letter = (match.group(1) or "").lower()
            if letter not in _P2P_MODES:
                raise _fail("unknown p2p capability %r on the command line" % match.group(1), line=number,
                            kind=KIND_P2P, text=line)
            mode = letter
    ok = {
        row: {col: (None if row == col else code == "OK") for col, code in cols.items()}
        for row, cols in status.items()
    }
    return with_ignored({
        "mode": mode,
        "capability": _P2P_MODES.get(mode) if mode else None,
        "gpus": list(names),
        "status": status,
        "ok": ok,
        "all_ok": all(value is not False for cols in ok.values() for value in cols.values()),
        "legend": legend,
    }, ignored)
