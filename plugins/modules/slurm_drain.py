#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_drain
short_description: Drain the REJECT nodes of a judged run in Slurm, resume the ones gpufleet drained that now pass
description:
  - Controller-side only; the action plugin of the same name does the work with the controller's C(sinfo) and
    C(scontrol). Run it once, after the verdicts, with C(delegate_to=localhost).
  - Each REJECT node is drained with the reason C(gpufleet - <its first reason>) (prefix C(gpufleet) and a colon),
    cut to 200 characters; a node whose reason carries that prefix is resumed once it is ACCEPT (or ACCEPT WITH
    WARNINGS). A node with any other reason (an administrator's drain) is left as it is, whatever the verdict, as
    LBNL NHC does. INCOMPLETE and UNREACHABLE nodes are not changed.
  - Writes C(slurm.json) into O(run_dir) - every node's action, the command as run, its exit status and words.
  - Where C(sinfo) cannot be run or reach the cluster, RV(reached) is false and nothing changes; the playbook then
    writes the verdict file on each node for the health check program of role C(slurm_gate).
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  run_dir:
    description:
      - The results directory of the judged run.
    type: path
    required: true
  scontrol_path:
    description:
      - C(scontrol) on the controller.
    type: str
    default: scontrol
  sinfo_path:
    description:
      - C(sinfo) on the controller.
    type: str
    default: sinfo
  node_names:
    description:
      - The Slurm node of an inventory host whose name differs from it (C(gpufleet_slurm_node)).
    type: dict
    default: {}
  slurm_conf:
    description:
      - The C(SLURM_CONF) the commands run with. Defaults to the controller's environment.
    type: path
  timeout:
    description:
      - Seconds each command may run.
    type: int
    default: 30
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.controller
attributes:
  check_mode:
    support: full
    description: Reads the states and plans the actions; runs no C(scontrol update) and writes nothing.
seealso:
  - name: LBNL Node Health Check
    description: The drain rules followed (prefixed reasons, resume only your own drains).
    link: https://github.com/mej/nhc
"""

EXAMPLES = r"""
- name: Verdicts as drains
  gpufleet.acceptance.slurm_drain:
    run_dir: "{{ gpufleet_run.run_dir }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
reached:
  description: Whether sinfo answered.
  type: bool
  returned: always
actions:
  description: One entry per host - host, node, action (drain, resume, keep, absent), why, reason, command, rc, output.
  type: list
  elements: dict
  returned: always
"""
