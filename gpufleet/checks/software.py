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

from gpufleet.checks.registry import fleet_check
from gpufleet.checks.fleet import cohorts, majority
from gpufleet.checks.model import PASS, SKIP, WARN, result

SOURCE = "fleet consistency: one version per package across the fleet (majority)"


def _driver(node):
    gpu = node.group("gpu") or {}
    host = node.group("host") or {}
    return gpu.get("driver_version") or (host.get("driver") or {}).get("version")


def _versions(node):
    return (node.group("host") or {}).get("versions") or {}


def _nccl(node):
    return (_versions(node).get("nccl") or {}).get("version")


def _mpi(node):
    mpi = _versions(node).get("mpi") or {}
    return mpi.get("version") or mpi.get("text")


# check id -> (words, fact groups any of which must be gathered, getter)
PACKAGES = {
    "software.driver": ("NVIDIA driver", ("gpu", "host"), _driver),
    "software.cuda": ("CUDA (driver API)", ("gpu",), lambda node: (node.group("gpu") or {}).get("cuda_version")),
    "software.nccl": ("NCCL", ("host",), _nccl),
    "software.ofed": ("OFED", ("host",), lambda node: _versions(node).get("ofed")),
    "software.mpi": ("MPI", ("host",), _mpi),
}


def judge_versions(check_id, nodes):
    """``{node_name: [result]}`` for one package over ``nodes`` (NodeContexts)."""
    words, groups, getter = PACKAGES[check_id]
    out = {}
    for cohort, members in cohorts(nodes).items():
        gathered = [node for node in members if any(node.group(group) is not None for group in groups)]
        for node in members:
            if node not in gathered:
                out[node.name] = [result(check_id, SKIP, "not judged: %s facts not gathered" % " / ".join(groups))]
        values = {node.name: getter(node) for node in gathered}
        known = [value for value in values.values() if value is not None]
        if not known:
            for node in gathered:
                out[node.name] = [result(check_id, SKIP, "not judged: %s version not found on any node of %s" % (words, cohort))]
            continue
        if len(gathered) < 2:
            for node in gathered:
                out[node.name] = [result(check_id, SKIP, "not judged: the only node of %s (%s %s): nothing to compare" % (
                    cohort, words, values[node.name] or "not found"), measured=values[node.name])]
            continue
        top, count, tied = majority(values.values())
        for node in gathered:
            value = values[node.name]
            if tied:
                split = sorted({v for v in known if known.count(v) == count})
                out[node.name] = [result(check_id, WARN, "%s %s: %s is split with no majority (%s, %d node(s) each)" % (
                    words, value or "not found", cohort, " / ".join(split), count), measured=value, expected=split, threshold_source=SOURCE)]
            elif value == top:
                out[node.name] = [result(check_id, PASS, "%s %s, as %d of %d nodes of %s" % (words, value, count, len(gathered), cohort),
                                         measured=value, expected=top, threshold_source=SOURCE)]
            elif value is None:
                out[node.name] = [result(check_id, WARN, "%s not found on this node; fleet majority %s (%d of %d nodes of %s)" % (
                    words, top, count, len(gathered), cohort), measured=None, expected=top, threshold_source=SOURCE)]
            else:
                out[node.name] = [result(check_id, WARN, "%s %s, fleet majority %s (%d of %d nodes of %s)" % (
                    words, value, top, count, len(gathered), cohort), measured=value, expected=top, threshold_source=SOURCE)]
    return out


def _register(check_id):
    @fleet_check(check_id, requires=())
    def check(nodes):
        return judge_versions(check_id, nodes)

    check.__name__ = "check_%s" % check_id.replace(".", "_")
    return check


for _check_id in PACKAGES:
    _register(_check_id)
