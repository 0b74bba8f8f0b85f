# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``phase_hosts``: the hosts whose inventory asks for an optional phase of validate_cluster.yml."""

from __future__ import annotations

from collections.abc import Sized

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

try:
    from gpufleet.plan import levels as _levels
except ImportError as exc:  # the library missing: every filter here says how to install it
    _levels = None
    _LIBRARY_ERROR = str(exc)
else:
    _LIBRARY_ERROR = None

DOCUMENTATION = r"""
name: phase_hosts
short_description: The hosts whose inventory asks for an optional phase (benchmarks, burn-in)
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
description:
  - C(benchmarks) keeps the hosts with a non-empty C(gpufleet_benchmarks), or without C(gpufleet_benchmarks) whose
    C(gpufleet_level) is V(standard) (the default) or V(full); C(burn_in) keeps those whose C(gpufleet_burn_in) is true (as the
    C(bool) filter reads it - C(-e gpufleet_burn_in=true) gives a string), or without C(gpufleet_burn_in) whose C(gpufleet_level)
    is V(full). The explicit variable wins over the level.
  - Used in a play's C(hosts) so that a phase no host asks for has no host at all - not one skipped task per host
    (docs/performance.md). Hosts keep the order of the input; names not in C(hostvars) are left out.
  - The levels are defined once, in the library (gpufleet/plan/levels.py); the verdict reads the same rule.
  - The same file holds the filters C(level_benchmarks) and C(host_benchmarks) (see their own documentation).
options:
  _input:
    description: Inventory names of the candidate hosts, for example C(groups['all']).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars).
    type: dict
    required: true
  phase:
    description: The phase.
    type: str
    choices: [benchmarks, burn_in]
    required: true
"""

EXAMPLES = r"""
- name: The hosts that asked for benchmarks
  ansible.builtin.debug:
    msg: "{{ groups['all'] | gpufleet.acceptance.phase_hosts(hostvars, 'benchmarks') }}"
"""

RETURN = r"""
_value:
  description: The hosts of the input that ask for the phase, in input order.
  type: list
  elements: str
"""


def _asks_for_benchmarks(value):
    if value is None:
        return False
    if isinstance(value, Sized):
        return len(value) > 0
    return bool(value)


def _asks_for_burn_in(value):
    return boolean(value, strict=False) if value is not None else False


ASKS = {"benchmarks": ("gpufleet_benchmarks", _asks_for_benchmarks), "burn_in": ("gpufleet_burn_in", _asks_for_burn_in)}


def _library():
    """gpufleet.plan.levels (the one definition of the levels); a filter error naming the fix when it is missing."""
    if _levels is None:
        raise AnsibleFilterError("the gpufleet Python library is missing on the controller (%s): install it as the "
                                 "collection's requirements.txt says (docs/install.md)" % _LIBRARY_ERROR)
    return _levels


def phase_hosts(hosts, hostvars, phase):
    """The hosts of ``hosts`` whose variables (``hostvars[host]``) ask for ``phase``, in order."""
    if phase not in ASKS:
        raise AnsibleFilterError("phase_hosts: phase must be one of %s, got %r" % (", ".join(sorted(ASKS)), phase))
    if isinstance(hosts, str) or not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("phase_hosts: the input must be a list of host names, got %s" % type(hosts).__name__)
    variable, asks = ASKS[phase]
    chosen = []
    for host in hosts:
        if host not in hostvars:
            continue
        view = hostvars[host]
        if variable in view:
            wanted = asks(view.get(variable))
        else:
            try:
                wanted = _library().asks_for_phase(phase, view.get("gpufleet_level"))
            except _library().LevelError as exc:
                raise AnsibleFilterError("phase_hosts: %s: %s" % (host, exc)) from exc
        if wanted:
            chosen.append(host)
    return chosen


def level_benchmarks(level, hosts, rail_hosts):
    """The level's benchmarks for a run over ``hosts`` hosts, ``rail_hosts`` of them with an Active RDMA rail."""
    try:
        return _library().level_benchmarks(level, int(hosts), int(rail_hosts))
    except _library().LevelError as exc:
        raise AnsibleFilterError("level_benchmarks: %s" % exc) from exc


def host_benchmarks(selected, hosts, rail_hosts, rails, nvbandwidth_built):
    """What one host runs of the level's ``selected`` benchmarks (its rails, whether nvbandwidth is built)."""
    built = boolean(nvbandwidth_built, strict=False)
    return _library().host_benchmarks(list(selected or []), int(hosts), int(rail_hosts), int(rails), built)


class FilterModule:
    """gpufleet.acceptance.phase_hosts, level_benchmarks, host_benchmarks"""

    def filters(self):
        return {"phase_hosts": phase_hosts, "level_benchmarks": level_benchmarks, "host_benchmarks": host_benchmarks}
