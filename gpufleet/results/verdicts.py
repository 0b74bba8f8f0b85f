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
from typing import Any

from gpufleet.checks.after_stress import FACTS_READ_SETTING, READINGS_SETTING
from gpufleet.checks.engine import run_checks
from gpufleet.checks.evidence import LEVEL_SETTING, REQUIRED_AFTER_STRESS_SETTING, REQUIRED_BENCHMARKS_SETTING, STATIC_SETTING
from gpufleet.checks.model import ACCEPTED, NodeContext
from gpufleet.facts import FACT_GROUPS
from gpufleet.plan import levels
from gpufleet.plan.network import rail_hcas
from gpufleet.results.burn_in import judging_settings as burn_in_settings
from gpufleet.results.burn_in import read_history
from gpufleet.results.store import HOSTS_DIR, ResultsError


def _rails(facts: dict, settings: dict) -> int:
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


def level_requirements(hosts, run_settings: dict, choices: dict, records: dict,
                       reachable) -> dict[str, dict[str, Any]]:
    """Per host ``{level, benchmarks}``: its level (``gpufleet_level`` of the host, else the run's, run.json
    ``settings.level``) and the benchmarks that level required of it (gpufleet/plan/levels.py: the rule the playbooks
    run by), ``gpufleet_benchmarks`` / ``gpufleet_burn_in`` overriding the level. A host with no level (a run opened
    without one) is left out: it is judged on its ``gpufleet_benchmarks`` alone."""
    plan = {}
    for host in hosts:
        settings = (choices.get(host) or {}).get("settings") or {}
        level = settings.get("gpufleet_level") or run_settings.get("level")
        if not level:
            continue
        record = records.get(host) or {}
        gone = host not in reachable and not record or record.get("unreachable")
        # the host's own choice wins over the run's (an extra var is both)
        benchmarks = settings.get("gpufleet_benchmarks", run_settings.get("benchmarks"))
        burn_in = settings.get("gpufleet_burn_in", run_settings.get("burn_in"))
        bench_records = [item for item in record.get("benchmarks") or [] if isinstance(item, dict)]
        plan[host] = {
            "level": levels.level_of(level),
            "benchmarks": benchmarks,
            "burn_in": burn_in,
            "bench": not gone and levels.asks_for_phase("benchmarks", level, benchmarks,
                                                        overridden=benchmarks is not None),
            "rails": _rails(record.get("facts") or {}, settings),
            # built where it ran: the preflight leaves a node without nvbandwidth out of the level's choice, unrecorded
            "nvbandwidth": any(item.get("kind") == "nvbandwidth" for item in bench_records),
        }
    # the hosts of the benchmark run, and those with rails, as the playbook's play saw them
    bench_hosts = [host for host in plan if plan[host]["bench"]]
    rail_hosts = [host for host in bench_hosts if plan[host]["rails"] > 0]
    out = {}
    for host, entry in plan.items():
        if entry["bench"]:
            required = levels.required_benchmarks(entry["level"], entry["benchmarks"], entry["burn_in"],
                                                  hosts=len(bench_hosts), rail_hosts=len(rail_hosts),
                                                  rails=entry["rails"], nvbandwidth_built=entry["nvbandwidth"])
        else:
            required = levels.required_benchmarks(entry["level"], [], entry["burn_in"])
        out[host] = {"level": entry["level"], "benchmarks": required}
    return out


def stress_phases(required: list) -> list[str]:
    """The stress phases among the required benchmark names: ``benchmarks`` for any benchmark, ``burn_in``."""
    phases = ["benchmarks"] if any(name != levels.BURN_IN for name in required) else []
    return phases + (["burn_in"] if levels.BURN_IN in required else [])


def after_stress_settings(record: dict | None) -> dict[str, Any]:
    """The NodeContext settings checks/after_stress.py reads from a host record: its re-reads after stress (by phase)
    and the time of the facts reading they must follow."""
    record = record or {}
    readings = record.get("health_after")
    return {READINGS_SETTING: readings if isinstance(readings, dict) else {},
            FACTS_READ_SETTING: ((record.get("phases") or {}).get("facts") or {}).get("finished")}


def fleet_label(report) -> str | None:
    """:data:`levels.STATIC_LABEL` when the fleet is accepted and no node of it had anything measured required."""
    nodes = report.get("nodes") or {}
    if (report.get("fleet") or {}).get("verdict") not in ACCEPTED or not nodes:
        return None
    labels = {(entry.get("coverage") or {}).get("label") for entry in nodes.values()}
    return levels.STATIC_LABEL if labels == {levels.STATIC_LABEL} else None


def lost_after_facts(record: dict, in_play: bool) -> str | None:
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


def unrecorded_hosts_problem(run, hosts: list[str]) -> str:
    """Why nothing is judged when ``hosts`` stayed in the play without a record in ``run``: the record of a node
    that answered is the controller's to write, and the fact task that could not write it failed saying why."""
    names = hosts[0] if len(hosts) == 1 else "%s and %s" % (", ".join(hosts[:-1]), hosts[-1])
    have, them = ("has", "it") if len(hosts) == 1 else ("have", "them")
    return ("nothing was judged: %s stayed in the play but %s no record in %s: the controller did not write %s (the "
            "fact task's failure says why: a full or unwritable results directory), and a node is never judged on a "
            "record the controller failed to write" % (names, have, os.path.join(run.path, HOSTS_DIR), them))


def judge_run(run, hosts, reachable, choices, judge, families=None, required_benchmarks=None):
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
    by_level = level_requirements(hosts, run_settings, choices, records, reachable)
    nodes, profiles = [], {}
    for host in hosts:
        record = records.get(host)
        choice = choices.get(host) or {"claim": None, "profile": None, "overrides": None, "settings": {}}
        if record is None:
            unreachable = ("no facts recorded: the host left the play (unreachable or failed) before its record was "
                           "written")
            facts, errors = {group: None for group in FACT_GROUPS}, {}
        else:
            unreachable = record.get("unreachable") or lost_after_facts(record, host in reachable)
            facts = record.get("facts") or {}
            errors = record.get("fact_errors") or {}
        settings = dict(choice["settings"])
        if required_benchmarks is not None and host in required_benchmarks:
            settings[REQUIRED_BENCHMARKS_SETTING] = list(required_benchmarks[host] or [])
        elif REQUIRED_BENCHMARKS_SETTING not in settings and host in by_level:
            settings[REQUIRED_BENCHMARKS_SETTING] = list(by_level[host]["benchmarks"])
        elif REQUIRED_BENCHMARKS_SETTING not in settings:
            asked = settings.get("gpufleet_benchmarks") or []
            settings[REQUIRED_BENCHMARKS_SETTING] = [asked] if isinstance(asked, str) else list(asked)
        if host in by_level:
            settings[LEVEL_SETTING] = by_level[host]["level"]
            settings[STATIC_SETTING] = not settings[REQUIRED_BENCHMARKS_SETTING]
            if families is None or "after_stress" in families:
                # the stress phases the level ran on the host: the health facts must have been read again after each
                settings[REQUIRED_AFTER_STRESS_SETTING] = stress_phases(settings[REQUIRED_BENCHMARKS_SETTING])
        # the health re-reads after stress and the first reading they follow (checks/after_stress.py reads them)
        settings.update(after_stress_settings(record))
        # The benchmark records of the host (checks/benchmarks.py reads them).
        settings["benchmarks"] = list((record or {}).get("benchmarks") or [])
        # The burn-in records with their samples read, and the history's drift flags (checks/burn_in.py reads them).
        settings.update(burn_in_settings(run.path, host, record, history))
        if unreachable:
            profile, reason = None, "not chosen: host unreachable"
        else:
            profile, reason = judge.choose(facts, choice)
        profiles[host] = {"name": (profile or {}).get("name"), "reason": reason}
        nodes.append(NodeContext(host, facts=facts, fact_errors=errors, claim=choice["claim"], profile=profile,
                                 settings=settings, unreachable=unreachable))
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
