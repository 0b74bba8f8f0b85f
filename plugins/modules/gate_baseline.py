#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gate_baseline
short_description: What each accepted node of a judged run looked like, for the quick gate a Slurm prolog runs
description:
  - Controller-side only; the action plugin of the same name does the work and writes nothing. Run it once, after the
    verdicts, with C(delegate_to=localhost); write each RV(baselines) entry onto its node with M(ansible.builtin.copy).
  - One baseline per ACCEPT (or ACCEPT WITH WARNINGS) node - each GPU's PCI bus ID, active NVLinks and uncorrectable
    ECC errors, the physical interfaces that were up and their speed, the RDMA ports that were Active and their rate,
    and the node's uptime when its facts were read. A group the run did not measure is null.
  - Read by C(gpufleet-prolog-gate) of role C(slurm_gate) before each job (docs/slurm.md).
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  run_dir:
    description:
      - The results directory of the judged run.
    type: path
    required: true
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.controller
attributes:
  check_mode:
    support: full
    description: Only reads; the same in check mode.
"""

EXAMPLES = r"""
- name: Gate baselines
  gpufleet.acceptance.gate_baseline:
    run_dir: "{{ gpufleet_run.run_dir }}"
  delegate_to: localhost
  run_once: true
  register: gpufleet_gate
"""

RETURN = r"""
baselines:
  description: The baseline of each accepted node, by inventory name (schema C(gpufleet.gate-baseline/v1)).
  type: dict
  returned: success
"""
