# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checks engine: one pass over every node's facts, then the fleet-wide rules.

Check families live in modules beside this one (``checks/<family>.py``). Each registers
its checks with :func:`node_check` (judges one node) or :func:`fleet_check` (needs every
node at once: outliers, consistency). :func:`run_checks` calls them and turns their results
into verdicts. A check that raises becomes an ``error`` result naming the exception, so one
bug never hides the other checks' evidence.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Callable, Iterable, Mapping

from gpufleet.checks.evidence import coverage
from gpufleet.checks.model import ERROR, FAIL, SKIP, CheckResult, NodeContext, fleet_verdict, node_verdict, result
from gpufleet.checks.registry import FLEET_CHECKS, NODE_CHECKS, fleet_check, node_check
from gpufleet.facts.raw import is_overrun

__all__ = ["DEFAULT_FAMILIES", "fleet_check", "node_check", "run_checks"]
# A registered check as the engine runs it: its id, the fact groups it needs, the function (a node check or a fleet
# check: checks/registry.py NodeCheck, FleetCheck).
Registered = tuple[str, tuple[str, ...], Callable[..., Any]]

# The families run by default, in report order: each is the module checks/<name>.py, which declares its checks with
# checks/registry.py (so it imports no engine, and this list is the one place the families are named).
DEFAULT_FAMILIES = ("topology", "nvlink", "pcie", "gpu", "host", "numa", "network", "software", "fleet", "benchmarks",
                    "bench_network", "burn_in", "compute", "after_stress")


def load_families(families: Iterable[str] | None = None) -> tuple[str, ...]:
    """Import the check family modules (registering their checks); return their module names.

    A family is a module of this package named by its short name (``"topology"``) or any
    importable dotted name (tests register families of their own).
    """
    modules: list[str] = []
    built_in = family_modules()
    for name in DEFAULT_FAMILIES if families is None else families:
        if name in built_in:
            modules.append(built_in[name].__name__)
        elif "." in name:
            # a family from outside the package (a test's own module); the package's own are never imported by name
            modules.append(importlib.import_module(name).__name__)
        else:
            raise ModuleNotFoundError("no check family %r; known: %s" % (name, ", ".join(sorted(built_in))), name=name)
    return tuple(modules)


def family_modules() -> dict[str, ModuleType]:
    """The package's check families by short name (``"topology"``), imported here."""
    return {name: importlib.import_module("gpufleet.checks." + name) for name in DEFAULT_FAMILIES}


def _checks_of(registry: Mapping[str, tuple[tuple[str, ...], Callable[..., Any]]],
               modules: tuple[str, ...]) -> list[Registered]:
    return [(check_id, requires, func) for check_id, (requires, func) in registry.items() if func.__module__ in modules]


def _missing(node: NodeContext, requires: Iterable[str]) -> list[str]:
    return [group for group in requires if node.group(group) is None]


def _skip_for_missing(check_id: str, node: NodeContext, missing: list[str]) -> CheckResult:
    why = "; ".join("%s facts %s" % (group, "failed: " + node.fact_errors[group] if group in node.fact_errors else "not gathered")
                    for group in missing)
    return result(check_id, SKIP, "not judged: %s" % why)


def _fact_group_results(node: NodeContext) -> list[CheckResult]:
    """A fact group that failed to gather is itself a failure: the node could not be verified.

    One that failed because a tool overran the fact phase (timed out, skipped: gpufleet/facts/raw.py is_overrun)
    found nothing wrong: it is not judged, and the node is INCOMPLETE naming the tools (checks/evidence.py).
    """
    return [
        result("facts.%s" % group, SKIP, "not gathered: %s" % message, subject=group) if is_overrun(message)
        else result("facts.%s" % group, FAIL, "could not gather %s facts: %s" % (group, message), subject=group)
        for group, message in sorted(node.fact_errors.items())
    ]


def _raised(check_id: str, exc: Exception) -> CheckResult:
    return result(check_id, ERROR, "check raised %s: %s" % (type(exc).__name__, exc))


def _run_node_checks(node: NodeContext, node_checks: list[Registered]) -> list[CheckResult]:
    """The node's own results: its fact groups that failed, then each node check (skipped where a group it needs is
    missing; a check that raises is an ``error`` result, never the loss of the others)."""
    out = _fact_group_results(node)
    for check_id, requires, func in node_checks:
        missing = _missing(node, requires)
        if missing:
            out.append(_skip_for_missing(check_id, node, missing))
            continue
        try:
            out.extend(func(node))
        except Exception as exc:  # pylint: disable=broad-exception-caught
            out.append(_raised(check_id, exc))
    return out


def _run_fleet_check(check: Registered, reachable: list[NodeContext],
                     per_node: dict[str, list[CheckResult]]) -> None:
    """One fleet check over the reachable nodes that have what it needs (the others get a skip)."""
    check_id, requires, func = check
    judged = []
    for node in reachable:
        missing = _missing(node, requires)
        if missing:
            per_node[node.name].append(_skip_for_missing(check_id, node, missing))
        else:
            judged.append(node)
    try:
        outcome = func(judged) if judged else {}
    except Exception as exc:  # pylint: disable=broad-exception-caught
        outcome = {node.name: [_raised(check_id, exc)] for node in judged}
    for name, items in outcome.items():
        per_node[name].extend(items)


def _node_entry(node: NodeContext, checks: list[CheckResult]) -> dict[str, Any]:
    # what the claim, the profile and the run require, held against the results (checks/evidence.py)
    covered = None if node.unreachable else coverage(node, checks)
    return {
        "verdict": node_verdict(checks, unreachable=node.unreachable, coverage=covered),
        "unreachable": node.unreachable,
        "profile": (node.profile or {}).get("name"),
        "checks": checks,
        "failed": [item["id"] for item in checks if item["status"] == FAIL],
        "coverage": covered,
    }


def run_checks(nodes: list[NodeContext], families: Iterable[str] | None = None) -> dict[str, Any]:
    """Judge ``nodes`` (a list of NodeContext). Returns ``{"nodes": {...}, "fleet": {...}}``.

    ``nodes[name]`` is ``{"verdict", "unreachable", "profile", "checks": [result...], "failed", "coverage"}``
    (``coverage``: checks/evidence.py, None for an unreachable node);
    ``fleet`` holds the fleet verdict and counts. Unreachable nodes are judged by nothing.
    """
    names = load_families(families)
    node_checks = _checks_of(NODE_CHECKS, names)
    reachable = [node for node in nodes if not node.unreachable]
    per_node: dict[str, list[CheckResult]] = {node.name: [] for node in nodes}
    for node in reachable:
        per_node[node.name].extend(_run_node_checks(node, node_checks))
    for check in _checks_of(FLEET_CHECKS, names):
        _run_fleet_check(check, reachable, per_node)
    report = {node.name: _node_entry(node, per_node[node.name]) for node in nodes}
    return {"nodes": report, "fleet": fleet_verdict({name: entry["verdict"] for name, entry in report.items()})}
