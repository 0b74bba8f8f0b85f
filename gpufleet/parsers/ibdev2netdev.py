# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``ibdev2netdev`` / ``ibdev2netdev -v`` (MLNX_OFED / DOCA script), KIND ``ibdev2netdev``.

``parse_ibdev2netdev(text)`` returns::

    {
      "mappings": [                       # in printed order
        {
          "device": str,                  # RDMA device: "mlx5_0", "rocep1s0f0"
          "port": int,                    # "port 1" -> 1
          "netdev": str,                  # "ib0", "enp1s0f0np0"
          "state": str,                   # netdev state, normalised: "Up" or "Down"
          "tags": [str],                  # further "(...)" after the state, e.g. ["o2ib"]; usually []
          # only with ``-v`` (None otherwise):
          "pci_address": str | None,      # "0000:01:00.0"
          "ca_type": str | None,          # "MT4123"
          "part_number": str | None,      # "MCX653105A-HDAT"; None for "NA" (VFs)
          "description": str | None,      # "ConnectX-6 VPI adapter card, ..." (may be None)
          "fw_version": str | None,       # "20.28.1002"
          "port_state": str | None,       # RDMA port state "ACTIVE", "DOWN", "INIT"...
        }
      ],
      "errors": [{"line": int, "text": str}],  # unindented "prog: message" lines (cat/ls errors)
    }

Variants: the plain form ``mlx5_0 port 1 ==> ib0 (Up)``, the ``-v`` form with PCI address, type,
part number, description, firmware and RDMA port state (``(DOWN  )`` with padding), trailing
tags such as ``(o2ib)``, CRLF, ANSI escapes, prompt lines, one rank prefix, indented lines.
Raises :class:`ParseError` (1-based line) for: empty input, no mapping (quoting the first error
line if any), any other line (a truncated line no longer ends in ``(Up)``/``(Down)``), a state
other than Up/Down, a placeholder (``<masked>``) as device or netdev name, and the same
device+port printed twice. Foreign lines (common's ``foreign_line``: a script's banner or rule, an
echoed command, a note, an elision) are skipped instead and listed in ``ignored_lines``
(``[{line, text, why}]``, present only when one was); a placeholder ``-v`` value reads as None.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from gpufleet.parsers.common import (
    IgnoredLine, ParseError, clean_lines, is_not_available, is_placeholder, skip_foreign, with_ignored,
)

KIND = "ibdev2netdev"

# ------------------------------------------------------------------------------------------

_LINE_RE = re.compile(
    r"^(?:(?P<pci>[0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+)?"
    r"(?P<device>[^\s()]+)"
    r"(?:\s+(?P<verbose>\(.*?))?"
    r"\s+port\s+(?P<port>\d+)"
    r"(?:\s+\((?P<port_state>[A-Za-z_]+)\s*\))?"
    r"\s+==>\s+(?P<netdev>[^\s()]+)"
    r"\s+\((?P<state>[^()]*)\)"
    r"(?P<tags>(?:\s*\([^()]*\))*)$"
)
# "(MT4123 - MCX653105A-HDAT) ConnectX-6 VPI adapter card, ... fw 20.28.1002"
_VERBOSE_RE = re.compile(r"^\((?P<type>[^()]*?)\s+-\s+(?P<part>[^()]*?)\s*\)\s*(?P<desc>.*?)\s*(?:\bfw\s+(?P<fw>\S+))?$")
_ERROR_RE = re.compile(r"^[\w.\-/]+: \S.*$")


def _verbose_fields(verbose: str | None, number: int, line: str) -> dict[str, str | None]:
    fields: dict[str, str | None] = {"ca_type": None, "part_number": None, "description": None, "fw_version": None}
    if verbose is None:
        return fields
    match = _VERBOSE_RE.match(verbose.strip())
    if not match:
        raise ParseError("unrecognised ibdev2netdev -v device description", line=number, kind=KIND, text=line)
    fields["ca_type"] = _text(match.group("type"))
    fields["part_number"] = _text(match.group("part"))
    fields["description"] = _text(match.group("desc"))
    fields["fw_version"] = _text(match.group("fw"))
    return fields


def _text(value: Optional[str]) -> Optional[str]:
    """A printed value; None for N/A, empty or a placeholder (``...``, ``<masked>``)."""
    return None if is_not_available(value) or is_placeholder(value) else value


def parse_ibdev2netdev(text: object) -> dict[str, Any]:
    """Parse ``ibdev2netdev [-v]`` output; see the module docstring for the returned keys."""
    mappings: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    ignored: list[IgnoredLine] = []
    seen: set[tuple[str, int]] = set()
    for number, line in clean_lines(text, KIND):
        stripped = line.strip()
        if not stripped:
            continue
        match = _LINE_RE.match(stripped)
        if match is None:
            if not line[:1].isspace() and _ERROR_RE.match(stripped) and "==>" not in stripped:
                errors.append({"line": number, "text": stripped})
                continue
            if skip_foreign(ignored, number, line):
                continue
            raise ParseError("unrecognised ibdev2netdev line", line=number, kind=KIND, text=line)
        state = match.group("state").strip().lower()
        if state not in ("up", "down"):
            raise ParseError("netdev state is not Up/Down: %r" % match.group("state"), line=number, kind=KIND, text=line)
        key = (match.group("device"), int(match.group("port")))
        for name in (key[0], match.group("netdev")):
            if is_placeholder(name):
                raise ParseError("a placeholder, not a device name: %r" % name, line=number, kind=KIND, text=line)
        if key in seen:
            raise ParseError("%s port %d printed twice" % key, line=number, kind=KIND, text=line)
        seen.add(key)
        mapping: dict[str, Any] = {
            "device": key[0],
            "port": key[1],
            "netdev": match.group("netdev"),
            "state": state.capitalize(),
            "tags": re.findall(r"\(([^()]*)\)", match.group("tags")),
            "pci_address": match.group("pci"),
            "port_state": match.group("port_state"),
        }
        mapping.update(_verbose_fields(match.group("verbose"), number, line))
        mappings.append(mapping)
    if not mappings:
        if errors:
            first = errors[0]
            raise ParseError("ibdev2netdev printed no mapping: %s" % first["text"], line=first["line"], kind=KIND,
                             text=first["text"])
        raise ParseError("no ibdev2netdev output (no 'DEV port N ==> NETDEV (State)' line)", kind=KIND)
    return with_ignored({"mappings": mappings, "errors": errors}, ignored)
