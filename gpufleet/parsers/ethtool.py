# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``ethtool IFACE`` (KIND ``ethtool``) and ``ethtool -i IFACE`` (KIND ``ethtool-driver``).

``parse_ethtool(text)`` returns::

    {
      "interface": str | None,            # from "Settings for eth0:"; None for a fragment without it
      "speed_mbps": int | None,           # "25000Mb/s" -> 25000; None for "Unknown!". NOTE: printed
                                          # even when "Link detected: no" -- judge link_detected too
      "duplex": str | None,               # "Full" / "Half"; None for "Unknown! (255)"
      "link_detected": bool | None,       # "yes"/"no"; None when not printed (fragment, crash)
      "port": str | None,                 # "Direct Attach Copper", "Twisted Pair", "FIBRE", "Other"
      "auto_negotiation": bool | None,    # "Auto-negotiation: on" -> True
      "lanes": int | None,                # "Lanes: 8" (ethtool >= 5.10 with a driver that reports it)
      "supported_ports": [str] | None,    # "[ TP  MII ]" -> ["TP", "MII"]; "[  ]" -> []
      "supported_link_modes": [str] | None,   # ["10baseT/Half", ...]; None for "Not reported"
      "advertised_link_modes": [str] | None,
      "link_partner_advertised_link_modes": [str] | None,
      "supported_fec_modes": [str] | None,    # ["None", "RS", "BASER"] ("None" = the no-FEC mode);
      "advertised_fec_modes": [str] | None,   # None for "Not reported"
      "supports_auto_negotiation": bool | None,
      "advertised_auto_negotiation": bool | None,
      "phyad": int | None,
      "transceiver": str | None,
      "message_level": int | None,        # "Current message level: 0x00000007 (7)" -> 7
      "message_level_flags": [str],       # continuation line "drv probe link" -> ["drv", "probe", "link"]
      "settings": {str: str},             # EVERY "Key: value" line, key snake_cased ("mdi_x",
                                          # "wake_on", "supported_pause_frame_use"...), value as
                                          # printed, continuation lines joined with single spaces
      "errors": [{"line": int, "text": str}],  # "netlink error: Operation not permitted",
                                          # "Cannot get ...: ...", "Segmentation fault (core dumped)"
      "truncated": bool,                  # True when the text is known incomplete: the tool crashed
                                          # (segfault...), an elision mark ("[..]") or grep
                                          # separator ("--") is present, or there is no
                                          # "Settings for" header (a ``| grep -A`` fragment)
    }

``parse_ethtool_driver(text)`` returns ``{"driver": str, "version": str | None,
"firmware_version": str | None, "bus_info": str | None, ...}``: every ``key: value`` line with the
key snake_cased (``expansion-rom-version`` -> ``expansion_rom_version``, ``supports-statistics``
-> ``supports_statistics``); an empty value (``expansion-rom-version: ``) or N/A is None and the
``supports_*`` yes/no values are booleans; ``errors``: [{"line", "text"}] for messages such as
"Cannot get driver information: ..." printed next to the data.

Raises :class:`ParseError` (1-based line) for: empty input; output with no setting at all
(quoting the tool's message, e.g. "Cannot get device settings: No such device"); a second
"Settings for" header or a repeated key (two captures concatenated); an unrecognised line (a
line without "key:" that does not continue a list); a malformed value (speed not ``NMb/s`` or
Unknown, link detected not yes/no, a link mode token that is not ``NbaseX[/Full|/Half]``,
lanes/PHYAD not integers); and a full output (with its header) that ends before
``Link detected:`` without a crash or a "Cannot get link status" message: a truncated capture
names its last line. ``ethtool -i``: a line that is not ``key: value`` or no ``driver:`` line.

Foreign lines (common's ``foreign_line``: a script's banner or rule, an echoed command, a note)
that the template refuses as unrecognised, or that stand among a list's continuation lines, are
skipped and listed in ``ignored_lines`` (``[{line, text, why}]``, present only when one was), in
both parsers; the template's own elision marks still set ``truncated``. A placeholder
(``<masked>``, ``...``) reads as None for ``port``, ``transceiver`` and the ``ethtool -i`` values,
and is refused for ``driver`` and wherever a typed value is required.
"""

from __future__ import annotations

import re

from typing import Any, List, NamedTuple, NoReturn

from gpufleet.parsers.common import (
    IgnoredLine, ParseError, is_not_available, is_placeholder, parse_with_template, skip_foreign,
    snake_case, with_ignored,
)

KIND = "ethtool"
KIND_DRIVER = "ethtool-driver"
# templates/<name>.textfsm: which line is accepted where; this module types and checks the values.
TEMPLATE = "ethtool"
TEMPLATE_DRIVER = "ethtool_driver"

# ------------------------------------------------------------------------------------------

_LINK_MODE_RE = re.compile(r"^\d+base[A-Za-z0-9_]+(?:/(?:Half|Full))?$")
_WORD_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]*$")
_FLAG_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_UNKNOWN_RE = re.compile(r"^Unknown!?(?:\s*\(\d+\))?$")


def _fail(message: str, number: int, line: str, kind: str = KIND) -> NoReturn:
    raise ParseError(message, line=number, kind=kind, text=line)


def _mode_list(value: str, pattern: re.Pattern[str], what: str,
               entries: list[tuple[int, str]]) -> list[str] | None:
    """Tokens of a list value; None for "Not reported". ``entries`` are (line number, text)."""
    if value.strip().lower() in ("not reported", "none reported"):
        return None
    tokens: list[str] = []
    for number, text in entries:
        for token in text.split():
            if not pattern.match(token):
                _fail("not a %s: %r" % (what, token), number, text)
            tokens.append(token)
    return tokens


def _yes_no(value: str, number: int, line: str, yes: str = "yes", no: str = "no",
            kind: str = KIND) -> bool:
    lowered = value.strip().lower()
    if lowered == yes:
        return True
    if lowered == no:
        return False
    return _fail("expected %s/%s, got %r" % (yes, no, value), number, line, kind)


def _integer(value: str, number: int, line: str) -> int:
    if not re.fullmatch(r"\d+", value.strip()):
        _fail("not an integer: %r" % value, number, line)
    return int(value)


def _interpret(result: dict[str, Any], key: str, entries: list[tuple[int, str]]) -> None:
    """Set the typed keys from one setting; ``entries`` = [(line number, value text), ...]."""
    if not _interpret_link(result, key, entries):
        _interpret_lists(result, key, entries)


def _interpret_link(result: dict[str, Any], key: str, entries: list[tuple[int, str]]) -> bool:
    """The link's settings (speed, duplex, link, negotiation, lanes, PHY address); False for another key."""
    number, value = entries[0]
    line = value
    if key == "Speed":
        match = re.fullmatch(r"(\d+)\s*Mb/s", value)
        if match:
            result["speed_mbps"] = int(match.group(1))
        elif _UNKNOWN_RE.match(value):
            result["speed_mbps"] = None
        else:
            _fail("speed is not 'NMb/s' or 'Unknown!': %r" % value, number, line)
    elif key == "Duplex":
        if value in ("Full", "Half"):
            result["duplex"] = value
        elif _UNKNOWN_RE.match(value):
            result["duplex"] = None
        else:
            _fail("duplex is not Full/Half/Unknown!: %r" % value, number, line)
    elif key == "Link detected":
        result["link_detected"] = _yes_no(value, number, line)
    elif key == "Auto-negotiation":
        result["auto_negotiation"] = _yes_no(value, number, line, "on", "off")
    elif key in ("Supports auto-negotiation", "Advertised auto-negotiation"):
        result[snake_case(key)] = _yes_no(value, number, line)
    elif key == "Lanes":
        result["lanes"] = _integer(value, number, line)
    elif key == "PHYAD":
        result["phyad"] = _integer(value, number, line)
    else:
        return False
    return True


def _interpret_lists(result: dict[str, Any], key: str, entries: list[tuple[int, str]]) -> None:
    """The port, transceiver and the list settings (ports, link and FEC modes, message level flags)."""
    number, value = entries[0]
    line = value
    if key in ("Port", "Transceiver"):
        result[snake_case(key)] = None if is_not_available(value) or is_placeholder(value) else value
    elif key == "Supported ports":
        match = re.fullmatch(r"\[(.*)\]", value)
        if not match:
            _fail("supported ports is not '[ ... ]': %r" % value, number, line)
        result["supported_ports"] = match.group(1).split()
    elif key.endswith("link modes"):
        result[snake_case(key)] = _mode_list(value, _LINK_MODE_RE, "link mode", entries)
    elif key.endswith("FEC modes"):
        result[snake_case(key)] = _mode_list(value, _WORD_RE, "FEC mode", entries)
    elif key == "Current message level":
        match = re.fullmatch(r"0x[0-9a-fA-F]+\s+\((\d+)\)", value)
        if not match:
            _fail("message level is not '0xN (N)': %r" % value, number, line)
        result["message_level"] = int(match.group(1))
        result["message_level_flags"] = _mode_list("", _FLAG_RE, "message flag", entries[1:])


def _new_result() -> dict[str, Any]:
    return {
        "interface": None,
        "speed_mbps": None,
        "duplex": None,
        "link_detected": None,
        "port": None,
        "auto_negotiation": None,
        "lanes": None,
        "supported_ports": None,
        "supported_link_modes": None,
        "advertised_link_modes": None,
        "link_partner_advertised_link_modes": None,
        "supported_fec_modes": None,
        "advertised_fec_modes": None,
        "supports_auto_negotiation": None,
        "advertised_auto_negotiation": None,
        "phyad": None,
        "transceiver": None,
        "message_level": None,
        "message_level_flags": [],
        "settings": {},
        "errors": [],
        "truncated": False,
    }


def parse_ethtool(text: str) -> dict[str, Any]:
    """Parse ``ethtool IFACE`` output; see the module docstring for the returned keys."""
    ignored: List[IgnoredLine] = []
    return with_ignored(_parse_ethtool(text, ignored), ignored)


class _Settings(NamedTuple):
    """The settings of one ``ethtool IFACE`` output as read: each key with its lines, and where the output was."""

    settings: list[tuple[str, list[tuple[int, str]]]]  # [(key, [(line number, text), ...])]
    header_line: int | None
    last_line: int | None
    crashed: bool


def _read_settings(text: str, ignored: List[IgnoredLine], result: dict[str, Any]) -> _Settings:
    """The template's records: settings and their continuation lines; errors and elisions go to ``result``."""
    settings: list[tuple[str, list[tuple[int, str]]]] = []
    header_line: int | None = None
    last_line: int | None = None
    crashed = False
    for number, line, fields in parse_with_template(TEMPLATE, text, KIND, ignored, "unrecognised ethtool line"):
        if fields["ELISION"]:
            result["truncated"] = True
        elif fields["CRASH"] or fields["MESSAGE"]:
            crashed = crashed or bool(fields["CRASH"])
            result["errors"].append({"line": number, "text": fields["CRASH"] or fields["MESSAGE"]})
        elif fields["INTERFACE"]:
            header_line = last_line = number
            result["interface"] = fields["INTERFACE"].strip()
        elif fields["KEY"]:
            key = fields["KEY"]
            if any(key == k for k, _e in settings):
                _fail("%r printed twice: two captures concatenated?" % key, number, line)
            settings.append((key, [(number, fields["VALUE"])]))
            last_line = number
        elif not skip_foreign(ignored, number, line):  # a banner or note would be refused as no link mode
            # the template allows a continuation line only right after a list setting
            settings[-1][1].append((number, fields["CONTINUATION"]))
            last_line = number
    return _Settings(settings, header_line, last_line, crashed)


def _parse_ethtool(text: str, ignored: List[IgnoredLine]) -> dict[str, Any]:
    result = _new_result()
    settings, header_line, last_line, crashed = _read_settings(text, ignored, result)
    result["truncated"] = result["truncated"] or crashed or header_line is None
    if not settings:
        if result["errors"]:
            first = result["errors"][0]
            raise ParseError("ethtool printed no setting: %s" % first["text"], line=first["line"], kind=KIND, text=first["text"])
        raise ParseError("no ethtool output (no 'Settings for' header and no 'Key: value' line)", line=header_line, kind=KIND)
    for key, entries in settings:
        result["settings"][snake_case(key)] = " ".join(t for _n, t in entries if t)
        _interpret(result, key, entries)
    link_error = any(e["text"].startswith("Cannot get link status") for e in result["errors"])
    if header_line is not None and not any(k == "Link detected" for k, _e in settings) and not (crashed or link_error):
        raise ParseError("output ends before 'Link detected:' (truncated?)", line=last_line, kind=KIND)
    return result


def parse_ethtool_driver(text: str) -> dict[str, Any]:
    """Parse ``ethtool -i IFACE`` output; see the module docstring for the returned keys."""
    ignored: List[IgnoredLine] = []
    return with_ignored(_parse_ethtool_driver(text, ignored), ignored)


def _parse_ethtool_driver(text: str, ignored: List[IgnoredLine]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    messages: list[tuple[int, str]] = []
    for number, line, fields in parse_with_template(TEMPLATE_DRIVER, text, KIND_DRIVER, ignored,
                                                    "unrecognised ethtool -i line"):
        if fields["MESSAGE"]:
            messages.append((number, fields["MESSAGE"]))
            continue
        key = snake_case(fields["KEY"])
        if key in result:
            _fail("%r printed twice: two captures concatenated?" % fields["KEY"], number, line, KIND_DRIVER)
        value = fields["VALUE"]
        if is_placeholder(value) and key == "driver":
            _fail("driver is a placeholder, not a name: %r" % value, number, line, KIND_DRIVER)
        if is_not_available(value) or is_placeholder(value):
            result[key] = None
        elif key.startswith("supports_"):
            result[key] = _yes_no(value, number, line, kind=KIND_DRIVER)
        else:
            result[key] = value
    if not result.get("driver"):
        if messages:
            raise ParseError("ethtool -i printed no driver: %s" % messages[0][1], line=messages[0][0], kind=KIND_DRIVER, text=messages[0][1])
        raise ParseError("no 'driver:' line in ethtool -i output", kind=KIND_DRIVER)
    result["errors"] = [{"line": n, "text": t} for n, t in messages]
    for key in ("version", "firmware_version", "bus_info"):
        result.setdefault(key, None)
    return result
