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

from gpufleet.parsers.common import skip_foreign, strip_rank_prefix, with_ignored, ParseError

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


def _err(kind, message, line=None, text=None):
    return ParseError(message, line=line, kind=kind, text=text)


class _Section:
    """One banner's worth of perftest output."""

    def __init__(self, test, line, pending):
        self.test = test
        self.line = line
        self.banners = 1
        self.interleaved = False
        self.settings = {}
        self.settings_line = {}
        self.header = None
        self.headers_seen = 0
        self.unit = None
        self.columns = None
        self.rows = []
        self.rows_by_bytes = {}
        self.table_open = False
        self.table_closed = False
        self.server = pending["server"]
        self.cuda = pending["cuda"]
        self.command = pending["command"]
        self.gpu_name = pending["gpu_name"]
        self.gpu_pci = pending["gpu_pci"]
        self.warnings = list(pending["warnings"])
        self.errors = list(pending["errors"])


def _new_pending():
    return {"server": False, "cuda": False, "command": None, "gpu_name": None, "gpu_pci": None,
            "warnings": [], "errors": []}


def _parse(text, mode, kind):
    pairs = strip_rank_prefix(text, kind)
    sections = []
    current = None
    pending = _new_pending()
    all_warnings = []
    all_errors = []
    ignored = []
    last_line = max(n for n, line in pairs if line.strip())

    for n, raw in pairs:
        line = raw.replace("\t", "    ")
        stripped = line.strip()
        if not stripped:
            continue
        banner = _BANNER_RE.match(stripped)
        if banner:
            is_bw = banner.group("what") == "BW"
            if is_bw != (mode == "bw"):
                other = "ib-bw" if is_bw else "ib-lat"
                raise _err(kind, "this is %s output (%s); use the %s parser" % (other, banner.group("test"), other), line=n)
            test = re.sub(r"\s+", " ", banner.group("test"))
            if current is not None and current.header is None and not current.table_closed:
                if current.test != test:
                    raise _err(kind, "banner %r inside the unfinished %r section" % (test, current.test), line=n)
                current.interleaved = True
                current.banners += 1
                continue
            current = _Section(test, n, pending)
            pending = _new_pending()
            sections.append(current)
            continue
        if _DASHES_RE.match(stripped):
            if current is not None and current.table_open:
                current.table_open = False
                current.table_closed = True
            continue
        if _BOX_BORDER_RE.match(stripped):
            if current is not None and current.table_open:
                current.table_open = False
                current.table_closed = True
            continue
        if _WAITING_RE.search(stripped):
            if current is not None and current.header is None and not current.table_closed:
                current.server = True
            else:
                if current is not None and current.table_open:
                    current.table_open = False
                    current.table_closed = True
                pending["server"] = True
            continue
        if _COMMAND_RE.search(stripped) and not _HEADER_START_RE.match(stripped):
            pending["command"] = stripped
            if re.search(r"--use_(?:cuda|rocm|neuron|hl)\b", stripped):
                pending["cuda"] = True
            continue
        if _HEADER_START_RE.match(stripped):
            _header(current, stripped, n, mode, kind)
            continue
        if _WARNING_RE.search(stripped):
            all_warnings.append(stripped)
            (current.warnings if current is not None and not current.table_closed else pending["warnings"]).append(stripped)
            continue
        if _ERROR_RE.match(stripped):
            all_errors.append(stripped)
            target = current if current is not None and not current.table_closed else None
            (target.errors if target is not None else pending["errors"]).append(stripped)
            if target is not None and target.table_open:
                target.table_open = False
            continue
        if _ROW_START_RE.match(stripped):
            _row(current, stripped, n, kind)
            continue
        if current is not None and current.table_open:
            if skip_foreign(ignored, n, stripped):
                continue
            raise _err(kind, "unexpected line inside the results table", line=n, text=stripped)
        if _CUDA_INIT_RE.search(stripped):
            pending["cuda"] = True
            continue
        gpu = _GPU_NAME_RE.search(stripped)
        if gpu:
            pending["gpu_name"] = gpu.group("name").strip()
            pending["cuda"] = True
            continue
        gpu = _GPU_PCI_RE.search(stripped)
        if gpu:
            pending["gpu_pci"] = gpu.group("pci")
            continue
        if current is not None and current.header is None and not _ADDRESS_RE.match(stripped) \
                and _KV_LINE_RE.match(stripped):
            _settings(current, stripped, n, kind)
            continue
        # Other lines (address/GID lines, CUDA teardown, prompts) carry no figures.

    if not sections:
        if all_errors:
            return _empty_result(mode, all_warnings, all_errors)
        raise _err(kind, "no perftest %s banner found" % ("BW" if mode == "bw" else "Latency"))
    for index, section in enumerate(sections):
        is_last = index == len(sections) - 1
        if section.header is None and not section.errors:
            end = sections[index + 1].line - 1 if not is_last else last_line
            raise _err(kind, "section %r has no results table (truncated?)" % section.test, line=end)
        if is_last and section.table_open and not section.errors:
            raise _err(kind, "results table not closed by its ---- line (truncated?)", line=last_line)
    peak_unmeasured = any("bw peak won't be measured" in w.lower() for w in all_warnings)
    built = [_build(section, mode, peak_unmeasured) for section in sections]
    if not any(s["results"] for s in built) and not all_errors:
        raise _err(kind, "no result rows found", line=last_line)
    chosen = None
    for candidate in reversed(built):
        if candidate["side"] == "client" and candidate["results"]:
            chosen = candidate
            break
    if chosen is None:
        with_results = [s for s in built if s["results"]]
        chosen = with_results[-1] if with_results else built[-1]
    result = dict(chosen)
    result["sections"] = built
    result["section_count"] = len(built)
    result["warnings"] = all_warnings
    result["errors"] = all_errors
    return with_ignored(result, ignored)


def _header(current, stripped, n, mode, kind):
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


def _row(current, stripped, n, kind):
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


def _settings(current, stripped, n, kind):
    for match in _KV_PAIR_RE.finditer(stripped):
        key = re.sub(r"\s+", " ", match.group(1).strip())
        value = match.group(2).strip()
        if key in current.settings and current.settings[key] != value:
            raise _err(kind, "conflicting values for %r in one section (%r, then %r)"
                       % (key, current.settings[key], value), line=n, text=stripped)
        current.settings[key] = value
        current.settings_line[key] = n


def _int_setting(settings, key):
    value = settings.get(key)
    if value is None:
        return None
    match = re.match(r"^(\d+)", value)
    return int(match.group(1)) if match else None


def _build(section, mode, peak_unmeasured):
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
        factor = 1.0 if section.unit == "Gb/sec" else MB_PER_SEC_TO_GBPS
        results = []
        for row in section.rows:
            peak = row["bw_peak"]
            peak_gbps = peak * factor
            if peak_unmeasured and peak == 0:
                peak_gbps = None
            results.append({
                "bytes": row["bytes"],
                "iterations": row["iterations"],
                "bw_peak_gbps": peak_gbps,
                "bw_avg_gbps": row["bw_avg"] * factor,
                "msg_rate_mpps": float(row["msg_rate_mpps"]),
            })
        out["unit_printed"] = section.unit
        out["peak_measured"] = not peak_unmeasured
        out["results"] = results
    else:
        out["results"] = [
            {key: (float(row[key]) if key not in ("bytes", "iterations") else row[key]) if key in row else None
             for key in _LAT_KEYS + (["tps_average"] if "tps_average" in row else [])}
            for row in section.rows
        ]
    return out


def _empty_result(mode, warnings, errors):
    out = {
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


def parse_perftest_bw(text):
    """Parse ib_write_bw / ib_read_bw / ib_send_bw output; see the module docstring."""
    return _parse(text, "bw", "ib-bw")


def parse_perftest_lat(text):
    """Parse ib_write_lat / ib_read_lat / ib_send_lat output; see the module docstring."""
    return _parse(text, "lat", "ib-lat")
