# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``ibv_devinfo`` / ``ibv_devinfo -v`` (libibverbs, rdma-core), KIND ``ibv-devinfo``.

``parse_ibv_devinfo(text)`` returns::

    {
      "devices": [                        # in printed order
        {
          "name": str,                    # hca_id: "mlx5_ib0", "rocep1s0f0", "mlx4_0"
          "transport": str,               # "InfiniBand (0)" -> "InfiniBand" (also "iWARP", ...)
          "transport_code": int | None,   # the number in brackets
          "fw_ver": str | None,           # "28.40.1702"; None when not printed (ibv_devinfo
                                          # omits an empty firmware version)
          "node_guid": str,               # "0015:5dff:fe34:0033" (as printed)
          "sys_image_guid": str,          # "0000:0000:0000:0000" for Azure AN VFs
          "vendor_id": int,               # "0x02c9" -> 713
          "vendor_part_id": int,          # 4126 (ConnectX-7 VF), 4129 (ConnectX-7), 4099 (CX-3)
          "hw_ver": int,                  # "0x80" -> 128
          "board_id": str | None,         # "MSF0000000047"; None when not printed
          "phys_port_cnt": int,
          "attributes": {str: str},       # every other device "key: value" (``-v``: max_qp, ...),
                                          # key snake_cased, value as printed; continuation lines
                                          # (flag names) appended with single spaces
          "ports": [
            {
              "port": int,
              "state": str,               # "PORT_ACTIVE", "PORT_DOWN", "PORT_INIT", "PORT_ARMED"
              "state_code": int,          # "PORT_ACTIVE (4)" -> 4
              "max_mtu": int | None,      # bytes: "4096 (5)" -> 4096; None for "invalid MTU"
              "active_mtu": int | None,   # 1024 on Ethernet/RoCE ports tied to a 1500 netdev
              "sm_lid": int,
              "port_lid": int,
              "port_lmc": int,            # "0x00" -> 0
              "link_layer": str,          # "InfiniBand", "Ethernet" (RoCE), "Unknown"
              "attributes": {str: str},   # ``-v`` port keys: active_width, active_speed,
                                          # phys_state, GID[  0] -> "gid_0", ...
            }
          ],
        }
      ],
      "errors": [{"line": int, "text": str}],   # unindented messages between devices
                                                # (e.g. "Failed to query port ...")
    }

Variants: TABs or spaces, the older libibverbs ``Device ports:`` line before the port blocks,
``-v`` extra keys and their flag-name continuation lines, CRLF, ANSI escapes, prompt lines, one
rank prefix. Raises :class:`ParseError` (1-based line) for: empty input, no ``hca_id:`` (quoting
the first message, e.g. "No IB devices found"), an unrecognised line, a malformed core value
(GUID, state, MTU, number), a repeated core key/port/device, a core device key after a port
block, and an incomplete device (core key missing, or fewer port blocks than
``phys_port_cnt``: a truncated capture). ``ibv_devinfo -i PORT`` (one port of several) is
therefore rejected; run it without ``-i``.

Foreign lines (common's ``foreign_line``: a script's banner or rule, an echoed command, a note, an
elision) that the template refuses as unrecognised are skipped and listed in ``ignored_lines``
(``[{line, text, why}]``, present only when one was). A placeholder (``<masked>``, ``...``) for
``fw_ver`` or ``board_id`` reads as None; for a required value or as the ``hca_id`` it is refused.
"""

from __future__ import annotations

import re
from typing import Any, List, NoReturn, TypedDict

from gpufleet.parsers.common import (
    IgnoredLine, ParseError, is_placeholder, parse_with_template, snake_case, with_ignored,
)

KIND = "ibv-devinfo"
# templates/ibv_devinfo.textfsm: which line is accepted where; this module types and checks the values.
TEMPLATE = "ibv_devinfo"

# ------------------------------------------------------------------------------------------

_GUID_RE = re.compile(r"^[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){3}$")
_CODED_RE = re.compile(r"^(.+?)\s*\((\d+)\)$")

_DEVICE_KEYS = ("transport", "fw_ver", "node_guid", "sys_image_guid", "vendor_id", "vendor_part_id", "hw_ver", "board_id", "phys_port_cnt")
_DEVICE_REQUIRED = ("transport", "node_guid", "sys_image_guid", "vendor_id", "vendor_part_id", "hw_ver", "phys_port_cnt")
_PORT_KEYS = ("state", "max_mtu", "active_mtu", "sm_lid", "port_lid", "port_lmc", "link_layer")
_LINK_LAYERS = {"InfiniBand", "Ethernet", "Unknown"}


class _Seen(TypedDict):
    """The keys one device printed, and those of each of its port blocks."""

    device: set[str]
    ports: list[set[str]]


def _fail(message: str, number: int, line: str) -> NoReturn:
    raise ParseError(message, line=number, kind=KIND, text=line)


def _int(value: str, number: int, line: str, base: int = 10) -> int:
    pattern = r"\d+" if base == 10 else r"0[xX][0-9a-fA-F]+"
    if not re.fullmatch(pattern, value):
        _fail("not a %s number: %r" % ("decimal" if base == 10 else "hex", value), number, line)
    return int(value, base if base == 10 else 16)


def _device_value(key: str, value: str, number: int, line: str, device: dict[str, Any]) -> None:
    if is_placeholder(value):
        if key in _DEVICE_REQUIRED:
            _fail("%s is a placeholder, not a value: %r" % (key, value), number, line)
        device[key] = None  # fw_ver, board_id: as when not printed
    elif key == "transport":
        match = _CODED_RE.match(value)
        device["transport"] = match.group(1) if match else value
        device["transport_code"] = int(match.group(2)) if match else None
        if not device["transport"]:
            _fail("empty transport", number, line)
    elif key in ("node_guid", "sys_image_guid"):
        if not _GUID_RE.match(value):
            _fail("not a GUID: %r" % value, number, line)
        device[key] = value
    elif key in ("vendor_id", "hw_ver"):
        device[key] = _int(value, number, line, base=16)
    elif key in ("vendor_part_id", "phys_port_cnt"):
        device[key] = _int(value, number, line)
    else:  # fw_ver, board_id
        if not value:
            _fail("empty %s" % key, number, line)
        device[key] = value


def _mtu(value: str, number: int, line: str) -> int | None:
    match = _CODED_RE.match(value)
    if not match:
        _fail("MTU is not 'BYTES (CODE)': %r" % value, number, line)
    if match.group(1).startswith("invalid"):
        return None
    return _int(match.group(1), number, line)


def _port_value(key: str, value: str, number: int, line: str, port: dict[str, Any]) -> None:
    if key == "state":
        match = _CODED_RE.match(value)
        if not match or not re.fullmatch(r"PORT_[A-Z_]+|invalid state", match.group(1)):
            _fail("port state is not 'PORT_X (N)': %r" % value, number, line)
        port["state"], port["state_code"] = match.group(1), int(match.group(2))
    elif key in ("max_mtu", "active_mtu"):
        port[key] = _mtu(value, number, line)
    elif key in ("sm_lid", "port_lid"):
        port[key] = _int(value, number, line)
    elif key == "port_lmc":
        port[key] = _int(value, number, line, base=16)
    else:  # link_layer
        if value not in _LINK_LAYERS:
            _fail("unknown link layer %r" % value, number, line)
        port[key] = value


def _new_device(name: str) -> dict[str, Any]:
    device: dict[str, Any] = {"name": name, "transport_code": None}
    for key in _DEVICE_KEYS:
        device[key] = None
    device["attributes"] = {}
    device["ports"] = []
    return device


def _new_port(number: int) -> dict[str, Any]:
    port: dict[str, Any] = {"port": number, "state_code": None}
    for key in _PORT_KEYS:
        port[key] = None
    port["attributes"] = {}
    return port


def _check(device: dict[str, Any] | None, seen: _Seen | None, last: int | None) -> None:
    if device is None or seen is None:
        return
    missing = [key for key in _DEVICE_REQUIRED if key not in seen["device"]]
    if missing:
        raise ParseError("device %r is incomplete (no %s)" % (device["name"], ", ".join(missing)), line=last, kind=KIND)
    for port, port_seen in zip(device["ports"], seen["ports"]):
        missing = [key for key in _PORT_KEYS if key not in port_seen]
        if missing:
            raise ParseError("device %r port %d is incomplete (no %s)" % (device["name"], port["port"], ", ".join(missing)), line=last, kind=KIND)
    if len(device["ports"]) != device["phys_port_cnt"]:
        raise ParseError(
            "device %r has phys_port_cnt %d but %d port block(s)" % (device["name"], device["phys_port_cnt"], len(device["ports"])),
            line=last,
            kind=KIND,
        )


def parse_ibv_devinfo(text: str) -> dict[str, Any]:
    """Parse ``ibv_devinfo [-v]`` output; see the module docstring for the returned keys."""
    ignored: List[IgnoredLine] = []
    return with_ignored(_parse_ibv_devinfo(text, ignored), ignored)


class _Reader:
    """The devices of one ibv_devinfo output, one template record at a time."""

    def __init__(self) -> None:
        self.devices: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.device: dict[str, Any] | None = None
        self.port: dict[str, Any] | None = None
        self.seen: _Seen | None = None
        self.last: int | None = None
        # (dict, key) that a continuation line extends; the template says when one may follow
        self.attribute: tuple[dict[str, str], str] | None = None

    def read(self, number: int, line: str, fields: dict[str, str]) -> None:
        if fields["HCA_ID_KEY"]:
            self._hca_id(number, line, fields["VALUE"])
        elif not any(fields[key] for key in ("PORT", "DEVICE_KEY", "PORT_KEY", "ATTRIBUTE_KEY", "CONTINUATION")):
            self.errors.append({"line": number, "text": fields["MESSAGE"]})
            return
        else:
            # the template records the other keys only after an hca_id line
            assert self.device is not None and self.seen is not None
            self._detail(self.device, self.seen, number, line, fields)
        self.last = number

    def _hca_id(self, number: int, line: str, name: str) -> None:
        _check(self.device, self.seen, self.last)
        if not name or is_placeholder(name) or any(d["name"] == name for d in self.devices):
            _fail("empty, placeholder or repeated hca_id %r" % name, number, line)
        self.device = _new_device(name)
        self.devices.append(self.device)
        self.seen = {"device": set(), "ports": []}
        self.port = self.attribute = None

    def _detail(self, device: dict[str, Any], seen: _Seen, number: int, line: str, fields: dict[str, str]) -> None:
        if fields["PORT"]:
            if any(p["port"] == int(fields["PORT"]) for p in device["ports"]):
                _fail("port %s printed twice" % fields["PORT"], number, line)
            self.port = _new_port(int(fields["PORT"]))
            device["ports"].append(self.port)
            seen["ports"].append(set())
        elif fields["DEVICE_KEY"]:
            key = fields["DEVICE_KEY"]
            if key in seen["device"]:
                _fail("%r repeated" % key, number, line)
            _device_value(key, fields["VALUE"], number, line, device)
            seen["device"].add(key)
        elif fields["PORT_KEY"]:
            key = fields["PORT_KEY"]
            if key in seen["ports"][-1]:
                _fail("%r repeated in one port block" % key, number, line)
            assert self.port is not None  # the template accepts a port key only inside a port block
            _port_value(key, fields["VALUE"], number, line, self.port)
            seen["ports"][-1].add(key)
        else:
            self._attribute(device, fields)

    def _attribute(self, device: dict[str, Any], fields: dict[str, str]) -> None:
        """A -v ``key: value`` attribute, or a continuation line of the one before it."""
        if fields["ATTRIBUTE_KEY"]:
            target = (self.port or device)["attributes"]
            name = snake_case(fields["ATTRIBUTE_KEY"])
            value = fields["VALUE"]
            target[name] = value if name not in target else "%s %s" % (target[name], value)
            self.attribute = (target, name)
        else:
            # the template admits a continuation only right after an attribute line, so ``attribute`` is set
            assert self.attribute is not None
            target, name = self.attribute
            target[name] = ("%s %s" % (target[name], fields["CONTINUATION"])).strip()


def _parse_ibv_devinfo(text: str, ignored: List[IgnoredLine]) -> dict[str, Any]:
    reader = _Reader()
    for number, line, fields in parse_with_template(TEMPLATE, text, KIND, ignored,
                                                    "unrecognised ibv_devinfo line"):
        reader.read(number, line, fields)
    _check(reader.device, reader.seen, reader.last)
    devices, errors = reader.devices, reader.errors
    if not devices:
        if errors:
            raise ParseError("ibv_devinfo printed no device: %s" % errors[0]["text"], line=errors[0]["line"], kind=KIND,
                             text=errors[0]["text"])
        raise ParseError("no ibv_devinfo output (no 'hca_id:' line)", kind=KIND)
    return {"devices": devices, "errors": errors}
