# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for perftest (linux-rdma/perftest) bandwidth and latency output.

``parse_perftest_bw(text)`` (KIND ``ib-bw``) reads ib_write_bw / ib_read_bw / ib_send_bw
(client or server side); ``parse_perftest_lat(text)`` (KIND ``ib-lat``) reads ib_write_lat /
ib_read_lat / ib_send_lat.

A capture may hold several *sections* (one per ``... BW Test`` / ``... Latency Test``
banner): server and client output concatenated, or several runs in a loop. Each section is
returned in ``sections``; the top-level keys are those of the chosen section: the last
``client`` section that has results, else the last section with results, else the last one.
When a second banner starts before the first section reached its results header, the two
processes wrote to the same stream line by line (superbench loopback logs); they are merged
into ONE section with ``interleaved: True`` and ``side: None``; identical duplicate rows are
dropped, differing ones raise.

Keys of every section (and of the top level):

- ``test`` (str): banner, e.g. ``"RDMA_Write BW Test"``, ``"RDMA_Read Latency Test"``.
- ``device`` (str|None), ``link_type`` (``"IB"``|``"Ethernet"``|None), ``transport_type``,
  ``connection_type`` (e.g. ``"RC"``), ``data_exchange`` (``"Ethernet"``|``"rdma_cm"``...).
- ``qps`` (int|None) number of QPs, ``mtu`` (int|None, bytes), ``gid_index`` (int|None),
  ``tx_depth`` (int|None), ``rdma_cm`` (bool|None).
- ``settings`` (dict str->str): every ``key : value`` pair of the banner, as printed.
- ``side`` (``"client"``|``"server"``|None): ``server`` when the ``Waiting for client to
  connect`` box or ``Waiting for client rdma_cm QP to connect`` belongs to the section,
  ``client`` when the banner has ``TX depth`` (servers of perftest >= 4 do not print it).
- ``interleaved`` (bool): see above.
- ``gpu_direct`` (bool|None): True when CUDA initialisation lines (``initializing CUDA``,
  ``cuMemAlloc``...) or ``--use_cuda``/``--use_rocm`` on the command line are visible, False
  when a perftest command line is visible without them, None when nothing says.
- ``gpu_name`` (str|None), ``gpu_pci`` (str|None): from the CUDA initialisation lines.
- ``warnings`` / ``errors`` (list of str): warning lines (``WARNING: ...``, ``Conflicting
  CPU frequency values detected ...``, ``Requested mtu is higher than active mtu``...) and
  error lines (``Couldn't ...``, ``Failed ...``, ``Completion with error ...``). At the top
  level these list every such line of the whole text.
- ``line`` (int): the banner's line number.

``ib-bw`` sections add:

- ``unit_printed`` (``"MB/sec"``|``"MiB/sec"``|``"Gb/sec"``): the header's unit.
- ``results`` (list of dict): ``{bytes, iterations, bw_peak_gbps, bw_avg_gbps,
  msg_rate_mpps}``, ALWAYS in Gb/s (10^9 bit/s). perftest's ``MB/sec`` is 2^20 bytes/s, so
  the factor is 2^20*8/1e9 = 0.008388608; ``--report_gbits`` columns are used as printed.
  ``bw_peak_gbps`` is None when perftest said ``BW peak won't be measured`` (``-D`` duration
  mode prints a meaningless 0.00 there).
- ``peak_measured`` (bool): False in that case.

``ib-lat`` sections add:

- ``results`` (list of dict): ``{bytes, iterations, t_min_us, t_max_us, t_typical_us,
  t_avg_us, t_stdev_us, p99_us, p99_9_us}`` (microseconds; None for columns the header
  does not have, e.g. older perftest without percentiles).

Variants handled: TABs or re-spaced columns in banner and rows, CRLF, ANSI escapes, leading
prompt/command lines, srun ``-l`` / mpirun ``--tag-output`` rank prefixes (one rank), CUDA
init lines before the banner, ``Waiting for client`` boxes, rdma_cm/GID lines, warnings inside
the results table, server+client concatenated or interleaved.

Raises ParseError (with the 1-based line): empty input or no banner (unless the text is only
perftest error lines, returned in ``errors``); a latency banner given to the bw parser or vice
versa; an unknown results header or unit; a malformed row or unknown line inside the results
table; a row outside a table; conflicting banner values inside one section; a results table
that is not closed by its ``----`` line at the end of the text (truncated); a section with
no results table (unless perftest printed errors); several rank prefixes interleaved.

Inside a results table, a foreign line (common's ``foreign_line``: a script's banner, an echoed
command, a note, an elision) is skipped instead of refused and listed in ``ignored_lines``
(``[{line, text, why}]``, present only when one was); a rule of dashes stays perftest's own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gpufleet.parsers.common import IgnoredLine, ParseError, skip_foreign, strip_rank_prefix, with_ignored

# perftest MB/sec is MiB/s (2^20 bytes); Gb/s = MB/s * 2^20 * 8 / 1e9.
MB_PER_SEC_TO_GBPS = 2 ** 20 * 8 / 1e9

_BANNER_RE = re.compile(r"^\s*(?P<test>[A-Za-z][A-Za-z0-9_ ]*?\s(?P<what>BW|Latency)\s+Test)\s*$")
_DASHES_RE = re.compile(r"^\s*-{10,}\s*$")
_BOX_BORDER_RE = re.compile(r"^\s*\*{5,}\s*$")
_WAITING_RE = re.compile(r"Waiting for client (?:to connect|rdma_cm QP to connect)")
_KV_LINE_RE = re.compile(r"^\s*[A-Za-z][A-Za-z0-9 .*_/()-]*?\s*:\s*\S")
_KV_PAIR_RE = re.compile(r"([A-Za-z][A-Za-z0-9 .*_/()-]*?)\s*:\s*(\S+)")
_ADDRESS_RE = re.compile(r"^\s*(?:local|remote) address\s*:|^\s*GID\s*:", re.IGNORECASE)
_HEADER_START_RE = re.compile(r"^\s*#bytes\b")
_BW_HEADER_RE = re.compile(
    r"^\s*#bytes\s+#iterations\s+BW peak\[(?P<unit>[^\]]+)\]\s+BW average\[(?P<unit2>[^\]]+)\]"
    r"\s+MsgRate\[Mpps\]\s*$"
)
_LAT_COLUMNS = [
    ("#bytes", "bytes"),
    ("#iterations", "iterations"),
    ("t_min[usec]", "t_min_us"),
    ("t_max[usec]", "t_max_us"),
    ("t_typical[usec]", "t_typical_us"),
    ("t_avg[usec]", "t_avg_us"),
    ("t_stdev[usec]", "t_stdev_us"),
    ("99% percentile[usec]", "p99_us"),
    ("99.9% percentile[usec]", "p99_9_us"),
    ("tps average", "tps_average"),
]
_LAT_KEYS = ["bytes", "iterations", "t_min_us", "t_max_us", "t_typical_us", "t_avg_us", "t_stdev_us", "p99_us", "p99_9_us"]
_NUMBER_RE = re.compile(r"^\d+(?:\.\d+)?$")
_ROW_START_RE = re.compile(r"^\s*\d+\s+\d+(?:\s|$)")
_COMMAND_RE = re.compile(r"\bib_(?:write|read|send|atomic)_(?:bw|lat)\b")
_CUDA_INIT_RE = re.compile(r"initializing (?:CUDA|ROCm)|cuMemAlloc|Picking device No\.|creating CUDA Ctx")
_GPU_NAME_RE = re.compile(r"device name = \[(?P<name>[^\]]*)\]")
_GPU_PCI_RE = re.compile(r"CUDA device \d+: PCIe address is (?P<pci>\S+)")
_WARNING_RE = re.compile(
    r"warning|conflicting cpu frequency|requested mtu is higher|changing to active mtu|inline size set to",
    re.IGNORECASE,
)
_ERROR_RE = re.compile(
    r"^\s*(?:error\b|failed\b|fail\b|couldn'?t\b|could not\b|unable\b|cannot\b|completion with error|"
    r"ibv_\w+ failed|.*\bfailed to\b|.*\berror:)",
    re.IGNORECASE,
)


def _err(kind: str, message: str, line: int | None = None, text: str | None = None) -> ParseError:
    return ParseError(message, line=line, kind=kind, text=text)


@dataclass
class _Pending:
    """What was seen before a banner (a waiting box, a command line, CUDA lines): it belongs to the next section."""

    server: bool = False
    cuda: bool = False
    command: str | None = None
    gpu_name: str | None = None
    gpu_pci: str | None = None
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class _Section:
    """One banner's worth of perftest output."""

    def __init__(self, test: str, line: int, pending: _Pending) -> None:
        self.test = test
        self.line = line
        self.banners = 1
        self.interleaved = False
        self.settings: dict[str, str] = {}
        self.settings_line: dict[str, int] = {}
        self.header: str | None = None
        self.headers_seen = 0
        self.unit: str | None = None
        self.columns: list[str] = []
        self.rows: list[dict[str, int | float]] = []
        self.rows_by_bytes: dict[int | float, list[str]] = {}
        self.table_open = False
        self.table_closed = False
        self.server = pending.server
        self.cuda = pending.cuda
        self.command = pending.command
        self.gpu_name = pending.gpu_name
        self.gpu_pci = pending.gpu_pci
        self.warnings = list(pending.warnings)
        self.errors = list(pending.errors)

    def close_table(self) -> None:
        """The table ends here (its ---- line, a box border, a waiting box after it)."""
        if self.table_open:
            self.table_open = False
            self.table_closed = True

    def takes_banner_lines(self) -> bool:
        """True while the section is still in its banner: no results header yet, no table closed."""
        return self.header is None and not self.table_closed


class _Reader:
    """One pass over a perftest capture: each line goes to the first step that takes it (see _LINE_STEPS)."""

    def __init__(self, mode: str, kind: str) -> None:
        self.mode = mode
        self.kind = kind
        self.sections: list[_Section] = []
        self.current: _Section | None = None
        self.pending = _Pending()
        self.all_warnings: list[str] = []
        self.all_errors: list[str] = []
        self.ignored: list[IgnoredLine] = []

    def read_line(self, n: int, stripped: str) -> None:
        # the order is the precedence: a banner before a rule, a command line before a header, ...
        steps = (self._banner, self._rule, self._waiting, self._command, self._header, self._warning,
                 self._error, self._row, self._inside_table, self._gpu_line, self._setting)
        for step in steps:
            if step(n, stripped):
                return
        # Other lines (address/GID lines, CUDA teardown, prompts) carry no figures.

    def _banner(self, n: int, stripped: str) -> bool:
        banner = _BANNER_RE.match(stripped)
        if not banner:
            return False
        is_bw = banner.group("what") == "BW"
        if is_bw != (self.mode == "bw"):
            other = "ib-bw" if is_bw else "ib-lat"
            raise _err(self.kind, "this is %s output (%s); use the %s parser" % (other, banner.group("test"), other),
                       line=n)
        test = re.sub(r"\s+", " ", banner.group("test"))
        current = self.current
        if current is not None and current.takes_banner_lines():
            if current.test != test:
                raise _err(self.kind, "banner %r inside the unfinished %r section" % (test, current.test), line=n)
            current.interleaved = True
            current.banners += 1
            return True
        self.current = _Section(test, n, self.pending)
        self.pending = _Pending()
        self.sections.append(self.current)
        return True

    def _rule(self, n: int, stripped: str) -> bool:
        if not (_DASHES_RE.match(stripped) or _BOX_BORDER_RE.match(stripped)):
            return False
        if self.current is not None:
            self.current.close_table()
        return True

    def _waiting(self, n: int, stripped: str) -> bool:
        if not _WAITING_RE.search(stripped):
            return False
        if self.current is not None and self.current.takes_banner_lines():
            self.current.server = True
            return True
        if self.current is not None:
            self.current.close_table()
        self.pending.server = True
        return True

    def _command(self, n: int, stripped: str) -> bool:
        if not _COMMAND_RE.search(stripped) or _HEADER_START_RE.match(stripped):
            return False
        self.pending.command = stripped
        if re.search(r"--use_(?:cuda|rocm|neuron|hl)\b", stripped):
            self.pending.cuda = True
        return True

    def _header(self, n: int, stripped: str) -> bool:
        if not _HEADER_START_RE.match(stripped):
            return False
        _header(self.current, stripped, n, self.mode, self.kind)
        return True

    def _open_section(self) -> _Section | None:
        """The section a warning or an error belongs to: the current one until its table closed."""
        return self.current if self.current is not None and not self.current.table_closed else None

    def _warning(self, n: int, stripped: str) -> bool:
        if not _WARNING_RE.search(stripped):
            return False
        self.all_warnings.append(stripped)
        target = self._open_section()
        (target.warnings if target is not None else self.pending.warnings).append(stripped)
        return True

    def _error(self, n: int, stripped: str) -> bool:
        if not _ERROR_RE.match(stripped):
            return False
        self.all_errors.append(stripped)
        target = self._open_section()
        (target.errors if target is not None else self.pending.errors).append(stripped)
        if target is not None and target.table_open:
            target.table_open = False
        return True

    def _row(self, n: int, stripped: str) -> bool:
        if not _ROW_START_RE.match(stripped):
            return False
        _row(self.current, stripped, n, self.kind)
        return True

    def _inside_table(self, n: int, stripped: str) -> bool:
        if self.current is None or not self.current.table_open:
            return False
        if skip_foreign(self.ignored, n, stripped):
            return True
        raise _err(self.kind, "unexpected line inside the results table", line=n, text=stripped)

    def _gpu_line(self, n: int, stripped: str) -> bool:
        if _CUDA_INIT_RE.search(stripped):
            self.pending.cuda = True
            return True
        gpu = _GPU_NAME_RE.search(stripped)
        if gpu:
            self.pending.gpu_name = gpu.group("name").strip()
            self.pending.cuda = True
            return True
        gpu = _GPU_PCI_RE.search(stripped)
        if gpu:
            self.pending.gpu_pci = gpu.group("pci")
            return True
        return False

    def _setting(self, n: int, stripped: str) -> bool:
        current = self.current
        if current is None or current.header is not None or _ADDRESS_RE.match(stripped) \
                or not _KV_LINE_RE.match(stripped):
            return False
        _settings(current, stripped, n, self.kind)
        return True

    def check_sections(self, last_line: int) -> None:
        """Refuse a section without a results table, and a last table left open (a truncated capture)."""
        sections = self.sections
        for index, section in enumerate(sections):
            is_last = index == len(sections) - 1
            if section.header is None and not section.errors:
                end = sections[index + 1].line - 1 if not is_last else last_line
                raise _err(self.kind, "section %r has no results table (truncated?)" % section.test, line=end)
            if is_last and section.table_open and not section.errors:
                raise _err(self.kind, "results table not closed by its ---- line (truncated?)", line=last_line)


def _choose(built: list[dict[str, Any]]) -> dict[str, Any]:
    """The last client section with results, else the last section with results, else the last one."""
    clients = [s for s in built if s["side"] == "client" and s["results"]]
    if clients:
        return clients[-1]
    with_results = [s for s in built if s["results"]]
    return with_results[-1] if with_results else built[-1]


def _parse(text: object, mode: str, kind: str) -> dict[str, Any]:
    pairs = strip_rank_prefix(text, kind)
    reader = _Reader(mode, kind)
    last_line = max(n for n, line in pairs if line.strip())
    for n, raw in pairs:
        stripped = raw.replace("\t", "    ").strip()
        if stripped:
            reader.read_line(n, stripped)

    if not reader.sections:
        if reader.all_errors:
            return _empty_result(mode, reader.all_warnings, reader.all_errors)
        raise _err(kind, "no perftest %s banner found" % ("BW" if mode == "bw" else "Latency"))
    reader.check_sections(last_line)
    peak_unmeasured = any("bw peak won't be measured" in w.lower() for w in reader.all_warnings)
    built = [_build(section, mode, peak_unmeasured) for section in reader.sections]
    if not any(s["results"] for s in built) and not reader.all_errors:
        raise _err(kind, "no result rows found", line=last_line)
    result = dict(_choose(built))
    result["sections"] = built
    result["section_count"] = len(built)
    result["warnings"] = reader.all_warnings
    result["errors"] = reader.all_errors
    return with_ignored(result, reader.ignored)


def _header(current: _Section | None, stripped: str, n: int, mode: str, kind: str) -> None:
    if current is None:
        raise _err(kind, "results header before any perftest banner", line=n, text=stripped)
    if mode == "bw":
        match = _BW_HEADER_RE.match(stripped)
        if not match:
            raise _err(kind, "unknown bandwidth results header", line=n, text=stripped)
        unit = match.group("unit").strip()
        if unit != match.group("unit2").strip():
            raise _err(kind, "peak and average columns have different units", line=n, text=stripped)
        if unit not in ("MB/sec", "MiB/sec", "Gb/sec"):
            raise _err(kind, "unknown bandwidth unit %r" % unit, line=n, text=stripped)
        columns = ["bytes", "iterations", "bw_peak", "bw_avg", "msg_rate_mpps"]
    else:
        unit = "usec"
        columns = []
        rest = stripped
        while rest:
            rest = rest.lstrip()
            for label, key in _LAT_COLUMNS:
                if rest.startswith(label):
                    columns.append(key)
                    rest = rest[len(label):]
                    break
            else:
                raise _err(kind, "unknown latency column at %r" % rest[:30], line=n, text=stripped)
        if columns[:2] != ["bytes", "iterations"] or len(columns) < 3:
            raise _err(kind, "unknown latency results header", line=n, text=stripped)
    if current.header is not None:
        if current.interleaved and current.headers_seen < current.banners:
            if current.unit != unit or current.columns != columns:
                raise _err(kind, "the interleaved outputs have different results headers", line=n, text=stripped)
            current.headers_seen += 1
            return
        raise _err(kind, "second results header in one section", line=n, text=stripped)
    current.header = stripped
    current.headers_seen = 1
    current.unit = unit
    current.columns = columns
    current.table_open = True


def _row(current: _Section | None, stripped: str, n: int, kind: str) -> None:
    if current is None or current.header is None:
        raise _err(kind, "result row outside a results table", line=n, text=stripped)
    tokens = stripped.split()
    if len(tokens) != len(current.columns) or not all(_NUMBER_RE.match(t) for t in tokens):
        raise _err(kind, "malformed result row (expected %d numbers)" % len(current.columns), line=n, text=stripped)
    values = {}
    for key, token in zip(current.columns, tokens):
        values[key] = float(token) if "." in token else int(token)
    if not isinstance(values["bytes"], int) or not isinstance(values["iterations"], int):
        raise _err(kind, "#bytes and #iterations must be integers", line=n, text=stripped)
    size = values["bytes"]
    if size in current.rows_by_bytes:
        if current.interleaved and current.rows_by_bytes[size] == tokens:
            return  # the other process's copy of the same row
        raise _err(kind, "second row for %d bytes" % size, line=n, text=stripped)
    if not current.table_open and not current.interleaved:
        raise _err(kind, "result row after the end of the results table", line=n, text=stripped)
    current.rows_by_bytes[size] = tokens
    current.rows.append(values)


def _settings(current: _Section, stripped: str, n: int, kind: str) -> None:
    for match in _KV_PAIR_RE.finditer(stripped):
        key = re.sub(r"\s+", " ", match.group(1).strip())
        value = match.group(2).strip()
        if key in current.settings and current.settings[key] != value:
            raise _err(kind, "conflicting values for %r in one section (%r, then %r)"
                       % (key, current.settings[key], value), line=n, text=stripped)
        current.settings[key] = value
        current.settings_line[key] = n


def _int_setting(settings: dict[str, str], key: str) -> int | None:
    value = settings.get(key)
    if value is None:
        return None
    match = re.match(r"^(\d+)", value)
    return int(match.group(1)) if match else None


def _build(section: _Section, mode: str, peak_unmeasured: bool) -> dict[str, Any]:
    settings = section.settings
    lowered = {k.lower(): v for k, v in settings.items()}
    rdma_cm = lowered.get("rdma_cm qps")
    side = None
    if not section.interleaved:
        if section.server:
            side = "server"
        elif "tx depth" in lowered:
            side = "client"
    gpu_direct = None
    if section.cuda:
        gpu_direct = True
    elif section.command is not None:
        gpu_direct = False
    out = {
        "test": section.test,
        "line": section.line,
        "device": lowered.get("device"),
        "link_type": lowered.get("link type"),
        "transport_type": lowered.get("transport type"),
        "connection_type": lowered.get("connection type"),
        "data_exchange": lowered.get("data ex. method"),
        "qps": _int_setting(lowered, "number of qps"),
        "mtu": _int_setting(lowered, "mtu"),
        "gid_index": _int_setting(lowered, "gid index"),
        "tx_depth": _int_setting(lowered, "tx depth"),
        "rdma_cm": None if rdma_cm is None else rdma_cm.upper() == "ON",
        "settings": dict(settings),
        "side": side,
        "interleaved": section.interleaved,
        "gpu_direct": gpu_direct,
        "gpu_name": section.gpu_name,
        "gpu_pci": section.gpu_pci,
        "warnings": section.warnings,
        "errors": section.errors,
    }
    if mode == "bw":
        out["unit_printed"] = section.unit
        out["peak_measured"] = not peak_unmeasured
        out["results"] = _bw_results(section, peak_unmeasured)
    else:
        out["results"] = [
            {key: (float(row[key]) if key not in ("bytes", "iterations") else row[key]) if key in row else None
             for key in _LAT_KEYS + (["tps_average"] if "tps_average" in row else [])}
            for row in section.rows
        ]
    return out


def _bw_results(section: _Section, peak_unmeasured: bool) -> list[dict[str, Any]]:
    """The bandwidth rows in Gb/s (perftest prints MB/sec unless --report_gbits); a peak of 0 that the test did not
    measure (peak_unmeasured) is None, never 0 Gb/s."""
    factor = 1.0 if section.unit == "Gb/sec" else MB_PER_SEC_TO_GBPS
    results: list[dict[str, Any]] = []
    for row in section.rows:
        peak = row["bw_peak"]
        peak_gbps: float | None = None if peak_unmeasured and peak == 0 else peak * factor
        results.append({
            "bytes": row["bytes"],
            "iterations": row["iterations"],
            "bw_peak_gbps": peak_gbps,
            "bw_avg_gbps": row["bw_avg"] * factor,
            "msg_rate_mpps": float(row["msg_rate_mpps"]),
        })
    return results


def _empty_result(mode: str, warnings: list[str], errors: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "test": None, "line": None, "device": None, "link_type": None, "transport_type": None,
        "connection_type": None, "data_exchange": None, "qps": None, "mtu": None, "gid_index": None,
        "tx_depth": None, "rdma_cm": None, "settings": {}, "side": None, "interleaved": False,
        "gpu_direct": None, "gpu_name": None, "gpu_pci": None, "results": [],
        "sections": [], "section_count": 0, "warnings": warnings, "errors": errors,
    }
    if mode == "bw":
        out["unit_printed"] = None
        out["peak_measured"] = None
    return out


def parse_perftest_bw(text: str) -> dict[str, Any]:
    """Parse ib_write_bw / ib_read_bw / ib_send_bw output; see the module docstring."""
    return _parse(text, "bw", "ib-bw")


def parse_perftest_lat(text: str) -> dict[str, Any]:
    """Parse ib_write_lat / ib_read_lat / ib_send_lat output; see the module docstring."""
    return _parse(text, "lat", "ib-lat")
