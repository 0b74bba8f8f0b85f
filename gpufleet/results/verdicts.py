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

from gpufleet.checks.engine import run_checks
from gpufleet.checks.model import NodeContext
from gpufleet.facts import FACT_GROUPS
from gpufleet.results.burn_in import judging_settings as burn_in_settings
from gpufleet.results.burn_in import read_history


def judge_run(run, hosts, reachable, choices, judge, families=None):
    """Judge ``hosts`` from their records in ``run`` (a RunDir); write verdicts; return the report.

    A host without a record that left the play is UNREACHABLE; one still in the play whose
    record is missing fails every fact group (it could not be verified, never a silent pass).
    """
    records = run.host_records()
    history = read_history(run.path)
    nodes, profiles = [], {}
    for host in hosts:
        record = records.get(host)
        choice = choices.get(host) or {"claim": None, "profile": None, "overrides": None, "settings": {}}
        if record is None:
            unreachable = None if host in reachable else "no facts recorded: the host left the play (unreachable or failed) before its record was written"
            facts = {group: None for group in FACT_GROUPS}
            errors = {} if unreachable else {group: "no record of this host in the results directory" for group in FACT_GROUPS}
        else:
            unreachable = record.get("unreachable")
            facts = record.get("facts") or {}
            errors = record.get("fact_errors") or {}
        settings = dict(choice["settings"])
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
    for host in hosts:
        run.write_judgement(host, report["nodes"][host], profile=profiles[host], claim=choices.get(host, {}).get("claim"))
    run_record = run.read_run()
    choices_record = dict(run_record.get("profile_choices") or {})
    choices_record["selected"] = profiles
    run.update_run(profile_choices=choices_record)
    fleet = run.write_fleet(report)
    return report, fleet, profiles
