# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the PCIe ACS state in ``lspci -vvv`` (or ``-vvv -D``, ``-nn -vvv``), KIND ``lspci-acs``.

``parse_lspci_acs(text)`` returns::

    {
      "devices": [                        # one per function, in printed order
        {
          "line": int,                    # 1-based line of the function's header
          "address": str,                 # always with the domain: "0000:82:00.0" ("82:00.0" printed)
          "description": str,             # header text after the address
          "class_name": str,              # "PCI bridge", "3D controller", "Ethernet controller"
          "is_bridge": bool,              # a PCI-to-PCI bridge (switch port / root port)
          "capabilities_visible": bool,   # lspci printed capabilities (not "<access denied>", not none)
          "acs_capable": bool | None,     # has an ACS capability; None when capabilities are hidden
          "acs_cap": {str: bool} | None,  # ACSCap flags: SrcValid, TransBlk, ReqRedir, CmpltRedir,
                                          # UpstreamFwd, EgressCtrl, DirectTrans
          "acs_ctl": {str: bool} | None,  # ACSCtl flags (what is enabled), same names
          "acs_enabled": bool | None,     # ACSCtl ReqRedir+ or CmpltRedir+ (peer-to-peer TLPs are
                                          # redirected up to the root complex); None when unknown
        }
      ],
      "capabilities_visible": bool,       # any function showed its capabilities (lspci ran as root)
      "access_denied": int,               # functions printed "Capabilities: <access denied>"
      "acs_enabled": [str],               # addresses with ACS redirect enabled, printed order
    }

``lspci`` run without root prints ``Capabilities: <access denied>`` and no ACS lines: then
``acs_capable``/``acs_enabled`` are None (unknown), never False. Raises :class:`ParseError`
(1-based line) for empty text, text without any function header, an unindented line that is
not a function header (a damaged capture), an ACS line outside a function or with a flag not
written ``Name+``/``Name-`` (a placeholder such as ``<masked>`` included), and the same address
printed twice. A prompt before the first header is skipped; other foreign lines at column 0
(common's ``foreign_line``: a prompt, a script's banner or rule, an echoed command, a note, an
elision) are skipped and listed in ``ignored_lines`` (``[{line, text, why}]``, present only when
one was).
"""

from __future__ import annotations

import re
from typing import Any

from gpufleet.parsers.common import IgnoredLine, ParseError, numbered_lines, skip_foreign, strip_ansi, with_ignored

KIND = "lspci-acs"

_HEADER_RE = re.compile(r"^((?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) (\S.*)$")
_ACS_RE = re.compile(r"^(ACSCap|ACSCtl):\s*(.*)$")
_FLAG_RE = re.compile(r"^([A-Za-z]+)([+-])$")
_PROMPT_RE = re.compile(r"^(?:\([^)]*\)\s*)?(?:\[[^\]]*\]|[\w.@:~/\-]*)\s?[$#%>](?:\s+(.*))?$")
_CLASS_RE = re.compile(r"^(.*?)(?: \[[0-9a-fA-F]{4}\])?: ")


def _flags(body: str, number: int, line: str) -> dict[str, bool]:
    flags: dict[str, bool] = {}
    for token in body.split():
        match = _FLAG_RE.match(token)
        if not match:
            raise ParseError("ACS flag not written Name+ or Name-: %r" % token, line=number, kind=KIND, text=line)
        flags[match.group(1)] = match.group(2) == "+"
    if not flags:
        raise ParseError("ACS line without flags", line=number, kind=KIND, text=line)
    return flags


def _finish(device: dict[str, Any]) -> None:
    if device["acs_ctl"] is not None:
        device["acs_capable"] = True
        device["acs_enabled"] = bool(device["acs_ctl"].get("ReqRedir") or device["acs_ctl"].get("CmpltRedir"))
    elif device["capabilities_visible"]:
        device["acs_capable"] = device["acs_cap"] is not None
        device["acs_enabled"] = False if device["acs_cap"] is None else None


class _Reader:
    """The PCI functions of one ``lspci -vvv`` output with what their capability and ACS lines say."""

    def __init__(self) -> None:
        self.devices: list[dict[str, Any]] = []
        self.seen: dict[str, int] = {}  # address -> its header's line
        self.ignored: list[IgnoredLine] = []
        self.device: dict[str, Any] | None = None
        self.access_denied = 0

    def read_line(self, number: int, line: str) -> None:
        if not line[0].isspace():
            self._unindented(number, line)
            return
        body = line.strip()
        if body.startswith("Capabilities:"):
            if self.device is None:
                raise ParseError("capability line before any PCI function header", line=number, kind=KIND, text=line)
            if "<access denied>" in body:
                self.access_denied += 1
            else:
                self.device["capabilities_visible"] = True
            return
        acs = _ACS_RE.match(body)
        if acs:
            if self.device is None:
                raise ParseError("ACS line before any PCI function header", line=number, kind=KIND, text=line)
            flags = _flags(acs.group(2), number, line)
            self.device["acs_cap" if acs.group(1) == "ACSCap" else "acs_ctl"] = flags

    def _unindented(self, number: int, line: str) -> None:
        """A function's header line; else a pasted command line or a foreign line before the first one."""
        header = _HEADER_RE.match(line)
        if header:
            if self.device is not None:
                _finish(self.device)
            self.device = self._new_device(number, line, header.group(1).lower(), header.group(2).strip())
            self.devices.append(self.device)
            return
        if _PROMPT_RE.match(line) and self.device is None:
            return  # the command line of a pasted capture
        if skip_foreign(self.ignored, number, line):
            return
        raise ParseError("unindented line that is not a PCI function header", line=number, kind=KIND, text=line)

    def _new_device(self, number: int, line: str, address: str, description: str) -> dict[str, Any]:
        if address.count(":") == 1:
            address = "0000:" + address
        if address in self.seen:
            raise ParseError("function %s printed twice (first on line %d)" % (address, self.seen[address]),
                             line=number, kind=KIND, text=line)
        self.seen[address] = number
        class_match = _CLASS_RE.match(description)
        class_name = class_match.group(1) if class_match else description
        return {
            "line": number,
            "address": address,
            "description": description,
            "class_name": class_name,
            "is_bridge": class_name in ("PCI bridge", "CardBus bridge"),
            "capabilities_visible": False,
            "acs_capable": None,
            "acs_cap": None,
            "acs_ctl": None,
            "acs_enabled": None,
        }


def parse_lspci_acs(text: object) -> dict[str, Any]:
    """Parse ``lspci -vvv`` output (see the module docstring for the keys)."""
    if not isinstance(text, str):
        raise ParseError("expected text, got %s" % type(text).__name__, kind=KIND)
    if not text.strip():
        raise ParseError("empty lspci output", kind=KIND)
    reader = _Reader()
    for number, raw in numbered_lines(text):
        line = strip_ansi(raw).rstrip()
        if line.strip():
            reader.read_line(number, line)
    if reader.device is None:
        raise ParseError("no PCI function header (e.g. '17:01.0 PCI bridge: ...')", kind=KIND)
    _finish(reader.device)
    devices = reader.devices
    return with_ignored({
        "devices": devices,
        "capabilities_visible": any(d["capabilities_visible"] for d in devices),
        "access_denied": reader.access_denied,
        "acs_enabled": [d["address"] for d in devices if d["acs_enabled"]],
    }, reader.ignored)
