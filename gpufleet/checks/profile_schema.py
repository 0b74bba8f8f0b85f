# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a threshold profile may hold (gpufleet/checks/profiles.py): units, keys, and the validator of each key.

Quantities are written WITH their unit; each key takes one dimension (``UNITS``: the units of each, ``CANONICAL``:
the unit every quantity is held in after validation), and :func:`parse_quantity` refuses a unit of another dimension
naming the key. ``SCHEMA`` is every key of the profile's sections with its validator and whether it needs a source;
``NOT_READ`` the keys a profile once took that no check reads; ``THRESHOLD_DIMENSIONS``, ``THRESHOLD_FIELDS``,
``THRESHOLD_APPLIES`` and ``NOT_APPLIED`` the bandwidth floors, their fields, and which fields each floor's check reads
(:func:`threshold_entry` validates one floor). Every refusal is a :class:`ProfileError` naming the key.

Loading, choosing and overriding profiles stay in profiles.py, which re-exports what other modules and the tests
import from it.
"""

from __future__ import annotations

import re
from typing import Any, Callable, NoReturn

INTERCONNECTS = ("nvswitch", "nvlink_bridge_pairs", "pcie")
LINK_LAYERS = ("InfiniBand", "Ethernet")
FABRIC_CLIQUE_SCOPES = ("node", "nvlink_domain")

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


class ProfileError(ValueError):
    """A profile that cannot be used; the message names the file and the key."""


def refuse(origin: str, key: str, why: str) -> NoReturn:
    """Raise the ProfileError of ``key`` in the profile ``origin``: ``<origin>: <key>: <why>``."""
    raise ProfileError("%s: %s: %s" % (origin, key, why))


def parse_quantity(value: Any, dimension: str, key: str, origin: str) -> int | float:
    """``"460 GB/s"`` -> 460.0 in the dimension's canonical unit; ProfileError naming ``key`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, str):
        refuse(origin, key, "%r has no unit: write it as a string with its unit, %s"
               % (value, DIMENSION_WORDS[dimension]))
    match = _QUANTITY_RE.match(value)
    if match is None:
        refuse(origin, key, "%r is not '<number> <unit>' (%s)" % (value, DIMENSION_WORDS[dimension]))
    number, unit = float(match.group(1)), match.group(2)
    factors = UNITS[dimension]
    if unit not in factors:
        other = [name for name, units in UNITS.items() if unit in units and name != dimension]
        if other:
            refuse(origin, key, "%r is %s, but this key takes %s"
                   % (value, DIMENSION_WORDS[other[0]], DIMENSION_WORDS[dimension]))
        refuse(origin, key, "unknown unit %r in %r; this key takes %s" % (unit, value, DIMENSION_WORDS[dimension]))
    converted = number * factors[unit]
    if dimension in ("memory", "bytes"):
        if converted != int(converted):
            refuse(origin, key, "%r is not a whole number of %s" % (value, CANONICAL[dimension]))
        return int(converted)
    return round(converted, 6)


def _int(value: Any, key: str, origin: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        refuse(origin, key, "%r is not an integer >= %d" % (value, minimum))
    return value


def _bool(value: Any, key: str, origin: str) -> bool:
    if not isinstance(value, bool):
        refuse(origin, key, "%r is not true/false" % (value,))
    return value


def non_empty_str(value: Any, key: str, origin: str) -> str:
    """``value``, a string that is not blank; ProfileError naming ``key`` otherwise."""
    if not isinstance(value, str) or not value.strip():
        refuse(origin, key, "%r is not a non-empty string" % (value,))
    return value


def _regex(value: Any, key: str, origin: str) -> str:
    pattern = non_empty_str(value, key, origin)
    try:
        re.compile(pattern)
    except re.error as exc:
        refuse(origin, key, "%r is not a regular expression: %s" % (pattern, exc))
    return pattern


def _choice(choices: tuple[str, ...]) -> Validator:
    def check(value: Any, key: str, origin: str) -> Any:
        if value not in choices:
            refuse(origin, key, "%r is not one of %s" % (value, ", ".join(choices)))
        return value

    return check


def _quantity(dimension: str) -> Validator:
    def check(value: Any, key: str, origin: str) -> int | float:
        return parse_quantity(value, dimension, key, origin)

    return check


def _nv(value: Any, key: str, origin: str) -> str:
    if not isinstance(value, str) or not _NV_RE.match(value):
        refuse(origin, key, "%r is not an NVLink code like NV12 (the minimum NV# of every pair that should be NVLink)"
               % (value,))
    return value


def as_mapping(value: Any, key: str, origin: str) -> dict[Any, Any]:
    """``value``, a mapping; ProfileError naming ``key`` otherwise."""
    if not isinstance(value, dict):
        refuse(origin, key, "expected a mapping, got %r" % (type(value).__name__,))
    return value


def _compute_rail(value: Any, key: str, origin: str) -> dict[str, Any]:
    as_mapping(value, key, origin)
    known_keys(value, ("count", "link_layer", "rate"), key, origin)
    for required in ("count", "link_layer", "rate"):
        if value.get(required) is None:
            refuse(origin, "%s.%s" % (key, required), "missing value")
    return {
        "count": _int(value["count"], key + ".count", origin),
        "link_layer": _link_layer(value["link_layer"], key + ".link_layer", origin),
        "rate": parse_quantity(value["rate"], "network_rate", key + ".rate", origin),
    }


def _link_layer(value: Any, key: str, origin: str) -> Any:
    """One RDMA link layer, or a list of them for a SKU built both ways (8x NDR IB or 8x 400G RoCE)."""
    if isinstance(value, list):
        if not value:
            refuse(origin, key, "expected a link layer or a non-empty list of them")
        return [_choice(LINK_LAYERS)(item, key, origin) for item in value]
    return _choice(LINK_LAYERS)(value, key, origin)


def _gpu_fields(value: Any, key: str, origin: str) -> list[str]:
    if not isinstance(value, list) or not value:
        refuse(origin, key, "expected a non-empty list of per-GPU keys")
    for item in value:
        if item not in GPU_FIELDS:
            refuse(origin, key, "%r is not a per-GPU key (%s)" % (item, ", ".join(GPU_FIELDS)))
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


def known_keys(mapping: dict[Any, Any], allowed: tuple[str, ...], key: str, origin: str) -> None:
    """Refuse a key of ``mapping`` (the section ``key``) that is not among ``allowed``, naming the known ones."""
    for name in mapping:
        if name not in allowed:
            refuse(origin, "%s.%s" % (key, name) if key else str(name), "unknown key (known: %s)" % ", ".join(allowed))


def threshold_entry(name: str, value: Any, origin: str) -> dict[str, Any]:
    """``thresholds.<name>`` validated: its floor and fields in the canonical unit, with its source."""
    key = "thresholds.%s" % name
    as_mapping(value, key, origin)
    known_keys(value, THRESHOLD_FIELDS, key, origin)
    applicable_fields(name, value, key, origin)
    dimension = THRESHOLD_DIMENSIONS[name]
    if value.get("floor") is None:
        refuse(origin, key + ".floor", "missing value (%s)" % DIMENSION_WORDS[dimension])
    if not isinstance(value.get("source"), str) or not value["source"].strip():
        refuse(origin, key + ".source", "missing source: cite the docs/baselines.md section and the source named there")
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
            refuse(origin, key + ".warn_below", "the warning band must lie above the floor (%s < %s)"
                   % (value["warn_below"], value["floor"]))
    if value.get("message_size") is not None:
        entry["message_size"] = parse_quantity(value["message_size"], "bytes", key + ".message_size", origin)
    if value.get("nvls") is not None:
        entry["nvls"] = _bool(value["nvls"], key + ".nvls", origin)
    entry["nodes"] = _threshold_nodes(value.get("nodes"), key, origin)
    return entry


def applicable_fields(name: str, value: dict[str, Any], key: str, origin: str) -> None:
    """Refuse a field set (not null) that no check reads for threshold ``name`` (THRESHOLD_APPLIES)."""
    for field, given in value.items():
        if given is not None and field in THRESHOLD_FIELDS and field not in THRESHOLD_APPLIES[name]:
            refuse(origin, "%s.%s" % (key, field), _not_applied_words(name, field))


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
        refuse(origin, key + ".nodes",
               "a node count of 2 or more (got %r); leave it out for every node count" % (value,))
    return value
