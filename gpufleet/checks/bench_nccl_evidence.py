# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NCCL_DEBUG=INFO evidence of one node in one all-reduce run across nodes (pure; docs/baselines.md 9).

``benchmarks.nccl_network`` (checks/benchmarks.py ``check_nccl_network``) judges each host of a multi-node or pair run
with :func:`judge_nccl_network`: NET/IB without GDRDMA where GPUDirect is required fails, fewer distinct HCAs than
compute rails fails, ranks on different networks warn, MNNVL 0 on a multi-node NVLink profile fails.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from gpufleet.checks.bench_floors import (GDRDMA_SOURCE, MNNVL_SOURCE, NETWORKS_SOURCE, RAILS_SOURCE,
                                          compute_rail_count, gpudirect_required, multi_node_nvlink)
from gpufleet.checks.bench_records import Record, hosts_of
from gpufleet.checks.bench_words import via_words
from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, CheckResult, NodeContext, result

NCCL_NETWORK_CHECK = "benchmarks.nccl_network"

# One NET/IB (or NET/Socket) channel transport of the NCCL log: {host, via, network, dev, gdrdma, count, line}
Via = dict[str, Any]


def log_host_of(inventory_name: str, log_hosts: Iterable[Optional[str]]) -> Optional[str]:
    """The host name NCCL printed for an inventory host: the same name or its short name.

    NCCL cuts the host name at the first dot."""
    short = str(inventory_name).split(".", 1)[0]
    for host in log_hosts:
        if host and (host == inventory_name or host == short or host.split(".", 1)[0] == short):
            return host
    return None


def _hca_names(debug: dict[str, Any], log_host: Optional[str], vias: list[Via]) -> list[str]:
    """Names of the HCAs the NET/IB connections use (the ``dev`` index into that host's ``NET/IB : Using`` list)."""
    names: dict[Any, Any] = {}
    for device in debug.get("net_devices") or []:
        if device.get("transport") == "IB" and (log_host is None or device.get("host") == log_host):
            names.setdefault(device.get("index"), device.get("name"))
    return sorted({names.get(via["dev"], "dev %s" % via["dev"]) for via in vias if via.get("dev") is not None})


def _ranks_per_node(record: Record, debug: dict[str, Any]) -> Optional[int]:
    nranks, nnodes = debug.get("nranks"), debug.get("nnodes") or len(set(hosts_of(record))) or None
    if isinstance(nranks, int) and isinstance(nnodes, int) and nnodes:
        return nranks // nnodes
    return None


class _RunOfNode:
    """One node's view of one run across nodes: its name, where it ran, and its NET/IB lines in the log."""

    def __init__(self, node: NodeContext, record: Record, debug: dict[str, Any], log_host: Optional[str]) -> None:
        self.node, self.record, self.debug, self.log_host = node, record, debug, log_host
        self.name = record.get("name") or "all_reduce_perf"
        self.where = "%s over %s" % (self.name, ", ".join(hosts_of(record)))
        mine = [via for via in debug.get("net_vias") or [] if log_host is None or via.get("host") == log_host]
        self.who = "" if log_host in (None, node.name) else " (NCCL's host name %s)" % log_host
        if log_host is None and len(set(via.get("host") for via in mine)) > 1:
            self.who = " (NCCL's host names do not name this node: every host's lines judged)"
        self.ib: list[Via] = [via for via in mine if via.get("network") == "IB"]


def _networks_result(run: _RunOfNode) -> Optional[CheckResult]:
    """A WARN when ranks disagree on the network: some over IB, some over sockets (or a plugin)."""
    by_host = {host or "(no host prefix)": nets
               for host, nets in (run.debug.get("networks_by_host") or {}).items() if nets}
    networks = sorted({net for nets in by_host.values() for net in nets})
    if len(networks) <= 1:
        return None
    per_host = "; ".join("%s: %s" % (host, ", ".join(nets)) for host, nets in by_host.items())
    return result(NCCL_NETWORK_CHECK, WARN, "%s: ranks report different networks (%s): %s" % (
        run.where, ", ".join(networks), per_host),
        measured=networks, expected="one network", threshold_source=NETWORKS_SOURCE, subject=run.name)


def _mnnvl_result(run: _RunOfNode) -> Optional[CheckResult]:
    """MNNVL 0 on a multi-node NVLink system fails; no MNNVL field there is not judged."""
    mnnvl, mnnvl_source = multi_node_nvlink(run.node)
    if mnnvl and run.debug.get("mnnvl") is False:
        return result(NCCL_NETWORK_CHECK, FAIL, "%s: NCCL's log says MNNVL 0 on a multi-node NVLink system (%s): the "
                      "ranks do not reach each other over NVLink across nodes" % (run.where, mnnvl_source),
                      measured="MNNVL 0", expected="MNNVL 1", threshold_source=MNNVL_SOURCE, subject=run.name)
    if mnnvl and run.debug.get("mnnvl") is None:
        return result(NCCL_NETWORK_CHECK, SKIP, "MNNVL not judged: %s printed no MNNVL field (NCCL < 2.25 or no "
                      "NCCL_DEBUG=INFO comm lines)" % run.where, subject=run.name)
    return None


def _gdrdma_result(run: _RunOfNode, without: list[Via], required: bool,
                   required_source: Optional[str]) -> Optional[CheckResult]:
    """A FAIL when NET/IB connections go without GDRDMA where GPUDirect RDMA is required."""
    if not (required and without):
        return None
    return result(NCCL_NETWORK_CHECK, FAIL, "%s%s: %d of %d NET/IB channel transport(s) without GDRDMA where GPUDirect "
                  "RDMA is required (%s): %s" % (
                      run.where, run.who, len(without), len(run.ib), required_source, via_words(without)),
                  measured="NET/IB without GDRDMA", expected="via NET/IB/<dev>/GDRDMA",
                  threshold_source=GDRDMA_SOURCE, subject=run.name)


def _hca_result(run: _RunOfNode, used: list[str], rails: Optional[int],
                rails_source: Optional[str]) -> Optional[CheckResult]:
    """Fewer distinct HCAs than compute rails fails (not judged when the run has fewer ranks per node than rails)."""
    if not (rails and used and len(used) < rails):
        return None
    per_node = _ranks_per_node(run.record, run.debug)
    if per_node is not None and per_node < rails:
        return result(NCCL_NETWORK_CHECK, SKIP, "HCAs not judged: %s has %d rank(s) per node for %d rails (%s); "
                      "it uses %s" % (run.where, per_node, rails, rails_source, ", ".join(used)), subject=run.name)
    return result(NCCL_NETWORK_CHECK, FAIL, "%s%s: the NET/IB connections use %d distinct HCA(s) (%s) for %d compute "
                  "rails (%s): %s" % (
                      run.where, run.who, len(used), ", ".join(used), rails, rails_source, via_words(run.ib)),
                  measured=used, expected="%d HCAs" % rails, threshold_source=RAILS_SOURCE, subject=run.name)


def _ib_pass_result(run: _RunOfNode, used: list[str], rails: Optional[int], without: list[Via], required: bool,
                    required_source: Optional[str]) -> CheckResult:
    """The PASS of a node whose NET/IB connections raised nothing: its HCAs, rails and GDRDMA."""
    gdr = "all with GDRDMA" if not without else "%d without GDRDMA (GPUDirect not required%s)" % (
        len(without), ": %s" % required_source if required_source else "")
    return result(NCCL_NETWORK_CHECK, PASS, "%s%s: NET/IB over %d HCA(s) (%s)%s, %d channel transport(s) %s" % (
        run.where, run.who, len(used), ", ".join(used), " for %d rails" % rails if rails else "", len(run.ib), gdr),
        measured=used, expected="%d HCAs" % rails if rails else None,
        threshold_source=GDRDMA_SOURCE if required else RAILS_SOURCE, subject=run.name)


def judge_nccl_network(node: NodeContext, record: Record, debug: dict[str, Any],
                       log_host: Optional[str]) -> list[CheckResult]:
    """The NCCL-evidence results of one node in one run across nodes."""
    run = _RunOfNode(node, record, debug, log_host)
    items = [item for item in (_networks_result(run), _mnnvl_result(run)) if item]
    if not run.ib:
        return items
    required, required_source = gpudirect_required(node)
    without = [via for via in run.ib if not via.get("gdrdma")]
    used = _hca_names(debug, log_host, run.ib)
    rails, rails_source = compute_rail_count(node)
    items += [item for item in (_gdrdma_result(run, without, required, required_source),
                                _hca_result(run, used, rails, rails_source)) if item]
    if not any(item["status"] in (FAIL, WARN) for item in items):
        items.append(_ib_pass_result(run, used, rails, without, required, required_source))
    return items
