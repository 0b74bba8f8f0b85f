# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The words of the all-reduce checks' messages (pure): sizes, repeats, launches, floors, NCCL transports, the search.

Every message of checks/benchmarks.py says which size judged a figure and why (:func:`size_reason`), how many
repeats voted (:func:`repeat_words`) and, where the hosts of one run have different floors, which host has which
(:func:`floors_words`).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence

from gpufleet.checks.bench_floors import HostFloor
from gpufleet.checks.bench_pair_records import Pair
from gpufleet.checks.bench_records import Record, label_fields
from gpufleet.checks.network import num

# How a single-node run was launched, by the ``launch`` word of its ``group`` label
LAUNCH_WORDS = {"mpirun": "one rank per GPU through mpirun", "srun": "one task per GPU through srun",
                "threads": "one process, -g per GPU"}


def size_words(size: Optional[int]) -> str:
    """``4 GiB``, ``128 MiB``, ``1000 B``: a message size as the messages print it."""
    if size is None:
        return "unknown size"
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return "%d %s" % (size // factor, unit)
    return "%d B" % size


def size_reason(judged_size: Optional[int], wanted: Optional[int]) -> Optional[str]:
    """Why busbw is judged at ``judged_size`` where that is not the profile's ``message_size`` ``wanted``, else None."""
    if wanted is None:
        return "the profile names no message size: judged at the largest size"
    if judged_size != wanted:
        return "the profile's size %s is absent from the sweep: judged at its largest size" % size_words(wanted)
    return None


def sizes_words(by_size: Mapping[Optional[int], Sequence[Any]]) -> str:
    """``busbw at different message sizes is not compared: the cohort's figures are at 4 GiB (3 nodes), 128 MiB
    (1 node), each held to the median at its size``: ``by_size`` is ``{size: [node, ...]}``."""
    sizes = sorted(by_size, key=lambda size: -1 if size is None else size, reverse=True)
    counts = ["%s (%d node%s)" % (size_words(size), len(by_size[size]), "" if len(by_size[size]) == 1 else "s")
              for size in sizes]
    return "busbw at different message sizes is not compared: the cohort's figures are at %s, each held to the " \
        "median at its size" % ", ".join(counts)


def repeat_words(values: Sequence[float], how: str, fmt: Callable[[float], str] = num) -> str:
    """`` (median of 3 repeats, spread 9.3-9.5)``; empty for one repeat. ``fmt`` writes a figure."""
    if len(values) < 2:
        return ""
    return " (%s of %d repeats, spread %s-%s)" % (
        "best" if how == "best" else "median", len(values), fmt(min(values)), fmt(max(values)))


def launch_words(record: Record) -> str:
    """How a single-node run was launched, from its ``group`` label (``single_node launch=mpirun gpus=8``)."""
    return LAUNCH_WORDS.get(label_fields(record.get("group")).get("launch", ""), "")


def floors_words(floors: Mapping[str, HostFloor]) -> Optional[str]:
    """When the hosts of one run have different floors (their profiles differ): which hosts have which, and that
    each host is judged against its own; None when they agree."""
    hosts_by_floor: dict[Optional[float], list[str]] = {}
    for host, entry in floors.items():
        hosts_by_floor.setdefault(entry["floor"], []).append(host)
    if len(hosts_by_floor) < 2:
        return None

    def hosts_words(hosts: list[str]) -> str:
        return ", ".join(hosts[:3]) + (" and %d more" % (len(hosts) - 3) if len(hosts) > 3 else "")

    parts = ["%s: %s" % ("no floor" if floor is None else "%s GB/s" % num(floor), hosts_words(hosts))
             for floor, hosts in sorted(hosts_by_floor.items(), key=lambda item: -1 if item[0] is None else item[0])]
    return "the run's hosts have different floors (%s): each host is judged against its own" % "; ".join(parts)


def via_words(vias: Sequence[dict[str, Any]], limit: int = 4) -> str:
    """``NET/IB/0 x4 (line 195), ...`` of the first few channel transports."""
    words = ["%s x%d (line %d)" % (via["via"], via["count"], via["line"]) for via in vias[:limit]]
    more = " and %d more" % (len(vias) - limit) if len(vias) > limit else ""
    return ", ".join(words) + more


def search_summary(verdict: Mapping[str, Any], mode: Optional[str], rounds_used: int) -> str:
    """``2 bad node(s) and 0 bad link(s) named in 5 round(s) (adaptive)``."""
    return "%d bad node(s) and %d bad link(s) named in %d round(s) (%s)" % (
        len(verdict["bad_nodes"]), len(verdict["bad_links"]), rounds_used, mode or "mode not recorded")


def not_measured_words(unmeasured: Mapping[Pair, Sequence[str]], name: str) -> str:
    """``a-d: unreachable (reason), b-d: ...``: the pairs with ``name`` that were not measured, and why."""
    return ", ".join("%s-%s: %s" % (pair[0], pair[1], "; ".join(whys))
                     for pair, whys in sorted(unmeasured.items()) if name in pair)
