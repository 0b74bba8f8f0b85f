# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the kernel log's NVIDIA events, KIND ``kernel-log``.

``parse_kernel_log(text)`` reads ``dmesg``, ``dmesg -T``, ``dmesg --time-format iso``,
``dmesg --decode`` (``kern  :warn  : `` prefix, with or without ``--time-format iso``),
``journalctl -k -o short-iso`` and ``journalctl -k`` (``short``) and returns::

    {
      "format": str | None,        # prefix of the first timestamped line: "dmesg" ([  12.345678]),
                                   # "dmesg-ctime" (-T), "iso" (--time-format iso), "journal-short-iso",
                                   # "journal-short"; None when no line had a timestamp
      "decoded": bool,             # lines carried the --decode "facility:level :" prefix
      "line_count": int,           # non-empty lines read (journalctl "-- ... --" marks excluded)
      "no_entries": bool,          # journalctl printed "-- No entries --"
      "events": [                  # one per "NVRM: Xid (...)" line, in log order
        {
          "line": int,             # 1-based line number in the text
          "timestamp": str | None, # as printed ("2024-11-15T12:02:03,470068+00:00", "315905.140245",
                                   # "Sun Feb 23 16:24:18 2025")
          "pci": str,              # as printed without "PCI:" ("0000:19:00"; the Xid line has no function)
          "xid": int,
          "pid": int | None,       # None for pid='<unknown>' or when the Xid prints no pid
          "process": str | None,   # name=...; None for <unknown> or when absent
          "message": str,          # the rest of the line ("Ch 00000008", the raw hex words of Xid 62)
        }
      ],
      "xid_counts": {str: int},    # "48" -> occurrences (keys are strings: they become JSON keys)
      "fallen_off_bus": [str],     # GPU addresses reported as "fallen off the bus" (multi-line NVRM
                                   # message or Xid 79), first-seen order, each once
      "peermem_errors": int,       # nvidia-peermem / nv_peer_mem lines saying ERROR
      "peermem_first_line": int | None,
      "recovery_actions": {str: str | None},  # GPU address -> the action the LAST Xid 154 of that GPU
                                   # changed to ("GPU Reset Required", "None"; None when unreadable);
                                   # every Xid 154 event also carries "recovery_action"
      "sxid_events": [             # one per NVSwitch SXid headline ("..., Fatal, ..." / "..., Non-fatal, ...");
        {line, timestamp, switch ("nvswitch3"), pci ("0000:05:00.0"), sxid: int, fatal: bool | None, message}
      ],                           # the "Severity ..." / "Data {...}" lines that follow are details, not events;
                                   # a switch's SXid seen only in detail lines is one event, fatal None (unknown)
      "sxid_counts": {str: int},   # "20034" -> events
    }

Continuation lines (the indented second and third lines of a multi-line ``NVRM:`` message under
plain ``dmesg``) are joined to the message they continue. Raises :class:`ParseError` (1-based
line) for text that is not a string and for an ``NVRM: Xid`` line whose address or number cannot
be read (a truncated line). Empty text is not an error here (``line_count`` 0): a kernel log
with nothing in it says nothing, and the caller decides what that means.
"""

from __future__ import annotations

import re
from typing import Any

from gpufleet.parsers.common import ParseError, numbered_lines, strip_ansi

KIND = "kernel-log"

_DECODE_RE = re.compile(r"^([a-z]+)\s*:([a-z]+)\s*: ")
_MONO_RE = re.compile(r"^\[\s*(\d+\.\d+)\]\s?")
_CTIME_RE = re.compile(r"^\[((?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\]\s?")
_ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[+-]\d\d:?\d\d|Z)?"
_JOURNAL_ISO_RE = re.compile(r"^(" + _ISO + r") (\S+) kernel: ?")
_ISO_RE = re.compile(r"^(" + _ISO + r")\s")
_JOURNAL_SHORT_RE = re.compile(r"^([A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d) (\S+) kernel: ?")
_JOURNAL_MARK_RE = re.compile(r"^-- .* --$")

_XID_START_RE = re.compile(r"NVRM: Xid\b")
_XID_RE = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): (\d+)(?:,\s*|\s*$)(.*)$")
_PID_RE = re.compile(r"^pid=('?<unknown>'?|\d+),\s*")
_NAME_RE = re.compile(r"^name=([^,]*),?\s*")
_GPU_ADDR_RE = re.compile(r"(?:NVIDIA GPU|GPU at PCI:|GPU) ((?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\b")
# A multi-line NVRM message logged one line per record names the GPU at most this many records earlier.
_CONTINUATION_RECORDS = 3
_PEERMEM_RE = re.compile(r"\b(?:nvidia[-_]peermem|nv_peer_mem)\b.*\bERROR\b")
# NVSwitch driver: "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 48 LTSSM Fault Up"; the
# lines after the headline repeat the number with "Severity ...", "Data {...}" (details, not new events).
_SXID_HEAD = (r"\bnvidia-(nvswitch\d+): SXid "
              r"\((?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): (\d+), ")
_SXID_RE = re.compile(_SXID_HEAD + r"(Fatal|Non-fatal), ?(.*)$")
# The detail lines of an SXid: "nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Severity 1 Engine instance 60 ..."
# and "..., Data {0x10000000, ...}". A log may hold them without their headline (rate-limited or cut): the SXid
# still happened, its severity unknown.
_SXID_DETAIL_RE = re.compile(_SXID_HEAD + r"((?:Severity|Data)\b.*)$")
# Xid 154 (R570+): "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)".
_RECOVERY_RE = re.compile(r"recovery action changed from .*? to (0x[0-9A-Fa-f]+) \(([^)]*)\)")


def _strip_prefix(line: str) -> tuple[str | None, str | None, str, bool]:
    """``(format, timestamp, message, decoded)`` of one line, the prefixes removed."""
    decoded = False
    match = _DECODE_RE.match(line)
    if match:
        decoded = True
        line = line[match.end():]
    for fmt, regex in (("journal-short-iso", _JOURNAL_ISO_RE), ("iso", _ISO_RE), ("dmesg", _MONO_RE),
                       ("dmesg-ctime", _CTIME_RE), ("journal-short", _JOURNAL_SHORT_RE)):
        match = regex.match(line)
        if match:
            return fmt, match.group(1), line[match.end():], decoded
    return None, None, line, decoded


def _xid_event(number: int, timestamp: str | None, message: str, line: str) -> dict[str, Any]:
    match = _XID_RE.search(message)
    if not match:
        raise ParseError("an NVRM Xid line whose address or Xid number cannot be read", line=number, kind=KIND,
                         text=line)
    pci, xid, rest = match.group(1).lower(), int(match.group(2)), match.group(3).strip()
    pid: int | None = None
    process: str | None = None
    pid_match = _PID_RE.match(rest)
    if pid_match:
        pid = int(pid_match.group(1)) if pid_match.group(1).isdigit() else None
        rest = rest[pid_match.end():]
        name_match = _NAME_RE.match(rest)
        if name_match:
            process = name_match.group(1).strip()
            if process in ("<unknown>", "'<unknown>'", ""):
                process = None
            rest = rest[name_match.end():]
    event: dict[str, Any] = {"line": number, "timestamp": timestamp, "pci": pci, "xid": xid, "pid": pid,
                             "process": process, "message": rest.strip()}
    if xid == 154:
        changed = _RECOVERY_RE.search(rest)
        event["recovery_action"] = changed.group(2).strip() if changed else None
    return event


class _Record:
    """One logged message: its first line's number, its time stamp, its text (continuation lines joined), its lines."""

    def __init__(self, number: int, timestamp: str | None, message: str, lines: list[tuple[int, str]]) -> None:
        self.number = number
        self.timestamp = timestamp
        self.message = message
        self.lines = lines


# (switch, SXid number) -> (line, timestamp, match) of its first detail line
_SxidDetails = dict[tuple[str, str], tuple[int, str | None, re.Match[str]]]


def parse_kernel_log(text: object) -> dict[str, Any]:
    """Parse a kernel log (see the module docstring for the keys)."""
    if not isinstance(text, str):
        raise ParseError("expected text, got %s" % type(text).__name__, kind=KIND)
    result: dict[str, Any] = {
        "format": None,
        "decoded": False,
        "line_count": 0,
        "no_entries": False,
        "events": [],
        "xid_counts": {},
        "fallen_off_bus": [],
        "peermem_errors": 0,
        "peermem_first_line": None,
        "recovery_actions": {},
        "sxid_events": [],
        "sxid_counts": {},
    }
    records = _records(text, result)
    last_named: tuple[int, str] | None = None  # (record index, address) of the last record naming a GPU address
    details: _SxidDetails = {}
    for index, record in enumerate(records):
        named = _GPU_ADDR_RE.search(record.message)
        if named:
            last_named = (index, named.group(1).lower())
        _read_xid(result, record, index, last_named)
        _read_sxid(result, record, details)
        if _PEERMEM_RE.search(record.message):
            result["peermem_errors"] += 1
            if result["peermem_first_line"] is None:
                result["peermem_first_line"] = record.number
    _sxids_from_details(result, details)
    return result


def _records(text: str, result: dict[str, Any]) -> list[_Record]:
    """The log's messages, each with its continuation lines; counts lines and notes the format in ``result``."""
    records: list[_Record] = []
    for number, raw in numbered_lines(text):
        line = strip_ansi(raw).rstrip()
        if not line.strip():
            continue
        if _JOURNAL_MARK_RE.match(line.strip()):
            if line.strip() == "-- No entries --":
                result["no_entries"] = True
            continue
        result["line_count"] += 1
        fmt, timestamp, message, decoded = _strip_prefix(line)
        result["decoded"] = result["decoded"] or decoded
        if fmt is None and not decoded and line[:1].isspace() and records:
            # plain dmesg indents the further lines of a multi-line message under its text
            records[-1].message += " " + line.strip()
            records[-1].lines.append((number, line))
            continue
        if fmt is not None and result["format"] is None:
            result["format"] = fmt
        records.append(_Record(number, timestamp, message.strip(), [(number, line)]))
    return records


def _read_xid(result: dict[str, Any], record: _Record, index: int, last_named: tuple[int, str] | None) -> None:
    """An NVRM Xid event, or a "fallen off the bus" line naming (or following) a GPU address."""
    message = record.message
    if _XID_START_RE.search(message):
        event = _xid_event(record.number, record.timestamp, message, record.lines[0][1])
        result["events"].append(event)
        key = str(event["xid"])
        result["xid_counts"][key] = result["xid_counts"].get(key, 0) + 1
        if event["xid"] == 79:
            _add_once(result["fallen_off_bus"], event["pci"])
        if event["xid"] == 154:
            result["recovery_actions"][event["pci"]] = event["recovery_action"]
    elif "fallen off the bus" in message and last_named is not None \
            and index - last_named[0] <= _CONTINUATION_RECORDS:
        # the address is on this line, or on the first line of a message logged line by line
        _add_once(result["fallen_off_bus"], last_named[1])


def _read_sxid(result: dict[str, Any], record: _Record, details: _SxidDetails) -> None:
    """An NVSwitch SXid headline, or the first detail line of a switch's SXid (kept in ``details``)."""
    sxid = _SXID_RE.search(record.message)
    if sxid:
        switch, pci, number_text, severity, rest = sxid.groups()
        result["sxid_events"].append({"line": record.number, "timestamp": record.timestamp, "switch": switch,
                                      "pci": pci.lower(), "sxid": int(number_text),
                                      "fatal": severity == "Fatal", "message": rest.strip()})
        result["sxid_counts"][number_text] = result["sxid_counts"].get(number_text, 0) + 1
        return
    detail = _SXID_DETAIL_RE.search(record.message)
    if detail:
        details.setdefault((detail.group(1), detail.group(3)), (record.number, record.timestamp, detail))


def _sxids_from_details(result: dict[str, Any], details: _SxidDetails) -> None:
    """One event (``fatal`` None: the severity is on the headline) for each switch and SXid number whose detail lines
    the log holds without any headline."""
    headlines = {(event["switch"], str(event["sxid"])) for event in result["sxid_events"]}
    for (switch, number_text), (number, timestamp, detail) in sorted(details.items(), key=lambda item: item[1][0]):
        if (switch, number_text) in headlines:
            continue
        result["sxid_events"].append({"line": number, "timestamp": timestamp, "switch": switch,
                                      "pci": detail.group(2).lower(), "sxid": int(number_text), "fatal": None,
                                      "message": "only its detail lines are in the log: " + detail.group(4).strip()})
        result["sxid_counts"][number_text] = result["sxid_counts"].get(number_text, 0) + 1


def _add_once(items: list[Any], value: Any) -> None:
    if value not in items:
        items.append(value)
