# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the all-reduce checks expect of a node, and where it comes from (pure): floors, ceilings, rails.

- The floor of a multi-node all-reduce (:func:`multi_node_floor`): the node count of the profile's published
  ``thresholds.allreduce_multi_node`` (its ``nodes``: 2 as shipped; null: every count); another count (or fewer
  NICs than the profile's), the NIC-bound floor from the per-node NIC aggregate and link layer (docs/baselines.md
  3b), its source saying why the profile's was not used; neither known: not judged, saying which floor is for
  which count. Each host's floor comes from its own profile (and its ``gpufleet_profile_overrides``).
- The ceiling of busbw (:func:`implausible_busbw`): what the node's GPU links carry (checks/plausible.py
  ``busbw_ceiling``: the profile's NVLink both ways, else 1,800 GB/s); a figure above it is never judged.
- What the NCCL evidence of a run across nodes is held to (:func:`gpudirect_required`, :func:`compute_rail_count`,
  :func:`multi_node_nvlink`, docs/baselines.md 9).
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence, TypedDict

from gpufleet.checks.bench_records import NCCL_ENV_SETTING, Record, active_rdma_ports
from gpufleet.checks.model import FAIL, CheckResult, NodeContext, result
from gpufleet.checks.network import num, rdma_rails
from gpufleet.checks.plausible import busbw_ceiling, implausible
from gpufleet.checks.profiles import profile_value

# Ring all-reduce across nodes is bounded by what each node's compute NICs carry: busbw reaches about this
# fraction of the per-node NIC aggregate (docs/baselines.md 3b, "NIC-bound floors"). InfiniBand: DeepOps'
# 2 and 4 DGX A100 over 8x HDR, 188.53 and 191.05 of 200 GB/s (94.27 %); Ethernet (RoCE): DeepOps' 2 DGX-1
# over 2x 100 GbE RoCE, 22.9 of 25 GB/s.
NIC_EFFICIENCY = {"InfiniBand": 0.94, "Ethernet": 0.916}
NIC_EFFICIENCY_SOURCE = {
    "InfiniBand": "0.94 x the per-node NIC aggregate (DeepOps 8x HDR DGX A100: 188.53-191.05 of 200 GB/s)",
    "Ethernet": "0.916 x the per-node NIC aggregate (DeepOps 2x 100GbE RoCE DGX-1: 22.9 of 25 GB/s)",
}
# The floor sits 10 % under that expectation, nccl-tests' own margin (NCCL_TESTS_MIN_BW fails below 0.9 x the
# figure, docs/baselines.md 1): healthy published runs clear it (365.8 GB/s on 4 nodes of 8x NDR, nccl-tests
# #309, against 338.4), one rail of eight missing (12.5 %) does not.
NIC_FLOOR_FRACTION = 0.9

GDRDMA_SOURCE = ("docs/baselines.md 9: NCCL prints via NET/IB/<dev>/GDRDMA for a connection whose NIC reads and "
                 "writes GPU memory directly (GPUDirect RDMA); without GDRDMA the data is staged through host memory")
RAILS_SOURCE = ("docs/baselines.md 9: one HCA per compute rail carries the node's share of a ring across nodes "
                "(3b: the NIC-bound floor assumes every rail; one rail of eight missing falls below it)")
NETWORKS_SOURCE = "docs/baselines.md 9: every rank of one communicator should use the same network"
MNNVL_SOURCE = ("docs/baselines.md 9: on a multi-node NVLink system NCCL (>= 2.25.2) prints MNNVL 1 when its "
                "ranks reach each other over NVLink across nodes; MNNVL 0 sends that traffic over the network")


class NicAggregate(TypedDict):
    """A node's compute NICs: ``count`` NICs of ``gbps`` Gb/s each, ``gbs`` their aggregate in GB/s."""

    count: int
    gbps: float
    link_layer: str
    gbs: float
    source: Optional[str]


class NicFloor(TypedDict):
    """The NIC-bound floor of a run (GB/s): ``expected`` busbw, ``floor`` 0.9 of it, the smallest ``aggregate``."""

    floor: float
    expected: float
    aggregate: float
    source: str


class HostFloor(TypedDict, total=False):
    """One host's floor in a multi-node run: ``{floor, source, rule}``, or ``{floor: None, why}``."""

    floor: Optional[float]
    source: Optional[str]
    rule: str
    why: str


def nic_aggregate(node: NodeContext) -> Optional[NicAggregate]:
    """The node's compute NICs as ``{count, gbps, link_layer, gbs, source}`` (``gbs`` the aggregate in GB/s), or None.

    From the claim's compute ``ib``/``roce`` NICs, else the profile's ``expect.compute_rail``, else the node's
    Active RDMA ports (the most common link layer and rate among them). Several claimed compute entries add up.
    """
    rails = [rail for rail in rdma_rails(node) or []
             if rail.get("role") == "compute" and rail.get("count") and rail.get("gbps")]
    if rails:
        gbps = sum(rail["count"] * float(rail["gbps"]) for rail in rails)
        count = sum(rail["count"] for rail in rails)
        link_layer = rails[0]["link_layer"]
        source = "claim" if rails[0]["source"] == "claim" else rails[0]["source"]
        return {"count": count, "gbps": gbps / count, "link_layer": link_layer, "gbs": gbps / 8.0, "source": source}
    nic = node.group("nic")
    if not nic:
        return None
    keys = [(port.get("link_layer"), port.get("rate_gbps"))
            for dev in nic.get("rdma") or [] for port in dev.get("ports") or []
            if port.get("state") == "Active" and port.get("link_layer") in NIC_EFFICIENCY and port.get("rate_gbps")]
    if not keys:
        return None
    key = max(set(keys), key=lambda item: (keys.count(item), item[1] or 0))
    count = keys.count(key)
    return {"count": count, "gbps": float(key[1]), "link_layer": key[0], "gbs": count * float(key[1]) / 8.0,
            "source": "NIC facts (Active RDMA ports)"}


def nic_floor(aggregates: Iterable[Optional[NicAggregate]]) -> Optional[NicFloor]:
    """The NIC-bound floor of a run over nodes with these :func:`nic_aggregate` s (the smallest bounds the ring).

    ``{floor, expected, aggregate, source}`` (GB/s), None when no node's aggregate is known.
    """
    known = [agg for agg in aggregates if agg and agg.get("link_layer") in NIC_EFFICIENCY]
    if not known:
        return None
    low = min(known, key=lambda agg: agg["gbs"] * NIC_EFFICIENCY[agg["link_layer"]])
    expected = low["gbs"] * NIC_EFFICIENCY[low["link_layer"]]
    floor = round(NIC_FLOOR_FRACTION * expected, 1)
    source = ("docs/baselines.md 3b NIC-bound floors: %s; floor %s of it (nccl-tests' 0.9 margin, "
              "docs/baselines.md 1); aggregate %d x %s Gb/s %s = %s GB/s (%s)" % (
                  NIC_EFFICIENCY_SOURCE[low["link_layer"]], num(NIC_FLOOR_FRACTION), low["count"], num(low["gbps"]),
                  low["link_layer"], num(round(low["gbs"], 1)), low["source"]))
    return {"floor": floor, "expected": round(expected, 1), "aggregate": low["gbs"], "source": source}


def multi_node_floor(nodes: Sequence[NodeContext], count: int) -> dict[str, HostFloor]:
    """``{host: {floor, source, rule}}``: the floor of a multi-node all-reduce over ``nodes`` (``count`` nodes), each
    host's from its own profile (:func:`host_multi_node_floor`); ``floor`` None, with ``why``, where none applies.

    The NIC-bound floor (:func:`nic_floor`) is the run's: the node with the smallest NIC aggregate bounds the ring.
    """
    aggregates = [nic_aggregate(node) for node in nodes]
    bound = nic_floor(aggregates)
    smallest = min((agg["gbs"] for agg in aggregates if agg), default=None)
    return {node.name: host_multi_node_floor(node, count, bound, smallest) for node in nodes}


def _count_words(count: int) -> Any:
    """``two`` for a two-node run, else the count itself (as the messages print it)."""
    return "two" if count == 2 else count


def host_multi_node_floor(node: NodeContext, count: int, bound: Optional[NicFloor],
                          smallest: Optional[float]) -> HostFloor:
    """One host's floor in a run of ``count`` nodes whose NIC-bound floor is ``bound`` and smallest NIC aggregate
    ``smallest`` (GB/s): ``{floor, source, rule}``, or ``{floor: None, why}``.

    The profile's ``thresholds.allreduce_multi_node`` when its ``nodes`` is the run's count (a published two-node,
    16-rank figure) and the run's NIC aggregate is at least the profile's ``expect.compute_rail`` one (or unknown);
    with ``nodes`` null, for every count. Else the NIC-bound floor: busbw across more nodes is bounded by each node's
    NICs, so the two-node figure (440 GB/s on 8x NDR, above the 376 the NICs allow) never applies there. Never
    silently: the source, or the ``why`` of a host not judged, says why the profile's floor was not used.
    """
    threshold = profile_value(node.profile, "thresholds.allreduce_multi_node")[0]
    nic_rule = "the NIC-bound floor for %d nodes" % count
    if threshold is None:
        if bound is None:
            return {"floor": None, "why": "the profile sets no thresholds.allreduce_multi_node and the nodes' NIC "
                    "aggregate is unknown"}
        return {"floor": bound["floor"], "source": bound["source"], "rule": nic_rule}
    if threshold.get("nodes") is None:
        return {"floor": threshold["floor"], "source": threshold.get("source"),
                "rule": "the profile's multi-node floor (every node count)"}
    if threshold["nodes"] != count:
        return _other_count_floor(threshold, count, bound, nic_rule)
    rail = profile_value(node.profile, "expect.compute_rail")[0]
    profile_gbs = rail["count"] * float(rail["rate"]) / 8.0 if rail else None
    if smallest is None or profile_gbs is None or smallest >= profile_gbs:
        return {"floor": threshold["floor"], "source": threshold.get("source"),
                "rule": "the %s-node published floor" % _count_words(count)}
    fewer = "the profile's %s-node floor %s GB/s assumes %s GB/s of NICs per node" % (
        _count_words(count), num(threshold["floor"]), num(profile_gbs))
    if bound is None:
        return {"floor": None, "why": "%s, a node of this run has %s GB/s, and no NIC-bound floor is known (its link "
                "layer is neither InfiniBand nor Ethernet)" % (fewer, num(round(smallest, 1)))}
    return {"floor": bound["floor"], "source": "%s; %s" % (bound["source"], fewer), "rule": nic_rule}


def _other_count_floor(threshold: dict[str, Any], count: int, bound: Optional[NicFloor], nic_rule: str) -> HostFloor:
    """The floor of a run whose node count is not the one of the profile's published floor: the NIC-bound one."""
    not_used = "thresholds.allreduce_multi_node (%s GB/s) is for %d nodes" % (
        num(threshold["floor"]), threshold["nodes"])
    if bound is None:
        why = "%s, this run has %d, and no NIC-bound floor is known (no compute rail speeds: no claimed compute " \
            "NICs, expect.compute_rail or Active RDMA port rates)" % (not_used, count)
        return {"floor": None, "why": why}
    return {"floor": bound["floor"], "source": "%s; %s (its nodes), not %d" % (bound["source"], not_used, count),
            "rule": nic_rule}


def left_out_of_rdma(node: NodeContext, others: Sequence[NodeContext]) -> Optional[str]:
    """Why the node was left out of the RDMA runs (no Active compute rail while other nodes have one), else None."""
    env = node.settings.get(NCCL_ENV_SETTING) or {}
    ports = active_rdma_ports(node)
    if str(env.get("NCCL_IB_DISABLE")) != "1" and ports != []:
        return None
    with_rails = [other.name for other in others if other is not node
                  and str((other.settings.get(NCCL_ENV_SETTING) or {}).get("NCCL_IB_DISABLE")) == "0"]
    rails = [rail for rail in rdma_rails(node) or [] if rail.get("count")]
    if not with_rails and not rails:
        return None
    expected = "; %s expects %d" % (rails[0]["source"], sum(rail["count"] for rail in rails)) if rails else ""
    return "left out of the RDMA runs: no Active RDMA port on a compute rail (NCCL_IB_DISABLE=1 on this node " \
        "only)%s" % expected


def implausible_busbw(node: NodeContext, record: Record, value: Optional[float],
                      check_id: str = "benchmarks.allreduce_single") -> Optional[CheckResult]:
    """A FAIL naming the node and the figure when a run's busbw is above what the node's GPU links carry
    (checks/plausible.py :func:`busbw_ceiling`): a damaged or forged output, never judged against a floor; else None."""
    ceiling, source = busbw_ceiling(node.profile)
    absurd = implausible("allreduce_busbw_gbs", value, "%s busbw of %s" % (node.name, record.get("name") or "the run"),
                         ceiling, source)
    if absurd is None:
        return None
    return result(check_id, FAIL, absurd, measured=value, expected=ceiling, threshold_source=source,
                  subject=record.get("name"))


def profile_size(node: NodeContext) -> Optional[int]:
    """The profile's ``thresholds.allreduce_single_node.message_size`` (bytes), None when it names none."""
    size: Optional[int] = (profile_value(node.profile, "thresholds.allreduce_single_node")[0] or {}).get("message_size")
    return size


# --- what the NCCL evidence of a run across nodes is held to ----------------------------------------------


def gpudirect_required(node: NodeContext) -> tuple[bool, Optional[str]]:
    """``(required, source)``: the profile's ``host.gpudirect_required`` when set, else True when the claim lists
    compute ``ib``/``roce`` NICs (as ``host.gpudirect`` reads a claim), else False."""
    required, source = profile_value(node.profile, "host.gpudirect_required")
    if required is not None:
        return bool(required), source
    claimed = [rail for rail in rdma_rails(node) or []
               if rail.get("source") == "claim" and rail.get("role") == "compute"]
    return (True, "claim (compute RDMA NICs)") if claimed else (False, None)


def compute_rail_count(node: NodeContext) -> tuple[Optional[int], Optional[str]]:
    """``(number of compute RDMA rails, source)`` from the claim, else the profile's ``expect.compute_rail``."""
    rails = [rail for rail in rdma_rails(node) or [] if rail.get("role") == "compute" and rail.get("count")]
    if not rails:
        return None, None
    return sum(rail["count"] for rail in rails), rails[0]["source"]


def multi_node_nvlink(node: NodeContext) -> tuple[bool, Optional[str]]:
    """``(True, source)`` when the profile says NVLink spans nodes (``expect.fabric_clique_scope: nvlink_domain``)."""
    scope, source = profile_value(node.profile, "expect.fabric_clique_scope")
    return scope == "nvlink_domain", source
