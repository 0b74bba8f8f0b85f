# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Threshold profiles: load, validate (units, keys, sources), select per node, override.

A profile is a YAML file in ``gpufleet/profiles/`` (package data). Quantities are written
WITH their unit (``"460 GB/s"``, ``"400 Gb/s"``, ``"16 GiB"``, ``"10 %"``); each key takes one
dimension, and a unit of another dimension (``Gb/s`` where ``GB/s`` is expected: a factor of
eight) is refused naming the key. Units are case-sensitive for that reason. After validation
every quantity is in its canonical unit (see ``CANONICAL``) and every number has a citation in
``sources`` (the threshold entries carry theirs in ``source`` as well). A profile with an unknown
key, a wrong unit, a missing value or a number without a source raises :class:`ProfileError`
naming the key, before anything runs; so does a key no check reads (a threshold field outside
``THRESHOLD_APPLIES``, a key of ``NOT_READ``), naming why: every key set applies to every case it
names, or is refused. See docs/profiles.md.
"""

from __future__ import annotations

import copy
import os
import re
from typing import Any, Callable, Iterator, NoReturn

import yaml

from gpufleet.checks.model import NodeContext

# The shipped profiles: package data of gpufleet (gpufleet/profiles/).
PROFILE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "profiles")
# Data files beside the profiles that are not profiles: the published per-part peaks (gpufleet/checks/compute.py).
NOT_PROFILES = ("gpu_peaks.yml",)
GENERIC = "generic"

INTERCONNECTS = ("nvswitch", "nvlink_bridge_pairs", "pcie")
LINK_LAYERS = ("InfiniBand", "Ethernet")
FABRIC_CLIQUE_SCOPES = ("node", "nvlink_domain")

# A validated profile: validate_profile's normalised mapping (sections by name, ``origin``, ``document``).
Profile = dict[str, Any]
# A key's validator: ``(value, dotted key, origin) -> the normalised value``, or ProfileError naming the key.
Validator = Callable[[Any, str, str], Any]

# Dimension -> {unit as written: factor to the canonical unit}. Case matters (GB/s vs Gb/s).
UNITS: dict[str, dict[str, float]] = {
    "memory": {"KiB": 1.0 / 1024, "MiB": 1.0, "GiB": 1024.0, "TiB": 1024.0 * 1024},
    "bytes": {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "TiB": 1024 ** 4},
    "gpu_bandwidth": {"MB/s": 0.001, "GB/s": 1.0, "TB/s": 1000.0},
    "network_rate": {"Mb/s": 0.001, "Gb/s": 1.0, "Gbps": 1.0, "Gbit/s": 1.0, "Tb/s": 1000.0},
    "percent": {"%": 0.01},
    "temperature": {"C": 1.0},
    "power": {"W": 1.0},
}
CANONICAL = {
    "memory": "MiB",
    "bytes": "bytes",
    "gpu_bandwidth": "GB/s",
    "network_rate": "Gb/s",
    "percent": "fraction",
    "temperature": "C",
    "power": "W",
}
DIMENSION_WORDS = {
    "memory": "a memory size (MiB, GiB)",
    "bytes": "a message size (B, KiB, MiB, GiB)",
    "gpu_bandwidth": "a GPU/NCCL bandwidth in bytes per second (GB/s)",
    "network_rate": "a network rate in bits per second (Gb/s, Gbps)",
    "percent": "a percentage (%)",
    "temperature": "a temperature (C)",
    "power": "a power (W)",
}

# Bandwidth floor name -> the dimension of its floor/warn_below.
THRESHOLD_DIMENSIONS = {
    "allreduce_single_node": "gpu_bandwidth",
    "allreduce_multi_node": "gpu_bandwidth",
    "ib_write_bw": "network_rate",
    "h2d_bandwidth": "gpu_bandwidth",
    "d2h_bandwidth": "gpu_bandwidth",
    "p2p_bandwidth": "gpu_bandwidth",
}
THRESHOLD_FIELDS = ("floor", "warn_below", "message_size", "algorithm", "nvls", "nodes", "source")
# Threshold name -> the fields of THRESHOLD_FIELDS its check reads (every check reads floor and source). A field
# no check reads for that threshold is refused naming the threshold, so an operator's number is never ignored.
THRESHOLD_APPLIES = {
    # benchmarks.allreduce_single (floor, warn band, size of the sweep judged), benchmarks.allreduce_algo (nvls)
    "allreduce_single_node": ("floor", "warn_below", "message_size", "nvls", "source"),
    # benchmarks.allreduce_multi through multi_node_floor: the node count the floor is for
    "allreduce_multi_node": ("floor", "nodes", "source"),
    # bench_network.ib_write_bw: the row of that size
    "ib_write_bw": ("floor", "message_size", "source"),
    # bench_network.nvbandwidth: every copy of the testcase against the floor and the warn band
    "h2d_bandwidth": ("floor", "warn_below", "source"),
    "d2h_bandwidth": ("floor", "warn_below", "source"),
    "p2p_bandwidth": ("floor", "warn_below", "source"),
}
# (threshold, field) -> why no check reads it; a field alone: for every threshold that does not take it.
NOT_APPLIED = {
    ("allreduce_multi_node", "warn_below"): "benchmarks.allreduce_multi has no warning band (below the floor fails)",
    ("ib_write_bw", "warn_below"): "bench_network.ib_write_bw has no warning band (a rail below the floor fails)",
    ("allreduce_multi_node", "message_size"): "benchmarks.allreduce_multi judges the largest size of the sweep "
                                              "(gpufleet_allreduce_max_size)",
    ("h2d_bandwidth", "message_size"): "bench_network.nvbandwidth judges every copy at nvbandwidth's own buffer size",
    ("d2h_bandwidth", "message_size"): "bench_network.nvbandwidth judges every copy at nvbandwidth's own buffer size",
    ("p2p_bandwidth", "message_size"): "bench_network.nvbandwidth judges every copy at nvbandwidth's own buffer size",
    "nvls": "benchmarks.allreduce_algo reads it for the single-node floor only",
    "nodes": "only thresholds.allreduce_multi_node takes a node count",
    "algorithm": "no check reads it: the runs' NCCL_ALGO is gpufleet_nccl_algo, which benchmarks.allreduce_algo "
                 "reports",
}

# Per-GPU keys of gpufleet_gpu.gpus[] that fleet.consistent_gpu_fields may name.
GPU_FIELDS = (
    "name",
    "vbios_version",
    "board_part_number",
    "memory_total_mib",
    "power_limit_w",
    "power_max_limit_w",
    "clocks_max_sm_mhz",
    "clocks_max_graphics_mhz",
    "clocks_max_mem_mhz",
    "product_architecture",
    "pcie_link_gen_max",
    "pcie_link_width_max",
)

_QUANTITY_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(\S+)\s*$")
_NV_RE = re.compile(r"^NV([1-9][0-9]*)$")
_TOP_KEYS = ("name", "description", "match", "expect", "thresholds", "fleet", "host", "sources")


class ProfileError(ValueError):
    """A profile that cannot be used; the message names the file and the key."""


def _fail(origin: str, key: str, why: str) -> NoReturn:
    raise ProfileError("%s: %s: %s" % (origin, key, why))


def parse_quantity(value: Any, dimension: str, key: str, origin: str) -> int | float:
    """``"460 GB/s"`` -> 460.0 in the dimension's canonical unit; ProfileError naming ``key`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, str):
        _fail(origin, key, "%r has no unit: write it as a string with its unit, %s"
              % (value, DIMENSION_WORDS[dimension]))
    match = _QUANTITY_RE.match(value)
    if match is None:
        _fail(origin, key, "%r is not '<number> <unit>' (%s)" % (value, DIMENSION_WORDS[dimension]))
    number, unit = float(match.group(1)), match.group(2)
    factors = UNITS[dimension]
    if unit not in factors:
        other = [name for name, units in UNITS.items() if unit in units and name != dimension]
        if other:
            _fail(origin, key, "%r is %s, but this key takes %s"
                  % (value, DIMENSION_WORDS[other[0]], DIMENSION_WORDS[dimension]))
        _fail(origin, key, "unknown unit %r in %r; this key takes %s" % (unit, value, DIMENSION_WORDS[dimension]))
    converted = number * factors[unit]
    if dimension in ("memory", "bytes"):
        if converted != int(converted):
            _fail(origin, key, "%r is not a whole number of %s" % (value, CANONICAL[dimension]))
        return int(converted)
    return round(converted, 6)


def _int(value: Any, key: str, origin: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        _fail(origin, key, "%r is not an integer >= %d" % (value, minimum))
    return value


def _bool(value: Any, key: str, origin: str) -> bool:
    if not isinstance(value, bool):
        _fail(origin, key, "%r is not true/false" % (value,))
    return value


def _str(value: Any, key: str, origin: str) -> str:
    if not isinstance(value, str) or not value.strip():
        _fail(origin, key, "%r is not a non-empty string" % (value,))
    return value


def _regex(value: Any, key: str, origin: str) -> str:
    pattern = _str(value, key, origin)
    try:
        re.compile(pattern)
    except re.error as exc:
        _fail(origin, key, "%r is not a regular expression: %s" % (pattern, exc))
    return pattern


def _choice(choices: tuple[str, ...]) -> Validator:
    def check(value: Any, key: str, origin: str) -> Any:
        if value not in choices:
            _fail(origin, key, "%r is not one of %s" % (value, ", ".join(choices)))
        return value

    return check


def _quantity(dimension: str) -> Validator:
    def check(value: Any, key: str, origin: str) -> int | float:
        return parse_quantity(value, dimension, key, origin)

    return check


def _nv(value: Any, key: str, origin: str) -> str:
    if not isinstance(value, str) or not _NV_RE.match(value):
        _fail(origin, key, "%r is not an NVLink code like NV12 (the minimum NV# of every pair that should be NVLink)"
              % (value,))
    return value


def _mapping(value: Any, key: str, origin: str) -> dict[Any, Any]:
    if not isinstance(value, dict):
        _fail(origin, key, "expected a mapping, got %r" % (type(value).__name__,))
    return value


def _compute_rail(value: Any, key: str, origin: str) -> dict[str, Any]:
    _mapping(value, key, origin)
    _known(value, ("count", "link_layer", "rate"), key, origin)
    for required in ("count", "link_layer", "rate"):
        if value.get(required) is None:
            _fail(origin, "%s.%s" % (key, required), "missing value")
    return {
        "count": _int(value["count"], key + ".count", origin),
        "link_layer": _link_layer(value["link_layer"], key + ".link_layer", origin),
        "rate": parse_quantity(value["rate"], "network_rate", key + ".rate", origin),
    }


def _link_layer(value: Any, key: str, origin: str) -> Any:
    """One RDMA link layer, or a list of them for a SKU built both ways (8x NDR IB or 8x 400G RoCE)."""
    if isinstance(value, list):
        if not value:
            _fail(origin, key, "expected a link layer or a non-empty list of them")
        return [_choice(LINK_LAYERS)(item, key, origin) for item in value]
    return _choice(LINK_LAYERS)(value, key, origin)


def _gpu_fields(value: Any, key: str, origin: str) -> list[str]:
    if not isinstance(value, list) or not value:
        _fail(origin, key, "expected a non-empty list of per-GPU keys")
    for item in value:
        if item not in GPU_FIELDS:
            _fail(origin, key, "%r is not a per-GPU key (%s)" % (item, ", ".join(GPU_FIELDS)))
    return list(value)


# section -> key -> (validator, needs a source)
SCHEMA: dict[str, dict[str, tuple[Validator, bool]]] = {
    "match": {
        "gpu_name": (_regex, False),
        "gpu_count": (_int, False),
    },
    "expect": {
        "gpu_count": (_int, True),
        "gpu_name": (_regex, False),
        "gpu_memory_min": (_quantity("memory"), True),
        "interconnect": (_choice(INTERCONNECTS), False),
        "gpu_pair_link": (_nv, True),
        "nvlink_links_per_gpu": (_int, True),
        "nvlink_link_speed": (_quantity("gpu_bandwidth"), True),
        "gpu_pcie_gen": (_int, True),
        "gpu_pcie_width": (_int, True),
        "fabric_manager": (_bool, False),
        "compute_rail": (_compute_rail, True),
        "nic_pcie_gen": (_int, True),
        "nic_pcie_width": (_int, True),
        # Where every GPU must share one fabric ClusterUUID + CliqueId: the node, or the whole
        # NVLink domain (multi-node NVLink: all the trays of one rack), judged by nvlink.fabric_domain.
        "fabric_clique_scope": (_choice(FABRIC_CLIQUE_SCOPES), False),
    },
    "fleet": {
        "max_below_median": (_quantity("percent"), True),
        "consistent_gpu_fields": (_gpu_fields, False),
    },
    "host": {
        "memlock_unlimited": (_bool, False),
        "gpudirect_required": (_bool, False),
        "temperature_max": (_quantity("temperature"), True),
        "xid_critical_fail": (_bool, False),
    },
}


# Keys a profile once took that no check reads: refused with the reason (not as an unknown key). Move one back into
# SCHEMA when a check reads it.
NOT_READ = {
    "expect.nvlink_domain_gpus": "no check reads it: nvlink.fabric_domain judges one ClusterUUID/CliqueId per "
                                 "NVLink domain, not the domain's GPU count",
}


def _known(mapping: dict[Any, Any], allowed: tuple[str, ...], key: str, origin: str) -> None:
    for name in mapping:
        if name not in allowed:
            _fail(origin, "%s.%s" % (key, name) if key else str(name), "unknown key (known: %s)" % ", ".join(allowed))


def _threshold(name: str, value: Any, origin: str) -> dict[str, Any]:
    key = "thresholds.%s" % name
    _mapping(value, key, origin)
    _known(value, THRESHOLD_FIELDS, key, origin)
    _applicable_fields(name, value, key, origin)
    dimension = THRESHOLD_DIMENSIONS[name]
    if value.get("floor") is None:
        _fail(origin, key + ".floor", "missing value (%s)" % DIMENSION_WORDS[dimension])
    if not isinstance(value.get("source"), str) or not value["source"].strip():
        _fail(origin, key + ".source", "missing source: cite the docs/baselines.md section and the source named there")
    entry: dict[str, Any] = {
        "floor": parse_quantity(value["floor"], dimension, key + ".floor", origin),
        "warn_below": None,
        "message_size": None,
        "algorithm": None,
        "nvls": None,
        "source": value["source"],
        "unit": CANONICAL[dimension],
    }
    if value.get("warn_below") is not None:
        entry["warn_below"] = parse_quantity(value["warn_below"], dimension, key + ".warn_below", origin)
        if entry["warn_below"] < entry["floor"]:
            _fail(origin, key + ".warn_below", "the warning band must lie above the floor (%s < %s)"
                  % (value["warn_below"], value["floor"]))
    if value.get("message_size") is not None:
        entry["message_size"] = parse_quantity(value["message_size"], "bytes", key + ".message_size", origin)
    if value.get("nvls") is not None:
        entry["nvls"] = _bool(value["nvls"], key + ".nvls", origin)
    entry["nodes"] = _threshold_nodes(value.get("nodes"), key, origin)
    return entry


def _applicable_fields(name: str, value: dict[str, Any], key: str, origin: str) -> None:
    """Refuse a field set (not null) that no check reads for threshold ``name`` (THRESHOLD_APPLIES)."""
    for field, given in value.items():
        if given is not None and field in THRESHOLD_FIELDS and field not in THRESHOLD_APPLIES[name]:
            _fail(origin, "%s.%s" % (key, field), _not_applied_words(name, field))


def _not_applied_words(name: str, field: str) -> str:
    """Why ``thresholds.<name>.<field>`` is refused: no check reads it there, and where it does apply."""
    takers = [other for other, fields in THRESHOLD_APPLIES.items() if field in fields]
    why = NOT_APPLIED.get((name, field)) or NOT_APPLIED.get(field) or "no check reads it"
    where = "applies only to %s" % ", ".join(takers) if takers else "applies to no threshold"
    return "%s %s, not %s: %s; leave it out" % (field, where, name, why)


def _threshold_nodes(value: Any, key: str, origin: str) -> int | None:
    """``nodes``: the node count a multi-node floor was measured on (a published figure is for its own count);
    None: every node count. Only ``allreduce_multi_node`` has one (THRESHOLD_APPLIES)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        _fail(origin, key + ".nodes",
              "a node count of 2 or more (got %r); leave it out for every node count" % (value,))
    return value


def _profile_name(data: dict[Any, Any], origin: str) -> str:
    name = _str(data["name"], "name", origin)
    if not re.match(r"^[a-z0-9][a-z0-9-]*$", name):
        _fail(origin, "name", "%r: use lower-case letters, digits and '-'" % name)
    return name


def _section(section: str, given: Any, into: dict[str, Any], origin: str) -> list[str]:
    """One SCHEMA section of a profile validated into ``into``; the dotted keys set there that need a source."""
    keys = SCHEMA[section]
    _mapping(given, section, origin)
    for key in given:
        if "%s.%s" % (section, key) in NOT_READ:
            _fail(origin, "%s.%s" % (section, key), NOT_READ["%s.%s" % (section, key)] + "; leave it out")
    _known(given, tuple(keys), section, origin)
    needs_source = []
    for key, value in given.items():
        dotted = "%s.%s" % (section, key)
        if value is None:
            _fail(origin, dotted, "missing value (delete the key to leave it unset)")
        validator, sourced = keys[key]
        into[key] = validator(value, dotted, origin)
        if sourced:
            needs_source.append(dotted)
    return needs_source


def _sources(data: dict[Any, Any], profile: Profile, needs_source: list[str], origin: str) -> None:
    """``sources`` validated into ``profile``: one for every key that needs one, none for a key not set; each
    threshold's own ``source`` stands for it where ``sources`` gives none."""
    sources = data.get("sources") or {}
    _mapping(sources, "sources", origin)
    for key, text in sources.items():
        if key not in needs_source and not (key.startswith("thresholds.")
                                            and key[len("thresholds."):] in profile["thresholds"]):
            _fail(origin, "sources.%s" % key, "a source for a key the profile does not set (or that holds no number)")
        profile["sources"][key] = _str(text, "sources.%s" % key, origin)
    for dotted in needs_source:
        if dotted not in profile["sources"]:
            _fail(origin, dotted, "missing source: add sources.%s citing the docs/baselines.md section and the source "
                  "named there" % dotted)
    for tname, entry in profile["thresholds"].items():
        profile["sources"].setdefault("thresholds.%s" % tname, entry["source"])


def validate_profile(data: Any, origin: str = "<profile>") -> Profile:
    """The normalised profile (canonical units, sources complete) or ProfileError naming the key."""
    _mapping(data, "profile", origin)
    _known(data, _TOP_KEYS, "", origin)
    for required in ("name", "description", "match"):
        if data.get(required) is None:
            _fail(origin, required, "missing value")
    profile: Profile = {
        "name": _profile_name(data, origin),
        "description": _str(data["description"], "description", origin),
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
                _fail(origin, "match", "missing value")
            continue
        needs_source += _section(section, given, profile[section], origin)
    if "gpu_name" not in profile["match"]:
        _fail(origin, "match.gpu_name", "missing value")
    thresholds = data.get("thresholds")
    if thresholds is not None:
        _mapping(thresholds, "thresholds", origin)
        _known(thresholds, tuple(THRESHOLD_DIMENSIONS), "thresholds", origin)
        for tname, value in thresholds.items():
            profile["thresholds"][tname] = _threshold(tname, value, origin)
    _sources(data, profile, needs_source, origin)
    return profile


def load_profile_file(path: str) -> Profile:
    """Read and validate one profile file."""
    try:
        with open(path, "r", encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as exc:
        raise ProfileError("%s: cannot read: %s" % (path, exc)) from None
    profile = validate_profile(data, origin=path)
    stem = os.path.splitext(os.path.basename(path))[0]
    if profile["name"] != stem:
        _fail(path, "name", "%r differs from the file name %r" % (profile["name"], stem))
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
        _fail(origin, "match", "the profile is chosen before its overrides apply, so match cannot change the choice: "
              "name the profile with gpufleet_profile")
    for name, entry in (overrides.get("thresholds") or {}).items():
        if name not in THRESHOLD_DIMENSIONS or not isinstance(entry, dict):
            continue  # validate_profile names the unknown threshold or the wrong shape
        key = "thresholds.%s" % name
        _applicable_fields(name, entry, key, origin)
        if name not in profile["thresholds"] and entry.get("floor") is None:
            given = ", ".join(sorted(entry)) or "nothing"
            _fail(origin, key, "profile %s has no %s to adjust (given: %s): give its floor and source too, or name a "
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
