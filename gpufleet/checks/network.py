# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Network checks (pure): NICs against the claim, RDMA rails, IB port error counters, NCCL settings.

Reads ``gpufleet_nic`` (see docs/facts/nic_facts.md), the claim's ``nics`` and the profile's
``expect.compute_rail``. A "link" here is one thing a seller can sell: an RDMA port (InfiniBand,
or RoCE with its Ethernet netdev folded in) or a physical Ethernet interface without RDMA.

The checks are declared here (the engine runs a family's checks by the module that declares them); the links of a
node, the rails it should have and how a link's problem is worded live in checks/network_links.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpufleet.checks.registry import node_check
from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, CheckResult, NodeContext, result
from gpufleet.checks.network_links import (Link, Rail, blame_order, describe_problem, link_ok, link_up, links,
                                           other_part, rdma_ports, state_words)
from gpufleet.facts.shapes import NicFacts
from gpufleet.plan.nccl_match import parse_spec
# CLAIM_LINK_LAYER: the claim's NIC type -> the RDMA link layer it needs (``ethernet`` needs none).
from gpufleet.plan.nccl_rails import CLAIM_LINK_LAYER

# Re-exported (__all__ below): host.py and the bench_*.py modules import these from here; they live in
# network_links.py.
from gpufleet.checks.network_links import active_rdma_ports, num, rdma_rails
# the re-exported names above (a plain import and __all__, so mypy and pylint both see them exported)
__all__ = ["active_rdma_ports", "num", "rdma_rails"]

# Claims are matched in this order (RDMA first, so an Ethernet claim never takes a RoCE rail).
CLAIM_TYPE_ORDER = {"ib": 0, "roce": 1, "ethernet": 2}

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


# --- claimed NICs -----------------------------------------------------------------------------


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
    unverified = link_up(link) and link["gbps"] is None
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
    good = sorted((link for link in candidates if link_ok(link, gbps)), key=lambda link: link["gbps"])[:count]
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
    if link_up(link) and link["gbps"] is None:
        return WARN, "%s is Active but reports no rate: could not verify %s Gb/s" % (link["name"], num(rail.rate))
    if not link_up(link):
        status = WARN if rail.enough or link["name"] not in rail.blamed else FAIL
        return status, "%s is %s, expected Active / LinkUp" % (link["name"], state_words(link))
    return (WARN if rail.enough else FAIL,
            "%s is Active at %s Gb/s, expected %s Gb/s" % (link["name"], num(link["gbps"]), num(rail.rate)))


def _port_result(check_id: str, link: Link, rail: _RailPorts) -> CheckResult | None:
    """A port that is not good, judged; None for another NIC up at its own rate (storage, front-end): not a rail
    port that failed."""
    if link["name"] not in rail.blamed and link_up(link) and (not rail.enough or other_part(link, rail.good)):
        return None
    status, message = _port_problem(link, rail)
    if rail.enough:
        message += " (not needed: %d good %s ports cover the %d wanted)" % (len(rail.good), rail.layer, rail.count)
    elif link["name"] not in rail.blamed:
        message += " (not counted against the rail: another part than its %d good port(s))" % len(rail.good)
    measured = link["state"] if not link_up(link) else link["gbps"]
    expected = "Active" if not link_up(link) else rail.rate
    return result(check_id, status, message, measured=measured, expected=expected, threshold_source=rail.source,
                  subject=link["name"])


def _rail_results(check_id: str, group: list[Rail], links_: list[Link]) -> tuple[str, list[CheckResult]]:
    """The rails of one set of link layers held against the node's RDMA ports: ``(summary words, results)``."""
    layers = group[0]["link_layers"]
    count = sum(rail["count"] for rail in group)
    rates = [rail["gbps"] for rail in group if rail["gbps"] is not None]
    rate = min(rates) if rates else None
    ports = [link for link in links_ if link["link_layer"] in layers]
    good = [link for link in ports if link_ok(link, rate)]
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
    ports = rdma_ports(node.group("nic"))
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
    ports = rdma_ports(nic)
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
