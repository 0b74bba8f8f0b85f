# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for iperf3 client (or server) output, text or ``--json``.

``parse_iperf3(text)`` auto-detects the format: the first line that is neither blank nor a
shell prompt/command line decides (``{`` or ``^C{`` -> JSON, anything else -> text).

Returned keys (top level = the LAST run in the text; every run is also in ``runs``):

- ``format`` (str): ``"json"`` or ``"text"``.
- ``runs`` (list of dict): one dict per run, in order, each with the per-run keys below.
  Several runs appear when ``iperf3 -J`` outputs were appended to one file (each JSON
  document is one run) or when a text capture holds several ``Connecting to host`` /
  ``Accepted connection from`` blocks.
- ``run_count`` (int): ``len(runs)``.

Per-run keys (also present at the top level, copied from the last run):

- ``protocol`` (str|None): ``"TCP"`` or ``"UDP"`` (None when the text does not say: a
  TCP server-side text capture has neither a ``Retr`` nor a ``Datagrams`` column).
- ``role`` (str|None): ``"client"`` / ``"server"`` when the output shows it.
- ``sent_bps`` / ``received_bps`` (float|None): bits per second from the end summary, the
  ``[SUM]`` line when there are several streams (JSON: ``end.sum_sent`` /
  ``end.sum_received``; UDP JSON without them: ``end.sum`` gives ``sent_bps``).
  ``received_bps`` is None when the run was interrupted before the server's figures
  arrived (iperf3 then prints a receiver summary of 0 bytes, which is not a measurement).
- ``sent_bytes`` / ``received_bytes`` (int|float|None): bytes of the same summary lines.
- ``streams`` (int|None): number of parallel streams (``-P``).
- ``duration_s`` (float|None): length of the sender summary interval (the receiver's when
  there is no sender line); ``receiver_duration_s`` (float|None): the receiver's.
- ``intervals`` (list of dict): per-interval totals ``{start, end, bps, bytes,
  retransmits, omitted}`` (+ ``packets`` for UDP): the ``[SUM]`` lines when streams > 1,
  else the single stream's lines (JSON: each ``intervals[].sum``). ``retransmits`` is None
  where the output has no such column. ``omitted`` is True for ``-O`` warm-up intervals.
- ``retransmits`` (int|None): TCP retransmits of the sender summary.
- ``jitter_ms`` (float|None), ``lost_packets`` (int|None), ``total_packets`` (int|None),
  ``lost_percent`` (float|None): UDP receiver figures (None for TCP).
- ``error`` (str|None): the error iperf3 reported (``iperf3: error - ...`` line, or the
  JSON ``error`` field). A run that only failed has ``error`` set and None numbers.
- ``interrupted`` (bool): the run was stopped by ^C (literal ``^C`` in the capture or an
  ``interrupt`` error).
- ``remote_host`` (str|None), ``remote_port`` (int|None), ``local_host`` (str|None).
- ``version`` (str|None): e.g. ``"iperf 3.9"`` (JSON) or from a ``-V`` text line.
- ``reverse`` (bool|None): JSON ``test_start.reverse``; None in text.
- ``warnings`` (list of str): ``warning: ...`` lines.

Units (iperf3 src/units.c): rates printed in ``bits/sec``, ``Kbits/sec``, ``Mbits/sec``,
``Gbits/sec``, ``Tbits/sec`` are decimal (x1e3, x1e6...); byte amounts ``KBytes``,
``MBytes``, ``GBytes``, ``TBytes`` (and ``-f K/M/G`` rates in ``...Bytes/sec``) are
1024-based. Byte counts are int when the printed number is integral, float otherwise.

Damaged input raises ParseError naming the 1-based line: a malformed interval/summary line,
broken or truncated JSON, a run without its end summary, a sender summary without the
receiver line (truncated), several streams without a ``[SUM]`` line, iperf (2) output,
``--bidir`` output (not supported), empty input, and a figure iperf3 never prints: negative, not
finite (JSON ``1e400``) or above common's ``MAX_NUMBER`` (2^64-1: ``1e308``), named by its JSON path
(``end.sum_received.bytes``) and the document's line, or by its text line.

Foreign lines (common's ``foreign_line``: a script's banner or rule, an echoed command, a note,
an elision) never decide the format. In JSON output they are skipped before, between and after
the documents and listed in ``ignored_lines`` (``[{line, text, why}]``, present only when one
was); inside a document they are broken JSON. Text output reads no figure from a line it does not
know and lists nothing. A placeholder (``<masked>``) for a host reads as None.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional, TypedDict

from gpufleet.parsers.common import (
    IgnoredLine, ParseError, bounded_number, foreign_line, is_placeholder, parse_number, skip_foreign,
    strip_rank_prefix, with_ignored,
)

KIND = "iperf3"

_PROMPT_RE = re.compile(r"^\s*(?:\[[^\]]*\]|[\w.@:~/+-]*)\s*[$#%>](?:\s+\S.*)?\s*$")
_CARET_C_RE = re.compile(r"^(\s*\^C)+")
_INTERVAL_START_RE = re.compile(r"^\[\s*(?:\d+|SUM)\s*\](?:\[[^\]]*\])?\s+\d")
_INTERVAL_RE = re.compile(
    r"^\[\s*(?P<id>\d+|SUM)\s*\](?P<tag>\[[^\]]*\])?\s+"
    r"(?P<start>\d+(?:\.\d+)?)\s*-\s*(?P<end>\d+(?:\.\d+)?)\s+sec\s+"
    r"(?P<xfer>\d+(?:\.\d+)?)\s+(?P<xunit>[KMGT]?Bytes)\s+"
    r"(?P<rate>\d+(?:\.\d+)?)\s+(?P<runit>[KMGT]?(?:bits|Bytes)/sec)"
    r"(?P<rest>.*)$"
)
_CONNECTED_RE = re.compile(
    r"^\[\s*(?P<id>\d+)\s*\]\s+local\s+(?P<local>\S+)\s+port\s+(?P<lport>\d+)\s+connected\s+(?:to|with)\s+"
    r"(?P<remote>\S+)\s+port\s+(?P<rport>\d+)"
)
_CONNECTING_RE = re.compile(r"^Connecting to host\s+(?P<host>[^,\s]+),\s*port\s+(?P<port>\d+)")
_ACCEPTED_RE = re.compile(r"^Accepted connection from\s+(?P<host>[^,\s]+),\s*port\s+(?P<port>\d+)")
_HEADER_RE = re.compile(r"^\[\s*ID\s*\]\s+Interval")
_UDP_SUMMARY_RE = re.compile(
    r"^(?P<jitter>\d+(?:\.\d+)?)\s+ms\s+(?P<lost>-?\d+)\s*/\s*(?P<total>\d+)\s*(?:\((?P<pct>[^)]*)%\))?$"
)
_CWND_RE = re.compile(r"^(?P<value>\d+(?:\.\d+)?)\s+(?P<unit>[KMGT]?Bytes)$")
_COMMAND_HOST_RE = re.compile(r"\biperf3\b.*?\s(?:-c|--client)\s*(?P<host>[^\s-][^\s]*)")
_VERSION_RE = re.compile(r"^(?P<version>iperf \d+\.\d+[\w.+-]*)")

_BYTE_FACTOR = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4}
_BIT_FACTOR = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _err(message: str, line: int | None = None, text: str | None = None) -> ParseError:
    return ParseError(message, line=line, kind=KIND, text=text)


def _is_prompt(line: str) -> bool:
    stripped = line.strip()
    if not stripped:
        return False
    if _PROMPT_RE.match(stripped) and not stripped.startswith("["):
        return True
    # "[root@host ~]# cmd" style prompts
    return bool(re.match(r"^\[[^\]]*@[^\]]*\][$#]", stripped))


def _host(value: object) -> Optional[str]:
    """A host name or address as printed; None for a non-string or a placeholder (``<masked>``)."""
    return value if isinstance(value, str) and not is_placeholder(value) else None


def _number(raw: str, line: int) -> int | float:
    """int when integral in the source, float otherwise; a number above common's MAX_NUMBER raises naming ``line``."""
    number = parse_number(raw, line=line, kind=KIND)
    if number is None:  # never: every caller passes digits its pattern matched, no "no value" spelling
        raise _err("not a number: %r" % raw, line=line)
    return number


def _unsigned(raw: str, line: int, text: str, what: str) -> int | float:
    """A count or share iperf3 prints as 0 or more (lost datagrams, their percentage); a negative one raises."""
    number = _number(raw, line)
    if number < 0:
        raise _err("%s %s is negative" % (what, raw), line=line, text=text)
    return number


def _bytes(value: str, unit: str, line: int) -> int | float:
    prefix = unit[:-5]  # strip "Bytes"
    return bounded_number(_number(value, line) * _BYTE_FACTOR[prefix], line=line, kind=KIND, what="byte count")


def _bps(value: str, unit: str, line: int) -> float:
    if "Bytes" in unit:
        prefix = unit[: -len("Bytes/sec")]
        rate = float(_number(value, line)) * 8.0 * _BYTE_FACTOR[prefix]
    else:
        rate = float(_number(value, line)) * _BIT_FACTOR[unit[: -len("bits/sec")]]
    return bounded_number(rate, line=line, kind=KIND, what="rate")


def _new_run(fmt: str) -> dict[str, Any]:
    return {
        "format": fmt,
        "protocol": None,
        "role": None,
        "sent_bps": None,
        "received_bps": None,
        "sent_bytes": None,
        "received_bytes": None,
        "streams": None,
        "duration_s": None,
        "receiver_duration_s": None,
        "intervals": [],
        "retransmits": None,
        "jitter_ms": None,
        "lost_packets": None,
        "total_packets": None,
        "lost_percent": None,
        "error": None,
        "interrupted": False,
        "remote_host": None,
        "remote_port": None,
        "local_host": None,
        "version": None,
        "reverse": None,
        "warnings": [],
    }


def _finish(runs: list[dict[str, Any]], fmt: str) -> dict[str, Any]:
    result = dict(runs[-1])
    result["format"] = fmt
    result["runs"] = runs
    result["run_count"] = len(runs)
    return result


def parse_iperf3(text: str) -> dict[str, Any]:
    """Parse iperf3 output (text or ``--json``); see the module docstring for the keys."""
    pairs = strip_rank_prefix(text, KIND)
    for _n, line in pairs:
        stripped = _CARET_C_RE.sub("", line).strip()
        # a banner or an echoed command above the output does not decide its format (nor is it
        # listed: in text output a "-----" rule is iperf3's own)
        if not stripped or _is_prompt(line) or foreign_line(stripped):
            continue
        if stripped.startswith("{"):
            return _parse_json(pairs)
        break
    return _parse_text(pairs)


# ----------------------------------------------------------------------------- JSON


def _line_of(offsets: list[int], pos: int) -> int:
    """1-based line of character ``pos`` given the start offset of every line."""
    lo, hi = 0, len(offsets) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if offsets[mid] <= pos:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1


def _parse_json(pairs: list[tuple[int, str]]) -> dict[str, Any]:
    caret = False
    lines = []
    for _n, line in pairs:
        match = _CARET_C_RE.match(line)
        if match:
            caret = True
            line = " " * match.end() + line[match.end():]
        lines.append(line)
    clean = "\n".join(lines)
    offsets = [0]
    for line in lines[:-1]:
        offsets.append(offsets[-1] + len(line) + 1)
    last_content_line = max(n for n, line in pairs if line.strip())

    decoder = json.JSONDecoder(parse_constant=lambda _name: None)
    runs: list[dict[str, Any]] = []
    ignored: list[IgnoredLine] = []
    pos = 0
    length = len(clean)
    while pos < length:
        char = clean[pos]
        if char.isspace():
            pos += 1
            continue
        line_no = _line_of(offsets, pos)
        if char != "{":
            line_text = lines[line_no - 1]
            if _is_prompt(line_text) or "iperf3" in line_text or skip_foreign(ignored, line_no, line_text):
                pos = offsets[line_no - 1] + len(line_text)
                continue
            raise _err("unexpected text outside the JSON documents", line=line_no, text=line_text.strip())
        try:
            doc, end = decoder.raw_decode(clean, pos)
        except json.JSONDecodeError as exc:
            bad_line = exc.lineno
            if exc.pos >= len(clean.rstrip()):
                bad_line = last_content_line
            raise _err("broken or truncated JSON: %s" % exc.msg, line=min(bad_line, last_content_line)) from None
        except RecursionError:
            raise _err("JSON nested too deeply", line=line_no) from None
        runs.append(_run_from_json(doc, line_no, caret))
        pos = end
    if not runs:
        raise _err("no iperf3 JSON document found")
    return with_ignored(_finish(runs, "json"), ignored)


def _jnum(obj: Any, key: str, line: int, what: str) -> int | float | None:
    """A figure of the document: a finite number, not negative (iperf3 prints none below 0), within common's
    MAX_NUMBER; anything else raises naming its JSON path and the document's line."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if value is None:
        return None
    path = "%s.%s" % (what, key) if what else key
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _err("%s is not a number: %r" % (path, value), line=line)
    bounded_number(value, line=line, kind=KIND, what=path)
    if value < 0:
        raise _err("%s is negative: %r" % (path, value), line=line)
    return value


def _jobj(parent: Any, key: str, line: int, what: str) -> dict[str, Any]:
    value = parent.get(key) if isinstance(parent, dict) else None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _err("%s.%s is not an object" % (what, key), line=line)
    return value


def _fnum(value: int | float | None) -> float | None:
    return None if value is None else float(value)


def _run_from_json(doc: Any, line: int, caret: bool) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise _err("JSON document is not an object", line=line)
    if not any(key in doc for key in ("start", "end", "intervals", "error")):
        raise _err("JSON document is not iperf3 --json output (no start/end/intervals/error)", line=line)
    run = _new_run("json")
    error = doc.get("error")
    if error is not None and not isinstance(error, str):
        error = json.dumps(error)
    run["error"] = error
    run["interrupted"] = bool(caret or (error and "interrupt" in error.lower()))
    _json_start(run, _jobj(doc, "start", line, ""), line)
    _json_intervals(run, doc.get("intervals") or [], line)
    _json_end(run, _jobj(doc, "end", line, ""), line)
    return run


def _json_start(run: dict[str, Any], start: dict[str, Any], line: int) -> None:
    """The document's ``start`` object: version, protocol, streams and the two ends of the connection."""
    version = start.get("version")
    run["version"] = version if isinstance(version, str) else None
    test_start = _jobj(start, "test_start", line, "start")
    protocol = test_start.get("protocol")
    run["protocol"] = protocol.upper() if isinstance(protocol, str) else None
    reverse = test_start.get("reverse")
    run["reverse"] = bool(reverse) if isinstance(reverse, (int, bool)) else None
    connected = start.get("connected")
    connected = connected if isinstance(connected, list) else []
    streams = _jnum(test_start, "num_streams", line, "start.test_start")
    run["streams"] = int(streams) if streams is not None else (len(connected) or None)
    connecting = _jobj(start, "connecting_to", line, "start")
    accepted = _jobj(start, "accepted_connection", line, "start")
    if connecting:
        run["role"] = "client"
        run["remote_host"] = _host(connecting.get("host"))
        run["remote_port"] = _jnum(connecting, "port", line, "start.connecting_to")
    elif accepted:
        run["role"] = "server"
        run["remote_host"] = _host(accepted.get("host"))
        run["remote_port"] = _jnum(accepted, "port", line, "start.accepted_connection")
    if connected and isinstance(connected[0], dict):
        first = connected[0]
        if run["remote_host"] is None:
            run["remote_host"] = _host(first.get("remote_host"))
        run["local_host"] = _host(first.get("local_host"))


def _json_intervals(run: dict[str, Any], intervals: Any, line: int) -> None:
    """The document's ``intervals``: each one's ``sum`` (UDP ones with their datagram count)."""
    if not isinstance(intervals, list):
        raise _err("intervals is not a list", line=line)
    for index, interval in enumerate(intervals):
        total = _jobj(interval, "sum", line, "intervals[%d]" % index)
        if not total:
            raise _err("intervals[%d] has no sum" % index, line=line)
        what = "intervals[%d].sum" % index
        entry = {
            "start": _fnum(_jnum(total, "start", line, what)),
            "end": _fnum(_jnum(total, "end", line, what)),
            "bps": _fnum(_jnum(total, "bits_per_second", line, what)),
            "bytes": _jnum(total, "bytes", line, what),
            "retransmits": _jnum(total, "retransmits", line, what),
            "omitted": bool(total.get("omitted", False)),
        }
        if run["protocol"] == "UDP":
            entry["packets"] = _jnum(total, "packets", line, what)
        run["intervals"].append(entry)


def _json_end(run: dict[str, Any], end: dict[str, Any], line: int) -> None:
    """The document's ``end``: the sender's and the receiver's totals, and UDP's jitter and loss."""
    sum_sent = _jobj(end, "sum_sent", line, "end")
    sum_received = _jobj(end, "sum_received", line, "end")
    udp_sum = _jobj(end, "sum", line, "end")
    if not sum_sent and udp_sum and "jitter_ms" in udp_sum:
        sum_sent = udp_sum
    if sum_sent:
        run["sent_bps"] = _fnum(_jnum(sum_sent, "bits_per_second", line, "end.sum_sent"))
        run["sent_bytes"] = _jnum(sum_sent, "bytes", line, "end.sum_sent")
        run["duration_s"] = _fnum(_jnum(sum_sent, "seconds", line, "end.sum_sent"))
        run["retransmits"] = _jnum(sum_sent, "retransmits", line, "end.sum_sent")
    if sum_received and sum_received is not sum_sent:
        bps = _fnum(_jnum(sum_received, "bits_per_second", line, "end.sum_received"))
        nbytes = _jnum(sum_received, "bytes", line, "end.sum_received")
        if run["interrupted"] and not bps and not nbytes:
            bps = nbytes = None  # the server's figures never arrived
        run["received_bps"] = bps
        run["received_bytes"] = nbytes
        run["receiver_duration_s"] = _fnum(_jnum(sum_received, "seconds", line, "end.sum_received"))
        if run["duration_s"] is None:
            run["duration_s"] = run["receiver_duration_s"]
    udp_source = sum_received if "jitter_ms" in sum_received else udp_sum
    if run["protocol"] == "UDP" or "jitter_ms" in udp_source:
        run["jitter_ms"] = _fnum(_jnum(udp_source, "jitter_ms", line, "end.sum"))
        run["lost_packets"] = _jnum(udp_source, "lost_packets", line, "end.sum")
        run["total_packets"] = _jnum(udp_source, "packets", line, "end.sum")
        run["lost_percent"] = _fnum(_jnum(udp_source, "lost_percent", line, "end.sum"))


# ----------------------------------------------------------------------------- text


class _TextRun:
    """Accumulates the lines of one text run."""

    def __init__(self) -> None:
        self.run = _new_run("text")
        self.stream_ids: set[int | float] = set()
        self.stream_intervals: list[dict[str, Any]] = []
        self.sum_intervals: list[dict[str, Any]] = []
        # role ("sender"/"receiver") -> stream id (or "SUM") -> its summary line's entry
        self.summaries: dict[str, dict[str, dict[str, Any]]] = {"sender": {}, "receiver": {}}
        self.header_udp: bool | None = None
        self.last_line: int | None = None
        self.has_content = False
        self.command_host: str | None = None


class _RestInfo(TypedDict):
    """What follows the rate column of an interval or summary line."""

    role: str | None
    omitted: bool
    retransmits: int | float | None
    packets: int | float | None
    cwnd: int | float | None
    jitter: float | None
    lost: int | float | None
    total: int | float | None
    pct: float | None


def _parse_rest(rest: str, n: int, line: str, current: _TextRun) -> _RestInfo:
    """Decode what follows the rate column: retransmits/cwnd, datagrams, jitter/loss, role."""
    rest = rest.strip()
    info: _RestInfo = {"role": None, "omitted": False, "retransmits": None, "packets": None, "cwnd": None,
                       "jitter": None, "lost": None, "total": None, "pct": None}
    if rest.endswith("(omitted)"):
        info["omitted"] = True
        rest = rest[: -len("(omitted)")].strip()
    for role in ("sender", "receiver"):
        if rest == role or rest.endswith(" " + role):
            info["role"] = role
            rest = rest[: -len(role)].strip()
            break
    if not rest:
        return info
    udp = _UDP_SUMMARY_RE.match(rest)
    if udp:
        info["jitter"] = float(_number(udp.group("jitter"), n))
        info["lost"] = _unsigned(udp.group("lost"), n, line, "lost datagrams")
        info["total"] = _number(udp.group("total"), n)
        pct = (udp.group("pct") or "").strip()
        readable = re.fullmatch(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", pct)
        info["pct"] = float(_unsigned(pct, n, line, "lost percentage")) if readable else None
        return info
    tokens = rest.split(None, 1)
    if not re.fullmatch(r"\d+", tokens[0]):
        raise _err("unreadable columns after the rate: %r" % rest, line=n, text=line)
    count = _number(tokens[0], n)
    if len(tokens) == 2:
        cwnd = _CWND_RE.match(tokens[1].strip())
        if not cwnd:
            raise _err("unreadable Cwnd column: %r" % tokens[1], line=n, text=line)
        info["cwnd"] = _bytes(cwnd.group("value"), cwnd.group("unit"), n)
        info["retransmits"] = count
        return info
    if info["role"] is None and current.header_udp is None:
        raise _err("a number column without a column header (Retr or Datagrams?)", line=n, text=line)
    if info["role"] is None and current.header_udp:
        info["packets"] = count
    else:
        info["retransmits"] = count
    return info


class _TextReader:
    """One pass over iperf3's text output: its runs, each line going to the first step that takes it."""

    def __init__(self) -> None:
        self.runs: list[_TextRun] = []
        self.current = _TextRun()

    def start_new_run(self) -> None:
        if self.current.has_content:
            self.runs.append(self.current)
            self.current = _TextRun()

    def read_line(self, n: int, line: str) -> None:
        caret = _CARET_C_RE.match(line)
        if caret:
            self.current.run["interrupted"] = True
            line = line[caret.end():]
        stripped = line.strip()
        if not stripped:
            return
        if stripped.startswith("Client connecting to") or stripped.startswith("Server listening on TCP port") \
                or stripped.startswith("Server listening on UDP port"):
            raise _err("this is iperf (version 2) output, not iperf3", line=n, text=stripped)
        if _is_prompt(line):
            self._prompt(n, stripped)
            return
        if self._connection(n, stripped):
            return
        self.current.last_line = n
        # the order is the precedence: a "connected" line before the interval lines, ...
        for step in (self._connected, self._header, self._interval, self._message, self._version):
            if step(n, stripped):
                return
        # Anything else (banners, "iperf Done.", separators, cookie lines) carries no figures.

    def _prompt(self, n: int, stripped: str) -> None:
        """A prompt line: an iperf3 command on it starts a run (its -c host is the remote end)."""
        if "iperf3" not in stripped:
            return
        if self.current.has_content:
            self.start_new_run()
        self.current.last_line = n
        cmd = _COMMAND_HOST_RE.search(stripped)
        if cmd:
            self.current.command_host = _host(cmd.group("host"))
            self.current.run["role"] = "client"

    def _connection(self, n: int, stripped: str) -> bool:
        """"Connecting to host" (a client) or "Accepted connection from" (a server) starts a run."""
        for pattern, role in ((_CONNECTING_RE, "client"), (_ACCEPTED_RE, "server")):
            match = pattern.match(stripped)
            if match:
                self.start_new_run()
                run = self.current.run
                run["role"] = role
                run["remote_host"] = _host(match.group("host"))
                run["remote_port"] = _number(match.group("port"), n)
                self.current.last_line = n
                return True
        return False

    def _connected(self, n: int, stripped: str) -> bool:
        match = _CONNECTED_RE.match(stripped)
        if not match:
            return False
        current = self.current
        current.stream_ids.add(_number(match.group("id"), n))
        current.run["local_host"] = _host(match.group("local"))
        if current.run["remote_host"] is None:
            current.run["remote_host"] = _host(match.group("remote"))
            current.run["remote_port"] = _number(match.group("rport"), n)
        return True

    def _header(self, n: int, stripped: str) -> bool:
        if not _HEADER_RE.match(stripped):
            return False
        current = self.current
        is_udp = "Datagrams" in stripped or "Jitter" in stripped
        if current.header_udp is None:
            current.header_udp = is_udp
        if is_udp:
            current.run["protocol"] = "UDP"
        elif "Retr" in stripped or "Cwnd" in stripped:
            current.run["protocol"] = current.run["protocol"] or "TCP"
        return True

    def _interval(self, n: int, stripped: str) -> bool:
        if not _INTERVAL_START_RE.match(stripped):
            return False
        _text_interval(stripped, n, self.current)
        return True

    def _message(self, n: int, stripped: str) -> bool:
        """iperf3's own "iperf3: ..." lines (an error, or a warning) and bare warning lines."""
        run = self.current.run
        lowered = stripped.lower()
        if lowered.startswith("iperf3:"):
            message = stripped[len("iperf3:"):].strip()
            if message.lower().startswith("warning"):
                run["warnings"].append(message)
                return True
            run["error"] = message
            self.current.has_content = True
            if "interrupt" in message.lower():
                run["interrupted"] = True
            return True
        if lowered.startswith("warning"):
            run["warnings"].append(stripped)
            return True
        return False

    def _version(self, n: int, stripped: str) -> bool:
        version = _VERSION_RE.match(stripped)
        if not version or self.current.run["version"] is not None:
            return False
        self.current.run["version"] = version.group("version")
        return True


def _parse_text(pairs: list[tuple[int, str]]) -> dict[str, Any]:
    reader = _TextReader()
    for n, raw in pairs:
        reader.read_line(n, raw)
    runs = reader.runs
    if reader.current.has_content or not runs:
        runs.append(reader.current)
    if not any(r.has_content for r in runs):
        raise _err("no iperf3 results found")
    finished = [_finish_text_run(r) for r in runs]
    return _finish(finished, "text")


def _text_interval(stripped: str, n: int, current: _TextRun) -> None:
    match = _INTERVAL_RE.match(stripped)
    if not match:
        raise _err("unreadable interval/summary line", line=n, text=stripped)
    if match.group("tag"):
        raise _err("--bidir output ([TX-C]/[RX-C] tags) is not supported", line=n, text=stripped)
    info = _parse_rest(match.group("rest"), n, stripped, current)
    stream_id = match.group("id")
    entry = {
        "start": float(_number(match.group("start"), n)),
        "end": float(_number(match.group("end"), n)),
        "bps": _bps(match.group("rate"), match.group("runit"), n),
        "bytes": _bytes(match.group("xfer"), match.group("xunit"), n),
        "retransmits": info["retransmits"],
        "omitted": info["omitted"],
        "_packets": info["packets"],
        "_info": info,
        "_line": n,
    }
    current.has_content = True
    if stream_id != "SUM":
        current.stream_ids.add(_number(stream_id, n))
    role = info["role"]
    if role is None and info["jitter"] is not None:
        role = "sender"  # iperf3 3.0/3.1 UDP summary: one line, sender bytes + receiver jitter/loss
    if role is not None:
        key = stream_id
        if key in current.summaries[role]:
            raise _err("second %s summary for stream %s" % (role, key), line=n, text=stripped)
        current.summaries[role][key] = entry
        return
    if current.summaries["sender"] or current.summaries["receiver"]:
        raise _err("interval line after the end summary", line=n, text=stripped)
    if stream_id == "SUM":
        current.sum_intervals.append(entry)
    else:
        current.stream_intervals.append(entry)


def _pick(summaries: dict[str, dict[str, dict[str, Any]]], role: str, streams: int | None,
          last_line: int | None) -> dict[str, Any] | None:
    entries = summaries[role]
    if not entries:
        return None
    if "SUM" in entries:
        return entries["SUM"]
    if len(entries) == 1 and (streams or 1) <= 1:
        return next(iter(entries.values()))
    raise _err("%d streams but no [SUM] %s line (truncated?)" % (len(entries), role), line=last_line)


def _public_interval(entry: dict[str, Any], udp: bool) -> dict[str, Any]:
    out = {key: entry[key] for key in ("start", "end", "bps", "bytes", "retransmits", "omitted")}
    if udp:
        out["packets"] = entry["_packets"]
    return out


def _finish_text_run(textrun: _TextRun) -> dict[str, Any]:
    run = textrun.run
    if not textrun.has_content:
        raise _err("no interval or summary lines for this run (truncated?)", line=textrun.last_line)
    streams = len(textrun.stream_ids) or None
    run["streams"] = streams
    if run["remote_host"] is None and textrun.command_host:
        run["remote_host"] = textrun.command_host
    _text_intervals(textrun, streams)
    sender = _pick(textrun.summaries, "sender", streams, textrun.last_line)
    receiver = _pick(textrun.summaries, "receiver", streams, textrun.last_line)
    failed = run["error"] is not None or run["interrupted"]
    if sender is None and receiver is None and not failed:
        raise _err("no end summary (sender/receiver lines): output truncated?", line=textrun.last_line)
    if sender is not None and receiver is None and not failed and sender["_info"]["jitter"] is None:
        raise _err("sender summary without the receiver line (truncated?)", line=textrun.last_line)
    _text_totals(run, sender, receiver, failed)
    udp_entry = receiver if receiver is not None and receiver["_info"]["jitter"] is not None else sender
    if udp_entry is not None and udp_entry["_info"]["jitter"] is not None:
        info = udp_entry["_info"]
        run["protocol"] = "UDP"
        run["jitter_ms"] = info["jitter"]
        run["lost_packets"] = info["lost"]
        run["total_packets"] = info["total"]
        run["lost_percent"] = info["pct"]
    return run


def _text_intervals(textrun: _TextRun, streams: int | None) -> None:
    """The run's intervals: the [SUM] lines of several streams, else the one stream's lines."""
    run = textrun.run
    if streams and streams > 1:
        chosen = textrun.sum_intervals
        if textrun.stream_intervals and not chosen:
            raise _err("%d streams but no [SUM] interval lines" % streams, line=textrun.stream_intervals[-1]["_line"])
    else:
        chosen = textrun.stream_intervals or textrun.sum_intervals
    udp = run["protocol"] == "UDP"
    run["intervals"] = [_public_interval(e, udp) for e in chosen]


def _text_totals(run: dict[str, Any], sender: dict[str, Any] | None, receiver: dict[str, Any] | None,
                 failed: bool) -> None:
    """The sender's and the receiver's summary lines as the run's totals."""
    if sender is not None:
        run["sent_bps"] = sender["bps"]
        run["sent_bytes"] = sender["bytes"]
        run["duration_s"] = round(sender["end"] - sender["start"], 6)
        run["retransmits"] = sender["retransmits"]
    if receiver is not None:
        bps, nbytes = receiver["bps"], receiver["bytes"]
        if failed and not bps and not nbytes:
            bps = nbytes = None
        run["received_bps"] = bps
        run["received_bytes"] = nbytes
        run["receiver_duration_s"] = round(receiver["end"] - receiver["start"], 6)
        if run["duration_s"] is None:
            run["duration_s"] = run["receiver_duration_s"]
