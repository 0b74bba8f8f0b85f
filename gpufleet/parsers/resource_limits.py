# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for resource limits: ``/proc/<pid>/limits`` (KIND ``limits``) and ``ulimit -l``.

``parse_limits(text)`` reads ``/proc/<pid>/limits`` (also ``cat .../limits | grep locked`` lines
inside a shell transcript) and returns::

    {
      "limits": {                       # one per "Max ..." row, keyed by its snake-cased name
        "max_locked_memory": {          # "Max locked memory" -> max_locked_memory
          "line": int,                  # 1-based line number
          "soft": int | None,           # None when "unlimited"
          "hard": int | None,
          "soft_unlimited": bool,
          "hard_unlimited": bool,
          "unlimited": bool,            # both unlimited
          "unit": str | None,           # "bytes", "seconds", ...; None when the row has none
        },
        ...
      },
      "max_locked_memory": {...} | None,  # the row above, or None when the text has no such row
      "source": str | None,             # "/proc/3844/limits" when a prompt line named the file
      "pid": int | None,                # 3844 from that path; None for "self" or when not named
    }

In a shell transcript only the output of a command that reads a ``limits`` file is parsed;
what other commands printed (``ps -elf | grep slurm``) is skipped. Raises :class:`ParseError`
(1-based line) for empty text, a limits row whose values are neither a number nor
``unlimited`` (a placeholder such as ``<masked>`` included), any other line outside a
transcript, and text with no ``Max ...`` row.

``parse_ulimit_l(text)`` reads ``ulimit -l`` output (KiB, or ``unlimited``), bare or inside a
shell transcript (``$ ulimit -l``, ``srun -N2 ./ulimit.sh`` printing one value per task, ``#``
comments), and MPI start-up lines such as DAPL's ``[0] DAPL startup: RLIMIT_MEMLOCK too small``::

    {
      "values": [                       # in printed order
        {"line": int, "command": str | None, "kib": int | None, "unlimited": bool}
      ],
      "unlimited": bool | None,         # every value unlimited; None when there is no value
      "min_kib": int | None,            # smallest finite value
      "commands": [str],                # commands on prompt lines
      "too_small_reports": [            # "RLIMIT_MEMLOCK too small" lines (a job's view of the limit)
        {"line": int, "rank": int | None, "text": str}
      ],
    }

Raises :class:`ParseError` for empty text, text with neither a value nor a too-small report,
and a line that is not a value where one is expected (bare output, or the output of a
``ulimit`` command).

In both, a foreign line (common's ``foreign_line``: a script's banner or rule, an echoed command,
a note, an elision) where a line would be refused is skipped and listed in ``ignored_lines``
(``[{line, text, why}]``, present only when one was); prompts stay these parsers' own (they say
which command printed what).
"""

from __future__ import annotations

import re
from typing import Any

from gpufleet.parsers.common import IgnoredLine, ParseError, numbered_lines, skip_foreign, strip_ansi, with_ignored

KIND_LIMITS = "limits"
KIND_ULIMIT = "ulimit-l"

_LIMIT_RE = re.compile(r"^(Max [A-Za-z ]+?)\s{2,}(\S+)\s+(\S+)(?:\s+([a-z]+))?$")
_LIMIT_HEADER_RE = re.compile(r"^Limit\s+Soft Limit\s+Hard Limit\s+Units$")
_PROMPT_RE = re.compile(r"^(?:\([^)]*\)\s*)?(?:\[[^\]]*\]|[\w.@:~/\-]*)\s?[$#%>](?:\s+(.*))?$")
_LIMITS_PATH_RE = re.compile(r"(/proc/(\d+|self)/limits)\b")
_VALUE_RE = re.compile(r"^(?:(\d+): |\[(\d+)\] )?(unlimited|\d+)$")
_TOO_SMALL_RE = re.compile(r"^(?:\[(\d+)\]\s*|(\d+): )?(.*RLIMIT_MEMLOCK too small.*)$")
_FILE_VIEWERS = ("cat", "less", "more", "head", "tail", "vi", "vim", "nano")


def _prompt_command(line: str) -> str | None:
    """The command of a prompt line, "" for a bare prompt, None when it is not a prompt."""
    match = _PROMPT_RE.match(line)
    if not match:
        return None
    return (match.group(1) or "").strip()


def _limit_value(value: str, number: int, line: str) -> tuple[int | None, bool]:
    if value == "unlimited":
        return None, True
    if value.isdigit():
        return int(value), False
    raise ParseError("limit value is neither a number nor 'unlimited': %r" % value, line=number, kind=KIND_LIMITS,
                     text=line)


def parse_limits(text: object) -> dict[str, Any]:
    """Parse ``/proc/<pid>/limits`` (see the module docstring for the keys)."""
    if not isinstance(text, str):
        raise ParseError("expected text, got %s" % type(text).__name__, kind=KIND_LIMITS)
    if not text.strip():
        raise ParseError("empty limits output", kind=KIND_LIMITS)
    limits: dict[str, dict[str, Any]] = {}
    ignored: list[IgnoredLine] = []
    source: str | None = None
    pid: int | None = None
    command: str | None = None  # None: no prompt seen yet (a bare limits file)
    for number, raw in numbered_lines(text):
        line = strip_ansi(raw).strip()
        if not line:
            continue
        match = _LIMIT_RE.match(line)
        reading_limits = command is None or "limits" in str(command)
        if match and reading_limits:
            name, soft, hard, unit = match.groups()
            soft_value, soft_unlimited = _limit_value(soft, number, line)
            hard_value, hard_unlimited = _limit_value(hard, number, line)
            key = "_".join(name.lower().split())
            limits[key] = {
                "line": number,
                "soft": soft_value,
                "hard": hard_value,
                "soft_unlimited": soft_unlimited,
                "hard_unlimited": hard_unlimited,
                "unlimited": soft_unlimited and hard_unlimited,
                "unit": unit,
            }
            continue
        if _LIMIT_HEADER_RE.match(line):
            continue
        prompt = _prompt_command(line)
        if prompt is not None and not line.startswith("Max "):
            command = prompt
            path = _LIMITS_PATH_RE.search(prompt)
            if path:
                source = path.group(1)
                pid = int(path.group(2)) if path.group(2).isdigit() else None
            continue
        if not reading_limits:
            continue  # what another command of the transcript printed
        if skip_foreign(ignored, number, line):
            continue
        raise ParseError("not a limits row", line=number, kind=KIND_LIMITS, text=line)
    if not limits:
        raise ParseError("no 'Max ...' limits row", kind=KIND_LIMITS)
    result: dict[str, Any] = {"limits": limits, "max_locked_memory": limits.get("max_locked_memory"),
                              "source": source, "pid": pid}
    return with_ignored(result, ignored)


def _reads_a_file(command: str) -> bool:
    words = command.split()
    return bool(words) and words[0] in _FILE_VIEWERS


class _UlimitReader:
    """The values, commands and "too small" reports of one ``ulimit -l`` output or transcript."""

    def __init__(self) -> None:
        self.values: list[dict[str, Any]] = []
        self.commands: list[str] = []
        self.reports: list[dict[str, Any]] = []
        self.ignored: list[IgnoredLine] = []
        self.command: str | None = None

    def read_line(self, number: int, line: str) -> None:
        prompt = _prompt_command(line)
        if prompt is not None and not line.startswith("#"):
            self.command = prompt
            if prompt:
                self.commands.append(prompt)
            return
        if line.startswith("#"):
            return  # an author's comment, or a script's shebang shown by cat
        command = self.command
        in_file = command is not None and _reads_a_file(command)
        match = _VALUE_RE.match(line)
        if match and not in_file:
            value = match.group(3)
            self.values.append({
                "line": number,
                "command": command or None,
                "kib": None if value == "unlimited" else int(value),
                "unlimited": value == "unlimited",
            })
            return
        too_small = _TOO_SMALL_RE.match(line)
        if too_small:
            rank = too_small.group(1) or too_small.group(2)
            self.reports.append({"line": number, "rank": int(rank) if rank is not None else None,
                                 "text": too_small.group(3).strip()})
            return
        if in_file or (command is not None and "ulimit" not in command):
            return  # a file's contents or another command's output
        if skip_foreign(self.ignored, number, line):
            return
        raise ParseError("not a ulimit -l value", line=number, kind=KIND_ULIMIT, text=line)


def parse_ulimit_l(text: object) -> dict[str, Any]:
    """Parse ``ulimit -l`` output and transcripts (see the module docstring for the keys)."""
    if not isinstance(text, str):
        raise ParseError("expected text, got %s" % type(text).__name__, kind=KIND_ULIMIT)
    if not text.strip():
        raise ParseError("empty ulimit -l output", kind=KIND_ULIMIT)
    reader = _UlimitReader()
    for number, raw in numbered_lines(text):
        line = strip_ansi(raw).strip()
        if line:
            reader.read_line(number, line)
    values, reports = reader.values, reader.reports
    if not values and not reports:
        raise ParseError("no ulimit -l value", kind=KIND_ULIMIT)
    finite = [v["kib"] for v in values if v["kib"] is not None]
    return with_ignored({
        "values": values,
        "unlimited": all(v["unlimited"] for v in values) if values else None,
        "min_kib": min(finite) if finite else None,
        "commands": reader.commands,
        "too_small_reports": reports,
    }, reader.ignored)
