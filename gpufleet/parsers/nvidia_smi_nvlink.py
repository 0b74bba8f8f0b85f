# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``nvidia-smi nvlink -s`` (KIND ``nvlink-status``) and ``nvidia-smi nvlink -e``
(KIND ``nvlink-errors``).

Returned keys (public contract)
-------------------------------
``parse_nvlink_status(text)`` returns::

    {
      "gpus": [
        {
          "index": int,            # the N of "GPU N:"
          "name": str,             # e.g. "NVIDIA H100 80GB HBM3"
          "uuid": str | None,      # "GPU-..." (None when the line has no "(UUID: ...)")
          "supported": bool | None,
              # True : links were listed, or NVML said all links are inactive
              # False: the tool said NVLink is "not supported" (e.g. MIG mode)
              # None : neither links nor a message was printed, or a message we cannot classify
          "links": [{"link": int, "active": bool, "speed_gbs": float | None}],
              # "Link 0: 26.562 GB/s" -> active True, 26.562 (always a float, GB/s as printed)
              # "Link 3: <inactive>"  -> active False, None
          "message": str | None,   # the NVML text printed instead of links, else None
          "elided": bool,          # a "[...]" elision line was inside this GPU's block
          "rank": str,             # ONLY when the lines carried srun -l / mpirun --tag-output prefixes
        }, ...
      ],
      "elided": bool,              # any "[...]" elision in the text: links are missing, none invented
      "warnings": [str],
      "ignored_lines": [{line, text, why}],  # ONLY when a command, banner, elision or foreign line was skipped
    }

``parse_nvlink_errors(text)`` returns the same shape, except that each link is::

    {"link": int, "replay_errors": int, "recovery_errors": int, "crc_errors": int, ...}

with EVERY counter the tool printed for the link, its name in snake_case ("Replay Errors" ->
``replay_errors``, "FEC Errors - 0" -> ``fec_errors_0``). Values are ints (a float only when the
tool printed a decimal/exponent, e.g. a BER; None when printed as N/A). A saturated counter
(65535, 4294967295, ...) is reported as that number: judging saturation is the judges' job.
A "Link N: <inactive>" line in ``-e`` output gives ``{"link": N, "active": False}``.

Both raise :class:`ParseError` (with the 1-based line) for: empty text, text before the first
"GPU N:" line that is neither a command/prompt line, a banner nor a foreign line (error text such as
"NVIDIA-SMI has failed ..." is quoted), a damaged "GPU N:" or "Link N:" line, a link listed
twice, a speed without "GB/s", a counter that is not a number, text between a GPU's links,
and (``-e``) a link that lacks counters the GPU's other links have (a cut-off output).

The helpers ``prepare_lines``, ``is_command_line`` and ``skip_command_or_foreign`` are shared with
the other parsers of this group (``nvidia_smi_xml``, ``nvidia_smi_csv``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gpufleet.parsers.common import (
    IgnoredLine,
    ParseError,
    foreign_line,
    ignore_line,
    numbered_lines,
    parse_number,
    snake_case,
    strip_ansi,
    with_ignored,
)

KIND_STATUS = "nvlink-status"
KIND_ERRORS = "nvlink-errors"

# A command line copied with the output: "$ nvidia-smi ...", "root@host:~# nvidia-smi ...",
# "[user@host dir]$ sudo nvidia-smi ...", "> nvidia-smi ...", "+ nvidia-smi ..." (bash -x),
# "# $ nvidia-smi ..." (capture tools), or the bare command "nvidia-smi nvlink -s".
_COMMAND_RE = re.compile(
    r"^\s*(?:#\s+)?"
    r"(?:(?:\[[^\]]*\]|\([^)]*\)|[\w.\-]+@[\w.\-]+(?::\S*?)?)\s*)*"
    r"(?:[$#>%+]\s*)?"
    r"(?:sudo\s+(?:-\S+\s+)*)?(?:\S*/)?nvidia-smi(?:\s|$)"
)
# srun -l: "0: ..."; mpirun --tag-output: "[1,0]<stdout>:..."
_SRUN_RE = re.compile(r"^\s*(\d+):(?: |$)")
_MPIRUN_RE = re.compile(r"^\[(\d+,\d+)\]<(?:stdout|stderr)>:")
# Banner lines a script echoes between outputs: "=== GPU 0 NVLink Errors ===", "-----", "####".
_BANNER_RE = re.compile(r"^\s*([=*#-])\1{2,}")
_ELIDED_RE = re.compile(r"^\s*(?:\[\s*(?:\.\.\.|…)\s*\]|\.\.\.|…)\s*$")

_GPU_RE = re.compile(r"^GPU\s+(\d+)\s*:\s*(.*?)(?:\s*\(UUID:\s*([^()\s]*)\s*\))?$")
_LINK_RE = re.compile(r"^Link\s+(\d+)\s*:\s*(.*)$")
_SPEED_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*GB/s$")
_INACTIVE_RE = re.compile(r"^<?\s*inactive\s*>?$", re.IGNORECASE)
_COUNTER_RE = re.compile(r"^(.*?[A-Za-z].*?)\s*:\s*(\S.*)$")


def is_command_line(line: str) -> bool:
    """True when ``line`` is a shell prompt + nvidia-smi command (or the bare command)."""
    return bool(_COMMAND_RE.match(line))


def skip_command_or_foreign(ignored: list[IgnoredLine], number: int, line: str) -> bool:
    """True, listing ``line`` in ``ignored``, for the nvidia-smi command line copied with its output or a
    foreign line (common's foreign_line); False for anything else.

    A command line common's foreign_line does not name (the bare "nvidia-smi nvlink -s", "sudo nvidia-smi
    ...") is an "echoed command"; one behind a prompt is a "shell prompt", as foreign_line says.
    """
    why = foreign_line(line)
    if is_command_line(line) and why not in ("shell prompt", "echoed command"):
        why = "echoed command"
    if why is None:
        return False
    ignore_line(ignored, number, line, why)
    return True


def prepare_lines(text: object, kind: str) -> list[tuple[str | None, list[tuple[int, str]]]]:
    """Clean ``text`` and split it into groups of numbered lines, one group per rank.

    ANSI escapes and a BOM are removed, CRLF reads as LF. When EVERY non-blank line carries an
    ``srun -l`` (``0: ``) or ``mpirun --tag-output`` (``[1,0]<stdout>:``) prefix, the prefix is
    removed and lines are grouped by rank (in order of first appearance); otherwise one group
    with rank None. Line numbers stay those of the text as given. Empty text raises.
    """
    if text is None or not isinstance(text, str):
        raise ParseError("input is not text", kind=kind)
    clean = strip_ansi(text.lstrip("\ufeff"))
    numbered = numbered_lines(clean)
    content = [(n, line) for n, line in numbered if line.strip()]
    if not content:
        raise ParseError("empty input", kind=kind)
    for regex in (_MPIRUN_RE, _SRUN_RE):
        if all(regex.match(line) for _n, line in content):
            groups: dict[str | None, list[tuple[int, str]]] = {}
            for n, line in numbered:
                match = regex.match(line)
                if match is None:
                    continue  # a blank line between prefixed ones
                groups.setdefault(match.group(1), []).append((n, line[match.end():]))
            return list(groups.items())
    return [(None, numbered)]


def _classify_message(message: str) -> bool | None:
    low = message.lower()
    if "not supported" in low:
        return False
    if "inactive" in low:
        return True
    return None


@dataclass
class _LinkState:
    """What a GPU's block said of one link so far: its last line; for ``-e``, its counters and its record."""

    line: int
    counters: set[str] = field(default_factory=set)
    record: dict[str, Any] = field(default_factory=dict)
    inactive: bool = False


def _parse(text: object, kind: str) -> dict[str, Any]:
    groups = prepare_lines(text, kind)
    result: dict[str, Any] = {"gpus": [], "elided": False, "warnings": []}
    ignored: list[IgnoredLine] = []
    for rank, lines in groups:
        gpus = _parse_group(lines, kind, result, ignored)
        if rank is not None:
            for gpu in gpus:
                gpu["rank"] = rank
        result["gpus"].extend(gpus)
    if not result["gpus"]:
        raise ParseError("no 'GPU N: ...' line found", line=None, kind=kind)
    return with_ignored(result, sorted(ignored, key=lambda entry: entry["line"]))


def _parse_group(lines: list[tuple[int, str]], kind: str, result: dict[str, Any],
                 ignored: list[IgnoredLine]) -> list[dict[str, Any]]:
    gpus: list[dict[str, Any]] = []
    gpu: dict[str, Any] | None = None
    state: dict[int, _LinkState] = {}  # per-GPU bookkeeping: link -> what was read of it
    for n, raw in lines:
        line = raw.strip()
        if not line:
            continue
        if _ELIDED_RE.match(line):
            ignore_line(ignored, n, line, "elision")
            result["elided"] = True
            if gpu is not None:
                gpu["elided"] = True
            continue
        match = _GPU_RE.match(line)
        if match:
            if gpu is not None:
                _finish_gpu(gpu, state, kind, result)
            name = match.group(2)
            if "(UUID" in name or not name:
                raise ParseError("damaged GPU line", line=n, kind=kind, text=raw)
            gpu = {
                "index": int(match.group(1)),
                "name": name,
                "uuid": match.group(3) or None,
                "supported": None,
                "links": [],
                "message": None,
                "elided": False,
            }
            state = {}
            gpus.append(gpu)
            continue
        # Before a GPU's message is read: a foreign line there would be taken for NVML's text.
        if skip_command_or_foreign(ignored, n, line):
            continue
        if _BANNER_RE.match(line):  # a title opened by a rule and not closed by one ("=== GPU 0 errors")
            ignore_line(ignored, n, line, "banner")
            continue
        if gpu is None:
            raise ParseError("expected a 'GPU N: ...' line, the tool printed", line=n, kind=kind, text=raw)
        match = _LINK_RE.match(line)
        if match is None:
            if gpu["links"]:
                raise ParseError("unexpected text among the links of GPU %d" % gpu["index"], line=n, kind=kind,
                                 text=raw)
            gpu["message"] = line if gpu["message"] is None else gpu["message"] + "\n" + line
            continue
        if gpu["message"] is not None:
            raise ParseError("link line after the message of GPU %d" % gpu["index"], line=n, kind=kind, text=raw)
        link = int(match.group(1))
        value = match.group(2).strip()
        if kind == KIND_STATUS:
            _add_status_link(gpu, state, link, value, n, raw)
        else:
            _add_error_counter(gpu, state, link, value, n, raw)
    if gpu is not None:
        _finish_gpu(gpu, state, kind, result)
    return gpus


def _add_status_link(gpu: dict[str, Any], state: dict[int, _LinkState], link: int, value: str, n: int,
                     raw: str) -> None:
    if link in state:
        raise ParseError("link %d listed twice" % link, line=n, kind=KIND_STATUS, text=raw)
    state[link] = _LinkState(n)
    if _INACTIVE_RE.match(value):
        gpu["links"].append({"link": link, "active": False, "speed_gbs": None})
        return
    speed = _SPEED_RE.match(value)
    if speed is None:
        raise ParseError("link speed is not 'N GB/s' or '<inactive>'", line=n, kind=KIND_STATUS, text=raw)
    gpu["links"].append({"link": link, "active": True, "speed_gbs": float(speed.group(1))})


def _add_error_counter(gpu: dict[str, Any], state: dict[int, _LinkState], link: int, value: str, n: int,
                       raw: str) -> None:
    entry = state.get(link)
    if entry is None:
        entry = _LinkState(n, record={"link": link})
        state[link] = entry
        gpu["links"].append(entry.record)
    elif entry.inactive:
        raise ParseError("counter for inactive link %d" % link, line=n, kind=KIND_ERRORS, text=raw)
    entry.line = n
    if _INACTIVE_RE.match(value):
        if entry.counters:
            raise ParseError("link %d both counted and inactive" % link, line=n, kind=KIND_ERRORS, text=raw)
        entry.inactive = True
        entry.record["active"] = False
        return
    match = _COUNTER_RE.match(value)
    if match is None:
        raise ParseError("expected 'Link N: <counter>: <value>'", line=n, kind=KIND_ERRORS, text=raw)
    name = snake_case(match.group(1))
    if not name or name in ("link", "active"):
        raise ParseError("bad counter name", line=n, kind=KIND_ERRORS, text=raw)
    if name in entry.counters:
        raise ParseError("counter %r of link %d printed twice" % (name, link), line=n, kind=KIND_ERRORS, text=raw)
    entry.counters.add(name)
    entry.record[name] = parse_number(match.group(2), line=n, kind=KIND_ERRORS)


def _finish_gpu(gpu: dict[str, Any], state: dict[int, _LinkState], kind: str, result: dict[str, Any]) -> None:
    if gpu["links"]:
        gpu["supported"] = True
    elif gpu["message"] is not None:
        gpu["supported"] = _classify_message(gpu["message"])
    elif not gpu["elided"]:
        result["warnings"].append("GPU %d printed neither links nor a message" % gpu["index"])
    if kind == KIND_ERRORS and state:
        counted = [entry for entry in state.values() if not entry.inactive]
        union: set[str] = set()
        for entry in counted:
            union |= entry.counters
        for entry in counted:
            missing = union - entry.counters
            if missing:
                raise ParseError(
                    "link %d lacks counter(s) %s (output cut off?)"
                    % (entry.record["link"], ", ".join(sorted(missing))),
                    line=entry.line,
                    kind=kind,
                )


def parse_nvlink_status(text: str) -> dict[str, Any]:
    """Parse ``nvidia-smi nvlink -s`` / ``--status`` output (see the module docstring)."""
    return _parse(text, KIND_STATUS)


def parse_nvlink_errors(text: str) -> dict[str, Any]:
    """Parse ``nvidia-smi nvlink -e`` / ``--errorcounters`` output (see the module docstring)."""
    return _parse(text, KIND_ERRORS)
