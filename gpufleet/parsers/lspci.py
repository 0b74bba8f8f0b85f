# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the device list of ``lspci`` (KIND ``lspci``).

Reads the one-line-per-function listing in every form the fleet meets: plain ``lspci``,
``lspci -nn`` (names plus ``[class]`` and ``[vendor:device]`` codes), ``lspci -n`` (codes
only), with or without ``-D`` (domain always printed), and the device header lines of
``lspci -v``/``-vv``/``-vvv`` (the indented detail lines under each header are skipped).

Returned keys (public contract)
-------------------------------
::

    {
      "devices": [
        {
          "slot": str,             # the address as printed: "0001:00:00.0" or "19:00.0"
          "address": str,          # normalised "dddd:bb:dd.f", lower case, domain 0000 when
                                   # not printed (lspci omits it when every domain is 0)
          "domain": int,           # PCI domain (0 when not printed)
          "class_name": str|None,  # "3D controller" (None in -n output, which prints codes only)
          "class_code": str|None,  # "0302": from "[0302]" (-nn) or the code (-n); for plain
                                   # output derived from a well-known class name (table
                                   # CLASS_CODES below), else None
          "vendor_id": str|None,   # "10de" from "[10de:20b2]" (-nn) or "10de:20b2" (-n)
          "device_id": str|None,   # "20b2"
          "description": str|None, # vendor + device names as printed, without ids/rev/prog-if:
                                   # "NVIDIA Corporation GA100 [A100 SXM4 80GB]"
          "revision": str|None,    # "a1" from "(rev a1)"
          "prog_if": str|None,     # "00" from "(prog-if 00 [VGA controller])"
          "line": int,             # 1-based line of the device header
        }, ...
      ],
      "numeric_ids": bool,         # vendor:device codes were printed (-n / -nn)
      "verbose": bool,             # indented detail lines were present (-v, -vv, -vvv)
      "warnings": [str],           # lspci/pcilib messages found in the text
    }

``nvidia_gpus(devices)`` (a helper, pure) returns the devices that are NVIDIA GPUs: vendor
``10de`` (or, without codes, a description starting "NVIDIA Corporation") AND display class
``0300`` (VGA compatible controller) or ``0302`` (3D controller). NVSwitch bridges (class
``0680`` "Bridge"), NVIDIA PCI bridges (``0604``, Grace/GB200 root ports) and GPU audio
functions (``0403``) are not GPUs.

Raises :class:`ParseError` (1-based line) for: empty text, a line at column 0 that is not a
device header (a damaged or pasted-over line), an indented detail line before the first
device, a device header without a class, a slot printed twice, and the machine-readable
``-m``/``-mm`` form (quoted fields), which this parser does not read.
A leading shell prompt + ``lspci`` command line is skipped; CRLF, ANSI colour and trailing
blanks are tolerated. Other foreign lines at column 0 (common's ``foreign_line``: a prompt, a
script's banner or rule, an echoed command, a note, an elision) are skipped and listed in
``ignored_lines`` (``[{line, text, why}]``, present only when one was). A placeholder
(``<masked>``) for the names reads as no description.
"""

from __future__ import annotations

import re
from typing import Any

from gpufleet.parsers.common import (
    IgnoredLine, ParseError, is_placeholder, numbered_lines, skip_foreign, strip_ansi, with_ignored,
)

KIND = "lspci"

# Class names lspci prints (pci.ids "C" lines) for the classes the fleet cares about, so plain
# output can be classified like -nn output.
CLASS_CODES = {
    "vga compatible controller": "0300",
    "xga compatible controller": "0301",
    "3d controller": "0302",
    "display controller": "0380",
    "bridge": "0680",
    "pci bridge": "0604",
    "host bridge": "0600",
    "isa bridge": "0601",
    "ethernet controller": "0200",
    "network controller": "0280",
    "infiniband controller": "0207",
    "non-volatile memory controller": "0108",
    "audio device": "0403",
    "processing accelerators": "1200",
}

NVIDIA_VENDOR_ID = "10de"
GPU_CLASS_CODES = ("0300", "0302")

_HEX = "[0-9a-fA-F]"
_SLOT_RE = re.compile(r"^(?:(%s{4,8}):)?(%s{2}):(%s{2})\.([0-7])(?=\s)" % (_HEX, _HEX, _HEX))
# "-n": "0302: 10de:20b2 (rev a1)"
_NUMERIC_RE = re.compile(r"^(%s{4}):\s+(%s{4}):(%s{4})(.*)$" % (_HEX, _HEX, _HEX))
# "Class 0b40: ..." (a class pci.ids does not name)
_UNNAMED_CLASS_RE = re.compile(r"^Class\s+(%s{4})$" % _HEX)
_CLASS_CODE_SUFFIX_RE = re.compile(r"^(.*?)\s*\[(%s{4})\]$" % _HEX)
_IDS_SUFFIX_RE = re.compile(r"^(.*?)\s*\[(%s{4}):(%s{4})\]$" % (_HEX, _HEX))
_REV_RE = re.compile(r"\s*\(rev\s+(%s{2})\)" % _HEX)
_PROG_IF_RE = re.compile(r"\s*\(prog-if\s+(%s{2})(?:\s*\[[^\]]*\])?\)" % _HEX)
_COMMAND_RE = re.compile(
    r"^\s*(?:(?:\[[^\]]*\]|\([^)]*\)|[\w.\-]+@[\w.\-]+(?::\S*?)?)\s*)*(?:[$#>%+]\s*)?(?:sudo\s+(?:-\S+\s+)*)?(?:\S*/)?lspci(?:\s|$)"
)
_TOOL_MESSAGE_RE = re.compile(r"^(?:lspci|pcilib):\s")


def _err(message: str, line: int | None, text: str | None = None) -> ParseError:
    return ParseError(message, line=line, kind=KIND, text=text)


def _split_class(head: str, n: int, raw: str) -> tuple[str | None, str | None]:
    """``(class_name, class_code)`` of the text before the first ': '."""
    head = head.strip()
    unnamed = _UNNAMED_CLASS_RE.match(head)
    if unnamed:
        return None, unnamed.group(1).lower()
    code = None
    match = _CLASS_CODE_SUFFIX_RE.match(head)
    if match and match.group(1):
        head, code = match.group(1), match.group(2).lower()
    if not head:
        raise _err("device line without a class", n, raw)
    if code is None:
        code = CLASS_CODES.get(head.lower())
    return head, code


def _parse_device(n: int, raw: str, slot_match: re.Match[str]) -> dict[str, Any]:
    domain_text, bus, dev, func = slot_match.groups()
    rest = raw[slot_match.end():].strip()
    if rest.startswith('"'):
        raise _err("machine-readable lspci -m output is not supported; run lspci -nn", n, raw)
    device: dict[str, Any] = {
        "slot": slot_match.group(0),
        "address": "%04x:%s:%s.%s" % (int(domain_text, 16) if domain_text else 0, bus.lower(), dev.lower(), func),
        "domain": int(domain_text, 16) if domain_text else 0,
        "class_name": None,
        "class_code": None,
        "vendor_id": None,
        "device_id": None,
        "description": None,
        "revision": None,
        "prog_if": None,
        "line": n,
    }
    numeric = _NUMERIC_RE.match(rest)
    if numeric:
        device["class_code"] = numeric.group(1).lower()
        device["vendor_id"] = numeric.group(2).lower()
        device["device_id"] = numeric.group(3).lower()
        tail = numeric.group(4)
    else:
        if ": " not in rest:
            raise _err("device line without 'class: description'", n, raw)
        head, tail = rest.split(": ", 1)
        device["class_name"], device["class_code"] = _split_class(head, n, raw)
    rev = _REV_RE.search(tail)
    if rev:
        device["revision"] = rev.group(1).lower()
        tail = tail[: rev.start()] + tail[rev.end():]
    prog_if = _PROG_IF_RE.search(tail)
    if prog_if:
        device["prog_if"] = prog_if.group(1).lower()
        tail = tail[: prog_if.start()] + tail[prog_if.end():]
    tail = tail.strip()
    if not numeric:
        ids = _IDS_SUFFIX_RE.match(tail)
        if ids:
            tail = ids.group(1)
            device["vendor_id"] = ids.group(2).lower()
            device["device_id"] = ids.group(3).lower()
        device["description"] = None if is_placeholder(tail) else tail.strip() or None
    elif tail:
        raise _err("unexpected text after the codes of an lspci -n line", n, raw)
    return device


def parse_lspci(text: object) -> dict[str, Any]:
    """Parse ``lspci`` / ``lspci -nn`` / ``-n`` / ``-D`` / ``-v*`` output (see the module docstring)."""
    if text is None or not isinstance(text, str):
        raise _err("input is not text", None)
    numbered = numbered_lines(strip_ansi(text.lstrip("\ufeff")))
    result: dict[str, Any] = {"devices": [], "numeric_ids": False, "verbose": False, "warnings": []}
    seen: dict[str, int] = {}
    ignored: list[IgnoredLine] = []
    first_content = True
    for n, raw in numbered:
        line = raw.rstrip()
        if not line.strip():
            continue
        if line[0] in " \t":
            if not result["devices"]:
                raise _err("indented detail line before the first device", n, raw)
            result["verbose"] = True
            first_content = False
            continue
        if first_content and _COMMAND_RE.match(line):
            first_content = False
            continue
        first_content = False
        if _TOOL_MESSAGE_RE.match(line):
            result["warnings"].append("line %d: %s" % (n, line.strip()))
            continue
        slot = _SLOT_RE.match(line)
        if slot is None and skip_foreign(ignored, n, line):
            continue
        if slot is None:
            raise _err("expected a device line 'bus:dev.fn class: ...'", n, raw)
        device = _parse_device(n, line, slot)
        if device["address"] in seen:
            raise _err("device %s listed twice (first on line %d)" % (device["slot"], seen[device["address"]]), n, raw)
        seen[device["address"]] = n
        if device["vendor_id"] is not None:
            result["numeric_ids"] = True
        result["devices"].append(device)
    if not result["devices"]:
        raise _err("no device lines (empty lspci output)", None)
    return with_ignored(result, ignored)


def is_nvidia(device: dict[str, Any]) -> bool:
    """True for a function of NVIDIA's (vendor 10de, or "NVIDIA Corporation" without codes)."""
    if device.get("vendor_id"):
        return bool(device["vendor_id"].lower() == NVIDIA_VENDOR_ID)
    return bool((device.get("description") or "").startswith("NVIDIA Corporation"))


def nvidia_gpus(devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The devices that are NVIDIA GPUs (display class 0300/0302), in listing order."""
    return [device for device in devices if is_nvidia(device) and device.get("class_code") in GPU_CLASS_CODES]
