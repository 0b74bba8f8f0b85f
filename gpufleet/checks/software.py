# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Software checks (pure, fleet-wide): driver, CUDA, NCCL, OFED and MPI versions alike across the fleet.

Nodes are compared within their cohort (see ``fleet.cohort_of``). A node whose version differs
from the cohort's majority, or lacks a package the others have, is named with the majority as the
expectation (``warn``: a buyer can reinstall software, not hardware; a multi-node job with mixed
versions is unsupported). Versions come from ``gpufleet_gpu`` (driver, CUDA) and
``gpufleet_host`` (driver when no GPU facts, OFED, MPI, NCCL).
"""

from __future__ import annotations

from typing import Any, Callable

from gpufleet.checks.registry import fleet_check
from gpufleet.checks.fleet import cohorts, majority
from gpufleet.checks.model import PASS, SKIP, WARN, CheckResult, NodeContext, result

SOURCE = "fleet consistency: one version per package across the fleet (majority)"


def _driver(node: NodeContext) -> Any:
    gpu = node.group("gpu") or {}
    host = node.group("host") or {}
    return gpu.get("driver_version") or (host.get("driver") or {}).get("version")


def _versions(node: NodeContext) -> dict[str, Any]:
    versions: dict[str, Any] = (node.group("host") or {}).get("versions") or {}
    return versions


def _nccl(node: NodeContext) -> Any:
    return (_versions(node).get("nccl") or {}).get("version")


def _mpi(node: NodeContext) -> Any:
    mpi = _versions(node).get("mpi") or {}
    return mpi.get("version") or mpi.get("text")


def _cuda(node: NodeContext) -> Any:
    return (node.group("gpu") or {}).get("cuda_version")


def _ofed(node: NodeContext) -> Any:
    return _versions(node).get("ofed")


# check id -> (words, fact groups any of which must be gathered, getter)
PACKAGES: dict[str, tuple[str, tuple[str, ...], Callable[[NodeContext], Any]]] = {
    "software.driver": ("NVIDIA driver", ("gpu", "host"), _driver),
    "software.cuda": ("CUDA (driver API)", ("gpu",), _cuda),
    "software.nccl": ("NCCL", ("host",), _nccl),
    "software.ofed": ("OFED", ("host",), _ofed),
    "software.mpi": ("MPI", ("host",), _mpi),
}


def judge_versions(check_id: str, nodes: list[NodeContext]) -> dict[str, list[CheckResult]]:
    """``{node_name: [result]}`` for one package over ``nodes`` (NodeContexts)."""
    words, groups, getter = PACKAGES[check_id]
    out: dict[str, list[CheckResult]] = {}
    for cohort, members in cohorts(nodes).items():
        gathered = [node for node in members if any(node.group(group) is not None for group in groups)]
        for node in members:
            if node not in gathered:
                out[node.name] = [result(check_id, SKIP, "not judged: %s facts not gathered" % " / ".join(groups))]
        out.update(_judge_cohort(check_id, words, cohort, {node.name: getter(node) for node in gathered}))
    return out


def _judge_cohort(check_id: str, words: str, cohort: str, values: dict[str, Any]) -> dict[str, list[CheckResult]]:
    """``{node_name: [result]}`` of the gathered nodes of one cohort, ``values`` their versions (None: not found)."""
    known = [value for value in values.values() if value is not None]
    if not known:
        return {name: [result(check_id, SKIP, "not judged: %s version not found on any node of %s" % (words, cohort))]
                for name in values}
    if len(values) < 2:
        return {name: [result(check_id, SKIP, "not judged: the only node of %s (%s %s): nothing to compare" % (
            cohort, words, value or "not found"), measured=value)] for name, value in values.items()}
    top, count, tied = majority(values.values())
    if tied:
        split = sorted({v for v in known if known.count(v) == count})
        return {name: [result(check_id, WARN, "%s %s: %s is split with no majority (%s, %d node(s) each)" % (
            words, value or "not found", cohort, " / ".join(split), count), measured=value, expected=split,
            threshold_source=SOURCE)] for name, value in values.items()}
    return {name: [_against_majority(check_id, words, cohort, value, (top, count, len(values)))]
            for name, value in values.items()}


def _against_majority(check_id: str, words: str, cohort: str, value: Any, vote: tuple[Any, int, int]) -> CheckResult:
    """One node's version against its cohort's majority ``vote``: ``(version, nodes with it, nodes gathered)``."""
    top, count, gathered = vote
    if value == top:
        return result(check_id, PASS, "%s %s, as %d of %d nodes of %s" % (words, value, count, gathered, cohort),
                      measured=value, expected=top, threshold_source=SOURCE)
    if value is None:
        return result(check_id, WARN, "%s not found on this node; fleet majority %s (%d of %d nodes of %s)" % (
            words, top, count, gathered, cohort), measured=None, expected=top, threshold_source=SOURCE)
    return result(check_id, WARN, "%s %s, fleet majority %s (%d of %d nodes of %s)" % (
        words, value, top, count, gathered, cohort), measured=value, expected=top, threshold_source=SOURCE)


def _register(check_id: str) -> Callable[[list[NodeContext]], dict[str, list[CheckResult]]]:
    @fleet_check(check_id, requires=())
    def check(nodes: list[NodeContext]) -> dict[str, list[CheckResult]]:
        return judge_versions(check_id, nodes)

    check.__name__ = "check_%s" % check_id.replace(".", "_")
    return check


for _check_id in PACKAGES:
    _register(_check_id)
