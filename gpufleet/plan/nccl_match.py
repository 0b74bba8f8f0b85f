# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NCCL's own list syntax for ``NCCL_SOCKET_IFNAME`` and ``NCCL_IB_HCA`` (pure), reproduced from NCCL
``src/misc/utils.cc`` ``parseStringList``/``matchIfList`` and the callers in ``net_ib.cc`` and ``socket.cc``.

A leading ``^`` excludes, then a leading ``=`` makes EVERY entry of the list an exact match (not only the first),
otherwise each entry is a prefix; entries are separated by ``,`` and an entry may end in ``:port`` (the port of an
HCA; an interface has none, so any port matches it). Nothing is trimmed: ``"mlx5_0, mlx5_1"`` has a second entry
`` mlx5_1`` that matches nothing. Used by plan/nccl_env.py (what gpufleet writes) and checks/network.py (what a
node's settings select).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, TypeVar

# an interface name ("eth1") or a (device, port) pair (("mlx5_1", 1))
Named = TypeVar("Named")


def parse_spec(spec: Any) -> tuple[bool, bool, list[tuple[str, int]]]:
    """NCCL's reading of an interface/HCA list: ``(exclude, exact, [(prefix, port)])``.

    ``port`` is -1 when the entry has none. As NCCL: ``^`` first, then ``=``; ``:`` ends the
    name and ``atoi`` reads the port (``mlx5_0:x`` is port 0); an empty name is dropped.
    """
    text = "" if spec is None else str(spec)
    exclude = text.startswith("^")
    if exclude:
        text = text[1:]
    exact = text.startswith("=")
    if exact:
        text = text[1:]
    entries = []
    for item in text.split(","):
        name, colon, rest = item.partition(":")
        if not name:
            continue
        port = -1
        if colon:
            digits = re.match(r"\s*([+-]?\d+)", rest)
            port = int(digits.group(1)) if digits else 0
        entries.append((name, port))
    return exclude, exact, entries


def _name_port(item: Any) -> tuple[str, int]:
    if isinstance(item, (tuple, list)):
        return str(item[0]), (-1 if item[1] is None else int(item[1]))
    return str(item), -1


def matches(spec: Any, names: Iterable[Named]) -> list[Named]:
    """The members of ``names`` NCCL would select with ``spec``, in their order.

    ``names``: interface names (``"eth1"``) or ``(device, port)`` pairs (``("mlx5_1", 1)``).
    An empty list selects everything (and ``^`` of an empty list nothing), as in NCCL.
    """
    exclude, exact, entries = parse_spec(spec)
    out = []
    for item in names:
        name, port = _name_port(item)
        if not entries:
            hit = True
        else:
            hit = any((name == prefix if exact else name.startswith(prefix))
                      and (want == -1 or port == -1 or want == port)
                      for prefix, want in entries)
        if hit != exclude:
            out.append(item)
    return out


def exact_list(names: Iterable[str]) -> str:
    """A list NCCL matches exactly: ``["eth1"]`` -> ``"=eth1"`` (so ``eth10`` is never taken)."""
    return "=" + ",".join(names)
