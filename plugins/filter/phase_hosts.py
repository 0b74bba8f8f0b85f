# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``phase_hosts``: the hosts whose inventory asks for an optional phase of validate_cluster.yml."""

from __future__ import annotations

from collections.abc import Sized

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

DOCUMENTATION = r"""
name: phase_hosts
short_description: The hosts whose inventory asks for an optional phase (benchmarks, burn-in)
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
description:
  - C(benchmarks) keeps the hosts with a non-empty C(gpufleet_benchmarks); C(burn_in) keeps those whose C(gpufleet_burn_in) is true
    (as the C(bool) filter reads it - C(-e gpufleet_burn_in=true) gives a string).
  - Used in a play's C(hosts) so that a phase no host asks for has no host at all - not one skipped task per host
    (docs/performance.md). Hosts keep the order of the input; names not in C(hostvars) are left out.
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
        if asks(hostvars[host].get(variable)):
            chosen.append(host)
    return chosen


class FilterModule:
    """gpufleet.acceptance.phase_hosts"""

    def filters(self):
        return {"phase_hosts": phase_hosts}
