# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Network checks (pure): NICs against the claim, RDMA rails, IB port error counters, NCCL settings.

Reads ``gpufleet_nic`` (see docs/facts/nic_facts.md), the claim's ``nics`` and the profile's
``expect.compute_rail``. A "link" here is one thing a seller can sell: an RDMA port (InfiniBand,
or RoCE with its Ethernet netdev folded in) or a physical Ethernet interface without RDMA.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from gpufleet.checks.registry import node_check
from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, CheckResult, NodeContext, result
from gpufleet.checks.profiles import profile_value
from gpufleet.facts.shapes import Interface, NicFacts, RdmaDevice, RdmaPort
# CLAIM_LINK_LAYER: the claim's NIC type -> the RDMA link layer it needs (``ethernet`` needs none).
from gpufleet.plan.nccl_match import parse_spec
from gpufleet.plan.nccl_rails import CLAIM_LINK_LAYER

# Claims are matched in this order (RDMA first, so an Ethernet claim never takes a RoCE rail).
CLAIM_TYPE_ORDER = {"ib": 0, "roce": 1, "ethernet": 2}
# Linux ARP type of an IPoIB interface (include/uapi/linux/if_arp.h ARPHRD_INFINIBAND): its link is
# the InfiniBand port, judged as the port.
ARPHRD_INFINIBAND = 32
# Physical port states in which a port carries no traffic (sysfs/ibstat spelling).
BAD_PHYSICAL_STATES = ("Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkErrorRecovery", "Phy Test",
                       "PhyTest")

# Widths of the IB PortCounters error counters (InfiniBand Architecture Specification vol. 1,
# PortCounters attribute; the Linux sysfs ports/N/counters files show them unchanged): a counter
# at its maximum has stopped counting, so its value is a floor ("saturated"), not a count.
COUNTER_MAX = {
    "symbol_error": 0xFFFF,
    "link_error_recovery": 0xFF,
    "link_downed": 0xFF,
    "port_rcv_errors": 0xFFFF,
    "port_rcv_remote_physical_errors": 0xFFFF,
    "port_rcv_switch_relay_errors": 0xFFFF,
    "port_xmit_discards": 0xFFFF,
    "port_xmit_constraint_errors": 0xFF,
    "port_rcv_constraint_errors": 0xFF,
    "local_link_integrity_errors": 0xF,
    "excessive_buffer_overrun_errors": 0xF,
    "VL15_dropped": 0xFFFF,
}
COUNTER_SOURCE = ("InfiniBand Architecture Specification vol. 1, PortCounters (error counters must read 0; widths give "
                  "saturation)")
# One reading of a count since the counters were last cleared has no time base (gpufleet/checks/gpu.py module
# docstring, docs/baselines.md 8): noted; its growth is judged (after_stress, bench_network.ib_counters).
NOTED_SOURCE = ("one reading of a count since the counters were last cleared (no time base): noted, not judged; "
                "growth between readings fails (docs/baselines.md 8 and 10)")

NCCL_ENV_SETTING = "gpufleet_nccl_env"


# --- shared helpers (host.py imports these) -------------------------------------------------------


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
    return [name for name, port in _ports(nic) if port.get("state") == "Active"]


# --- links ------------------------------------------------------------------------------------


def _ports(nic: NicFacts | None) -> list[tuple[str, RdmaPort]]:
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
        speed = _speed_words(None if speed_mbps is None else speed_mbps / 1000.0)
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
    for name, port in _ports(nic):
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


def _link_up(link: Link) -> bool:
    if link["kind"] == "rdma":
        return link["state"] == "Active" and link["physical_state"] not in BAD_PHYSICAL_STATES
    return link["up"]


def _link_ok(link: Link, gbps: Any) -> bool:
    return _link_up(link) and link["gbps"] is not None and gbps is not None and link["gbps"] >= gbps


def _state_words(link: Link) -> str:
    if link["kind"] == "rdma":
        return "%s%s" % (link["state"] or "state unknown", " (physical state %s)" % link["physical_state"]
                         if link["physical_state"] else "")
    if link["link_detected"] is False:
        return "without link (Link detected: no)"
    return "operstate %s" % (link["operstate"] or "unknown")


def _speed_words(gbps: Any) -> str:
    return "speed unknown" if gbps is None else "%s Gb/s" % num(gbps)


def _members_words(link: Link) -> str:
    if not link.get("members"):
        return ""
    mode = " %s" % link["bond_mode"] if link.get("bond_mode") else ""
    return " (bond%s: the sum of its active members; %s)" % (mode, "; ".join(link["members"]))


def describe_problem(link: Link) -> str:
    """What is wrong with ``link`` (a buyer's sentence, without the expectation)."""
    if not _link_up(link):
        return "%s is %s, %s%s" % (link["name"], _state_words(link), _speed_words(link["gbps"]), _members_words(link))
    if link["gbps"] is None:
        return "%s is up but reports no speed" % link["name"]
    return "%s runs at %s Gb/s%s" % (link["name"], num(link["gbps"]), _members_words(link))


def _other_part(link: Link, good: list[Link]) -> bool:
    parts = {item.get("part") for item in good if item.get("part") is not None}
    return bool(parts) and link.get("part") is not None and link.get("part") not in parts


def blame_order(rest: list[Link], good: list[Link]) -> list[Link]:
    """The links to blame for a shortfall, first to last: ports of the rail's own part (the part of
    the good ones) that are down or slow before other NICs; down before slow; then by name.

    A storage or front-end NIC of another part, up at its own speed, comes last: it is not the
    rail port that failed.
    """
    parts = {link.get("part") for link in good if link.get("part") is not None}
    return sorted(rest, key=lambda link: (bool(parts) and link.get("part") not in parts and _link_up(link),
                                          _link_up(link), -(link["gbps"] or 0), link["name"]))


def _candidates(links_: list[Link], nic_type: Any, taken: set[str]) -> list[Link]:
    layer = CLAIM_LINK_LAYER.get(nic_type)
    if layer:
        return [link for link in links_ if link["kind"] == "rdma" and link["link_layer"] == layer
                and link["name"] not in taken]
    return [link for link in links_ if link["link_layer"] == "Ethernet" and link["name"] not in taken]


def _short_link(check_id: str, link: Link, count: int, gbps: Any, label: str) -> CheckResult:
    """A link blamed for a claimed NIC line that is short of its count."""
    # An up link whose speed nothing reported (a virtual NIC, a rate not recorded) cannot be
    # verified: a warning, as network.rdma_port_state does; a link proven down or slow fails.
    unverified = _link_up(link) and link["gbps"] is None
    return result(check_id, WARN if unverified else FAIL,
                  "%s, claimed %dx %s Gb/s %s%s" % (describe_problem(link), count, num(gbps), label,
                                                    ": could not verify" if unverified else ""),
                  measured=link["gbps"], expected=gbps, threshold_source="claim", subject=link["name"])


def _claimed_line(check_id: str, entry: dict[str, Any], links_: list[Link],
                  taken: set[str]) -> tuple[str, list[CheckResult]]:
    """One claimed NIC line (count x Gb/s of a type) held against the links no earlier line took:
    ``(what matched, failures)``. The links it matched, and those it blames for a shortfall, are taken."""
    count, gbps = entry.get("count") or 0, entry.get("gbps")
    label = "%s %s" % (entry.get("role"), entry.get("type"))
    candidates = _candidates(links_, entry.get("type"), taken)
    good = sorted((link for link in candidates if _link_ok(link, gbps)), key=lambda link: link["gbps"])[:count]
    taken.update(link["name"] for link in good)
    matched = "%d of %dx %s Gb/s %s" % (len(good), count, num(gbps), label)
    short = count - len(good)
    if short <= 0:
        return matched, []
    blamed = blame_order([link for link in candidates if link["name"] not in taken], good)[:short]
    taken.update(link["name"] for link in blamed)
    failures = [_short_link(check_id, link, count, gbps, label) for link in blamed]
    missing = short - len(blamed)
    if missing > 0:
        found = count - missing
        failures.append(result(check_id, FAIL, "claimed %dx %s Gb/s %s NICs, found %d such links on the node"
                               % (count, num(gbps), label, found),
                               measured=found, expected=count, threshold_source="claim", subject=label))
    return matched, failures


@node_check("network.nic_speed", requires=("nic",))
def check_nic_speed(node: NodeContext) -> list[CheckResult]:
    """Each claimed NIC (count x Gb/s, by type) is present, up and at least as fast as claimed."""
    check_id = "network.nic_speed"
    claim = node.claim or {}
    if not claim.get("nics"):
        return [result(check_id, SKIP, "not judged: the claim lists no NICs (the profile's compute rail is judged by "
                       "network.rdma_port_state)")]
    links_ = links(node.group("nic"))
    taken: set[str] = set()
    failures: list[CheckResult] = []
    matched = []
    order = sorted(claim["nics"], key=lambda nic: (CLAIM_TYPE_ORDER.get(nic.get("type"), 9), -(nic.get("gbps") or 0)))
    for entry in order:
        words, short = _claimed_line(check_id, entry, links_, taken)
        matched.append(words)
        failures.extend(short)
    if failures:
        return failures
    claimed = sum(entry.get("count") or 0 for entry in claim["nics"])
    return [result(check_id, PASS, "claimed NICs present, up and at speed: %s" % "; ".join(matched),
                   measured=claimed, expected=claimed, threshold_source="claim")]


@dataclass
class _RailPorts:
    """The RDMA ports of one rail's link layers, held against what the rail wants of them."""

    layer: str
    count: int  # ports wanted
    rate: Any  # Gb/s each should run at; None when no rail says
    source: str | None
    good: list[Link]  # up at the rate
    blamed: set[str]  # the names of the ports blamed for the shortfall

    @property
    def enough(self) -> bool:
        return len(self.good) >= self.count


def _port_problem(link: Link, rail: _RailPorts) -> tuple[str, str]:
    """``(status, message)`` of a port that is not good."""
    if _link_up(link) and link["gbps"] is None:
        return WARN, "%s is Active but reports no rate: could not verify %s Gb/s" % (link["name"], num(rail.rate))
    if not _link_up(link):
        status = WARN if rail.enough or link["name"] not in rail.blamed else FAIL
        return status, "%s is %s, expected Active / LinkUp" % (link["name"], _state_words(link))
    return (WARN if rail.enough else FAIL,
            "%s is Active at %s Gb/s, expected %s Gb/s" % (link["name"], num(link["gbps"]), num(rail.rate)))


def _port_result(check_id: str, link: Link, rail: _RailPorts) -> CheckResult | None:
    """A port that is not good, judged; None for another NIC up at its own rate (storage, front-end): not a rail
    port that failed."""
    if link["name"] not in rail.blamed and _link_up(link) and (not rail.enough or _other_part(link, rail.good)):
        return None
    status, message = _port_problem(link, rail)
    if rail.enough:
        message += " (not needed: %d good %s ports cover the %d wanted)" % (len(rail.good), rail.layer, rail.count)
    elif link["name"] not in rail.blamed:
        message += " (not counted against the rail: another part than its %d good port(s))" % len(rail.good)
    measured = link["state"] if not _link_up(link) else link["gbps"]
    expected = "Active" if not _link_up(link) else rail.rate
    return result(check_id, status, message, measured=measured, expected=expected, threshold_source=rail.source,
                  subject=link["name"])


def _rail_results(check_id: str, group: list[Rail], links_: list[Link]) -> tuple[str, list[CheckResult]]:
    """The rails of one set of link layers held against the node's RDMA ports: ``(summary words, results)``."""
    layers = group[0]["link_layers"]
    count = sum(rail["count"] for rail in group)
    rates = [rail["gbps"] for rail in group if rail["gbps"] is not None]
    rate = min(rates) if rates else None
    ports = [link for link in links_ if link["link_layer"] in layers]
    good = [link for link in ports if _link_ok(link, rate)]
    # Short of the count: blame the rail's own down or slow ports, as many as are missing, not
    # every other port of the link layer (a storage NIC up at its own rate did not fail).
    blamed = {link["name"]
              for link in blame_order([link for link in ports if link not in good], good)[:max(count - len(good), 0)]}
    rail = _RailPorts(group[0]["link_layer"], count, rate, group[0]["source"], good, blamed)
    summary = ("%d of %d %s ports Active at >= %s Gb/s (%d wanted)"
               % (len(good), len(ports), rail.layer, num(rate), count))
    if not ports:
        return summary, [result(check_id, FAIL, "no %s RDMA port on the node; %d wanted" % (rail.layer, count),
                                measured=0, expected=count, threshold_source=rail.source, subject=rail.layer)]
    out = [item for item in (_port_result(check_id, link, rail) for link in ports if link not in good)
           if item is not None]
    if len(good) < count and len(ports) < count:
        out.append(result(check_id, FAIL, "only %d %s RDMA ports on the node; %d wanted"
                          % (len(ports), rail.layer, count),
                          measured=len(ports), expected=count, threshold_source=rail.source, subject=rail.layer))
    return summary, out


@node_check("network.rdma_port_state", requires=("nic",))
def check_rdma_port_state(node: NodeContext) -> list[CheckResult]:
    """RDMA ports of the claimed (else profiled) rails are Active / LinkUp at the rail's rate."""
    check_id = "network.rdma_port_state"
    rails = rdma_rails(node)
    if rails is None:
        return [result(check_id, SKIP,
                       "not judged: neither the claim nor the profile names an RDMA rail (InfiniBand/RoCE)")]
    if not rails:
        return [result(check_id, SKIP, "not judged: the claim lists no InfiniBand or RoCE NIC")]
    links_ = [link for link in links(node.group("nic")) if link["kind"] == "rdma"]
    out: list[CheckResult] = []
    summary = []
    for layers in sorted({rail["link_layers"] for rail in rails}):
        words, found = _rail_results(check_id, [rail for rail in rails if rail["link_layers"] == layers], links_)
        summary.append(words)
        out.extend(found)
    if out:
        return out
    return [result(check_id, PASS, "; ".join(summary), threshold_source=rails[0]["source"])]


def counter_findings(errors: dict[str, int | None] | None) -> list[tuple[str, int, bool]]:
    """``[(name, value, saturated)]`` of the non-zero error counters, in COUNTER_MAX order."""
    out: list[tuple[str, int, bool]] = []
    for name in COUNTER_MAX:
        value = (errors or {}).get(name)
        if value:
            out.append((name, value, value >= COUNTER_MAX[name]))
    return out


def _counter_words(findings: list[tuple[str, int, bool]]) -> str:
    words = []
    for counter, value, saturated in findings:
        if saturated:
            words.append("%s %d (SATURATED: the counter is pinned at its %d-bit maximum, the real count is %d or "
                         "more)" % (counter, value, COUNTER_MAX[counter].bit_length(), value))
        else:
            words.append("%s %d" % (counter, value))
    return ", ".join(words)


@node_check("network.ib_port_errors", requires=("nic",))
def check_ib_port_errors(node: NodeContext) -> list[CheckResult]:
    """IB port error counters, one reading: a saturated counter fails (its true value is unknown, and it can no longer
    show growth); other non-zero counts are noted with their values (a pass: no time base), never judged."""
    check_id = "network.ib_port_errors"
    ports = _ports(node.group("nic"))
    readable = [(name, port) for name, port in ports
                if any(value is not None for value in (port.get("counters") or {}).values())]
    if not readable:
        why = "no RDMA port" if not ports else "no port error counters readable (ports/N/counters not in sysfs, or N/A)"
        return [result(check_id, SKIP, "not judged: %s" % why)]
    out: list[CheckResult] = []
    for name, port in readable:
        findings = counter_findings(port.get("errors"))
        if not findings:
            continue
        measured = {counter: value for counter, value, _s in findings}
        if any(saturated for _c, _v, saturated in findings):
            out.append(result(check_id, FAIL, "%s error counters: %s; expected 0" % (name, _counter_words(findings)),
                              measured=measured, expected=0, threshold_source=COUNTER_SOURCE, subject=name))
        else:
            out.append(result(check_id, PASS, "noted, not judged: %s error counters: %s since the counters were last "
                              "cleared (one reading, no time base)" % (name, _counter_words(findings)),
                              measured=measured, expected=None, threshold_source=NOTED_SOURCE, subject=name))
    if out:
        return out
    return [result(check_id, PASS, "error counters are 0 on %d RDMA port(s)" % len(readable), measured=0, expected=0,
                   threshold_source=COUNTER_SOURCE)]


# --- NCCL settings ------------------------------------------------------------------------------


def nccl_list(value: str) -> tuple[bool, list[tuple[bool, str, int]]]:
    """NCCL's list syntax: ``(exclude, [(exact, name, port)])``; port -1 when none is given.

    Read by :func:`nccl_env.parse_spec`, NCCL's own rules: ``^`` excludes and a ``=`` after it
    makes the WHOLE list exact (``=mlx5_0:1,mlx5_1:1`` never takes ``mlx5_10``).
    """
    exclude, exact, entries = parse_spec(value)
    return exclude, [(exact, name, port) for name, port in entries]


def _matches(exact: bool, pattern: str, name: str) -> bool:
    return name == pattern if exact else name.startswith(pattern)


def _up_interfaces(nic: NicFacts) -> list[str]:
    return [iface["name"] for iface in nic.get("interfaces") or []
            if iface.get("operstate") == "up" or (iface.get("operstate") == "unknown" and iface.get("carrier"))]


def _check_socket_ifname(check_id: str, value: str, nic: NicFacts) -> list[CheckResult]:
    exclude, entries = nccl_list(value)
    names = [iface["name"] for iface in nic.get("interfaces") or []]
    up = _up_interfaces(nic)
    subject = "NCCL_SOCKET_IFNAME"
    if exclude:
        left = [name for name in up if name != "lo"
                and not any(_matches(exact, pattern, name) for exact, pattern, _port in entries)]
        if not left:
            return [result(check_id, FAIL, "NCCL_SOCKET_IFNAME=%s excludes every up interface (up: %s)"
                           % (value, ", ".join(up) or "none"),
                           measured=value, expected="an up interface left",
                           threshold_source="NCCL environment variables doc", subject=subject)]
        return []
    out: list[CheckResult] = []
    for exact, pattern, _port in entries:
        matched = [name for name in names if _matches(exact, pattern, name)]
        matched_up = [name for name in matched if name in up]
        if not matched_up:
            said = "matches %s, none up" % ", ".join(matched) if matched else "matches no interface on the node"
            out.append(result(check_id, FAIL, "NCCL_SOCKET_IFNAME entry %s%s %s (up: %s)"
                              % ("=" if exact else "", pattern, said, ", ".join(up) or "none"),
                              measured=matched, expected="an up interface",
                              threshold_source="NCCL environment variables doc", subject=subject))
    return out


def _check_ib_hca(check_id: str, value: str, nic: NicFacts) -> list[CheckResult]:
    exclude, entries = nccl_list(value)
    ports = _ports(nic)
    subject = "NCCL_IB_HCA"
    out: list[CheckResult] = []
    if exclude:
        left = [name for name, port in ports if port.get("state") == "Active"
                and not any(_matches(exact, pattern, name.split("/")[0]) for exact, pattern, _port in entries)]
        if not left:
            out.append(result(check_id, FAIL, "NCCL_IB_HCA=%s excludes every Active RDMA port" % value, measured=value,
                              expected="an Active port left",
                              threshold_source="NCCL environment variables doc", subject=subject))
        return out
    for exact, device, port_no in entries:
        pattern = device if port_no == -1 else "%s:%d" % (device, port_no)
        matched = [(name, port) for name, port in ports
                   if _matches(exact, device, name.split("/")[0]) and (port_no == -1 or port.get("port") == port_no)]
        if not matched:
            out.append(result(check_id, FAIL, "NCCL_IB_HCA entry %s names no RDMA port on the node" % pattern,
                              measured=None, expected="Active",
                              threshold_source="NCCL environment variables doc", subject=subject))
            continue
        for name, port in matched:
            if port.get("state") != "Active":
                state = port.get("state") or "in an unknown state"
                out.append(result(check_id, FAIL, "NCCL_IB_HCA entry %s selects %s, which is %s, not Active"
                                  % (pattern, name, state),
                                  measured=port.get("state"), expected="Active",
                                  threshold_source="NCCL environment variables doc", subject=name))
    return out


@node_check("network.nccl_env", requires=("nic",))
def check_nccl_env(node: NodeContext) -> list[CheckResult]:
    """NCCL_SOCKET_IFNAME names an up interface; NCCL_IB_HCA selects only Active ports."""
    check_id = "network.nccl_env"
    env = node.settings.get(NCCL_ENV_SETTING)
    if env is None:
        return [result(check_id, SKIP, "not judged: no %s chosen for this node" % NCCL_ENV_SETTING)]
    nic = node.group("nic")
    out: list[CheckResult] = []
    judged: list[str] = []
    if env.get("NCCL_SOCKET_IFNAME"):
        judged.append("NCCL_SOCKET_IFNAME=%s" % env["NCCL_SOCKET_IFNAME"])
        out.extend(_check_socket_ifname(check_id, env["NCCL_SOCKET_IFNAME"], nic))
    if env.get("NCCL_IB_HCA"):
        judged.append("NCCL_IB_HCA=%s" % env["NCCL_IB_HCA"])
        out.extend(_check_ib_hca(check_id, env["NCCL_IB_HCA"], nic))
    if out:
        return out
    if not judged:
        return [result(check_id, PASS,
                       "%s sets neither NCCL_SOCKET_IFNAME nor NCCL_IB_HCA: nothing to hold against the node"
                       % NCCL_ENV_SETTING)]
    return [result(check_id, PASS, "%s consistent with the node's interfaces and ports" % ", ".join(judged),
                   threshold_source="NCCL environment variables doc")]
