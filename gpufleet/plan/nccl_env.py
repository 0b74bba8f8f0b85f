# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NCCL networking derived from the whole fleet's NIC facts (pure, controller side).

Input: every node's ``gpufleet_nic`` (docs/facts/nic_facts.md), its installed NCCL version
(``gpufleet_host.versions.nccl.version``), its claim (``gpufleet_claim``), its parsed
``nvidia-smi topo -m`` (``gpufleet_topology``, to keep storage/front-end HCAs at the compute rate out
of the rails when they are not on a GPU's PCIe path) and optional overrides.
Output per node: the NCCL variables to write (``env``: ``NCCL_SOCKET_IFNAME``, ``NCCL_IB_DISABLE``,
``NCCL_IB_HCA``, ``NCCL_IB_GID_INDEX``), a ``why`` sentence per variable, the compute rails and
what was left out. Nothing here does I/O.

How: a node driven by an NCCL net plugin (AWS EFA, GCP TCPX/TCPXO) is left to it (:func:`plugin_fabric`); on every
other node the socket interface (plan/nccl_socket.py) and the compute rails (plan/nccl_rails.py) are found, then
each row of :data:`ENV_RULES` that applies writes its variable with the reason it records; overrides win last.

NCCL's own list syntax is reproduced by :func:`parse_spec` / :func:`matches` (plan/nccl_match.py: NCCL
``src/misc/utils.cc`` ``parseStringList``/``matchIfList`` and the callers in ``net_ib.cc`` and
``socket.cc``): a leading ``^`` excludes, then a leading ``=`` makes EVERY entry of the list an
exact match (not only the first), otherwise each entry is a prefix; entries are separated by
``,`` and an entry may end in ``:port`` (the port of an HCA; an interface has none, so any port
matches it). Nothing is trimmed: ``"mlx5_0, mlx5_1"`` has a second entry `` mlx5_1`` that matches
nothing.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, TypedDict

from gpufleet.plan.nccl_facts import (SAFE_KEY_RE, SAFE_VALUE_RE, RailKey, driver_of, is_up, left_out_text,
                                      natural_key, rate_text, rdma_ports)
from gpufleet.plan.nccl_match import exact_list, matches, parse_spec
from gpufleet.plan.nccl_rails import (CLAIM_LINK_LAYER, Rail, claim_rail, gid_index, majority_key, nic_gpu_paths,
                                      node_rails, port_groups, rail_key_for)
from gpufleet.plan.nccl_socket import SocketChoice, derive_socket

# The names other code imports from here (checks/network.py, checks/evidence.py, the tests), wherever they live.
__all__ = ["AUTO_GID_NCCL", "CLAIM_LINK_LAYER", "ENV_RULES", "check_override", "derive", "derive_socket", "exact_list",
           "matches", "nic_gpu_paths", "parse_spec", "plugin_fabric", "summary_lines", "validate_overrides",
           "version_tuple"]

# NCCL 2.21 selects the RoCE GID index itself; before it NCCL_IB_GID_INDEX defaults to 0.
AUTO_GID_NCCL = (2, 21, 0)
# Fabrics whose traffic goes through an NCCL net plugin, not NCCL's IB or socket transport.
EFA_RDMA_RE = re.compile(r"^(rdmap|efa)")


class HostEnv(TypedDict):
    """One node's answer: the variables to write, why each (or why not), its fabric, rails, what was left out of
    them, warnings, and the variables overridden."""

    env: dict[str, str]
    why: dict[str, str]
    fabric: str | None
    rails: list[str]
    excluded: dict[str, str]
    warnings: list[str]
    overridden: list[str]


# --- small helpers ---------------------------------------------------------------------------


def version_tuple(text: Any) -> tuple[int, ...] | None:
    """``"2.18.3"`` -> ``(2, 18, 3)``; None when unreadable."""
    if not text:
        return None
    found = re.match(r"^\s*(\d+)\.(\d+)(?:\.(\d+))?", str(text))
    if not found:
        return None
    return tuple(int(part or 0) for part in found.groups())


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


# --- fabrics that need an NCCL net plugin ----------------------------------------------------


def plugin_fabric(nic: dict[str, Any]) -> tuple[str, str] | None:
    """``(fabric, reason)`` when the node's fabric is driven by an NCCL net plugin, else None.

    AWS EFA: RDMA devices named ``rdmap*``/``efa*`` or a PCI function bound to ``efa`` (traffic
    goes through aws-ofi-nccl). GCP GPUDirect-TCPX/TCPXO: two or more gVNIC (``gve``) interfaces
    (A3 High has 4 GPU data NICs besides the host NIC, TCPX; A3 Mega 8, TCPXO).
    """
    efa = [dev.get("device") for dev in nic.get("rdma") or [] if EFA_RDMA_RE.match(dev.get("device") or "")]
    efa += [iface["name"] for iface in nic.get("interfaces") or [] if driver_of(iface) == "efa"]
    if efa:
        return "aws-efa", ("AWS EFA devices (%s): NCCL reaches them only through the aws-ofi-nccl net plugin "
                           "(NCCL_NET=OFI, set up by the provider's image); gpufleet writes no NCCL network variable "
                           "that could steer NCCL away from it" % ", ".join(efa))
    gve = [iface["name"] for iface in nic.get("interfaces") or []
           if not iface.get("virtual") and driver_of(iface) == "gve"]
    if len(gve) >= 2:
        kind = {5: "gcp-tcpx", 9: "gcp-tcpxo"}.get(len(gve), "gcp-tcpx")
        return kind, ("%d gVNIC (gve) interfaces (%s): a GCP A3 GPUDirect-TCPX/TCPXO node (A3 High: 1 host + 4 GPU "
                      "NICs, TCPX; A3 Mega: 1 + 8, TCPXO) whose traffic goes through Google's NCCL net plugin with its "
                      "own NCCL_SOCKET_IFNAME list and NCCL_GPUDIRECTTCPX_* settings; gpufleet writes nothing that "
                      "could override them" % (len(gve), ", ".join(gve)))
    return None


# --- the rules: one row per variable ---------------------------------------------------------


@dataclass
class NodePlan:
    """What the rules read about one node gpufleet configures (no net plugin): its socket choice (None when
    NCCL_SOCKET_IFNAME is overridden), its rails, and the fleet's nodes with and without rails."""

    socket: SocketChoice | None
    rails: list[Rail]
    rail_names: list[str]
    # the rails' (link layer, rate); (None, None) for a node without a candidate port
    rail_key: RailKey
    source: str
    pcie_note: str | None
    excluded: dict[str, str]
    nccl_version: Any
    without: list[str]
    rdma_hosts: list[str]

    @cached_property
    def gid(self) -> tuple[str | None, str, str | None]:
        """``(value, why, warning)`` of NCCL_IB_GID_INDEX on RoCE rails: not set from NCCL 2.21 on (it chooses),
        else the lowest RoCE v2 IPv4-mapped index common to every rail, else not set with a warning."""
        version = version_tuple(self.nccl_version)
        if version is not None and version >= AUTO_GID_NCCL:
            return None, "not set: NCCL %s selects the RoCE GID index itself (since 2.21)" % self.nccl_version, None
        said = ("NCCL %s predates automatic GID selection (2.21) and uses GID index 0 unless told" % self.nccl_version
                if version else "the installed NCCL version is unknown (it may predate automatic GID selection, 2.21)")
        index = gid_index(self.rails)
        if index is None:
            return (None, "not set: %s, but the rails' GID tables show no RoCE v2 IPv4-mapped index common to all of "
                          "them (or were not read)" % said,
                    "NCCL_IB_GID_INDEX not chosen: %s; override it (commonly 3, RoCE v2 IPv4 on mlx5) after checking "
                    "show_gids" % said)
        return (str(index), "%s: %s; index %s is RoCE v2 with an IPv4-mapped GID on every rail" % (index, said, index),
                None)


def _no_warning(_plan: NodePlan) -> str | None:
    return None


@dataclass(frozen=True)
class EnvRule:
    """A row of the derivation: the variable, the condition it applies under, the value it writes (None: not set,
    its why still recorded), the reason it records, and a warning it may add."""

    variable: str
    applies: Callable[[NodePlan], bool]
    value: Callable[[NodePlan], str | None]
    why: Callable[[NodePlan], str]
    warning: Callable[[NodePlan], str | None] = _no_warning


def _socket(plan: NodePlan) -> SocketChoice:
    """The node's socket choice (a rule on it applies only where there is one)."""
    return plan.socket or {"value": None, "why": "", "warning": None}


def _ib_on_why(plan: NodePlan) -> str:
    if not plan.without:
        return "0: every node has Active RDMA ports on its compute rails"
    return ("0: this node has %d Active RDMA port(s) on its compute rails; the node(s) without one (%s) run over "
            "sockets, left out of the RDMA runs" % (len(plan.rails), ", ".join(plan.without)))


def _hca_why(plan: NodePlan) -> str:
    return ("%s: the Active %s ports (rails by %s), matched exactly with '=' and ':port' so no other device sharing a "
            "prefix is taken; %s%s" % (exact_list(plan.rail_names), rate_text(plan.rail_key), plan.source,
                                       plan.pcie_note, left_out_text(plan.excluded)))


def _ib_off_why(plan: NodePlan) -> str:
    others = "; left out of the RDMA runs of %s" % ", ".join(plan.rdma_hosts) if plan.rdma_hosts else ""
    return ("1: not every node has Active RDMA ports on compute rails (none on: %s; this node has none)%s%s"
            % (", ".join(plan.without), left_out_text(plan.excluded), others))


def _roce(plan: NodePlan) -> bool:
    return bool(plan.rails) and plan.rail_key[0] == "Ethernet"


# IB is decided per node: a node without an Active compute rail runs over sockets and is left out of the RDMA runs
# (playbooks/benchmark.yml reads its NCCL_IB_DISABLE=1); it never turns IB off on the nodes with rails.
ENV_RULES = (
    EnvRule("NCCL_SOCKET_IFNAME", applies=lambda plan: bool(_socket(plan)["value"]),
            value=lambda plan: _socket(plan)["value"], why=lambda plan: _socket(plan)["why"],
            warning=lambda plan: _socket(plan)["warning"]),
    EnvRule("NCCL_IB_DISABLE", applies=lambda plan: bool(plan.rails), value=lambda plan: "0", why=_ib_on_why),
    EnvRule("NCCL_IB_HCA", applies=lambda plan: bool(plan.rails), value=lambda plan: exact_list(plan.rail_names),
            why=_hca_why),
    EnvRule("NCCL_IB_GID_INDEX", applies=_roce, value=lambda plan: plan.gid[0], why=lambda plan: plan.gid[1],
            warning=lambda plan: plan.gid[2]),
    EnvRule("NCCL_IB_DISABLE", applies=lambda plan: not plan.rails, value=lambda plan: "1", why=_ib_off_why),
)


def _apply_rules(entry: HostEnv, plan: NodePlan) -> None:
    """Every row of ENV_RULES that applies to the node, in order: its value (when set), why, and warning."""
    for rule in ENV_RULES:
        if not rule.applies(plan):
            continue
        value = rule.value(plan)
        if value is not None:
            entry["env"][rule.variable] = value
        entry["why"][rule.variable] = rule.why(plan)
        warning = rule.warning(plan)
        if warning:
            entry["warnings"].append(warning)
    entry["fabric"] = ("roce" if _roce(plan) else "ib") if plan.rails else "socket"


# --- overrides -------------------------------------------------------------------------------


def validate_overrides(overrides: Any, where: str) -> list[str]:
    """Problems with an overrides mapping (key and value syntax only)."""
    if overrides is None:
        return []
    if not isinstance(overrides, dict):
        return ["%s: must be a mapping of NCCL_* variables, got %s" % (where, type(overrides).__name__)]
    problems = []
    for key, value in overrides.items():
        if not isinstance(key, str) or not SAFE_KEY_RE.match(key):
            problems.append("%s: %r is not an NCCL_* variable name" % (where, key))
            continue
        if value is None:
            continue
        if isinstance(value, (dict, list)) or not SAFE_VALUE_RE.match(_text(value)):
            problems.append("%s.%s: value %r has characters gpufleet will not write into nccl.conf or an env file "
                            "(allowed: letters, digits and _ . , : = ^ @ + / %% -)" % (where, key, value))
    return problems


def check_override(host: str, key: str, value: Any, nic: dict[str, Any]) -> list[str]:
    """Problems when an NCCL_SOCKET_IFNAME / NCCL_IB_HCA override selects nothing usable on ``nic``."""
    value = _text(value)
    if key == "NCCL_SOCKET_IFNAME":
        return _check_socket_override(host, value, nic)
    if key == "NCCL_IB_HCA":
        return _check_hca_override(host, value, nic)
    return []


def _check_socket_override(host: str, value: str, nic: dict[str, Any]) -> list[str]:
    """The interfaces the override selects (NCCL matching rules) must hold one NCCL can bind: up, not lo, and with an
    address where the addresses are known."""
    names = [iface.get("name") for iface in nic.get("interfaces") or []]
    picked = matches(value, names)
    if not picked:
        return ["%s: override NCCL_SOCKET_IFNAME=%s matches no interface on the node (NCCL matching rules; interfaces: "
                "%s)" % (host, value, ", ".join(sorted(names, key=natural_key)) or "none")]
    by_name = {iface.get("name"): iface for iface in nic.get("interfaces") or []}
    # NCCL binds only interfaces with an address; that is checked where the addresses are known.
    ip_known = any(iface.get("ipv4") is not None for iface in nic.get("interfaces") or [])
    if not any(_bindable(name, by_name[name], ip_known) for name in picked):
        return ["%s: override NCCL_SOCKET_IFNAME=%s matches only %s, none of them up%s (lo does not count)"
                % (host, value, ", ".join(picked), " with an IP address" if ip_known else "")]
    return []


def _bindable(name: Any, iface: dict[str, Any], ip_known: bool) -> bool:
    return bool(name != "lo" and is_up(iface) and (not ip_known or iface.get("ipv4") or iface.get("ipv6")))


def _check_hca_override(host: str, value: str, nic: dict[str, Any]) -> list[str]:
    """The RDMA ports the override selects (NCCL matching rules) must hold an Active one."""
    ports = [(dev.get("device"), port.get("port")) for dev, port in rdma_ports(nic)]
    picked = matches(value, ports)
    if not picked:
        return ["%s: override NCCL_IB_HCA=%s matches no RDMA device/port on the node (NCCL matching rules; ports: %s)"
                % (host, value, ", ".join("%s:%s" % pair for pair in ports) or "none")]
    state = {(dev.get("device"), port.get("port")): port.get("state") for dev, port in rdma_ports(nic)}
    if not any(state[pair] == "Active" for pair in picked):
        return ["%s: override NCCL_IB_HCA=%s matches only ports that are not Active: %s"
                % (host, value, ", ".join("%s:%s (%s)" % (pair[0], pair[1], state[pair] or "state unknown")
                                          for pair in picked))]
    return []


def _merged(overrides: Any, host_overrides: Any, host: str) -> dict[str, Any]:
    merged = dict(overrides or {})
    merged.update((host_overrides or {}).get(host) or {})
    return merged


def _apply_overrides(host: str, entry: HostEnv, merged: dict[str, Any], node: dict[str, Any],
                     plugin: tuple[str, str] | None) -> list[str]:
    """Overrides win; one that selects nothing usable on its node, or any on a net-plugin node, is a problem."""
    problems = []
    for key in sorted(merged):
        value = merged[key]
        if plugin is not None:
            problems.append("%s: override %s refused: the node's fabric is %s, configured by its NCCL net plugin"
                            % (host, key, plugin[0]))
            continue
        if value is None:
            entry["env"].pop(key, None)
            entry["why"][key] = "removed by override"
        else:
            problems += check_override(host, key, value, node["nic"])
            entry["env"][key] = _text(value)
            entry["why"][key] = "%s: override" % _text(value)
        entry["overridden"].append(key)
    return problems


# --- the whole derivation --------------------------------------------------------------------


def _input_problems(nodes: dict[str, Any], cluster_cidr: Any, overrides: Any,
                    host_overrides: Any) -> tuple[list[str], Any]:
    """``(problems, cluster_cidr)``: what is wrong with the inputs (overrides, the CIDR, nodes without NIC facts);
    an unreadable CIDR is dropped."""
    problems = validate_overrides(overrides, "nccl_env_overrides")
    for host, host_over in (host_overrides or {}).items():
        problems += validate_overrides(host_over, "nccl_env_host_overrides.%s" % host)
    if cluster_cidr:
        try:
            ipaddress.ip_network(str(cluster_cidr), strict=False)
        except ValueError as exc:
            problems.append("gpufleet_cluster_cidr: %s" % exc)
            cluster_cidr = None
    missing = [host for host, node in nodes.items() if not isinstance(node.get("nic"), dict)]
    problems += ["%s: no NIC facts (gpufleet_nic): run the facts role first, or see why nic_facts failed on it" % host
                 for host in missing]
    return problems, cluster_cidr


def _new_entry() -> HostEnv:
    return {"env": {}, "why": {}, "fabric": None, "rails": [], "excluded": {}, "warnings": [], "overridden": []}


def _plugin_fabrics(nodes: dict[str, Any], hosts: dict[str, HostEnv]) -> dict[str, tuple[str, str]]:
    """``{host: (fabric, reason)}`` of the nodes driven by an NCCL net plugin, their entries saying so."""
    plugin = {}
    for host, node in nodes.items():
        found = plugin_fabric(node["nic"])
        if found:
            plugin[host] = found
            hosts[host]["fabric"], hosts[host]["why"]["fabric"] = found
            hosts[host]["warnings"].append("%s: configured by its NCCL net plugin, not by gpufleet" % found[0])
    return plugin


def _rails_of(nodes: dict[str, Any], configured: list[str],
              hosts: dict[str, HostEnv]) -> dict[str, tuple[list[Rail], RailKey | None, str, str | None]]:
    """``{host: (rails, key, source, pcie note)}`` of the configured nodes, their entries' rails and what was left out
    of them filled in. The rail key of a node whose claim is silent defaults to the fleet's majority."""
    groups = {host: port_groups(nodes[host]["nic"]) for host in configured}
    fleet_key = majority_key([key for host in groups if claim_rail(nodes[host].get("claim")) is None
                              for _d, _p, key in groups[host][0]])
    rails_of = {}
    for host, (candidates, excluded) in groups.items():
        key, source = rail_key_for(nodes[host].get("claim"), candidates, fleet_key)
        rails, pcie_note = node_rails(candidates, excluded, key, nodes[host].get("topology"))
        rails_of[host] = (rails, key, source, pcie_note)
        hosts[host]["rails"] = ["%s:%s" % (dev["device"], port["port"]) for dev, port, _k in rails]
        hosts[host]["excluded"] = dict(sorted(excluded.items(), key=lambda item: natural_key(item[0])))
    return rails_of


def derive(nodes: dict[str, Any], cluster_cidr: Any = None, overrides: Any = None,
           host_overrides: Any = None) -> dict[str, Any]:
    """NCCL settings for every node of the fleet.

    ``nodes``: ``{host: {"nic": gpufleet_nic, "nccl_version": "2.18.3"|None, "claim": dict|None,
    "topology": gpufleet_topology|None}}``. With a topology, compute-rate ports whose device is not PIX
    or PXB to any GPU are left out of the rails (see plan/nccl_rails.py :func:`on_gpu_paths`); without one, the
    ``NCCL_IB_HCA`` explanation says the PCIe path was not checked.
    Returns ``{"hosts": {host: {env, why, fabric, rails, excluded, warnings, overridden}},
    "problems": [...], "fleet": {ib, rdma_hosts, without_rails, plugin_fabrics}}``. A problem names its
    host; the role refuses to write anything while there is one. ``NCCL_IB_DISABLE`` is per node: ``0``
    on every node with Active compute rails, ``1`` on a node without (``without_rails``), which the
    benchmarks leave out of the RDMA runs; ``ib`` is true when any node has rails.
    """
    problems, cluster_cidr = _input_problems(nodes, cluster_cidr, overrides, host_overrides)
    if problems:
        return {"hosts": {}, "problems": problems, "fleet": {}}
    hosts = {host: _new_entry() for host in nodes}
    plugin = _plugin_fabrics(nodes, hosts)
    configured = [host for host in nodes if host not in plugin]
    # the socket interface of every configured node whose NCCL_SOCKET_IFNAME is not overridden
    derived = {host: nodes[host]["nic"] for host in configured
               if "NCCL_SOCKET_IFNAME" not in _merged(overrides, host_overrides, host)}
    socket, problems = derive_socket(derived, cluster_cidr) if derived else ({}, [])
    rails_of = _rails_of(nodes, configured, hosts)
    without = sorted((host for host in nodes if host in plugin or not rails_of[host][0]), key=natural_key)
    rdma_hosts = sorted((host for host in configured if rails_of[host][0]), key=natural_key)
    for host in configured:
        rails, key, source, pcie_note = rails_of[host]
        _apply_rules(hosts[host], NodePlan(
            socket=socket.get(host), rails=rails, rail_names=hosts[host]["rails"], rail_key=key or (None, None),
            source=source, pcie_note=pcie_note, excluded=hosts[host]["excluded"],
            nccl_version=nodes[host].get("nccl_version"), without=without, rdma_hosts=rdma_hosts))
    for host in nodes:
        problems += _apply_overrides(host, hosts[host], _merged(overrides, host_overrides, host), nodes[host],
                                     plugin.get(host))
    fleet = {"ib": bool(rdma_hosts), "rdma_hosts": rdma_hosts, "without_rails": without,
             "plugin_fabrics": {host: found[0] for host, found in plugin.items()}}
    return {"hosts": hosts, "problems": problems, "fleet": fleet}


def summary_lines(host: str, chosen: dict[str, Any]) -> list[str]:
    """What one node got and why, one line per variable, for a person to read."""
    lines = ["%s: fabric %s" % (host, chosen.get("fabric") or "unknown")]
    for key in sorted(chosen.get("why") or {}):
        value = (chosen.get("env") or {}).get(key)
        lines.append("  %s%s - %s" % (key, "=%s" % value if value is not None else "", chosen["why"][key]))
    lines += ["  warning: %s" % warning for warning in chosen.get("warnings") or []]
    return lines
