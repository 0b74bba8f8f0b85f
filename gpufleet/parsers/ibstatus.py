# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``ibstatus`` (the infiniband-diags script reading sysfs), KIND ``ibstatus``.

``parse_ibstatus(text)`` returns::

    {
      "devices": [                          # first-seen order
        {
          "name": str,                      # "mlx5_0"
          "ports": [
            {
              "port": int,                  # "... port 1 status:" -> 1
              "default_gid": str | None,    # "fe80:0000:...:11eb"; None for "unknown"
              "base_lid": int | None,       # "0x33bf" -> 13247 (sysfs prints hex)
              "sm_lid": int | None,         # "0x1" -> 1
              "state": str,                 # normalised to ibstat's words: "Active", "Down",
                                            # "Initializing", "Armed", "ActiveDefer", "Nop"
              "state_code": int,            # "4: ACTIVE" -> 4
              "physical_state": str,        # ibstat's words: "LinkUp", "Polling", "Disabled",
                                            # "Sleep", "PortConfigurationTraining",
                                            # "LinkErrorRecovery", "PhyTest"
              "physical_state_code": int,   # "5: LinkUp" -> 5
              "rate_gbps": int | float | None,  # "200 Gb/sec (4X HDR)" -> 200; "2.5 Gb/sec" -> 2.5
              "rate_text": str | None,      # "4X HDR" (lanes and generation), None if not printed
              "link_layer": str | None,     # "InfiniBand" / "Ethernet"; None when this ibstatus
                                            # release prints no link_layer line at all
            }
          ],
        }
      ],
      "errors": [{"line": int, "text": str}],   # unindented stderr lines (e.g. "cat: ...: ...")
    }

Raises :class:`ParseError` (1-based line) for: empty input, no port block (quoting the first
error line if any), a line that is neither a block header, a known ``key: value`` nor an error
line, a malformed value (state without code, unknown state word, rate without ``Gb/sec``, LID
not hex), a key outside a block or repeated, a repeated device/port, and an incomplete block
(a key missing, or ``link_layer`` missing while other blocks have it: a truncated capture).
Foreign lines (common's ``foreign_line``: a script's banner or rule, an echoed command, a note, an
elision) where a line would be refused are skipped and listed in ``ignored_lines``
(``[{line, text, why}]``, present only when one was). A placeholder (``<masked>``) for a value or
the device name is refused: every value of a block is required.

No TextFSM template: ParseError must name the 1-based line of a damaged input, and TextFSM
reports neither the line a record came from nor the line where matching stopped; a line loop
of the same size does both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gpufleet.parsers.common import (
    IgnoredLine, ParseError, clean_lines, is_not_available, is_placeholder, parse_number, skip_foreign, with_ignored,
)

KIND = "ibstatus"

# ------------------------------------------------------------------------------------------

_HEADER_RE = re.compile(r"^Infiniband device '([^']+)' port (\d+) status:$")
_KEY_RE = re.compile(r"^(default gid|base lid|sm lid|state|phys state|rate|link_layer):\s*(.*)$")
_ERROR_RE = re.compile(r"^(?:[\w.\-/]+: \S.*|Segmentation fault.*|Killed)$")
_CODE_RE = re.compile(r"^(\d+):\s*(\S.*)$")
_RATE_RE = re.compile(r"^(\d+(?:\.\d+)?) Gb/sec(?: \(([^()]*)\))?$")
_HEX_RE = re.compile(r"^0x[0-9a-fA-F]+$")

# sysfs words -> ibstat's spelling, so judges compare one vocabulary.
_STATES = {"NOP": "Nop", "DOWN": "Down", "INIT": "Initializing", "ARMED": "Armed", "ACTIVE": "Active", "ACTIVE_DEFER": "ActiveDefer"}
_PHYS_STATES = {
    "sleep": "Sleep",
    "polling": "Polling",
    "disabled": "Disabled",
    "portconfigurationtraining": "PortConfigurationTraining",
    "linkup": "LinkUp",
    "linkerrorrecovery": "LinkErrorRecovery",
    "phy test": "PhyTest",
    "phytest": "PhyTest",
    "no state change": "No state change",
}
_LINK_LAYERS = {"InfiniBand", "Ethernet", "IB", "Unknown"}
_REQUIRED = ("default_gid", "base_lid", "sm_lid", "state", "physical_state", "rate_gbps")


def _coded(value: str, table: dict[str, str], what: str, number: int, line: str) -> tuple[str, int]:
    match = _CODE_RE.match(value)
    if not match:
        raise ParseError("%s is not 'CODE: WORD': %r" % (what, value), line=number, kind=KIND, text=line)
    word = match.group(2).strip()
    key = word if table is _STATES else word.lower()
    if key not in table:
        raise ParseError("unknown %s %r" % (what, word), line=number, kind=KIND, text=line)
    return table[key], int(match.group(1))


def _lid(value: str, number: int, line: str) -> int | None:
    if is_not_available(value):
        return None
    if not _HEX_RE.match(value):
        raise ParseError("LID is not hex: %r" % value, line=number, kind=KIND, text=line)
    return int(value, 16)


def _store(port: dict[str, Any], key: str, value: str, number: int, line: str) -> str:
    if key == "default gid":
        if is_not_available(value):
            port["default_gid"] = None
        elif re.fullmatch(r"[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7}", value):
            port["default_gid"] = value
        else:
            raise ParseError("not a GID: %r" % value, line=number, kind=KIND, text=line)
        return "default_gid"
    if key in ("base lid", "sm lid"):
        field = key.replace(" ", "_")
        port[field] = _lid(value, number, line)
        return field
    if key == "state":
        port["state"], port["state_code"] = _coded(value, _STATES, "state", number, line)
        return "state"
    if key == "phys state":
        port["physical_state"], port["physical_state_code"] = _coded(value, _PHYS_STATES, "phys state", number, line)
        return "physical_state"
    if key == "rate":
        if is_not_available(value):
            port["rate_gbps"], port["rate_text"] = None, None
            return "rate_gbps"
        match = _RATE_RE.match(value)
        if not match:
            raise ParseError("rate is not 'N Gb/sec (...)': %r" % value, line=number, kind=KIND, text=line)
        port["rate_gbps"] = parse_number(match.group(1), line=number, kind=KIND)
        port["rate_text"] = match.group(2).strip() if match.group(2) else None
        return "rate_gbps"
    # link_layer
    if value not in _LINK_LAYERS:
        raise ParseError("unknown link layer %r" % value, line=number, kind=KIND, text=line)
    port["link_layer"] = value
    return "link_layer"


@dataclass
class _Block:
    """One port block as read: its port, the fields it printed, its last line and its device's name."""

    port: dict[str, Any]
    seen: set[str]
    last: int
    name: str


def _new_port(port_number: int) -> dict[str, Any]:
    return {
        "port": port_number,
        "default_gid": None,
        "base_lid": None,
        "sm_lid": None,
        "state": None,
        "state_code": None,
        "physical_state": None,
        "physical_state_code": None,
        "rate_gbps": None,
        "rate_text": None,
        "link_layer": None,
    }


class _Reader:
    """The devices, port blocks and error lines of one ibstatus output."""

    def __init__(self) -> None:
        self.devices: list[dict[str, Any]] = []
        self.by_name: dict[str, dict[str, Any]] = {}
        self.errors: list[dict[str, Any]] = []
        self.blocks: list[_Block] = []
        self.ignored: list[IgnoredLine] = []
        self.current: _Block | None = None

    def read_line(self, number: int, line: str, stripped: str) -> None:
        match = _HEADER_RE.match(stripped)
        if match:
            self._header(number, line, match.group(1), int(match.group(2)))
            return
        match = _KEY_RE.match(stripped)
        if match:
            current = self.current
            if current is None:
                raise ParseError("%r outside a port block" % match.group(1), line=number, kind=KIND, text=line)
            field = _store(current.port, match.group(1), match.group(2).strip(), number, line)
            if field in current.seen:
                raise ParseError("%r repeated in one port block" % match.group(1), line=number, kind=KIND, text=line)
            current.seen.add(field)
            current.last = number
            return
        if not line[:1].isspace() and _ERROR_RE.match(stripped):
            self.errors.append({"line": number, "text": stripped})
            return
        if skip_foreign(self.ignored, number, line):
            return
        raise ParseError("unrecognised ibstatus line", line=number, kind=KIND, text=line)

    def _header(self, number: int, line: str, name: str, port_number: int) -> None:
        """``Infiniband device 'NAME' port N status:`` starts a port block (and the device at its first port)."""
        if is_placeholder(name):
            raise ParseError("device name is a placeholder: %r" % name, line=number, kind=KIND, text=line)
        device = self.by_name.get(name)
        if device is None:
            device = self.by_name[name] = {"name": name, "ports": []}
            self.devices.append(device)
        if any(p["port"] == port_number for p in device["ports"]):
            raise ParseError("device %r port %d printed twice" % (name, port_number), line=number, kind=KIND,
                             text=line)
        port = _new_port(port_number)
        device["ports"].append(port)
        self.current = _Block(port, set(), number, name)
        self.blocks.append(self.current)


def parse_ibstatus(text: object) -> dict[str, Any]:
    """Parse ``ibstatus`` output; see the module docstring for the returned keys."""
    reader = _Reader()
    for number, line in clean_lines(text, KIND):
        stripped = line.strip()
        if stripped:
            reader.read_line(number, line, stripped)
    blocks, errors = reader.blocks, reader.errors
    if not blocks:
        if errors:
            raise ParseError("ibstatus printed no port: %s" % errors[0]["text"], line=errors[0]["line"], kind=KIND,
                             text=errors[0]["text"])
        raise ParseError("no ibstatus output (no \"Infiniband device '...' port N status:\" line)", kind=KIND)
    with_link_layer = any("link_layer" in block.seen for block in blocks)
    for block in blocks:
        required = _REQUIRED + (("link_layer",) if with_link_layer else ())
        missing = [field for field in required if field not in block.seen]
        if missing:
            raise ParseError("device %r port %d is incomplete (no %s)" % (block.name, block.port["port"],
                             ", ".join(missing)), line=block.last, kind=KIND)
    return with_ignored({"devices": reader.devices, "errors": errors}, reader.ignored)
