# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``ibstat`` (infiniband-diags / rdma-core), KIND ``ibstat``.

``parse_ibstat(text)`` returns::

    {
      "devices": [                      # in the order ibstat printed them (lexical: mlx5_0, mlx5_1, mlx5_10 ...)
        {
          "name": str,                  # CA name, e.g. "mlx5_0", "mlx5_bond_0"
          "ca_type": str | None,        # "MT4129"; None when printed empty (soft RoCE)
          "num_ports": int | None,      # "Number of ports"
          "firmware_version": str | None,
          "hardware_version": str | None,   # as printed ("0", "1", "a0")
          "node_guid": str | None,          # "0x58a2e10300a7820e" (lower case, as printed)
          "system_image_guid": str | None,
          "details": bool,              # False for a header-only device (``ibstat | grep mlx5``
                                        # fragment): every other key is None and ports is []
          "other": {str: str},          # device-level "Key: value" lines ibstat may add, snake_cased
          "ports": [
            {
              "port": int,              # "Port 1:" -> 1
              "state": str,             # "Active", "Down", "Initializing", "Armed", "???"
              "physical_state": str,    # "LinkUp", "Polling", "Disabled", ...
              "rate_gbps": int | float, # "Rate: 400" -> 400, FDR "56", "2.5"; printed even when Down
              "base_lid": int,
              "lmc": int,
              "sm_lid": int,
              "capability_mask": str,   # "0xa751e848", as printed
              "port_guid": str,         # "0x0000000000000000" for CX-6 Dx Ethernet ports
              "link_layer": str,        # "InfiniBand" or "Ethernet"
              "other": {str: str},
            }
          ],
        }
      ],
      "errors": [{"line": int, "text": str}],   # stderr lines ibstat printed between/after
                                                # devices, e.g. "ibpanic: ... stat of IB device
                                                # 'mlx5_8' failed: ..." (exit 255, partial output)
    }

Raises :class:`ParseError` (with the 1-based line) for: empty input, no device at all (quoting
the first error line when there is one), an unrecognised line, a value that is not what the key
takes (number, GUID, state word), a key outside a CA block or a port key outside a ``Port N:``
block, a repeated key/port/device, and a device block that is incomplete (missing keys, fewer
``Port N:`` blocks than ``Number of ports``, or a bare ``CA '...'`` line among detailed devices)
-- which is what a truncated capture looks like. Only when EVERY device is a bare ``CA '...'``
line (``ibstat | grep mlx5``) are devices without details accepted (``details: False``).

Foreign lines (common's ``foreign_line``: a script's banner or rule, an echoed command, a note, an
elision) that the template refuses as unrecognised are skipped and listed in ``ignored_lines``
(``[{line, text, why}]``, present only when one was). A placeholder (``<masked>``, ``...``) for a
device value reads as None, like N/A; for a port value or as the CA name it is refused.
"""

from __future__ import annotations

import re
from typing import Any, List, TypedDict

from gpufleet.parsers.common import (
    IgnoredLine, ParseError, is_not_available, is_placeholder, parse_number, parse_with_template,
    snake_case, with_ignored,
)

KIND = "ibstat"
# templates/ibstat.textfsm: which line is accepted where; this module types and checks the values.
TEMPLATE = "ibstat"

# ------------------------------------------------------------------------------------------

_GUID_RE = re.compile(r"^0x[0-9a-fA-F]{16}$")
_MASK_RE = re.compile(r"^0x[0-9a-fA-F]{1,8}$")

_STATES = {"???", "Down", "Initializing", "Armed", "Active"}
_PHYS_STATES = {"No state change", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "PhyTest"}
_LINK_LAYERS = {"InfiniBand", "Ethernet", "IB", "Unknown"}

_DEVICE_KEYS = {
    "CA type": "ca_type",
    "Number of ports": "num_ports",
    "Firmware version": "firmware_version",
    "Hardware version": "hardware_version",
    "Node GUID": "node_guid",
    "System image GUID": "system_image_guid",
}
_PORT_KEYS = {
    "State": "state",
    "Physical state": "physical_state",
    "Rate": "rate_gbps",
    "Base lid": "base_lid",
    "LMC": "lmc",
    "SM lid": "sm_lid",
    "Capability mask": "capability_mask",
    "Port GUID": "port_guid",
    "Link layer": "link_layer",
}


def _port_value(field: str, value: str, number: int, line: str) -> str | int | float | None:
    if field in ("state", "physical_state", "link_layer"):
        allowed = {"state": _STATES, "physical_state": _PHYS_STATES, "link_layer": _LINK_LAYERS}[field]
        if value not in allowed:
            raise ParseError("unknown %s %r" % (field.replace("_", " "), value), line=number, kind=KIND, text=line)
        return value
    if field in ("port_guid",):
        if not _GUID_RE.match(value):
            raise ParseError("not a GUID: %r" % value, line=number, kind=KIND, text=line)
        return value
    if field == "capability_mask":
        if not _MASK_RE.match(value):
            raise ParseError("not a capability mask: %r" % value, line=number, kind=KIND, text=line)
        return value
    # rate_gbps, base_lid, lmc, sm_lid: decimal numbers
    if not re.fullmatch(r"\d+(\.\d+)?", value):
        raise ParseError("%s is not a number: %r" % (field, value), line=number, kind=KIND, text=line)
    result = parse_number(value, line=number, kind=KIND)
    if field != "rate_gbps" and not isinstance(result, int):
        raise ParseError("%s is not an integer: %r" % (field, value), line=number, kind=KIND, text=line)
    return result


def _device_value(field: str, value: str, number: int, line: str) -> str | int | None:
    if is_not_available(value) or is_placeholder(value):
        return None
    if field == "num_ports":
        if not value.isdigit():
            raise ParseError("number of ports is not an integer: %r" % value, line=number, kind=KIND, text=line)
        return int(value)
    if field in ("node_guid", "system_image_guid") and not _GUID_RE.match(value):
        raise ParseError("not a GUID: %r" % value, line=number, kind=KIND, text=line)
    return value


def _new_device(name: str) -> dict[str, Any]:
    device: dict[str, Any] = {"name": name, "details": False}
    for field in _DEVICE_KEYS.values():
        device[field] = None
    device["other"] = {}
    device["ports"] = []
    return device


def _check_device(device: dict[str, Any], seen: _Seen, last_line: int | None) -> None:
    """A device with any detail must be complete; a truncated block names its last line."""
    if not device["details"]:
        return
    missing = [key for key, field in _DEVICE_KEYS.items() if field not in seen["device"]]
    if missing:
        raise ParseError("CA %r is incomplete (no %s)" % (device["name"], ", ".join(missing)), line=last_line, kind=KIND)
    for port, port_seen in zip(device["ports"], seen["ports"]):
        missing = [key for key, field in _PORT_KEYS.items() if field not in port_seen]
        if missing:
            raise ParseError(
                "CA %r port %d is incomplete (no %s)" % (device["name"], port["port"], ", ".join(missing)), line=last_line, kind=KIND
            )
    if device["num_ports"] is not None and len(device["ports"]) != device["num_ports"]:
        raise ParseError(
            "CA %r says %d port(s) but %d were printed" % (device["name"], device["num_ports"], len(device["ports"])),
            line=last_line,
            kind=KIND,
        )


def parse_ibstat(text: str) -> dict[str, Any]:
    """Parse ``ibstat`` output; see the module docstring for the returned keys."""
    ignored: List[IgnoredLine] = []
    return with_ignored(_parse_ibstat(text, ignored), ignored)


class _Seen(TypedDict):
    """The fields one CA printed, and those of each of its port blocks."""

    device: set[str]
    ports: list[set[str]]


class _Reader:
    """The CAs of one ibstat output, one template record at a time."""

    def __init__(self) -> None:
        self.devices: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.device: dict[str, Any] | None = None
        self.port: dict[str, Any] | None = None
        self.seen: _Seen = {"device": set(), "ports": []}
        self.last_line: int | None = None
        self.ca_lines: list[tuple[int, str, dict[str, Any]]] = []  # every CA line, for the bare-CA check

    def read(self, number: int, line: str, fields: dict[str, str]) -> None:
        if fields["CA"]:
            self._ca(number, line, fields["CA"])
        elif fields["MESSAGE"] or not (fields["PORT"] or fields["DEVICE_KEY"] or fields["PORT_KEY"]
                                       or fields["OTHER_KEY"]):
            self.errors.append({"line": number, "text": fields["MESSAGE"]})
            return
        else:
            # the template records these only after a CA line
            assert self.device is not None
            self._detail(self.device, number, line, fields)
        self.last_line = number

    def _ca(self, number: int, line: str, ca: str) -> None:
        if self.device is not None:
            _check_device(self.device, self.seen, self.last_line)
        name = ca[1:-1]
        if not name or is_placeholder(name) or any(d["name"] == name for d in self.devices):
            raise ParseError("empty, placeholder or repeated CA name %r" % name, line=number, kind=KIND, text=line)
        self.device = _new_device(name)
        self.seen = {"device": set(), "ports": []}
        self.devices.append(self.device)
        self.ca_lines.append((number, line, self.device))
        self.port = None

    def _detail(self, device: dict[str, Any], number: int, line: str, fields: dict[str, str]) -> None:
        seen = self.seen
        if fields["PORT"]:
            # The template accepts "Port N:" only after a device key; ports need the count first.
            if "num_ports" not in seen["device"]:
                raise ParseError("port block outside a CA block", line=number, kind=KIND, text=line)
            port_number = int(fields["PORT"])
            if any(p["port"] == port_number for p in device["ports"]):
                raise ParseError("port %d printed twice" % port_number, line=number, kind=KIND, text=line)
            self.port = _new_port(port_number)
            device["ports"].append(self.port)
            seen["ports"].append(set())
        elif fields["DEVICE_KEY"]:
            key = fields["DEVICE_KEY"]
            field = _DEVICE_KEYS[key]
            if field in seen["device"]:
                raise ParseError("%r repeated or after a port block" % key, line=number, kind=KIND, text=line)
            device[field] = _device_value(field, fields["VALUE"], number, line)
            device["details"] = True
            seen["device"].add(field)
        elif fields["PORT_KEY"]:
            key = fields["PORT_KEY"]
            field = _PORT_KEYS[key]
            if field in seen["ports"][-1]:
                raise ParseError("%r repeated in one port block" % key, line=number, kind=KIND, text=line)
            assert self.port is not None  # the template accepts a port key only inside a port block
            self.port[field] = _port_value(field, fields["VALUE"], number, line)
            seen["ports"][-1].add(field)
        else:
            target = self.port if self.port is not None else device
            target["other"][snake_case(fields["OTHER_KEY"])] = fields["VALUE"]


def _new_port(port_number: int) -> dict[str, Any]:
    port: dict[str, Any] = {"port": port_number}
    for field in _PORT_KEYS.values():
        port[field] = None
    port["other"] = {}
    return port


def _parse_ibstat(text: str, ignored: List[IgnoredLine]) -> dict[str, Any]:
    reader = _Reader()
    for number, line, fields in parse_with_template(TEMPLATE, text, KIND, ignored, "unrecognised ibstat line"):
        reader.read(number, line, fields)
    devices, errors = reader.devices, reader.errors
    if reader.device is not None:
        _check_device(reader.device, reader.seen, reader.last_line)
    if any(d["details"] for d in devices):
        for number, line, bare in reader.ca_lines:
            if not bare["details"]:
                raise ParseError("CA %r has no details while others do (truncated?)" % bare["name"], line=number,
                                 kind=KIND, text=line)
    if not devices:
        if errors:
            raise ParseError("ibstat printed no device: %s" % errors[0]["text"], line=errors[0]["line"], kind=KIND,
                             text=errors[0]["text"])
        raise ParseError("no ibstat output (no \"CA '...'\" line)", kind=KIND)
    return {"devices": devices, "errors": errors}
