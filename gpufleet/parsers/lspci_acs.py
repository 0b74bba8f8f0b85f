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

from gpufleet.parsers.common import ParseError, numbered_lines, skip_foreign, strip_ansi, with_ignored

KIND = "lspci-acs"

_HEADER_RE = re.compile(r"^((?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) (\S.*)$")
_ACS_RE = re.compile(r"^(ACSCap|ACSCtl):\s*(.*)$")
_FLAG_RE = re.compile(r"^([A-Za-z]+)([+-])$")
_PROMPT_RE = re.compile(r"^(?:\([^)]*\)\s*)?(?:\[[^\]]*\]|[\w.@:~/\-]*)\s?[$#%>](?:\s+(.*))?$")
_CLASS_RE = re.compile(r"^(.*?)(?: \[[0-9a-fA-F]{4}\])?: ")


def _flags(body, number, line):
    flags = {}
    for token in body.split():
        match = _FLAG_RE.match(token)
        if not match:
            raise ParseError("ACS flag not written Name+ or Name-: %r" % token, line=number, kind=KIND, text=line)
        flags[match.group(1)] = match.group(2) == "+"
    if not flags:
        raise ParseError("ACS line without flags", line=number, kind=KIND, text=line)
    return flags


def _finish(device):
    if device["acs_ctl"] is not None:
        device["acs_capable"] = True
        device["acs_enabled"] = bool(device["acs_ctl"].get("ReqRedir") or device["acs_ctl"].get("CmpltRedir"))
    elif device["capabilities_visible"]:
        device["acs_capable"] = device["acs_cap"] is not None
        device["acs_enabled"] = False if device["acs_cap"] is None else None


def parse_lspci_acs(text):
    """Parse ``lspci -vvv`` output (see the module docstring for the keys)."""
    if not isinstance(text, str):
        raise ParseError("expected text, got %s" % type(text).__name__, kind=KIND)
    if not text.strip():
        raise ParseError("empty lspci output", kind=KIND)
    devices = []
    seen = {}
    ignored = []
    device = None
    access_denied = 0
    for number, raw in numbered_lines(text):
        line = strip_ansi(raw).rstrip()
        if not line.strip():
            continue
        if not line[0].isspace():
            header = _HEADER_RE.match(line)
            if header:
                if device is not None:
                    _finish(device)
                address = header.group(1).lower()
                if address.count(":") == 1:
                    address = "0000:" + address
                if address in seen:
                    raise ParseError("function %s printed twice (first on line %d)" % (address, seen[address]), line=number, kind=KIND, text=line)
                seen[address] = number
                description = header.group(2).strip()
                class_match = _CLASS_RE.match(description)
                class_name = class_match.group(1) if class_match else description
                device = {
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
                devices.append(device)
                continue
            if _PROMPT_RE.match(line) and device is None:
                continue  # the command line of a pasted capture
            if skip_foreign(ignored, number, line):
                continue
            raise ParseError("unindented line that is not a PCI function header", line=number, kind=KIND, text=line)
        body = line.strip()
        if body.startswith("Capabilities:"):
            if device is None:
                raise ParseError("capability line before any PCI function header", line=number, kind=KIND, text=line)
            if "<access denied>" in body:
                access_denied += 1
            else:
                device["capabilities_visible"] = True
            continue
        acs = _ACS_RE.match(body)
        if acs:
            if device is None:
                raise ParseError("ACS line before any PCI function header", line=number, kind=KIND, text=line)
            flags = _flags(acs.group(2), number, line)
            device["acs_cap" if acs.group(1) == "ACSCap" else "acs_ctl"] = flags
    if device is None:
        raise ParseError("no PCI function header (e.g. '17:01.0 PCI bridge: ...')", kind=KIND)
    _finish(device)
    return with_ignored({
        "devices": devices,
        "capabilities_visible": any(d["capabilities_visible"] for d in devices),
        "access_denied": access_denied,
        "acs_enabled": [d["address"] for d in devices if d["acs_enabled"]],
    }, ignored)
