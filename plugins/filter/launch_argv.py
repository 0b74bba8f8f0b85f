# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``launch_argv``: the provisioned launcher's argv (mpirun or srun) for a run over some hosts."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

try:
    from gpufleet.plan import launch as _launch
except ImportError as exc:  # the library missing: the filter says how to install it
    _launch = None
    _LIBRARY_ERROR = str(exc)
else:
    _LIBRARY_ERROR = None

DOCUMENTATION = r"""
name: launch_argv
short_description: The launcher's argv for a benchmark over some hosts (mpirun -np/-H, or srun --nodelist)
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
description:
  - For an mpirun launcher (role mpi_fabric), its argv without the fleet's C(--hostfile) and with C(-np) and C(-H)
    naming the hosts asked for; for an srun one, its argv with C(--nodelist), C(--nodes) and C(--ntasks-per-node)
    naming their Slurm nodes (the launcher's C(nodes)); without a launcher, the node's own mpirun with C(-np) and C(-H).
  - The rule is the library's (gpufleet/plan/launch.py); the single-node, multi-node and pair runs of
    playbooks/benchmark.yml use it.
options:
  _input:
    description: C(gpufleet_launcher) (fact of role mpi_fabric), or C(none) for no launcher.
    type: raw
    required: true
  slots:
    description: Pairs C([inventory host, ranks]), in rank order.
    type: list
    elements: raw
    required: true
  fallback:
    description: The mpirun to start without a launcher.
    type: str
    default: mpirun
  addresses:
    description: Cluster addresses by inventory host for mpirun's C(-H), over the launcher's own.
    type: dict
"""

EXAMPLES = r"""
- name: This host alone, one rank per GPU
  ansible.builtin.debug:
    msg: "{{ gpufleet_launcher | gpufleet.acceptance.launch_argv([[inventory_hostname, 8]]) }}"
"""

RETURN = r"""
_value:
  description: The argv before the benchmark's path and arguments.
  type: list
  elements: str
"""


def launch_argv(launcher: Any, slots: list, fallback: str = "mpirun", addresses: Any = None) -> list:
    """gpufleet/plan/launch.py ``launch_argv``, its errors as the filter's."""
    if _launch is None:
        raise AnsibleFilterError("launch_argv: the gpufleet library is not installed (%s): pip install the "
                                 "gpufleet checkout (docs/install.md)" % _LIBRARY_ERROR)
    try:
        pairs = [(str(host), int(ranks)) for host, ranks in slots]
        return _launch.launch_argv(launcher if isinstance(launcher, dict) else None, pairs, fallback=fallback,
                                   addresses=addresses if isinstance(addresses, dict) else None)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("launch_argv: %s" % exc) from exc


class FilterModule:
    """gpufleet.acceptance.launch_argv"""

    def filters(self) -> dict[str, Any]:
        return {"launch_argv": launch_argv}
