# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge the hosts of a results directory and write their checks and verdicts into it.

Each host's record (facts, fact errors, benchmarks, burn-in records) becomes a NodeContext with
the profile its :class:`gpufleet.checks.verdict.Judge` chose; the checks engine judges the fleet;
``hosts/<host>.json``, ``run.json``'s profile choices and ``fleet.json`` receive the outcome.
The action ``gpufleet.acceptance.fleet_verdict`` calls :func:`judge_run`.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gpufleet.checks.after_stress import FACTS_READ_SETTING, READINGS_SETTING
from gpufleet.checks.engine import run_checks
from gpufleet.checks.evidence import LEVEL_SETTING, REQUIRED_AFTER_STRESS_SETTING, REQUIRED_BENCHMARKS_SETTING, STATIC_SETTING
from gpufleet.checks.model import ACCEPTED, NodeContext
from gpufleet.facts import FACT_GROUPS
from gpufleet.plan import levels
from gpufleet.plan.network import rail_hcas
from gpufleet.results.burn_in import judging_settings as burn_in_settings
from gpufleet.results.burn_in import read_history
from gpufleet.results.shapes import FleetDocument, HostRecord, ProfileChoice
from gpufleet.results.store import HOSTS_DIR, ResultsError, RunDir


def _rails(facts: Mapping[str, Any], settings: Mapping[str, Any]) -> int:
    """The host's Active RDMA rails, as benchmark_tasks/preflight.yml counts them (gpufleet_perftest_hca, else the
    NCCL_IB_HCA provisioning chose, restricts them)."""
    nic = facts.get("nic") if isinstance(facts, dict) else None
    if not isinstance(nic, dict):
        return 0
    nccl_env = settings.get("gpufleet_nccl_env") or {}
    restrict = settings.get("gpufleet_perftest_hca") or nccl_env.get("NCCL_IB_HCA") or None
    try:
        return len(rail_hcas(nic, restrict))
    except (TypeError, ValueError, AttributeError):
        # NIC facts of another shape: no rail the benchmarks could use either
        return 0


@dataclass
class _LevelPlan:
    """What one host's level asks of it, as the benchmark playbook's play saw the host (:func:`level_requirements`)."""

    level: str
    benchmarks: Any  # gpufleet_benchmarks: the host's, else the run's (None: not given)
    burn_in: Any  # gpufleet_burn_in, likewise
    bench: bool  # the host was in the benchmark run
    rails: int
    nvbandwidth: bool  # built where it ran: a record of it


def _level_plan(host: str, level: Any, settings: Mapping[str, Any], run_settings: Mapping[str, Any],
                record: Mapping[str, Any], reachable: Collection[str]) -> _LevelPlan:
    gone = host not in reachable and not record or record.get("unreachable")
    # the host's own choice wins over the run's (an extra var is both)
    benchmarks = settings.get("gpufleet_benchmarks", run_settings.get("benchmarks"))
    burn_in = settings.get("gpufleet_burn_in", run_settings.get("burn_in"))
    bench_records = [item for item in record.get("benchmarks") or [] if isinstance(item, dict)]
    return _LevelPlan(
        level=levels.level_of(level),
        benchmarks=benchmarks,
        burn_in=burn_in,
        bench=not gone and levels.asks_for_phase("benchmarks", level, benchmarks, overridden=benchmarks is not None),
        rails=_rails(record.get("facts") or {}, settings),
        # built where it ran: the preflight leaves a node without nvbandwidth out of the level's choice, unrecorded
        nvbandwidth=any(item.get("kind") == "nvbandwidth" for item in bench_records),
    )


def level_requirements(hosts: Iterable[str], run_settings: Mapping[str, Any], choices: Mapping[str, Any],
                       records: Mapping[str, HostRecord], reachable: Collection[str]) -> dict[str, dict[str, Any]]:
    """Per host ``{level, benchmarks}``: its level (``gpufleet_level`` of the host, else the run's, run.json
    ``settings.level``) and the benchmarks that level required of it (gpufleet/plan/levels.py: the rule the playbooks
    run by), ``gpufleet_benchmarks`` / ``gpufleet_burn_in`` overriding the level. A host with no level (a run opened
    without one) is left out: it is judged on its ``gpufleet_benchmarks`` alone."""
    plan: dict[str, _LevelPlan] = {}
    for host in hosts:
        settings = (choices.get(host) or {}).get("settings") or {}
        level = settings.get("gpufleet_level") or run_settings.get("level")
        if level:
            plan[host] = _level_plan(host, level, settings, run_settings, records.get(host) or {}, reachable)
    # the hosts of the benchmark run, and those with rails, as the playbook's play saw them
    bench_hosts = [host for host in plan if plan[host].bench]
    rail_hosts = [host for host in bench_hosts if plan[host].rails > 0]
    out = {}
    for host, entry in plan.items():
        if entry.bench:
            required = levels.required_benchmarks(entry.level, entry.benchmarks, entry.burn_in,
                                                  hosts=len(bench_hosts), rail_hosts=len(rail_hosts),
                                                  rails=entry.rails, nvbandwidth_built=entry.nvbandwidth)
        else:
            required = levels.required_benchmarks(entry.level, [], entry.burn_in)
        out[host] = {"level": entry.level, "benchmarks": required}
    return out


def stress_phases(required: list) -> list[str]:
    """The stress phases among the required benchmark names: ``benchmarks`` for any benchmark, ``burn_in``."""
    phases = ["benchmarks"] if any(name != levels.BURN_IN for name in required) else []
    return phases + (["burn_in"] if levels.BURN_IN in required else [])


def after_stress_settings(record: HostRecord | None) -> dict[str, Any]:
    """The NodeContext settings checks/after_stress.py reads from a host record: its re-reads after stress (by phase)
    and the time of the facts reading they must follow."""
    readings = record.get("health_after") if record else None
    facts_phase = (record.get("phases") or {}).get("facts") if record else None
    return {READINGS_SETTING: readings if isinstance(readings, dict) else {},
            FACTS_READ_SETTING: facts_phase.get("finished") if facts_phase else None}


def fleet_label(report: Mapping[str, Any]) -> str | None:
    """:data:`levels.STATIC_LABEL` when the fleet is accepted and no node of it had anything measured required."""
    nodes = report.get("nodes") or {}
    if (report.get("fleet") or {}).get("verdict") not in ACCEPTED or not nodes:
        return None
    labels = {(entry.get("coverage") or {}).get("label") for entry in nodes.values()}
    return levels.STATIC_LABEL if labels == {levels.STATIC_LABEL} else None


def lost_after_facts(record: Mapping[str, Any], in_play: bool) -> str | None:
    """Why a host whose facts were recorded is UNREACHABLE after all, or None.

    It left the play, and a benchmark run on it was recorded ``unreachable``: the node stopped answering after its
    facts (rebooted, cut off). Its pairs are "not measured" (checks/benchmarks.py), and it is not judged on the
    facts of a node that is gone. A host still in the play, or one that left it for a failed task, is judged on
    what it recorded.
    """
    if in_play:
        return None
    for bench in record.get("benchmarks") or []:
        if isinstance(bench, dict) and bench.get("outcome") == "unreachable":
            return ("unreachable in the benchmark phase (%s, job %s: %s); its facts, recorded before, are kept in its "
                    "record" % (bench.get("kind") or "benchmark", bench.get("job_id") or "-",
                                bench.get("reason") or "no answer"))
    return None


def unrecorded_hosts_problem(run: RunDir, hosts: list[str]) -> str:
    """Why nothing is judged when ``hosts`` stayed in the play without a record in ``run``: the record of a node
    that answered is the controller's to write, and the fact task that could not write it failed saying why."""
    names = hosts[0] if len(hosts) == 1 else "%s and %s" % (", ".join(hosts[:-1]), hosts[-1])
    have, them = ("has", "it") if len(hosts) == 1 else ("have", "them")
    return ("nothing was judged: %s stayed in the play but %s no record in %s: the controller did not write %s (the "
            "fact task's failure says why: a full or unwritable results directory), and a node is never judged on a "
            "record the controller failed to write" % (names, have, os.path.join(run.path, HOSTS_DIR), them))


class ProfileChooser(Protocol):
    """What chooses a host's profile (gpufleet/checks/verdict.py Judge; the tests' stand-ins)."""

    def choose(self, facts: Any, choice: Any) -> tuple[dict[str, Any] | None, str]:
        """``(profile dict or None, reason)`` for one host."""


@dataclass
class _Judging:
    """What every host's judging of one run reads besides its own record (:func:`judge_run`)."""

    run: RunDir
    reachable: Collection[str]
    history: dict[str, Any] | None
    by_level: dict[str, dict[str, Any]]
    families: Iterable[str] | None
    required_benchmarks: Mapping[str, Any] | None


def _evidence(host: str, record: HostRecord | None, in_play: bool) -> tuple[str | None, dict[str, Any], dict[str, str]]:
    """``(unreachable, facts, fact errors)`` a host is judged on: its record's, or none when it has no record (it left
    the play before its record was written: UNREACHABLE)."""
    if record is None:
        unreachable = "no facts recorded: the host left the play (unreachable or failed) before its record was written"
        return unreachable, {group: None for group in FACT_GROUPS}, {}
    return (record.get("unreachable") or lost_after_facts(record, in_play), record.get("facts") or {},
            record.get("fact_errors") or {})


def _required(judging: _Judging, host: str, settings: dict[str, Any]) -> list[Any]:
    """The benchmarks ``host`` must have judged: the caller's ``required_benchmarks``, else its settings', else its
    level's, else the ``gpufleet_benchmarks`` the run asked for (:func:`judge_run`)."""
    asked = judging.required_benchmarks
    if asked is not None and host in asked:
        return list(asked[host] or [])
    if REQUIRED_BENCHMARKS_SETTING in settings:
        return settings[REQUIRED_BENCHMARKS_SETTING]
    if host in judging.by_level:
        return list(judging.by_level[host]["benchmarks"])
    wanted = settings.get("gpufleet_benchmarks") or []
    return [wanted] if isinstance(wanted, str) else list(wanted)


def node_settings(judging: _Judging, host: str, record: HostRecord | None, choice: Mapping[str, Any]) -> dict[str, Any]:
    """The NodeContext settings of ``host``: its choice's, with the required evidence (benchmarks, level, stress
    phases), the health re-reads after stress, its benchmark records and its burn-in records and drift flags."""
    settings = dict(choice["settings"])
    settings[REQUIRED_BENCHMARKS_SETTING] = _required(judging, host, settings)
    if host in judging.by_level:
        settings[LEVEL_SETTING] = judging.by_level[host]["level"]
        settings[STATIC_SETTING] = not settings[REQUIRED_BENCHMARKS_SETTING]
        if judging.families is None or "after_stress" in judging.families:
            # the stress phases the level ran on the host: the health facts must have been read again after each
            settings[REQUIRED_AFTER_STRESS_SETTING] = stress_phases(settings[REQUIRED_BENCHMARKS_SETTING])
    # the health re-reads after stress and the first reading they follow (checks/after_stress.py reads them)
    settings.update(after_stress_settings(record))
    # The benchmark records of the host (checks/benchmarks.py reads them).
    settings["benchmarks"] = list(record.get("benchmarks") or []) if record else []
    # The burn-in records with their samples read, and the history's drift flags (checks/burn_in.py reads them).
    settings.update(burn_in_settings(judging.run.path, host, record, judging.history))
    return settings


def _judged_node(judging: _Judging, host: str, record: HostRecord | None, choice: Mapping[str, Any],
                 judge: ProfileChooser) -> tuple[NodeContext, ProfileChoice]:
    """The NodeContext of ``host`` and the profile chosen for it (none for an unreachable host)."""
    unreachable, facts, errors = _evidence(host, record, host in judging.reachable)
    settings = node_settings(judging, host, record, choice)
    if unreachable:
        profile, reason = None, "not chosen: host unreachable"
    else:
        profile, reason = judge.choose(facts, choice)
    chosen: ProfileChoice = {"name": (profile or {}).get("name"), "reason": reason}
    return NodeContext(host, facts=facts, fact_errors=errors, claim=choice["claim"], profile=profile,
                       settings=settings, unreachable=unreachable), chosen


def judge_run(run: RunDir, hosts: list[str], reachable: Collection[str], choices: Mapping[str, Any],
              judge: ProfileChooser, families: Iterable[str] | None = None,
              required_benchmarks: Mapping[str, Any] | None = None
              ) -> tuple[dict[str, Any], FleetDocument, dict[str, ProfileChoice]]:
    """Judge ``hosts`` from their records in ``run`` (a RunDir); write verdicts; return the report.

    A host without a record that left the play is UNREACHABLE. One still in the play whose record is missing is
    the controller's failure (the fact task could not write it: a full or unwritable results directory), not the
    node's: nothing is judged nor written, ResultsError (:func:`unrecorded_hosts_problem`).
    The benchmarks each host must have judged (required evidence, checks/evidence.py): its entry in
    ``required_benchmarks`` (``{host: [name, ...]}``), else its settings' ``required_benchmarks``,
    else what its validation level required of it (:func:`level_requirements`, run.json ``settings``),
    else the ``gpufleet_benchmarks`` the run asked for. A node of which nothing measured was required at
    a known level is marked so (an ACCEPT of it is "static checks only").
    """
    records = run.host_records()
    unrecorded = [host for host in hosts if host not in records and host in reachable]
    if unrecorded:
        raise ResultsError(unrecorded_hosts_problem(run, unrecorded))
    history = read_history(run.path)
    run_settings = run.read_run().get("settings") or {}
    run_settings = run_settings if isinstance(run_settings, dict) else {}
    judging = _Judging(run, reachable, history, level_requirements(hosts, run_settings, choices, records, reachable),
                       families, required_benchmarks)
    nodes, profiles = [], {}
    for host in hosts:
        choice = choices.get(host) or {"claim": None, "profile": None, "overrides": None, "settings": {}}
        node, profiles[host] = _judged_node(judging, host, records.get(host), choice, judge)
        nodes.append(node)
    report = run_checks(nodes, families=families)
    report.setdefault("fleet", {})["label"] = fleet_label(report)
    report["fleet"]["level"] = run_settings.get("level")
    for host in hosts:
        run.write_judgement(host, report["nodes"][host], profile=profiles[host], claim=choices.get(host, {}).get("claim"))
    run_record = run.read_run()
    choices_record = dict(run_record.get("profile_choices") or {})
    choices_record["selected"] = profiles
    run.update_run(profile_choices=choices_record)
    fleet = run.write_fleet(report)
    return report, fleet, profiles
