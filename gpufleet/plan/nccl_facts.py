# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a node's NIC facts (``gpufleet_nic``, docs/facts/nic_facts.md) for the NCCL derivation (pure): an
interface's state, speed, driver and IPv4 addresses, the RDMA ports, the natural order of names, what gpufleet
can write safely, and the words the explanations share. Used by plan/nccl_socket.py, plan/nccl_rails.py and
plan/nccl_env.py."""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Iterator

LINK_LOCAL_V4 = ipaddress.ip_network("169.254.0.0/16")
# What gpufleet writes into /etc/nccl.conf and the env file: no whitespace, quotes, `$`, `;`...
SAFE_VALUE_RE = re.compile(r"^[A-Za-z0-9_.,:=^@+/%-]*$")
SAFE_KEY_RE = re.compile(r"^NCCL_[A-Z0-9_]+$")

# (link layer, rate in Gb/s) of an RDMA port: what tells compute rails from storage/front-end ports
RailKey = tuple[Any, Any]
# an address and its network, of an interface's usable IPv4 addresses
AddressNet = tuple[Any, Any]


def natural_key(name: Any) -> list[Any]:
    """``mlx5_10`` after ``mlx5_9``: the digits of a name compared as numbers."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name or "")]


def interface_mbps(iface: dict[str, Any]) -> Any:
    """The interface's speed in Mb/s (sysfs, else ethtool when positive); None when unknown."""
    if iface.get("speed_mbps") is not None:
        return iface["speed_mbps"]
    speed = (iface.get("ethtool") or {}).get("speed_mbps")
    return speed if isinstance(speed, (int, float)) and speed > 0 else None


def is_up(iface: dict[str, Any]) -> bool:
    """Up, or of unknown state with a carrier."""
    state = iface.get("operstate")
    return state == "up" or (state in ("unknown", None) and iface.get("carrier") is True)


def driver_of(iface: dict[str, Any]) -> Any:
    return iface.get("driver") or (iface.get("ethtool_driver") or {}).get("driver")


def ipv4_networks(iface: dict[str, Any]) -> list[AddressNet]:
    """``[(address, network)]`` of the interface's usable IPv4 addresses (not link-local)."""
    out = []
    for addr in iface.get("ipv4") or []:
        try:
            network = ipaddress.ip_network("%s/%s" % (addr.get("address"), addr.get("prefixlen")), strict=False)
            address = ipaddress.ip_address(addr.get("address"))
        except (TypeError, ValueError):
            continue
        if address in LINK_LOCAL_V4 or address.is_loopback:
            continue
        out.append((address, network))
    return out


def rdma_ports(nic: dict[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """``(device, port)`` of every port of every RDMA device."""
    for dev in nic.get("rdma") or []:
        for port in dev.get("ports") or []:
            yield dev, port


def speed_text(mbps: Any) -> str:
    return "speed unknown" if mbps is None else "%s Mb/s" % mbps


def rate_text(key: RailKey) -> str:
    """A rail key in words: ``400 Gb/s InfiniBand``."""
    link_layer, rate = key
    return "%s %s" % ("%s Gb/s" % rate if rate is not None else "rate unknown", link_layer or "link layer unknown")


def left_out_text(left_out: dict[str, str]) -> str:
    """``; left out: eth0 (why), ...`` in natural order; "" for nothing left out."""
    if not left_out:
        return ""
    ordered = sorted(left_out.items(), key=lambda item: natural_key(item[0]))
    return "; left out: %s" % ", ".join("%s (%s)" % (name, why) for name, why in ordered)
