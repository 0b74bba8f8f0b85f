# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action gpufleet.acceptance.fleet_verdict: judge every host of the run and write the verdicts.

Runs once, on the controller. Reads each host's record from the results directory, takes the
claim (``gpufleet_claim``) and the profile choice (``gpufleet_profile``,
``gpufleet_profile_overrides``) from the inventory, runs the checks engine over the whole
fleet and writes checks and verdicts into ``hosts/<host>.json`` and ``fleet.json``. With
``validate_only`` it only validates profiles and claims (the playbook's preflight): an invalid
one fails before anything runs, naming the host and the key; so does a host variable named
``gpufleet_*`` that the collection does not know (gpufleet/checks/inputs.py), with the nearest known name.
"""

from __future__ import annotations

from gpufleet.adapter.action import LibraryAction
from gpufleet.adapter.spec import documented_spec
from gpufleet.checks.inputs import PREFIX, host_variable_problems
from gpufleet.checks.verdict import SETTINGS_VARS, Judge, VerdictError, fleet_words, validate, verdict_lines
from gpufleet.results.exit_codes import verdict_exit_code
from gpufleet.results.store import ResultsError, RunDir, to_plain
from gpufleet.results.verdicts import judge_run

# Judging writes into the results directory; validating alone needs none.
REQUIRED_IF = [("validate_only", False, ("run_dir",))]


def host_choices(hostvars, hosts):
    """Per host: its claim, profile name, profile overrides and check settings from the inventory."""
    choices = {}
    for host in hosts:
        view = hostvars[host] if hostvars is not None and host in hostvars else {}
        choices[host] = {
            "claim": to_plain(view["gpufleet_claim"]) if "gpufleet_claim" in view else None,
            "profile": to_plain(view["gpufleet_profile"]) if "gpufleet_profile" in view else None,
            "overrides": to_plain(view["gpufleet_profile_overrides"]) if "gpufleet_profile_overrides" in view else None,
            "settings": {name: to_plain(view[name]) for name in SETTINGS_VARS if name in view},
        }
    return choices


def gpufleet_names(hostvars, hosts):
    """Per host: the names of its variables that start with ``gpufleet_`` (inventory, group_vars, -e)."""
    names = {}
    for host in hosts:
        view = hostvars[host] if hostvars is not None and host in hostvars else {}
        names[host] = [str(name) for name in view.keys() if str(name).startswith(PREFIX)]
    return names


def validate_inputs(judge, hostvars, hosts, choices):
    """The preflight: every gpufleet_* variable known (a misspelled gpufleet_clam would leave the node judged
    with no claim) and every claim and profile choice valid; one VerdictError naming every problem."""
    unknown = host_variable_problems(gpufleet_names(hostvars, hosts))
    try:
        validate(judge, choices)
    except VerdictError as exc:
        if not unknown:
            raise
        unknown.append(str(exc))
    if unknown:
        raise VerdictError("unknown gpufleet variables, nothing was run: " + "; ".join(unknown))


class ActionModule(LibraryAction):
    """Validate profiles and claims (validate_only) or judge the whole run and write the verdicts."""

    ARGUMENT_SPEC = documented_spec(__file__)
    CONSTRAINTS = {"required_if": REQUIRED_IF}
    BYPASS_HOST_LOOP = False

    def act(self, args, task_vars, result):
        hosts = [str(host) for host in (args["hosts"] or task_vars.get("ansible_play_hosts_all") or [])]
        reachable = set(str(host) for host in (args["reachable_hosts"] or task_vars.get("ansible_play_hosts") or []))
        try:
            judge = Judge(args["profiles_dir"])
            choices = host_choices(task_vars.get("hostvars"), hosts)
            if args["validate_only"]:
                validate_inputs(judge, task_vars.get("hostvars"), hosts, choices)
            else:
                validate(judge, choices)
            result["warnings"] = list(judge.warnings)
            if args["validate_only"]:
                result.update(changed=False, hosts=len(hosts), profiles=judge.names(),
                              msg="claims and profiles of %d host(s) are valid" % len(hosts))
                return result
            run = RunDir.open(args["run_dir"])
            report, fleet, profiles = judge_run(run, hosts, reachable, choices, judge, families=args["families"])
        except (VerdictError, ResultsError, OSError) as exc:
            result["failed"] = True
            result["msg"] = str(exc)
            return result
        result.update(
            changed=True,
            run_dir=run.path,
            verdict=fleet["verdict"],
            counts=fleet["counts"],
            nodes={host: {"verdict": entry["verdict"], "failed": entry["failed"], "unreachable": entry["unreachable"],
                          "profile": profiles[host]["name"]} for host, entry in report["nodes"].items()},
            line_of=verdict_lines(report, profiles),
            # the run's exit code (gpufleet/results/exit_codes.py), recorded by the playbook for its strategy
            exit_code=verdict_exit_code({host: entry["verdict"] for host, entry in report["nodes"].items()}),
            level=fleet.get("level"),
            label=fleet.get("label"),
            msg=fleet_words(fleet["verdict"], fleet["counts"], fleet.get("label")),
        )
        return result
