# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Threshold profiles: load, validate (units, keys, sources), select per node, override.

A profile is a YAML file in ``gpufleet/profiles/`` (package data). Quantities are written
WITH their unit (``"460 GB/s"``, ``"400 Gb/s"``, ``"16 GiB"``, ``"10 %"``); each key takes one
dimension, and a unit of another dimension (``Gb/s`` where ``GB/s`` is expected: a factor of
eight) is refused naming the key. Units are case-sensitive for that reason. After validation
every quantity is in its canonical unit (see profile_schema.py ``CANONICAL``) and every number has a citation in
``sources`` (the threshold entries carry theirs in ``source`` as well). A profile with an unknown
key, a wrong unit, a missing value or a number without a source raises :class:`ProfileError`
naming the key, before anything runs; so does a key no check reads (a threshold field outside
``THRESHOLD_APPLIES``, a key of ``NOT_READ``), naming why: every key set applies to every case it
names, or is refused. See docs/profiles.md.

The units, the keys a profile may hold and the validator of each (``SCHEMA``, ``NOT_READ``, the threshold tables,
:class:`ProfileError`) live in checks/profile_schema.py; this module re-exports those other modules and the tests
import from here.
"""

from __future__ import annotations

import copy
import os
import re
from typing import Any, Iterator

import yaml

from gpufleet.checks.model import NodeContext
from gpufleet.checks.profile_schema import (applicable_fields, as_mapping, known_keys, non_empty_str, refuse,
                                            threshold_entry)
from gpufleet.yamlfile import load_yaml

# Re-exported (__all__ below): other modules and the tests import these from here; they live in profile_schema.py.
from gpufleet.checks.profile_schema import (GPU_FIELDS, NOT_READ, SCHEMA, THRESHOLD_APPLIES, THRESHOLD_DIMENSIONS,
                                            THRESHOLD_FIELDS, ProfileError)
# the re-exported names above (a plain import and __all__, so mypy and pylint both see them exported)
__all__ = ["GPU_FIELDS", "NOT_READ", "SCHEMA", "THRESHOLD_APPLIES", "THRESHOLD_DIMENSIONS", "THRESHOLD_FIELDS",
           "ProfileError"]

# The shipped profiles: package data of gpufleet (gpufleet/profiles/).
PROFILE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "profiles")
# Data files beside the profiles that are not profiles: the published per-part peaks (gpufleet/checks/compute.py).
NOT_PROFILES = ("gpu_peaks.yml",)
GENERIC = "generic"

# A validated profile: validate_profile's normalised mapping (sections by name, ``origin``, ``document``).
Profile = dict[str, Any]

_TOP_KEYS = ("name", "description", "match", "expect", "thresholds", "fleet", "host", "sources")


def _profile_name(data: dict[Any, Any], origin: str) -> str:
    name = non_empty_str(data["name"], "name", origin)
    if not re.match(r"^[a-z0-9][a-z0-9-]*$", name):
        refuse(origin, "name", "%r: use lower-case letters, digits and '-'" % name)
    return name


def _section(section: str, given: Any, into: dict[str, Any], origin: str) -> list[str]:
    """One SCHEMA section of a profile validated into ``into``; the dotted keys set there that need a source."""
    keys = SCHEMA[section]
    as_mapping(given, section, origin)
    for key in given:
        if "%s.%s" % (section, key) in NOT_READ:
            refuse(origin, "%s.%s" % (section, key), NOT_READ["%s.%s" % (section, key)] + "; leave it out")
    known_keys(given, tuple(keys), section, origin)
    needs_source = []
    for key, value in given.items():
        dotted = "%s.%s" % (section, key)
        if value is None:
            refuse(origin, dotted, "missing value (delete the key to leave it unset)")
        validator, sourced = keys[key]
        into[key] = validator(value, dotted, origin)
        if sourced:
            needs_source.append(dotted)
    return needs_source


def _sources(data: dict[Any, Any], profile: Profile, needs_source: list[str], origin: str) -> None:
    """``sources`` validated into ``profile``: one for every key that needs one, none for a key not set; each
    threshold's own ``source`` stands for it where ``sources`` gives none."""
    sources = data.get("sources") or {}
    as_mapping(sources, "sources", origin)
    for key, text in sources.items():
        if key not in needs_source and not (key.startswith("thresholds.")
                                            and key[len("thresholds."):] in profile["thresholds"]):
            refuse(origin, "sources.%s" % key, "a source for a key the profile does not set (or that holds no number)")
        profile["sources"][key] = non_empty_str(text, "sources.%s" % key, origin)
    for dotted in needs_source:
        if dotted not in profile["sources"]:
            refuse(origin, dotted, "missing source: add sources.%s citing the docs/baselines.md section and the source "
                   "named there" % dotted)
    for tname, entry in profile["thresholds"].items():
        profile["sources"].setdefault("thresholds.%s" % tname, entry["source"])


def validate_profile(data: Any, origin: str = "<profile>") -> Profile:
    """The normalised profile (canonical units, sources complete) or ProfileError naming the key."""
    as_mapping(data, "profile", origin)
    known_keys(data, _TOP_KEYS, "", origin)
    for required in ("name", "description", "match"):
        if data.get(required) is None:
            refuse(origin, required, "missing value")
    profile: Profile = {
        "name": _profile_name(data, origin),
        "description": non_empty_str(data["description"], "description", origin),
        "match": {},
        "expect": {},
        "thresholds": {},
        "fleet": {},
        "host": {},
        "sources": {},
        "origin": origin,
        "document": copy.deepcopy(data),
    }
    needs_source = []
    for section in SCHEMA:
        given = data.get(section)
        if given is None:
            if section == "match":
                refuse(origin, "match", "missing value")
            continue
        needs_source += _section(section, given, profile[section], origin)
    if "gpu_name" not in profile["match"]:
        refuse(origin, "match.gpu_name", "missing value")
    thresholds = data.get("thresholds")
    if thresholds is not None:
        as_mapping(thresholds, "thresholds", origin)
        known_keys(thresholds, tuple(THRESHOLD_DIMENSIONS), "thresholds", origin)
        for tname, value in thresholds.items():
            profile["thresholds"][tname] = threshold_entry(tname, value, origin)
    _sources(data, profile, needs_source, origin)
    return profile


def load_profile_file(path: str) -> Profile:
    """Read and validate one profile file."""
    try:
        with open(path, "r", encoding="utf-8") as handle:
            data = load_yaml(handle)
    except (OSError, yaml.YAMLError) as exc:
        raise ProfileError("%s: cannot read: %s" % (path, exc)) from None
    profile = validate_profile(data, origin=path)
    stem = os.path.splitext(os.path.basename(path))[0]
    if profile["name"] != stem:
        refuse(path, "name", "%r differs from the file name %r" % (profile["name"], stem))
    return profile


def load_profiles(directory: str | None = None) -> dict[str, Profile]:
    """``{name: profile}`` of every ``*.yml`` in ``directory`` (default: the shipped gpufleet/profiles/)."""
    directory = directory or PROFILE_DIR
    profiles: dict[str, Profile] = {}
    for entry in sorted(os.listdir(directory)):
        if entry.endswith((".yml", ".yaml")) and entry not in NOT_PROFILES:
            profile = load_profile_file(os.path.join(directory, entry))
            profiles[profile["name"]] = profile
    return profiles


def _gpu_identity(facts_by_group: dict[str, Any] | None, claim: dict[str, Any] | None) -> tuple[list[Any], Any, str]:
    """(names, count, where) of the node's GPUs: the GPU facts, else the topology count and the claim."""
    gpu = (facts_by_group or {}).get("gpu")
    model = (claim or {}).get("gpu_model")
    if gpu and gpu.get("gpus"):
        names = sorted({g.get("name") for g in gpu["gpus"] if g.get("name")})
        if names or not model:
            return names, gpu.get("gpu_count"), "GPU facts"
        return [model], gpu.get("gpu_count"), "GPU facts (count) and the claim (model: nvidia-smi printed no name)"
    topology = (facts_by_group or {}).get("topology")
    count = ((topology or {}).get("summary") or {}).get("gpu_count")
    if model:
        return [model], count if count is not None else (claim or {}).get("gpu_count"), "the claim (no GPU facts)"
    return [], count, "topology facts only"


def select_profile(facts_by_group: dict[str, Any] | None, claim: dict[str, Any] | None, override_name: str | None,
                   profiles: dict[str, Profile]) -> tuple[Profile, str]:
    """``(profile, reason)``: the named override, else the profile matching the GPUs, else ``generic``.

    A profile matches when its ``match.gpu_name`` regex finds the (single) GPU model name and
    its ``match.gpu_count`` (when set) equals the GPU count. Several matches: the one with a
    count wins, then the longest regex (the most specific), then the name.
    """
    if override_name:
        if override_name not in profiles:
            raise ProfileError("gpufleet_profile: no profile named %r (known: %s)"
                               % (override_name, ", ".join(sorted(profiles))))
        return profiles[override_name], "set by gpufleet_profile"
    names, count, where = _gpu_identity(facts_by_group, claim)
    generic = profiles.get(GENERIC)
    if generic is None:
        raise ProfileError("no %r profile among %s" % (GENERIC, ", ".join(sorted(profiles)) or "none"))
    if len(names) != 1:
        why = "mixed GPU models %s" % ", ".join(names) if names else "no GPU model known"
        return generic, "%s: %s, so only consistency rules apply" % (GENERIC, why)
    candidates: list[Profile] = []
    for profile in profiles.values():
        if profile["name"] == GENERIC:
            continue
        match = profile["match"]
        if not re.search(match["gpu_name"], names[0]):
            continue
        if match.get("gpu_count") is not None and match["gpu_count"] != count:
            continue
        candidates.append(profile)
    if not candidates:
        return generic, "%s: no profile matches %d x %s (from %s)" % (GENERIC, count or 0, names[0], where)
    candidates.sort(key=lambda p: (p["match"].get("gpu_count") is None, -len(p["match"]["gpu_name"]), p["name"]))
    chosen = candidates[0]
    return chosen, "matched %s x %s (from %s)" % (count, names[0], where)


def _merge(base: dict[Any, Any], overrides: dict[Any, Any]) -> None:
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)


def _leaves(mapping: dict[Any, Any], prefix: str = "") -> Iterator[str]:
    for key, value in mapping.items():
        dotted = "%s.%s" % (prefix, key) if prefix else str(key)
        if isinstance(value, dict) and dotted != "expect.compute_rail":
            yield from _leaves(value, dotted)
        else:
            yield dotted


def apply_overrides(profile: Profile, overrides: Any, origin: str = "gpufleet_profile_overrides") -> Profile:
    """``profile`` with ``overrides`` (same shape as a profile file) deep-merged, then re-validated.

    A number changed without its own citation gets ``origin`` as its source, so a result judged
    against it says so (never the shipped profile's citation for a number it no longer holds).
    """
    if not overrides:
        return profile
    if not isinstance(overrides, dict):
        raise ProfileError("%s: expected a mapping, got %r" % (origin, type(overrides).__name__))
    merged_origin = "%s + %s" % (profile["origin"], origin)
    _refuse_what_cannot_apply(profile, overrides, merged_origin)
    document = copy.deepcopy(profile["document"])
    _merge(document, overrides)
    given_sources = overrides.get("sources") or {}
    sources = document.setdefault("sources", {})
    for dotted in _leaves({k: v for k, v in overrides.items() if k in ("expect", "fleet", "host")}):
        section, _sep, rest = dotted.partition(".")
        key = "%s.%s" % (section, rest.split(".")[0])
        if key not in given_sources and SCHEMA.get(section, {}).get(rest.split(".")[0], (None, False))[1]:
            sources[key] = "%s (replaces the profile's value)" % origin
    for tname, entry in (overrides.get("thresholds") or {}).items():
        if isinstance(entry, dict) and "source" not in entry and isinstance(document["thresholds"].get(tname), dict):
            document["thresholds"][tname]["source"] = "%s (replaces the profile's value)" % origin
            sources.pop("thresholds.%s" % tname, None)
    return validate_profile(document, origin=merged_origin)


def _refuse_what_cannot_apply(profile: Profile, overrides: dict[str, Any], origin: str) -> None:
    """Refuse overrides no merge can make apply: a ``match`` (the profile is chosen before its overrides apply), a
    threshold field no check reads, and a threshold the profile lacks given without its floor."""
    if "match" in overrides:
        refuse(origin, "match", "the profile is chosen before its overrides apply, so match cannot change the choice: "
               "name the profile with gpufleet_profile")
    for name, entry in (overrides.get("thresholds") or {}).items():
        if name not in THRESHOLD_DIMENSIONS or not isinstance(entry, dict):
            continue  # validate_profile names the unknown threshold or the wrong shape
        key = "thresholds.%s" % name
        applicable_fields(name, entry, key, origin)
        if name not in profile["thresholds"] and entry.get("floor") is None:
            given = ", ".join(sorted(entry)) or "nothing"
            refuse(origin, key, "profile %s has no %s to adjust (given: %s): give its floor and source too, or name a "
                   "profile that has one with gpufleet_profile" % (profile["name"], key, given))


def expectation(node: NodeContext, claim_key: str, dotted: str) -> tuple[Any, str | None]:
    """``(value, threshold_source)`` of one expectation: the claim's ``claim_key`` wins, else the profile's ``dotted``
    key.

    Returns ``(None, None)`` when neither sets it.
    """
    claim = node.claim or {}
    if claim_key and claim.get(claim_key) is not None:
        return claim[claim_key], "claim"
    return profile_value(node.profile, dotted)


def profile_value(profile: Profile | None, dotted: str) -> tuple[Any, str | None]:
    """``(value, "profile <name>: <source>")`` of a profile key, or ``(None, None)``."""
    profile = profile or {}
    section, _sep, key = dotted.partition(".")
    value = (profile.get(section) or {}).get(key)
    if value is None:
        return None, None
    source = profile.get("sources", {}).get(dotted) or dotted
    return value, "profile %s: %s" % (profile.get("name"), source)
