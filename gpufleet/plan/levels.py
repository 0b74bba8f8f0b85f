# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validation levels (``gpufleet_level``, like ``dcgmi diag -r``): what each level runs, per host (pure).

The one definition of the rule. The playbooks read it through the filters of plugins/filter/phase_hosts.py
(``phase_hosts`` chooses the hosts of an optional phase, ``level_benchmarks`` and ``host_benchmarks`` what
playbooks/benchmark.yml and benchmark_tasks/preflight.yml run); the verdict reads it to know which
benchmarks each node had to have judged (gpufleet/results/verdicts.py, checks/evidence.py).

- ``quick``: facts only; an ACCEPT at this level is labelled :data:`STATIC_LABEL`.
- ``standard`` (the default): + the benchmarks: all-reduce over every GPU of each node; with two hosts or
  more the pairwise bad-node search; ``ib_write_bw`` when two hosts or more have an Active RDMA rail, and
  ``iperf3`` when a host has none; ``nvbandwidth`` on the nodes where it is built; ``gpu_compute`` (gpubench:
  GEMM TFLOP/s per precision and HBM GB/s of every GPU) on every node.
- ``full``: + the burn-in.

``gpufleet_benchmarks`` (a list) and ``gpufleet_burn_in`` (a bool) override the level for their phase.
"""

from __future__ import annotations

from collections.abc import Sized
from typing import Any

LEVELS = ("quick", "standard", "full")
DEFAULT_LEVEL = "standard"
# The optional phases of validate_cluster.yml each level runs when the phase's own variable is not set.
LEVEL_PHASES = {"quick": (), "standard": ("benchmarks",), "full": ("benchmarks", "burn_in")}
# The label of an ACCEPT for which nothing measured was required (level quick): only facts were judged.
STATIC_LABEL = "static checks only"
# The required-evidence name of the burn-in (checks/evidence.py BENCHMARK_CHECKS).
BURN_IN = "burn_in"


class LevelError(ValueError):
    """A level that is not one of :data:`LEVELS`."""


def level_of(value: Any) -> str:
    """The level named by ``value`` (None or empty: :data:`DEFAULT_LEVEL`); LevelError for an unknown one."""
    level = str(value or DEFAULT_LEVEL)
    if level not in LEVELS:
        raise LevelError("gpufleet_level must be one of %s, got %r" % (", ".join(LEVELS), level))
    return level


def _truthy(value: Any) -> bool:
    """A bool as Ansible's ``bool`` filter reads it (``-e gpufleet_burn_in=true`` gives a string)."""
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "y", "t")
    return bool(value)


def asks_for_phase(phase: str, level: Any, override: Any = None, overridden: bool = False) -> bool:
    """Whether a host asks for ``phase`` (benchmarks, burn_in): its own variable (``override``) when it has one
    (``overridden``), else its level's choice."""
    if phase not in ("benchmarks", "burn_in"):
        raise LevelError("phase must be benchmarks or burn_in, got %r" % (phase,))
    if overridden:
        if override is None:
            return False
        if phase == "benchmarks":
            return len(override) > 0 if isinstance(override, Sized) else bool(override)
        return _truthy(override)
    return phase in LEVEL_PHASES[level_of(level)]


def level_benchmarks(level: Any, hosts: int, rail_hosts: int) -> list[str]:
    """The level's benchmarks for a run over ``hosts`` hosts of which ``rail_hosts`` have an Active RDMA rail."""
    if not asks_for_phase("benchmarks", level):
        return []
    chosen = ["allreduce_single"]
    if hosts > 1:
        chosen.append("allreduce_pairs")
    if rail_hosts > 1:
        chosen.append("ib_write_bw")
    if hosts > 1 and rail_hosts < hosts:
        chosen.append("iperf3")
    chosen.append("nvbandwidth")
    chosen.append("gpu_compute")
    return chosen


def host_benchmarks(selected: list[str], hosts: int, rail_hosts: int, rails: int, nvbandwidth_built: bool) -> list[str]:
    """What one host of the run is to run of the level's ``selected`` benchmarks.

    nvbandwidth only where it is built (elsewhere it is not asked for, so no item); ``ib_write_bw`` only on a host
    with an Active RDMA rail (``rails`` > 0); a host with rails runs ``iperf3`` too only while fewer than two hosts
    lack rails, so that a host without rails has partners.
    """
    dropped = set()
    if not nvbandwidth_built:
        dropped.add("nvbandwidth")
    if rails == 0:
        dropped.add("ib_write_bw")
    if rails > 0 and "ib_write_bw" in selected and hosts - rail_hosts > 1:
        dropped.add("iperf3")
    return [name for name in selected if name not in dropped]


def required_benchmarks(level: Any, benchmarks: Any = None, burn_in: Any = None, hosts: int = 1, rail_hosts: int = 0,
                        rails: int = 0, nvbandwidth_built: bool = False) -> list[str]:
    """The benchmarks (and ``burn_in``) a host must have judged: ``benchmarks`` (gpufleet_benchmarks) when given,
    else its level's for this host; the burn-in when ``burn_in`` (gpufleet_burn_in) says so, else at level full."""
    if benchmarks is not None:
        out = [benchmarks] if isinstance(benchmarks, str) else [str(name) for name in benchmarks]
    else:
        out = host_benchmarks(level_benchmarks(level, hosts, rail_hosts), hosts, rail_hosts, rails, nvbandwidth_built)
    if asks_for_phase("burn_in", level, burn_in, overridden=burn_in is not None):
        out.append(BURN_IN)
    return list(dict.fromkeys(out))
