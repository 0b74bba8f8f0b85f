# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the list of loaded kernel modules, KIND ``kernel-modules``.

``parse_kernel_modules(text)`` reads ``/proc/modules``, ``lsmod`` and ``lsmod | grep ...``
fragments (with or without the shell prompt lines around them) and returns::

    {
      "format": str,             # "proc-modules", "lsmod" (header seen), "lsmod-fragment" (rows, no
                                 # header) or "empty" (nothing but prompts / blank lines)
      "modules": [               # in printed order
        {
          "line": int,           # 1-based line number
          "name": str,           # "nvidia_peermem"
          "size": int,           # bytes
          "refcount": int | None,# "Used by" count; None when printed as "-"
          "used_by": [str],      # modules using it ("[permanent]" is not a module: see "permanent")
          "permanent": bool,
          "state": str | None,   # /proc/modules only: "Live", "Loading", "Unloading"
          "taint": str | None,   # /proc/modules only: "(OE)" flags without parentheses, "OE"
        }
      ],
      "names": [str],            # sorted module names
      "commands": [str],         # commands on prompt lines ("lsmod | grep nvidia_peermem")
    }

Empty output is valid: ``lsmod | grep nvidia_peermem`` prints nothing when the module is not
loaded. Raises :class:`ParseError` (1-based line) for a line that is neither a module row, the
``lsmod`` header nor a shell prompt (e.g. a row cut short), and for a module listed twice.
Foreign lines (common's ``foreign_line``: a script's banner or rule, an echoed command, a note, an
elision) are skipped instead and listed in ``ignored_lines`` (``[{line, text, why}]``, present
only when one was); prompts stay this parser's own (their commands are kept). A placeholder
(``...``) among a row's users is no module name and is left out.
"""

from __future__ import annotations

import re
from typing import Any

from gpufleet.parsers.common import (
    IgnoredLine, ParseError, is_placeholder, numbered_lines, skip_foreign, strip_ansi, with_ignored,
)

KIND = "kernel-modules"

_NAME = r"[A-Za-z0-9_]+"
# /proc/modules: name size refcount users, state address [(taint)]
_PROC_RE = re.compile(r"^(" + _NAME + r") (\d+) (-?\d+|-) (\S+) (Live|Loading|Unloading) (0x[0-9a-fA-F]+)(?: \(([A-Z]+)\))?$")
# lsmod: name size refcount [users]
_LSMOD_RE = re.compile(r"^(" + _NAME + r")\s+(\d+)\s+(-?\d+|-)(?:\s+(\S+))?$")
_HEADER_RE = re.compile(r"^Module\s+Size\s+Used by$")
# "(base) [user@host ~]$ cmd", "root@host:~# cmd", "$ cmd", and a bare prompt with no command
_PROMPT_RE = re.compile(r"^(?:\([^)]*\)\s*)?(?:\[[^\]]*\]|[\w.@:~/\-]*)\s?[$#%>](?:\s+(.*))?$")


def _users(field: str | None) -> tuple[list[str], bool]:
    if field is None or field == "-":
        return [], False
    names = [part for part in field.split(",") if part and not is_placeholder(part)]
    permanent = "[permanent]" in names
    return [name for name in names if name != "[permanent]"], permanent


def parse_kernel_modules(text: object) -> dict[str, Any]:
    """Parse /proc/modules or lsmod output (see the module docstring for the keys)."""
    if not isinstance(text, str):
        raise ParseError("expected text, got %s" % type(text).__name__, kind=KIND)
    modules: list[dict[str, Any]] = []
    commands: list[str] = []
    ignored: list[IgnoredLine] = []
    header = proc = False
    seen: dict[str, int] = {}
    state: str | None
    taint: str | None
    for number, raw in numbered_lines(text):
        line = strip_ansi(raw).strip()
        if not line:
            continue
        proc_match = _PROC_RE.match(line)
        lsmod_match = None if proc_match else _LSMOD_RE.match(line)
        if proc_match:
            name, size, refcount, users_field, state, _address, taint = proc_match.groups()
            proc = True
        elif lsmod_match:
            name, size, refcount, users_field = lsmod_match.groups()
            state = taint = None
        elif _HEADER_RE.match(line):
            header = True
            continue
        elif prompt := _PROMPT_RE.match(line):
            command = prompt.group(1)
            if command:
                commands.append(command.strip())
            continue
        elif skip_foreign(ignored, number, line):
            continue
        else:
            raise ParseError("not a module row, the lsmod header or a prompt", line=number, kind=KIND, text=line)
        if name in seen:
            raise ParseError("module %s listed twice (first on line %d)" % (name, seen[name]), line=number, kind=KIND,
                             text=line)
        seen[name] = number
        users, permanent = _users(users_field)
        modules.append({
            "line": number,
            "name": name,
            "size": int(size),
            "refcount": None if refcount == "-" else int(refcount),
            "used_by": users,
            "permanent": permanent,
            "state": state,
            "taint": taint,
        })
    if proc:
        fmt = "proc-modules"
    elif header:
        fmt = "lsmod"
    elif modules:
        fmt = "lsmod-fragment"
    else:
        fmt = "empty"
    return with_ignored({"format": fmt, "modules": modules, "names": sorted(seen), "commands": commands}, ignored)
