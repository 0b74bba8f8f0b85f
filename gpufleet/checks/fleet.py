# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet-wide checks (pure): every GPU alike, HCA firmware and MTU alike, and the fleet-relative rule.

Nodes are compared within their *cohort*: the nodes that should be identical. A cohort is named by
the inventory setting ``gpufleet_fleet_group`` when set, else by the node's profile (nodes held
against the same profile are the same system), else all unprofiled nodes form one cohort. The
odd ones out are named with the cohort's majority as the expectation.

:func:`fleet_relative` is the reusable rule "more than ``max_below_median`` below the fleet median
fails"; benchmarks feed it later, the checks here feed it figures read from the facts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpufleet.checks.registry import fleet_check
from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, CheckResult, NodeContext, result
from gpufleet.checks.network import num
from gpufleet.checks.profiles import profile_value
from gpufleet.facts.nic import hca_part

COHORT_SETTING = "gpufleet_fleet_group"
# The fleet-relative rule needs this many nodes with a figure: with two, the median cannot tell
# which one is the outlier.
MIN_RELATIVE_NODES = 3

# Per-GPU fields a profile may list in fleet.consistent_gpu_fields: (check id, words, severity).
# Severity "fail": a different value is a different product (model, memory); "lower_fails": a
# lower figure than the majority costs performance (power limit, max SM clock), a higher one warns;
# "warn": a mixed batch worth knowing (VBIOS, board part number) that does not by itself cost speed.
GPU_FIELDS = {
    "name": ("fleet.gpu_model", "model", "fail"),
    "memory_total_mib": ("fleet.gpu_memory", "memory (MiB)", "fail"),
    "vbios_version": ("fleet.gpu_vbios", "VBIOS", "warn"),
    "board_part_number": ("fleet.gpu_board_part", "board part number", "warn"),
    "power_limit_w": ("fleet.gpu_power_limit", "power limit (W)", "lower_fails"),
    "clocks_max_sm_mhz": ("fleet.gpu_max_sm_clock", "max SM clock (MHz)", "lower_fails"),
    "power_max_limit_w": ("fleet.gpu_power_max_limit", "max power limit (W)", "lower_fails"),
    "clocks_max_graphics_mhz": ("fleet.gpu_max_graphics_clock", "max graphics clock (MHz)", "lower_fails"),
    "clocks_max_mem_mhz": ("fleet.gpu_max_mem_clock", "max memory clock (MHz)", "lower_fails"),
    "product_architecture": ("fleet.gpu_architecture", "architecture", "fail"),
    "pcie_link_gen_max": ("fleet.gpu_pcie_gen_max", "max PCIe generation", "lower_fails"),
    "pcie_link_width_max": ("fleet.gpu_pcie_width_max", "max PCIe width", "lower_fails"),
}
# Used when the profile lists no fields: the GPU properties every node of one fleet should share.
DEFAULT_GPU_FIELDS = ("name", "vbios_version", "board_part_number", "memory_total_mib", "power_limit_w",
                      "clocks_max_sm_mhz")
DEFAULT_FIELDS_SOURCE = ("gpufleet default consistency fields (model, VBIOS, board part, memory, power limit, "
                         "max clocks)")

# The results of a fleet-wide check: ``{node name: [result, ...]}``
FleetResults = dict[str, list[CheckResult]]
# What :func:`_odd_ones` compares of a node: ``[(kind, subject, value)]``
Items = list[tuple[str, str, Any]]


def cohort_of(node: NodeContext) -> str:
    """The name of the group of nodes ``node`` is compared with."""
    group = node.settings.get(COHORT_SETTING)
    if group:
        return "group %s" % group
    name = (node.profile or {}).get("name")
    return "profile %s" % name if name else "nodes without a profile"


def cohorts(nodes: Iterable[NodeContext]) -> dict[str, list[NodeContext]]:
    """``{cohort: [node, ...]}`` in the nodes' order."""
    out: dict[str, list[NodeContext]] = {}
    for node in nodes:
        out.setdefault(cohort_of(node), []).append(node)
    return out


def majority(values: Iterable[Any]) -> tuple[Any, int, bool]:
    """``(value, count, tied)`` most common among non-None ``values``; ``(None, 0, False)`` when none."""
    counted = Counter(value for value in values if value is not None).most_common()
    if not counted:
        return None, 0, False
    top, count = counted[0]
    tied = len(counted) > 1 and counted[1][1] == count
    return top, count, tied


def median(values: Iterable[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2.0


def fleet_relative(values_by_node: Mapping[str, float | None], max_below_median: float | None, source: str | None,
                   check_id: str = "fleet.relative", what: str = "figure", unit: str = "") -> FleetResults:
    """The fleet-relative rule: a node more than ``max_below_median`` (a fraction) below the median fails.

    ``values_by_node``: ``{node_name: number or None}`` (higher is better). Returns
    ``{node_name: [result]}``: ``fail`` below the floor ``median * (1 - max_below_median)``,
    ``pass`` at or above it, ``skip`` for a node without a figure, every node ``skip`` when fewer
    than MIN_RELATIVE_NODES have one or the rule has no limit. ``expected`` is the floor.
    """
    unit_words = " %s" % unit if unit else ""
    if source and not str(source).startswith("policy"):
        # a spread around the fleet's own median is a choice, not a published figure (docs/baselines.md 9)
        source = "policy (docs/baselines.md 9): %s" % source
    known = {name: value for name, value in values_by_node.items() if value is not None}
    if max_below_median is None:
        return {name: [result(check_id, SKIP, "not judged: the profile sets no fleet.max_below_median")]
                for name in values_by_node}
    if len(known) < MIN_RELATIVE_NODES:
        return {name: [result(check_id, SKIP, "not judged: %d node(s) with a %s; the fleet median needs at least %d" % (
            len(known), what, MIN_RELATIVE_NODES))] for name in values_by_node}
    mid = median(known.values())
    floor = mid * (1 - max_below_median)
    out: FleetResults = {}
    for name, value in values_by_node.items():
        if value is None:
            out[name] = [result(check_id, SKIP, "not judged: no %s for this node" % what)]
            continue
        below = (mid - value) / mid if mid else 0.0
        if value < floor:
            out[name] = [result(check_id, FAIL, "%s %s%s is %.0f%% below the fleet median %s%s (more than %.0f%% below "
                                "fails)" % (what, num(value), unit_words, below * 100, num(round(mid, 3)), unit_words,
                                            max_below_median * 100),
                                measured=value, expected=round(floor, 3), threshold_source=source)]
        else:
            out[name] = [result(check_id, PASS, "%s %s%s, fleet median %s%s (floor %s)" % (
                what, num(value), unit_words, num(round(mid, 3)), unit_words, num(round(floor, 3))),
                measured=value, expected=round(floor, 3), threshold_source=source)]
    return out


# --- GPU consistency -------------------------------------------------------------------------


def _fields_of(node: NodeContext) -> tuple[list[str], str | None]:
    fields, source = profile_value(node.profile, "fleet.consistent_gpu_fields")
    if fields:
        return list(fields), source
    return list(DEFAULT_GPU_FIELDS), DEFAULT_FIELDS_SOURCE


def _gpus(node: NodeContext) -> list[dict[str, Any]]:
    gpus: list[dict[str, Any]] = (node.group("gpu") or {}).get("gpus") or []
    return gpus


def _gpu_status(severity: str, value: Any, expected: Any) -> str:
    if severity == "fail":
        return FAIL
    if (severity == "lower_fails" and isinstance(value, (int, float)) and isinstance(expected, (int, float))
            and value < expected):
        return FAIL
    return WARN


@dataclass(frozen=True)
class _CohortVote:
    """One GPU field over every GPU of a cohort's judged nodes: the values, their majority, and where it was taken."""

    values: list[Any]  # one per GPU, None where a GPU does not report the field
    top: Any
    count: int
    tied: bool
    scope: str  # "fleet" (several nodes) or "node"
    cohort: str


def _gpu_consistency(field: str, nodes: list[NodeContext]) -> FleetResults:
    check_id = GPU_FIELDS[field][0]
    out: FleetResults = {}
    for cohort, members in cohorts(nodes).items():
        judged = [node for node in members if field in _fields_of(node)[0]]
        for node in members:
            if node not in judged:
                out[node.name] = [result(check_id, SKIP, "not judged: %s is not in the profile's "
                                         "fleet.consistent_gpu_fields" % field)]
        values = [gpu.get(field) for node in judged for gpu in _gpus(node)]
        top, count, tied = majority(values)
        vote = _CohortVote(values, top, count, tied, "fleet" if len(judged) > 1 else "node", cohort)
        for node in judged:
            out[node.name] = _node_consistency(field, node, vote)
    return out


def _node_consistency(field: str, node: NodeContext, vote: _CohortVote) -> list[CheckResult]:
    """One node's GPUs against the cohort's majority: each odd GPU named, else one pass (or skip: nothing reported)."""
    check_id, words, _severity = GPU_FIELDS[field]
    source = _fields_of(node)[1]
    gpus = _gpus(node)
    if not gpus:
        return [result(check_id, SKIP, "not judged: no GPU facts")]
    unknown = [gpu for gpu in gpus if gpu.get(field) is None]
    items = [_odd_gpu(field, gpu, vote, source) for gpu in gpus
             if gpu.get(field) is not None and not (gpu.get(field) == vote.top and not vote.tied)]
    if items:
        return items
    if len(unknown) == len(gpus):
        return [result(check_id, SKIP, "not judged: no GPU reports %s" % field)]
    note = "; %d GPU(s) do not report it" % len(unknown) if unknown else ""
    return [result(check_id, PASS, "%d GPU(s) %s %s, as the %s majority%s"
                   % (len(gpus) - len(unknown), words, num(vote.top), vote.scope, note),
                   measured=vote.top, expected=vote.top, threshold_source=source)]


def _odd_gpu(field: str, gpu: dict[str, Any], vote: _CohortVote, source: str | None) -> CheckResult:
    """A GPU whose value is not the cohort's majority (or whose cohort has none)."""
    check_id, words, severity = GPU_FIELDS[field]
    value, subject = gpu.get(field), "GPU%s" % gpu.get("index")
    if vote.tied:
        tops = sorted({v for v in vote.values if v is not None and vote.values.count(v) == vote.count}, key=str)
        message = "GPU%s %s %s; the %s is split with no majority (%s, %d GPUs each)" % (
            gpu.get("index"), words, num(value), vote.scope, " / ".join(num(v) for v in tops), vote.count)
        return result(check_id, WARN, message, measured=value, expected=tops, threshold_source=source, subject=subject)
    known = len([v for v in vote.values if v is not None])
    message = "GPU%s %s %s, %s majority %s (%d of %d GPUs in %s)" % (
        gpu.get("index"), words, num(value), vote.scope, num(vote.top), vote.count, known, vote.cohort)
    return result(check_id, _gpu_status(severity, value, vote.top), message, measured=value, expected=vote.top,
                  threshold_source=source, subject=subject)


def _register_gpu_field(field: str) -> Callable[[list[NodeContext]], FleetResults]:
    check_id = GPU_FIELDS[field][0]

    @fleet_check(check_id, requires=("gpu",))
    def check(nodes: list[NodeContext]) -> FleetResults:
        return _gpu_consistency(field, nodes)

    check.__name__ = "check_%s" % check_id.replace(".", "_")
    return check


for _field in GPU_FIELDS:
    _register_gpu_field(_field)


# --- HCA firmware and MTU ------------------------------------------------------------------------


def _odd_ones(check_id: str, nodes: list[NodeContext], items_of: Callable[[NodeContext], Items], words: str,
              source: str) -> FleetResults:
    """Name the items whose value differs from their kind's cohort majority (warn).

    ``items_of(node)`` -> ``[(kind, subject, value)]``; kinds are compared separately (e.g. one
    firmware line per HCA type).
    """
    out: FleetResults = {}
    for cohort, members in cohorts(nodes).items():
        per_node = {node.name: items_of(node) for node in members}
        by_kind: dict[str, list[Any]] = {}
        for items in per_node.values():
            for kind, _subject, value in items:
                by_kind.setdefault(kind, []).append(value)
        scope = "fleet" if len(members) > 1 else "node"
        for node in members:
            items = per_node[node.name]
            if not items:
                out[node.name] = [result(check_id, SKIP, "not judged: no %s in the facts" % words)]
                continue
            found = [item for item in (_odd_one(check_id, entry, by_kind, (words, scope, cohort), source)
                                       for entry in items) if item is not None]
            if not found:
                kinds = sorted({kind for kind, _subject, _value in items})
                found.append(result(check_id, PASS, "%d %s value(s) agree with the %s majority (%s)" % (
                    len(items), words, scope, ", ".join(kinds)), threshold_source=source))
            out[node.name] = found
    return out


def _odd_one(check_id: str, entry: tuple[str, str, Any], by_kind: dict[str, list[Any]], where: tuple[str, str, str],
             source: str) -> CheckResult | None:
    """The warning of one item against its kind's majority, None when it agrees (or has no value).

    ``where``: ``(words, scope, cohort)`` for the message."""
    kind, subject, value = entry
    words, scope, cohort = where
    top, count, tied = majority(by_kind[kind])
    if value is None or value == top and not tied:
        return None
    if tied:
        message = "%s %s %s: the %s's %s %s are split with no majority" % (subject, words, value, scope, kind, words)
    else:
        known = len([v for v in by_kind[kind] if v is not None])
        message = "%s %s %s, %s majority %s for %s (%d of %d in %s)" % (
            subject, words, value, scope, top, kind, count, known, cohort)
    return result(check_id, WARN, message, measured=value, expected=None if tied else top, threshold_source=source,
                  subject=subject)


def _hca_firmware(node: NodeContext) -> Items:
    """``[(firmware group, device, firmware)]``: HCAs are compared within their physical part and firmware line
    (gpufleet/facts/nic.py ``hca_part``), so a virtual function, whose PCI id and CA type are generic, is held
    against its own product and generation; facts stored before ``firmware_group`` existed are grouped the same way."""
    nic = node.group("nic") or {}
    return [(dev.get("firmware_group") or hca_part(dev)["firmware_group"] or "unknown HCA type", dev["device"],
             dev.get("fw_ver"))
            for dev in nic.get("rdma") or [] if dev.get("fw_ver")]


def _mtus(node: NodeContext) -> Items:
    nic = node.group("nic") or {}
    out: Items = []
    for iface in nic.get("interfaces") or []:
        if iface.get("virtual") or iface.get("operstate") != "up" or iface.get("mtu") is None:
            continue
        kind = "RDMA netdevs" if iface.get("rdma_device") else "Ethernet interfaces"
        out.append((kind, iface["name"], iface["mtu"]))
    for dev in nic.get("rdma") or []:
        for port in dev.get("ports") or []:
            if port.get("active_mtu") and port.get("state") == "Active":
                out.append(("RDMA port active MTU (%s)" % (port.get("link_layer") or "?"),
                            "%s/%s" % (dev["device"], port["port"]), port["active_mtu"]))
    return out


@fleet_check("fleet.hca_firmware", requires=("nic",))
def check_hca_firmware(nodes: list[NodeContext]) -> FleetResults:
    """HCA firmware alike across the cohort, per physical part and firmware line (``firmware_group``)."""
    return _odd_ones("fleet.hca_firmware", nodes, _hca_firmware, "firmware",
                     "fleet consistency: one firmware per HCA part and firmware line (majority)")


@fleet_check("fleet.mtu", requires=("nic",))
def check_mtu(nodes: list[NodeContext]) -> FleetResults:
    """MTU alike across the cohort: RDMA netdevs, Ethernet interfaces and RDMA ports' active MTU each."""
    return _odd_ones("fleet.mtu", nodes, _mtus, "MTU", "fleet consistency: one MTU per kind of link (majority)")


# --- fleet-relative figures from the facts ------------------------------------------------------------


def _min_gpu(node: NodeContext, key: str) -> Any:
    values = [value for value in (gpu.get(key) for gpu in _gpus(node)) if value is not None]
    return min(values) if values else None


def _nvlink_links(node: NodeContext) -> Any:
    """Active NVLink links of the node; None when no GPU's nvlink output was read."""
    summary = (node.group("gpu") or {}).get("summary") or {}
    if summary.get("nvlink_collected") is False:
        return None
    read = [gpu for gpu in _gpus(node)
            if (gpu.get("nvlink") or {}).get("links") or (gpu.get("nvlink") or {}).get("supported") is not None]
    return summary.get("nvlink_active_links") if read else None


RELATIVE_FIGURES: dict[str, tuple[str, str, Callable[[NodeContext], Any]]] = {
    "fleet.nvlink_active_links": ("active NVLink links", "", _nvlink_links),
    "fleet.max_sm_clock": ("lowest max SM clock", "MHz", lambda node: _min_gpu(node, "clocks_max_sm_mhz")),
    "fleet.power_limit": ("lowest GPU power limit", "W", lambda node: _min_gpu(node, "power_limit_w")),
}


def cohort_relative(members: list[NodeContext], values_by_node: Mapping[str, float | None], check_id: str, what: str,
                    unit: str = "") -> FleetResults:
    """:func:`fleet_relative` over one cohort, each node held to its own profile's ``fleet.max_below_median``.

    The median is the whole cohort's; the limit is the node's, so a host's ``gpufleet_profile_overrides`` applies to
    that host even when another host of its cohort comes first (its limit was once read off the first member only).
    """
    by_limit: dict[tuple[Any, str | None], list[str]] = {}
    for node in members:
        by_limit.setdefault(profile_value(node.profile, "fleet.max_below_median"), []).append(node.name)
    out: FleetResults = {}
    for (limit, source), names in by_limit.items():
        judged = fleet_relative(values_by_node, limit, source, check_id=check_id, what=what, unit=unit)
        out.update({name: judged[name] for name in names})
    return out


def _relative(check_id: str, nodes: list[NodeContext]) -> FleetResults:
    what, unit, figure = RELATIVE_FIGURES[check_id]
    out: FleetResults = {}
    for members in cohorts(nodes).values():
        out.update(cohort_relative(members, {node.name: figure(node) for node in members}, check_id, what, unit))
    return out


def _register_relative(check_id: str) -> Callable[[list[NodeContext]], FleetResults]:
    @fleet_check(check_id, requires=("gpu",))
    def check(nodes: list[NodeContext]) -> FleetResults:
        return _relative(check_id, nodes)

    check.__name__ = "check_%s" % check_id.replace(".", "_")
    return check


for _check_id in RELATIVE_FIGURES:
    _register_relative(_check_id)
