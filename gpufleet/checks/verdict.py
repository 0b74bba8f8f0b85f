# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Claims and profile choices validated, profiles chosen per host, verdicts told in one line (pure).

The action ``gpufleet.acceptance.fleet_verdict`` validates every host's ``gpufleet_claim``,
``gpufleet_profile`` and ``gpufleet_profile_overrides`` here before anything runs (an invalid one
fails naming the host and the key), and :class:`Judge` chooses each host's profile when the run is
judged (gpufleet/results/verdicts.py ``judge_run``).
"""

from __future__ import annotations

import numbers
from typing import Any, Callable

from gpufleet.checks import profiles
from gpufleet.checks.model import ACCEPTED

# Inventory variables handed to the checks as NodeContext.settings when a host defines them.
SETTINGS_VARS = (
    "gpufleet_nccl_env",
    "gpufleet_fleet_group",
    # the NVLink domain (rack) of a multi-node NVLink node (checks/nvlink.py nvlink.fabric_domain)
    "gpufleet_nvlink_domain",
    # the host's rack: the NVLink domain's fallback when neither of the above names one (checks/nvlink.py)
    "gpufleet_rack",
    "gpufleet_benchmark_vote",
    "gpufleet_pair_search_tolerance",
    "gpufleet_iperf3_line_rate_gbps",
    "gpufleet_iperf3_floor_fraction",
    "gpufleet_iperf3_concurrent_ratio_min",
    "gpufleet_ib_write_lat_max_us",
    "gpufleet_burn_in_thresholds",
    # the benchmarks the run asks for: each is a required item of every node (checks/evidence.py)
    "gpufleet_benchmarks",
    # a host's own level and burn-in choice, and the rails its network benchmarks use: what its level required of it
    # (gpufleet/plan/levels.py, read by gpufleet/results/verdicts.py)
    "gpufleet_level",
    "gpufleet_burn_in",
    "gpufleet_perftest_hca",
)

CLAIM_INTERCONNECTS = ("nvswitch", "nvlink_bridge_pairs", "pcie")
CLAIM_NIC_ROLES = ("compute", "storage", "frontend")
CLAIM_NIC_TYPES = ("ib", "roce", "ethernet")


class VerdictError(Exception):
    """Profiles or claims that cannot be used; the message names the host and the key."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


# A claim key -> (the test a value set there must pass, what the value must be, whether null is allowed), in the order
# the problems are listed.
_CLAIM_RULES: dict[str, tuple[Callable[[Any], bool], str, bool]] = {
    "gpu_model": (lambda value: isinstance(value, str) and bool(value.strip()), "a non-empty string", False),
    "gpu_count": (lambda value: _is_int(value) and value >= 0, "a whole number >= 0", False),
    "gpu_memory_gb": (lambda value: _is_int(value) and value > 0, "a whole number of GB (as sold, 10^9 bytes) > 0",
                      False),
    "interconnect": (lambda value: value in CLAIM_INTERCONNECTS, "one of %s" % ", ".join(CLAIM_INTERCONNECTS), False),
    "nvlinks_per_pair": (lambda value: _is_int(value) and value > 0, "a whole number > 0 or null", True),
    "price_per_node_hour": (lambda value: _is_number(value) and value >= 0, "a number >= 0 or null", True),
    "rack": (lambda value: isinstance(value, str), "a string or null", True),
    "nics": (lambda value: isinstance(value, list), "a list of {role, type, count, gbps}", False),
}
# The claim's keys as the unknown-key problem names them.
_CLAIM_KEYS = ("gpu_model", "gpu_count", "gpu_memory_gb", "interconnect", "nvlinks_per_pair", "nics",
               "price_per_node_hour", "rack")
_NIC_KEYS = ("role", "type", "count", "gbps")
# A claimed NIC's key -> (the test its value must pass, what it must be), in the order the problems are listed.
_NIC_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "role": (lambda value: value in CLAIM_NIC_ROLES, "one of %s" % ", ".join(CLAIM_NIC_ROLES)),
    "type": (lambda value: value in CLAIM_NIC_TYPES, "one of %s" % ", ".join(CLAIM_NIC_TYPES)),
    "count": (lambda value: _is_int(value) and value > 0, "a whole number > 0"),
    "gbps": (lambda value: _is_number(value) and value > 0, "a number of Gb/s > 0"),
}


def _nic_problems(where: str, nic: Any) -> list[str]:
    """Problems with one claimed NIC ``{role, type, count, gbps}``, each naming ``where``
    (``gpufleet_claim.nics[0]``)."""
    if not isinstance(nic, dict):
        return ["%s: must be a mapping {role, type, count, gbps}" % where]
    problems = ["%s.%s: missing" % (where, key) for key in _NIC_KEYS if key not in nic]
    problems += ["%s.%s: unknown key (known: role, type, count, gbps)" % (where, key) for key in nic
                 if key not in _NIC_KEYS]
    problems += ["%s.%s: must be %s, got %r" % (where, key, what, nic[key]) for key, (test, what) in _NIC_RULES.items()
                 if key in nic and not test(nic[key])]
    return problems


def validate_claim(claim: Any) -> list[str]:
    """Problems with a ``gpufleet_claim`` (empty list when valid). Every key is optional; none unknown.

    Shape: ``{gpu_model: str, gpu_count: int, gpu_memory_gb: int, interconnect: nvswitch |
    nvlink_bridge_pairs | pcie, nvlinks_per_pair: int|null, nics: [{role, type, count, gbps}],
    price_per_node_hour: number|null, rack: str|null}``.
    """
    if claim is None:
        return []
    if not isinstance(claim, dict):
        return ["gpufleet_claim: must be a mapping, got %s" % type(claim).__name__]
    problems = ["gpufleet_claim.%s: must be %s, got %r" % (key, what, claim[key])
                for key, (test, what, nullable) in _CLAIM_RULES.items()
                if key in claim and not (nullable and claim[key] is None) and not test(claim[key])]
    problems += ["gpufleet_claim.%s: unknown key (known: %s)" % (key, ", ".join(_CLAIM_KEYS)) for key in claim
                 if key not in _CLAIM_KEYS]
    nics = claim.get("nics")
    for index, nic in enumerate(nics if isinstance(nics, list) else []):
        problems += _nic_problems("gpufleet_claim.nics[%d]" % index, nic)
    return problems


class Judge:
    """Profiles loaded once, then validated and chosen per host."""

    def __init__(self, profiles_dir: str | None = None) -> None:
        # the profiles loader; judge_run's tests hand in a stand-in judge without one
        self.module = profiles
        self.warnings: list[str] = []
        # {name: profile} as load_profiles gives them (_named and names read a list of profiles too); None until loaded
        self.profiles: Any = None
        try:
            self.profiles = self.module.load_profiles(profiles_dir) if profiles_dir else self.module.load_profiles()
        except self.module.ProfileError as exc:
            raise VerdictError("profiles: %s" % exc) from None

    def _named(self, name: Any) -> dict[str, Any] | None:
        loaded: dict[str, dict[str, Any]] | list[dict[str, Any]] = self.profiles or []
        if isinstance(loaded, dict):
            return loaded.get(name)
        return next((profile for profile in loaded if profile.get("name") == name), None)

    def names(self) -> list[Any]:
        loaded: dict[str, dict[str, Any]] | list[dict[str, Any]] = self.profiles or []
        if isinstance(loaded, dict):
            return sorted(loaded)
        return sorted(profile.get("name") for profile in loaded)

    def validate_host(self, host: str, choice: dict[str, Any]) -> list[str]:
        """Problems with one host's claim and profile choice, each naming the host and the key."""
        problems = ["%s: %s" % (host, problem) for problem in validate_claim(choice["claim"])]
        name, overrides = choice["profile"], choice["overrides"]
        if name is not None and (not isinstance(name, str) or self._named(name) is None):
            problems.append("%s: gpufleet_profile: no profile named %r (known: %s)"
                            % (host, name, ", ".join(self.names())))
            return problems
        if overrides is not None:
            if not isinstance(overrides, dict):
                problems.append("%s: gpufleet_profile_overrides: must be a mapping, got %s"
                                % (host, type(overrides).__name__))
                return problems
            base = self._named(name or "generic") or (self._named(self.names()[0]) if self.names() else None)
            if base is not None:
                try:
                    self.module.apply_overrides(base, overrides)
                except self.module.ProfileError as exc:
                    problems.append("%s: gpufleet_profile_overrides: %s" % (host, exc))
        return problems

    def choose(self, facts: dict[str, Any], choice: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """``(profile dict, reason)`` for one host."""
        try:
            profile, reason = self.module.select_profile(facts, choice["claim"], choice["profile"], self.profiles)
            if choice["overrides"]:
                profile = self.module.apply_overrides(profile, choice["overrides"])
                reason = "%s, with gpufleet_profile_overrides" % reason
        except self.module.ProfileError as exc:
            raise VerdictError("profile: %s" % exc) from None
        return profile, reason


def validate(judge: Judge, choices: dict[str, dict[str, Any]]) -> None:
    """Raise VerdictError listing every problem of every host's claim and profile choice."""
    problems: list[str] = []
    for host in sorted(choices):
        problems.extend(judge.validate_host(host, choices[host]))
    if problems:
        raise VerdictError("invalid claim or profile, nothing was run: " + "; ".join(problems))


def fleet_words(verdict: str, counts: dict[str, int], label: str | None = None) -> str:
    """The fleet's line, the same in the playbook and ``gpufleet validate``: ``fleet REJECT: 1 of 3 nodes acceptable;
    1 ACCEPT, 1 INCOMPLETE, 1 REJECT``: how many nodes can be used first, the fleet's verdict being its worst node's;
    ``label`` (level quick's "static checks only") after the verdict. ``counts``: verdict -> nodes, in the order
    shown."""
    shown = {name: count for name, count in counts.items() if count}
    acceptable = sum(shown.get(name, 0) for name in ACCEPTED)
    total = sum(shown.values())
    return "fleet %s%s: %d of %d node%s acceptable; %s" % (
        verdict, " (%s)" % label if label else "", acceptable, total, "" if total == 1 else "s",
        ", ".join("%d %s" % (count, name) for name, count in shown.items()))


def verdict_lines(report: dict[str, Any], profiles: dict[str, dict[str, Any]]) -> dict[str, str]:
    """One line per node: ``host: VERDICT (profile p) - reasons``, as ``{host: line}``.

    The reasons of an INCOMPLETE node are its unverified required items (checks/evidence.py), each
    with why; a node judged against no claim says so after its profile.
    """
    lines: dict[str, str] = {}
    for host, entry in sorted(report["nodes"].items()):
        if entry["unreachable"]:
            lines[host] = "%s: %s - %s" % (host, entry["verdict"], entry["unreachable"])
            continue
        covered = entry.get("coverage") or {}
        reasons = [item["message"] for item in entry["checks"] if item["status"] in ("fail", "warn", "error")]
        if entry["verdict"] == "INCOMPLETE":
            reasons = ["not verified: %s" % reason for reason in covered.get("incomplete") or []] + reasons
        text = "%s: %s (profile %s%s)" % (host, entry["verdict"], profiles.get(host, {}).get("name"),
                                          "" if covered.get("claim", True) else "; judged against no claim")
        if covered.get("label") and entry["verdict"] in ACCEPTED:
            # level quick: nothing was measured, the facts alone were judged
            text = text[:-1] + "; %s)" % covered["label"]
        if reasons:
            text += " - " + "; ".join(" ".join(str(reason).split())[:300] for reason in reasons[:8])
            if len(reasons) > 8:
                text += "; and %d more" % (len(reasons) - 8)
        lines[host] = text
    return lines
