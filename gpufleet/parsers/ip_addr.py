# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``ip -j addr`` / ``ip -j -p addr`` (iproute2 JSON), KIND ``ip-addr``.

``parse_ip_addr(text)`` returns::

    {
      "interfaces": [                     # in printed (ifindex) order
        {
          "ifname": str,                  # "enp8s0", "docker0"
          "ifindex": int,
          "flags": [str],                 # ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"]
          "admin_up": bool,               # "UP" in flags
          "carrier": bool | None,         # False when "NO-CARRIER" in flags, True when "LOWER_UP"
                                          # is, None otherwise (e.g. administratively down)
          "mtu": int | None,
          "operstate": str | None,        # "UP", "DOWN", "UNKNOWN" (loopback), "DORMANT"...
          "link_type": str | None,        # "ether", "loopback", "infiniband", "none"
          "address": str | None,          # link-layer address (MAC; 20-byte for IPoIB)
          "master": str | None,           # bridge/bond the interface is enslaved to
          "qdisc": str | None,
          "addresses": [
            {
              "family": str,              # "inet" / "inet6"
              "local": str,               # "192.168.0.6", "fe80::3d6e:4143:7f56:3bf9"
              "prefixlen": int,
              "scope": str | None,        # "global", "link", "host"
              "dynamic": bool,            # True for DHCP/SLAAC addresses (key present and true)
              "broadcast": str | None,
              "label": str | None,
              "valid_lft": int | None,    # seconds; None for 4294967295 ("forever")
              "preferred_lft": int | None,
            }
          ],
        }
      ],
    }

Variants: single-line or pretty-printed (``-p``) JSON, CRLF, leading prompt/command lines
(``$ ip -j addr``) before the ``[``, trailing blank lines, the empty ``{}`` entries some iproute2
releases put in ``addr_info``. Strings are kept as strings; nothing is evaluated.

Raises :class:`ParseError` for: empty input; text that is not JSON (the 1-based line of the
JSON error, counted in the text as given -- an ``ip`` error message such as ``Device "x" does
not exist.`` is quoted); JSON that is not a list of interface objects, or an interface / address
whose fields have the wrong type (line: where the JSON document starts).

Foreign lines (common's ``foreign_line``: a script's banner or rule, an echoed command, a note,
an elision) before and after the document are skipped and listed in ``ignored_lines``
(``[{line, text, why}]``, present only when one was); prompts there are skipped unlisted, as
before. Other text after the document is refused. A placeholder string (``<masked>``) reads as
None in an optional field and is refused in a required one (``ifname``, ``local``...).
"""

from __future__ import annotations

import json
from typing import Any, List, Optional, Tuple

from gpufleet.parsers.common import (
    PROMPT_RE, IgnoredLine, ParseError, is_placeholder, numbered_lines, skip_foreign, strip_ansi, with_ignored,
)

KIND = "ip-addr"
_FOREVER = 4294967295


def _need(obj: dict[str, Any], key: str, types: type, line: int, where: str, optional: bool = True) -> Any:
    value = obj.get(key)
    if isinstance(value, str) and is_placeholder(value):
        if not optional:
            raise ParseError("%s: %r is a placeholder, not a value: %r" % (where, key, value), line=line, kind=KIND)
        return None
    if value is None and optional:
        return None
    if not isinstance(value, types) or (isinstance(value, bool) and types is not bool):
        raise ParseError("%s: %r is %r, expected %s" % (where, key, value, types.__name__), line=line, kind=KIND)
    return value


def _lifetime(value: int | None) -> int | None:
    return None if value == _FOREVER else value


def _address(info: dict[str, Any], line: int, where: str) -> dict[str, Any]:
    family = _need(info, "family", str, line, where, optional=False)
    local = _need(info, "local", str, line, where, optional=False)
    prefixlen = _need(info, "prefixlen", int, line, where, optional=False)
    dynamic = _need(info, "dynamic", bool, line, where)
    return {
        "family": family,
        "local": local,
        "prefixlen": prefixlen,
        "scope": _need(info, "scope", str, line, where),
        "dynamic": bool(dynamic),
        "broadcast": _need(info, "broadcast", str, line, where),
        "label": _need(info, "label", str, line, where),
        "valid_lft": _lifetime(_need(info, "valid_life_time", int, line, where)),
        "preferred_lft": _lifetime(_need(info, "preferred_life_time", int, line, where)),
    }


def _interface(obj: Any, line: int, position: int) -> dict[str, Any]:
    where = "interface #%d" % position
    if not isinstance(obj, dict):
        raise ParseError("%s is not a JSON object" % where, line=line, kind=KIND)
    ifname = _need(obj, "ifname", str, line, where, optional=False)
    where = "interface %r" % ifname
    flags = _need(obj, "flags", list, line, where) or []
    if not all(isinstance(flag, str) for flag in flags):
        raise ParseError("%s: flags are not strings" % where, line=line, kind=KIND)
    carrier = None
    if "NO-CARRIER" in flags:
        carrier = False
    elif "LOWER_UP" in flags:
        carrier = True
    infos = _need(obj, "addr_info", list, line, where) or []
    addresses: list[dict[str, Any]] = []
    for info in infos:
        if not isinstance(info, dict):
            raise ParseError("%s: addr_info entry is not an object" % where, line=line, kind=KIND)
        if info:  # some iproute2 releases print {} for a filtered-out address
            addresses.append(_address(info, line, where))
    return {
        "ifname": ifname,
        "ifindex": _need(obj, "ifindex", int, line, where, optional=False),
        "flags": flags,
        "admin_up": "UP" in flags,
        "carrier": carrier,
        "mtu": _need(obj, "mtu", int, line, where),
        "operstate": _need(obj, "operstate", str, line, where),
        "link_type": _need(obj, "link_type", str, line, where),
        "address": _need(obj, "address", str, line, where),
        "master": _need(obj, "master", str, line, where),
        "qdisc": _need(obj, "qdisc", str, line, where),
        "addresses": addresses,
    }


def _first_content_line(lines: List[Tuple[int, str]], ignored: List[IgnoredLine]) -> Optional[int]:
    """Number of the first of ``lines`` that is neither blank, a prompt nor foreign (listed in ``ignored``); or None."""
    for number, line in lines:
        cleaned = strip_ansi(line).strip()
        if cleaned and not PROMPT_RE.match(cleaned) and not skip_foreign(ignored, number, cleaned):
            return number
    return None


def parse_ip_addr(text: object) -> dict[str, Any]:
    """Parse ``ip -j addr`` JSON; see the module docstring for the returned keys."""
    if not isinstance(text, str):
        raise ParseError("expected text, got %s" % type(text).__name__, kind=KIND)
    lines = numbered_lines(text)
    ignored: List[IgnoredLine] = []
    start = _first_content_line(lines, ignored)
    if start is None:
        raise ParseError("no ip -j addr output (empty input)", kind=KIND)
    body = "\n".join(strip_ansi(line) for _n, line in lines[start - 1:])
    try:
        document, end = json.JSONDecoder().raw_decode(body, len(body) - len(body.lstrip()))
    except json.JSONDecodeError as exc:
        number = start + exc.lineno - 1
        raise ParseError("not iproute2 JSON: %s" % exc.msg, line=number, kind=KIND, text=lines[number - 1][1]) from None
    # what follows the document on its last line, then the lines below it: blank, prompts or foreign lines only
    last = start + body.count("\n", 0, end)
    extra = _first_content_line([(last, body[end:].split("\n", 1)[0])] + lines[last:], ignored)
    if extra is not None:
        raise ParseError("not iproute2 JSON: Extra data", line=extra, kind=KIND, text=lines[extra - 1][1])
    if not isinstance(document, list):
        raise ParseError("ip -j addr output is not a JSON list", line=start, kind=KIND)
    interfaces = [_interface(obj, start, i + 1) for i, obj in enumerate(document)]
    names = [i["ifname"] for i in interfaces]
    if len(set(names)) != len(names):
        raise ParseError("an interface is listed twice", line=start, kind=KIND)
    return with_ignored({"interfaces": interfaces}, ignored)
