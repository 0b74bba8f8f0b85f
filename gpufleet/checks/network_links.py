# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The links of a node as the network checks of gpufleet/checks/network.py read them (pure).

A "link" here is one thing a seller can sell: an RDMA port (InfiniBand, or RoCE with its Ethernet netdev folded in)
or a physical Ethernet interface without RDMA (:func:`links`); a bond is one link at the sum of its active members.
Here too: the RDMA rails a node should have (:func:`rdma_rails`, from the claim, else the profile's
``expect.compute_rail``), whether a link is up and at a rate, how a link's problem is worded, and which links are
blamed first for a shortfall (:func:`blame_order`).

The checks stay in network.py (the engine runs a family's checks by the module that declares them); network.py
re-exports what other modules import from it (``num``, ``rdma_rails``, ``active_rdma_ports``).
"""

from __future__ import annotations

from typing import Any, TypedDict

from gpufleet.checks.model import NodeContext
from gpufleet.checks.profiles import profile_value
from gpufleet.facts.shapes import Interface, NicFacts, RdmaDevice, RdmaPort
# CLAIM_LINK_LAYER: the claim's NIC type -> the RDMA link layer it needs (``ethernet`` needs none).
from gpufleet.plan.nccl_rails import CLAIM_LINK_LAYER

# Linux ARP type of an IPoIB interface (include/uapi/linux/if_arp.h ARPHRD_INFINIBAND): its link is
# the InfiniBand port, judged as the port.
ARPHRD_INFINIBAND = 32
# Physical port states in which a port carries no traffic (sysfs/ibstat spelling).
BAD_PHYSICAL_STATES = ("Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkErrorRecovery", "Phy Test",
                       "PhyTest")


# --- shared helpers (host.py and the bench_*.py modules import these through network.py) ----------


class Rail(TypedDict):
    """One RDMA rail the node should have (:func:`rdma_rails`)."""

    role: Any
    type: Any
    link_layer: str
    link_layers: tuple[str, ...]
    count: Any  # ports wanted: the claim's count (0 when it gives none), or the profile's
    gbps: Any  # the rate each port should run at, None when not said
    source: str | None


class Link(TypedDict, total=False):
    """One sellable link (:func:`links`): an RDMA port (``kind`` ``rdma``) or an Ethernet interface (``iface``)."""

    kind: str
    name: str
    link_layer: Any
    # an RDMA port's state and physical state
    state: Any
    physical_state: Any
    # an interface's: up (operstate, carrier and ethtool), operstate, ethtool's Link detected
    up: bool
    operstate: Any
    link_detected: Any
    gbps: Any  # None when nothing reported a speed
    # the physical part (an RDMA device's board, an interface's driver): rail ports share it
    part: Any
    # a bond's members, described; the bond's mode
    members: list[str]
    bond_mode: Any


def num(value: Any) -> str:
    """A figure for a message: ``400`` not ``400.0``; ``unknown`` for None."""
    if value is None:
        return "unknown"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def rail_link_layers(link_layer: Any) -> tuple[str, ...]:
    """The profile's ``compute_rail.link_layer`` (one name or a list of them) as a tuple."""
    if isinstance(link_layer, (list, tuple)):
        return tuple(link_layer)
    return (link_layer,) if link_layer else ()


def rdma_rails(node: NodeContext) -> list[Rail] | None:
    """The RDMA rails the node should have: ``[{role, type, link_layer, link_layers, count, gbps, source}]``.

    From the claim's ``ib``/``roce`` NICs when the claim lists NICs (an empty list: the seller
    promised none), else the profile's ``expect.compute_rail``; None when neither says.
    ``link_layers`` are the link layers a port of the rail may have: the claim names one; a
    profile may name several (a SKU built with NDR InfiniBand or with 400G RoCE), and then
    ``link_layer`` is them joined with "/".
    """
    claim = node.claim or {}
    if claim.get("nics") is not None:
        return [{"role": nic.get("role"), "type": nic.get("type"), "link_layer": CLAIM_LINK_LAYER[nic.get("type")],
                 "link_layers": (CLAIM_LINK_LAYER[nic.get("type")],), "count": nic.get("count") or 0,
                 "gbps": nic.get("gbps"), "source": "claim"}
                for nic in claim["nics"] if nic.get("type") in CLAIM_LINK_LAYER]
    rail, rail_source = profile_value(node.profile, "expect.compute_rail")
    if rail:
        layers = rail_link_layers(rail.get("link_layer"))
        return [{"role": "compute",
                 "type": "ib" if layers == ("InfiniBand",) else "roce" if layers == ("Ethernet",) else "rdma",
                 "link_layer": "/".join(layers), "link_layers": layers,
                 "count": rail.get("count") or 0, "gbps": rail.get("rate"), "source": rail_source}]
    return None


def active_rdma_ports(nic: NicFacts | None) -> list[str]:
    """``dev/port`` names of the Active RDMA ports in ``gpufleet_nic`` (empty without facts)."""
    return [name for name, port in rdma_ports(nic) if port.get("state") == "Active"]


# --- links ------------------------------------------------------------------------------------


def rdma_ports(nic: NicFacts | None) -> list[tuple[str, RdmaPort]]:
    """``(dev/port, port)`` of every RDMA port in ``gpufleet_nic`` (empty without facts)."""
    if not nic:
        return []
    return [("%s/%s" % (dev["device"], port["port"]), port) for dev in nic.get("rdma") or []
            for port in dev.get("ports") or []]


def _iface_up(iface: Interface) -> bool:
    ethtool = iface.get("ethtool") or {}
    return (iface.get("operstate") == "up" and iface.get("carrier") is not False
            and ethtool.get("link_detected") is not False)


def _iface_gbps(iface: Interface) -> float | None:
    mbps = iface.get("speed_mbps")
    if mbps is None:
        mbps = (iface.get("ethtool") or {}).get("speed_mbps")
    return None if mbps is None else mbps / 1000.0


def _bond_members(iface: Interface) -> tuple[float, list[str]] | None:
    """``(gbps, [member words])`` of a bond from its ``/proc/net/bonding`` facts; None without them.

    The bond carries the sum of its ACTIVE members (up and, in 802.3ad, in the active aggregator:
    the bonding driver's own rule for the bond's speed), so a 2x100G LACP bond with one member down
    is a 100G link.
    """
    bond = iface.get("bond")
    if not bond or not bond.get("members"):
        return None
    total, words = 0, []
    for member in bond["members"]:
        speed_mbps = member.get("speed_mbps")
        speed = speed_words(None if speed_mbps is None else speed_mbps / 1000.0)
        if member.get("active"):
            total += speed_mbps or 0
            words.append("%s up %s" % (member["name"], speed))
        elif member.get("mii_status") == "up":
            words.append("%s up %s but outside the active LACP aggregator (aggregator %s, active %s)" % (
                member["name"], speed, num(member.get("aggregator_id")), num(bond.get("active_aggregator"))))
        else:
            words.append("%s %s (MII status %s)" % (member["name"], speed, member.get("mii_status") or "unknown"))
    return total / 1000.0, words


def _part(dev: RdmaDevice | None) -> Any:
    # The physical part of an RDMA device: rail ports share it; storage/front-end NICs usually do not.
    if not dev:
        return None
    return dev.get("board_id") or dev.get("hca_type") or dev.get("vendor_part_id")


def _rdma_links(nic: NicFacts, ifaces: dict[str, Interface]) -> list[Link]:
    """The RDMA ports as links: a RoCE port at its netdev's speed when it reports no rate, a bond's members named."""
    devices = {dev.get("device"): dev for dev in nic.get("rdma") or []}
    out = []
    for name, port in rdma_ports(nic):
        netdev = port.get("netdev")
        iface = ifaces.get(netdev) if netdev is not None else None
        gbps = port.get("rate_gbps")
        if gbps is None and iface is not None and port.get("link_layer") == "Ethernet":
            gbps = _iface_gbps(iface)
        link: Link = {"kind": "rdma", "name": name, "link_layer": port.get("link_layer"), "state": port.get("state"),
                      "physical_state": port.get("physical_state"), "gbps": gbps,
                      "part": _part(devices.get(name.split("/")[0]))}
        members = _bond_members(iface) if iface is not None else None
        if members is not None:
            link["members"] = members[1]
        out.append(link)
    return out


def _bond_member_names(iface: Interface) -> list[str]:
    bond = iface.get("bond")
    return [member["name"] for member in (bond.get("members") or [] if bond else [])]


def _own_link(iface: Interface, in_bonds: set[str]) -> bool:
    """Whether an interface is a link of its own: not virtual (a bond is), not an RDMA port's netdev or IPoIB (judged
    as the port), not a bond's member (judged through the bond)."""
    is_bond = iface.get("virtual_kind") == "bond"
    if (iface.get("virtual") and not is_bond) or iface.get("rdma_device") or iface.get("arp_type") == ARPHRD_INFINIBAND:
        return False
    return iface["name"] not in in_bonds


def _iface_link(iface: Interface) -> Link:
    """An Ethernet interface as a link; a bond at the sum of its active members."""
    ethtool = iface.get("ethtool") or {}
    link: Link = {"kind": "iface", "name": iface["name"], "link_layer": "Ethernet", "up": _iface_up(iface),
                  "operstate": iface.get("operstate"), "link_detected": ethtool.get("link_detected"),
                  "gbps": _iface_gbps(iface), "part": iface.get("driver")}
    members = _bond_members(iface) if iface.get("virtual_kind") == "bond" else None
    if members is not None:
        link["gbps"], link["members"] = members
        bond = iface.get("bond")
        link["bond_mode"] = bond.get("mode") if bond else None
    return link


def links(nic: NicFacts) -> list[Link]:
    """Every sellable link of a node: RDMA ports, bonds, and the physical Ethernet interfaces without RDMA.

    A bond is one link (at the sum of its active members) and its members are judged through it,
    not again as links of their own.
    """
    ifaces = {iface["name"]: iface for iface in nic.get("interfaces") or []}
    in_bonds = {name for iface in ifaces.values() for name in _bond_member_names(iface)}
    return _rdma_links(nic, ifaces) + [_iface_link(iface) for iface in nic.get("interfaces") or []
                                       if _own_link(iface, in_bonds)]


def link_up(link: Link) -> bool:
    """An RDMA port Active in a physical state that carries traffic; an interface up."""
    if link["kind"] == "rdma":
        return link["state"] == "Active" and link["physical_state"] not in BAD_PHYSICAL_STATES
    return link["up"]


def link_ok(link: Link, gbps: Any) -> bool:
    """Up at ``gbps`` or faster (never ok when either rate is unknown)."""
    return link_up(link) and link["gbps"] is not None and gbps is not None and link["gbps"] >= gbps


def state_words(link: Link) -> str:
    """A link's state for a message: an RDMA port's state and physical state, an interface's link or operstate."""
    if link["kind"] == "rdma":
        return "%s%s" % (link["state"] or "state unknown", " (physical state %s)" % link["physical_state"]
                         if link["physical_state"] else "")
    if link["link_detected"] is False:
        return "without link (Link detected: no)"
    return "operstate %s" % (link["operstate"] or "unknown")


def speed_words(gbps: Any) -> str:
    """``400 Gb/s``, or ``speed unknown``."""
    return "speed unknown" if gbps is None else "%s Gb/s" % num(gbps)


def _members_words(link: Link) -> str:
    if not link.get("members"):
        return ""
    mode = " %s" % link["bond_mode"] if link.get("bond_mode") else ""
    return " (bond%s: the sum of its active members; %s)" % (mode, "; ".join(link["members"]))


def describe_problem(link: Link) -> str:
    """What is wrong with ``link`` (a buyer's sentence, without the expectation)."""
    if not link_up(link):
        return "%s is %s, %s%s" % (link["name"], state_words(link), speed_words(link["gbps"]), _members_words(link))
    if link["gbps"] is None:
        return "%s is up but reports no speed" % link["name"]
    return "%s runs at %s Gb/s%s" % (link["name"], num(link["gbps"]), _members_words(link))


def other_part(link: Link, good: list[Link]) -> bool:
    """Whether ``link`` is of another physical part than the ``good`` links (a storage or front-end NIC)."""
    parts = {item.get("part") for item in good if item.get("part") is not None}
    return bool(parts) and link.get("part") is not None and link.get("part") not in parts


def blame_order(rest: list[Link], good: list[Link]) -> list[Link]:
    """The links to blame for a shortfall, first to last: ports of the rail's own part (the part of
    the good ones) that are down or slow before other NICs; down before slow; then by name.

    A storage or front-end NIC of another part, up at its own speed, comes last: it is not the
    rail port that failed.
    """
    parts = {link.get("part") for link in good if link.get("part") is not None}
    return sorted(rest, key=lambda link: (bool(parts) and link.get("part") not in parts and link_up(link),
                                          link_up(link), -(link["gbps"] or 0), link["name"]))
