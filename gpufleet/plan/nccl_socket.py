# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``NCCL_SOCKET_IFNAME`` of every node (pure): the interface NCCL bootstraps over, chosen by a table of rules.

Each node's up interfaces that NCCL may use are its candidates, fastest first (:func:`socket_candidates`). Then
the first row of :data:`SOCKET_RULES` that applies to the node picks its interface (or none), says why, and may
record a problem (the role writes nothing while there is one) or a warning:

- with ``gpufleet_cluster_cidr``: the fastest up interface with an IPv4 address inside it;
- without: the IPv4 subnet every node has an up interface in, the one whose slowest node is fastest (ties: the
  larger sum, then the lower network), and on each node its fastest interface there;
- a node whose addresses are unknown (``ip`` missing) gets its fastest up interface and a warning that the subnet
  was not verified.
"""

from __future__ import annotations

import collections
import ipaddress
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, TypedDict

from gpufleet.plan.nccl_facts import (SAFE_VALUE_RE, AddressNet, interface_mbps, ipv4_networks, is_up, left_out_text,
                                      natural_key, speed_text)
from gpufleet.plan.nccl_match import exact_list

# Never a cluster interface: loopback, container plumbing, libvirt/docker bridges.
EXCLUDED_PREFIXES = ("docker", "veth", "virbr", "br-")
EXCLUDED_KINDS = ("loopback", "docker", "veth")


class Candidate(TypedDict):
    """An up interface NCCL may bootstrap over: its name, speed (Mb/s, None unknown) and IPv4 addresses (None when
    the node's addresses are unknown)."""

    name: str
    mbps: Any
    networks: list[AddressNet] | None


class SocketChoice(TypedDict):
    """One node's answer: the value to write (None when no interface fits), why, and a warning (or None)."""

    value: str | None
    why: str
    warning: str | None


def socket_candidates(nic: dict[str, Any]) -> tuple[list[Candidate], dict[str, str], bool]:
    """``(candidates, left_out, ip_known)``: up interfaces NCCL may bootstrap over (fastest first), why others are
    not, and whether the node's addresses are known."""
    ip_known = any(iface.get("ipv4") is not None for iface in nic.get("interfaces") or [])
    candidates: list[Candidate] = []
    left_out = {}
    for iface in nic.get("interfaces") or []:
        name = iface.get("name") or ""
        why = _not_a_candidate(iface, name)
        networks = ipv4_networks(iface) if ip_known and why is None else None
        if why is None and ip_known and not networks:
            why = "no IPv4 address (link-local 169.254/16 does not count)"
        if why is not None:
            left_out[name] = why
            continue
        candidates.append({"name": name, "mbps": interface_mbps(iface), "networks": networks})
    candidates.sort(key=lambda cand: (-(cand["mbps"] or 0), natural_key(cand["name"])))
    return candidates, left_out, ip_known


def _not_a_candidate(iface: dict[str, Any], name: str) -> str | None:
    """Why the interface is no bootstrap candidate (loopback or container plumbing, a name that cannot be written,
    not up); None when it may be one."""
    if name == "lo" or iface.get("virtual_kind") in EXCLUDED_KINDS or name.startswith(EXCLUDED_PREFIXES):
        return iface.get("virtual_kind") or "excluded name"
    if not SAFE_VALUE_RE.match(name) or name.startswith(("=", "^")):
        return "name cannot be written safely"
    if not is_up(iface):
        return "not up (operstate %s)" % (iface.get("operstate") or "unknown")
    return None


@dataclass
class SocketNode:
    """What the rules read about one node: its candidates, and the fleet's cluster CIDR or shared subnet."""

    host: str
    candidates: list[Candidate]
    left_out: dict[str, str]
    ip_known: bool
    peers: int
    # gpufleet_cluster_cidr as a network; None without one
    network: Any = None
    # without a CIDR: the IPv4 subnet every node shares (None when none), and per subnet each node's fastest
    # interface there
    chosen_net: Any = None
    per_net: dict[Any, dict[str, Candidate]] = field(default_factory=dict)

    @cached_property
    def inside(self) -> list[Candidate]:
        """The candidates with an address in the cluster CIDR, fastest first."""
        return [cand for cand in self.candidates
                if any(address in self.network for address, _net in cand["networks"] or [])]

    @cached_property
    def shared_pick(self) -> Candidate:
        """This node's fastest interface in the shared subnet (a node whose addresses are known, a subnet shared)."""
        return self.per_net[self.chosen_net][self.host]


def _nothing(_node: SocketNode) -> str | None:
    return None


def _no_pick(_node: SocketNode) -> Candidate | None:
    return None


@dataclass(frozen=True)
class SocketRule:
    """A row of the socket choice: when it applies, the interface it picks (None: none), why, and the problem or
    warning it records."""

    applies: Callable[[SocketNode], bool]
    pick: Callable[[SocketNode], Candidate | None]
    why: Callable[[SocketNode], str]
    problem: Callable[[SocketNode], str | None] = _nothing
    warning: Callable[[SocketNode], str | None] = _nothing


def _with_addresses(candidates: list[Candidate]) -> str:
    return "; ".join("%s %s" % (cand["name"], ",".join(str(net) for _addr, net in cand["networks"] or []))
                     for cand in candidates)


def _cidr_why(node: SocketNode) -> str:
    best = node.inside[0]
    return ("%s: the fastest up interface (%s) with an address in gpufleet_cluster_cidr %s%s"
            % (best["name"], speed_text(best["mbps"]), node.network, left_out_text(node.left_out)))


def _shared_why(node: SocketNode) -> str:
    best = node.shared_pick
    others = [cand["name"] for cand in node.candidates if cand is not best]
    shared_with = ("the IPv4 subnet this node shares with its %d peer%s" % (node.peers, "" if node.peers == 1 else "s")
                   if node.peers else "its fastest IPv4 subnet (a single node: no peer to share one with)")
    return ("%s: the fastest up interface (%s) in %s, %s%s%s"
            % (best["name"], speed_text(best["mbps"]), node.chosen_net, shared_with,
               "; other up interfaces: %s" % ", ".join(others) if others else "", left_out_text(node.left_out)))


def _unverified_why(node: SocketNode) -> str:
    best = node.candidates[0]
    return ("%s: the fastest up interface (%s); its subnet was not verified (addresses unknown)%s"
            % (best["name"], speed_text(best["mbps"]), left_out_text(node.left_out)))


def _unverified_warning(node: SocketNode) -> str:
    return ("NCCL_SOCKET_IFNAME: %s chosen without checking its subnet: the node's addresses are unknown (ip not "
            "installed); set gpufleet_cluster_cidr or override NCCL_SOCKET_IFNAME if the nodes do not reach each "
            "other there" % node.candidates[0]["name"])


SOCKET_RULES = (
    # with gpufleet_cluster_cidr: the fastest up interface with an address inside it
    SocketRule(applies=lambda node: node.network is not None and not node.ip_known, pick=_no_pick,
               why=lambda node: "addresses unknown",
               problem=lambda node: "%s: cannot tell which interface is on gpufleet_cluster_cidr %s: the node's "
                                    "addresses are unknown (ip not installed)" % (node.host, node.network)),
    SocketRule(applies=lambda node: node.network is not None and not node.inside, pick=_no_pick,
               why=lambda node: "no interface in %s" % node.network,
               problem=lambda node: "%s: no up interface has an address in gpufleet_cluster_cidr %s (up with IPv4: "
                                    "%s)" % (node.host, node.network, _with_addresses(node.candidates) or "none")),
    SocketRule(applies=lambda node: node.network is not None, pick=lambda node: node.inside[0], why=_cidr_why),
    # without: the fastest interface in the IPv4 subnet every node shares (none shared: a fleet problem)
    SocketRule(applies=lambda node: node.ip_known and node.chosen_net is None, pick=_no_pick,
               why=lambda node: "no shared IPv4 subnet"),
    SocketRule(applies=lambda node: node.ip_known, pick=lambda node: node.shared_pick, why=_shared_why),
    # addresses unknown (ip not installed): the fastest up interface, its subnet not verified
    SocketRule(applies=lambda node: not node.candidates, pick=_no_pick, why=lambda node: "no up interface",
               problem=lambda node: "%s: no up interface NCCL could bootstrap over%s"
                                    % (node.host, left_out_text(node.left_out))),
    SocketRule(applies=lambda node: True, pick=lambda node: node.candidates[0], why=_unverified_why,
               warning=_unverified_warning),
)


def _shared_subnet(nodes: dict[str, SocketNode]) -> tuple[Any, dict[Any, dict[str, Candidate]], list[str]]:
    """``(subnet, per_net, problems)``: of the IPv4 subnets every node whose addresses are known has an up interface
    in, the one whose slowest node is fastest (ties: the larger sum, then the lower network); per subnet each node's
    fastest interface there; a problem per node when no subnet is shared."""
    known = [host for host, node in nodes.items() if node.ip_known]
    per_net: dict[Any, dict[str, Candidate]] = collections.defaultdict(dict)
    if not known:
        return None, per_net, []
    for host in known:
        for cand in nodes[host].candidates:
            for _addr, net in cand["networks"] or []:
                per_net[net].setdefault(host, cand)  # candidates are fastest first
    shared = [net for net, by_host in per_net.items() if len(by_host) == len(known)]
    if shared:

        def rank(net: Any) -> tuple[Any, ...]:
            speeds = [per_net[net][host]["mbps"] or 0 for host in known]
            return (-min(speeds), -sum(speeds), int(net.network_address), net.prefixlen)

        return sorted(shared, key=rank)[0], per_net, []
    return None, per_net, [
        "%s: no IPv4 subnet is shared by every node; this node's up interfaces: %s%s. Set gpufleet_cluster_cidr or "
        "override NCCL_SOCKET_IFNAME" % (host, _with_addresses(nodes[host].candidates) or "none",
                                         left_out_text(nodes[host].left_out)) for host in known]


def derive_socket(nodes_nic: dict[str, Any], cluster_cidr: Any = None) -> tuple[dict[str, SocketChoice], list[str]]:
    """Per host ``{"value", "why", "warning"}`` (value None when no interface fits) and fleet problems.

    With ``cluster_cidr``: on each node the fastest up interface with an IPv4 address inside it.
    Without: the IPv4 subnet every node has an up interface in, the one whose slowest node is
    fastest (ties: the larger sum, then the lower network); on each node its fastest interface
    there. Nodes whose addresses are unknown (``ip`` missing) get their fastest up interface and a
    warning that the subnet was not verified. The first row of SOCKET_RULES that applies decides.
    """
    nodes = {}
    for host, nic in nodes_nic.items():
        candidates, left_out, ip_known = socket_candidates(nic)
        nodes[host] = SocketNode(host, candidates, left_out, ip_known, peers=len(nodes_nic) - 1)
    problems: list[str] = []
    if cluster_cidr:
        network = ipaddress.ip_network(cluster_cidr, strict=False)
        for node in nodes.values():
            node.network = network
    else:
        chosen_net, per_net, problems = _shared_subnet(nodes)
        for node in nodes.values():
            node.chosen_net, node.per_net = chosen_net, per_net
    out: dict[str, SocketChoice] = {}
    for host, node in nodes.items():
        rule = next(rule for rule in SOCKET_RULES if rule.applies(node))
        pick = rule.pick(node)
        problem = rule.problem(node)
        if problem:
            problems.append(problem)
        out[host] = {"value": exact_list([pick["name"]]) if pick is not None else None, "why": rule.why(node),
                     "warning": rule.warning(node)}
    return out, problems
