# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action gpufleet.acceptance.fleet_verdict: judge every host of the run and write the verdicts.

Runs once, on the controller. Reads each host's record from the results directory, takes the
claim (``gpufleet_claim``) and the profile choice (``gpufleet_profile``,
``gpufleet_profile_overrides``) from the inventory, runs the checks engine over the whole
fleet and writes checks and verdicts into ``hosts/<host>.json`` and ``fleet.json``. With
``validate_only`` it only validates profiles and claims (the playbook's preflight): an invalid
one fails before anything runs, naming the host and the key.
"""

from __future__ import annotations

import importlib
import numbers

from ansible.plugins.action import ActionBase

from gpufleet.results.burn_in import judging_settings as burn_in_settings
from gpufleet.results.burn_in import read_history
from gpufleet.checks.engine import run_checks
from gpufleet.checks.model import FACT_GROUPS, NodeContext
from gpufleet.results.store import ResultsError, RunDir, to_plain

PROFILES_MODULE = "gpufleet.checks.profiles"

# Inventory variables handed to the checks as NodeContext.settings when a host defines them.
SETTINGS_VARS = (
    "gpufleet_nccl_env",
    "gpufleet_fleet_group",
    "gpufleet_benchmark_vote",
    "gpufleet_pair_search_tolerance",
    "gpufleet_iperf3_line_rate_gbps",
    "gpufleet_iperf3_floor_fraction",
    "gpufleet_iperf3_concurrent_ratio_min",
    "gpufleet_ib_write_lat_max_us",
    "gpufleet_burn_in_thresholds",
)

CLAIM_INTERCONNECTS = ("nvswitch", "nvlink_bridge_pairs", "pcie")
CLAIM_NIC_ROLES = ("compute", "storage", "frontend")
CLAIM_NIC_TYPES = ("ib", "roce", "ethernet")


class VerdictError(Exception):
    """Profiles or claims that cannot be used; the message names the host and the key."""


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def validate_claim(claim):
    """Problems with a ``gpufleet_claim`` (empty list when valid). Every key is optional; none unknown.

    Shape: ``{gpu_model: str, gpu_count: int, gpu_memory_gb: int, interconnect: nvswitch |
    nvlink_bridge_pairs | pcie, nvlinks_per_pair: int|null, nics: [{role, type, count, gbps}],
    price_per_node_hour: number|null, rack: str|null}``.
    """
    if claim is None:
        return []
    if not isinstance(claim, dict):
        return ["gpufleet_claim: must be a mapping, got %s" % type(claim).__name__]
    problems = []

    def need(key, test, what, nullable=False):
        if key not in claim or (nullable and claim[key] is None):
            return
        if not test(claim[key]):
            problems.append("gpufleet_claim.%s: must be %s, got %r" % (key, what, claim[key]))

    need("gpu_model", lambda value: isinstance(value, str) and value.strip(), "a non-empty string")
    need("gpu_count", lambda value: _is_int(value) and value >= 0, "a whole number >= 0")
    need("gpu_memory_gb", lambda value: _is_int(value) and value > 0, "a whole number of GB (as sold, 10^9 bytes) > 0")
    need("interconnect", lambda value: value in CLAIM_INTERCONNECTS, "one of %s" % ", ".join(CLAIM_INTERCONNECTS))
    need("nvlinks_per_pair", lambda value: _is_int(value) and value > 0, "a whole number > 0 or null", nullable=True)
    need("price_per_node_hour", lambda value: _is_number(value) and value >= 0, "a number >= 0 or null", nullable=True)
    need("rack", lambda value: isinstance(value, str), "a string or null", nullable=True)
    need("nics", lambda value: isinstance(value, list), "a list of {role, type, count, gbps}")
    known = ("gpu_model", "gpu_count", "gpu_memory_gb", "interconnect", "nvlinks_per_pair", "nics", "price_per_node_hour", "rack")
    problems += ["gpufleet_claim.%s: unknown key (known: %s)" % (key, ", ".join(known)) for key in claim if key not in known]
    for index, nic in enumerate(claim.get("nics") or [] if isinstance(claim.get("nics"), list) else []):
        where = "gpufleet_claim.nics[%d]" % index
        if not isinstance(nic, dict):
            problems.append("%s: must be a mapping {role, type, count, gbps}" % where)
            continue
        for key in ("role", "type", "count", "gbps"):
            if key not in nic:
                problems.append("%s.%s: missing" % (where, key))
        problems += ["%s.%s: unknown key (known: role, type, count, gbps)" % (where, key) for key in nic if key not in ("role", "type", "count", "gbps")]
        if "role" in nic and nic["role"] not in CLAIM_NIC_ROLES:
            problems.append("%s.role: must be one of %s, got %r" % (where, ", ".join(CLAIM_NIC_ROLES), nic["role"]))
        if "type" in nic and nic["type"] not in CLAIM_NIC_TYPES:
            problems.append("%s.type: must be one of %s, got %r" % (where, ", ".join(CLAIM_NIC_TYPES), nic["type"]))
        if "count" in nic and not (_is_int(nic["count"]) and nic["count"] > 0):
            problems.append("%s.count: must be a whole number > 0, got %r" % (where, nic["count"]))
        if "gbps" in nic and not (_is_number(nic["gbps"]) and nic["gbps"] > 0):
            problems.append("%s.gbps: must be a number of Gb/s > 0, got %r" % (where, nic["gbps"]))
    return problems


def profiles_module():
    """The profiles loader (checks/profiles.py), or None while it is not part of the collection."""
    try:
        return importlib.import_module(PROFILES_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name == PROFILES_MODULE:
            return None
        raise


class Judge:
    """Profiles loaded once, then validated and chosen per host."""

    def __init__(self, profiles_dir=None):
        self.module = profiles_module()
        self.warnings = []
        self.profiles = None
        if self.module is None:
            self.warnings.append("checks/profiles.py is not installed: every node is judged with the placeholder profile 'generic'")
            return
        try:
            self.profiles = self.module.load_profiles(profiles_dir) if profiles_dir else self.module.load_profiles()
        except self.module.ProfileError as exc:
            raise VerdictError("profiles: %s" % exc) from None

    def _named(self, name):
        if isinstance(self.profiles, dict):
            return self.profiles.get(name)
        for profile in self.profiles or []:
            if profile.get("name") == name:
                return profile
        return None

    def names(self):
        if isinstance(self.profiles, dict):
            return sorted(self.profiles)
        return sorted(profile.get("name") for profile in self.profiles or [])

    def validate_host(self, host, choice):
        """Problems with one host's claim and profile choice, each naming the host and the key."""
        problems = ["%s: %s" % (host, problem) for problem in validate_claim(choice["claim"])]
        if self.module is None:
            return problems
        name, overrides = choice["profile"], choice["overrides"]
        if name is not None and (not isinstance(name, str) or self._named(name) is None):
            problems.append("%s: gpufleet_profile: no profile named %r (known: %s)" % (host, name, ", ".join(self.names())))
            return problems
        if overrides is not None:
            if not isinstance(overrides, dict):
                problems.append("%s: gpufleet_profile_overrides: must be a mapping, got %s" % (host, type(overrides).__name__))
                return problems
            base = self._named(name or "generic") or (self._named(self.names()[0]) if self.names() else None)
            if base is not None:
                try:
                    self.module.apply_overrides(base, overrides)
                except self.module.ProfileError as exc:
                    problems.append("%s: gpufleet_profile_overrides: %s" % (host, exc))
        return problems

    def choose(self, facts, choice):
        """``(profile dict, reason)`` for one host."""
        if self.module is None:
            return {"name": "generic"}, "placeholder: checks/profiles.py is not installed"
        try:
            profile, reason = self.module.select_profile(facts, choice["claim"], choice["profile"], self.profiles)
            if choice["overrides"]:
                profile = self.module.apply_overrides(profile, choice["overrides"])
                reason = "%s, with gpufleet_profile_overrides" % reason
        except self.module.ProfileError as exc:
            raise VerdictError("profile: %s" % exc) from None
        return profile, reason


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


def validate(judge, choices):
    """Raise VerdictError listing every problem of every host's claim and profile choice."""
    problems = []
    for host in sorted(choices):
        problems.extend(judge.validate_host(host, choices[host]))
    if problems:
        raise VerdictError("invalid claim or profile, nothing was run: " + "; ".join(problems))


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


def verdict_lines(report, profiles):
    """One line per node: ``host: VERDICT (profile p) - reasons``, as ``{host: line}``."""
    lines = {}
    for host, entry in sorted(report["nodes"].items()):
        if entry["unreachable"]:
            lines[host] = "%s: %s - %s" % (host, entry["verdict"], entry["unreachable"])
            continue
        reasons = [item["message"] for item in entry["checks"] if item["status"] in ("fail", "warn", "error")]
        text = "%s: %s (profile %s)" % (host, entry["verdict"], profiles.get(host, {}).get("name"))
        if reasons:
            text += " - " + "; ".join(" ".join(str(reason).split())[:300] for reason in reasons[:8])
            if len(reasons) > 8:
                text += "; and %d more" % (len(reasons) - 8)
        lines[host] = text
    return lines


class ActionModule(ActionBase):
    """Validate profiles and claims (validate_only) or judge the whole run and write the verdicts."""

    TRANSFERS_FILES = False
    BYPASS_HOST_LOOP = False
    _supports_check_mode = True
    _supports_async = False
    _VALID_ARGS = frozenset(("run_dir", "validate_only", "hosts", "reachable_hosts", "families", "profiles_dir"))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        args = to_plain(self._task.args)
        hosts = [str(host) for host in (args.get("hosts") or task_vars.get("ansible_play_hosts_all") or [])]
        reachable = set(str(host) for host in (args.get("reachable_hosts") or task_vars.get("ansible_play_hosts") or []))
        try:
            judge = Judge(args.get("profiles_dir"))
            choices = host_choices(task_vars.get("hostvars"), hosts)
            validate(judge, choices)
            result["warnings"] = list(judge.warnings)
            if args.get("validate_only"):
                result.update(changed=False, hosts=len(hosts), profiles=judge.names() if judge.module else ["generic"],
                              msg="claims and profiles of %d host(s) are valid" % len(hosts))
                return result
            if not args.get("run_dir"):
                raise VerdictError("run_dir is required: the results directory of this run")
            run = RunDir.open(args["run_dir"])
            report, fleet, profiles = judge_run(run, hosts, reachable, choices, judge, families=args.get("families"))
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
            msg="fleet %s: %s" % (fleet["verdict"], ", ".join("%d %s" % (count, name) for name, count in fleet["counts"].items() if count)),
        )
        return result
