#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fleet_verdict
short_description: Judge every node of an acceptance run and write the node and fleet verdicts
description:
  - Controller-side only; the action plugin of the same name does the work. Run it once (C(run_once=true)).
  - Reads every host's record from the results directory written by M(gpufleet.acceptance.results_record), takes
    each host's claim (C(gpufleet_claim)) and profile choice (chosen automatically from the GPU facts, or
    C(gpufleet_profile), adjusted by C(gpufleet_profile_overrides)) from the inventory, and runs the checks engine
    over the whole fleet at once (fleet-wide rules need every node).
  - Writes the checks and the verdict (V(ACCEPT), V(ACCEPT WITH WARNINGS), V(REJECT), V(UNREACHABLE)) into each
    C(hosts/<host>.json), the fleet verdict into C(fleet.json), and the profiles chosen and the finish time into C(run.json).
  - A host that left the play before its record was written (unreachable, or failed outside the fact tasks) is
    V(UNREACHABLE); a fact group that failed rejects its node with check C(facts.<group>).
  - Claims and profiles are validated first; an unknown profile, an invalid override or an invalid claim fails the
    task before anything is judged or written, naming the host and the key. O(validate_only=true) does only that
    (the preflight of C(validate_cluster.yml)).
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  run_dir:
    description:
      - The results directory of this run. Required unless O(validate_only=true).
    type: path
  validate_only:
    description:
      - Only validate the profiles and every host's claim and profile choice; judge and write nothing.
      - >-
        Also refuses any host variable named C(gpufleet_*) that the collection does not know, naming the nearest
        known one (C(gpufleet_clam is not a gpufleet variable: did you mean gpufleet_claim?)).
    type: bool
    default: false
  hosts:
    description:
      - The hosts to judge. Defaults to C(ansible_play_hosts_all).
    type: list
    elements: str
  reachable_hosts:
    description:
      - The hosts still in the play. Defaults to C(ansible_play_hosts). A host of O(hosts) missing here and without
        a record is V(UNREACHABLE).
    type: list
    elements: str
  families:
    description:
      - The check families to run (short names such as V(topology), or dotted module names). Defaults to the
        engine's default families.
    type: list
    elements: str
  profiles_dir:
    description:
      - A directory of profile YAML files to use instead of the shipped ones (C(gpufleet/profiles/) in the gpufleet package).
    type: path
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.controller
attributes:
  bypass_host_loop:
    support: none
    description: Use C(run_once=true); it judges every host of the play at once.
  check_mode:
    support: full
    description: Judges and writes the results directory in check mode too.
notes:
  - Inventory variables read per host - C(gpufleet_claim), C(gpufleet_profile), C(gpufleet_profile_overrides),
    C(gpufleet_nccl_env). See C(inventories/rented_nodes/README.md) in the collection.
seealso:
  - module: gpufleet.acceptance.results_record
"""

EXAMPLES = r"""
- name: Refuse a bad profile or claim before anything runs
  gpufleet.acceptance.fleet_verdict:
    validate_only: true
  run_once: true
  delegate_to: localhost

- name: Judge the fleet
  gpufleet.acceptance.fleet_verdict:
    run_dir: results/acceptance-2026-01
  run_once: true
  delegate_to: localhost
  register: gpufleet_verdict

- name: One line per node
  ansible.builtin.debug:
    msg: "{{ gpufleet_verdict.line_of[inventory_hostname] }}"
"""

RETURN = r"""
run_dir:
  description: Absolute path of the results directory.
  returned: unless validate_only
  type: str
  sample: /home/buyer/results/20260131T120000Z
verdict:
  description: The fleet verdict - V(ACCEPT) only when every node is accepted.
  returned: unless validate_only
  type: str
  sample: REJECT
counts:
  description: Nodes per verdict.
  returned: unless validate_only
  type: dict
  sample: {"ACCEPT": 6, "ACCEPT WITH WARNINGS": 1, "REJECT": 2, "UNREACHABLE": 1}
nodes:
  description: Per host - C(verdict), C(failed) (ids of the failed checks), C(unreachable) (reason or null), C(profile).
  returned: unless validate_only
  type: dict
  sample: {"node-a": {"verdict": "REJECT", "failed": ["facts.gpu"], "unreachable": null, "profile": "hgx-h100-8"}}
line_of:
  description: Per host, one line with its verdict and reasons, for a person to read.
  returned: unless validate_only
  type: dict
  sample: {"node-a": "node-a: REJECT (profile hgx-h100-8) - could not gather gpu facts: nvidia-smi not found"}
exit_code:
  description:
    - The run's exit code from the nodes' verdicts (one table for the playbook and C(gpufleet validate),
      C(gpufleet/results/exit_codes.py)) - 0 every node accepted, 3 some REJECT, 4 some UNREACHABLE (none rejected),
      6 some INCOMPLETE or not judged (none rejected or unreachable).
    - C(playbooks/validate_cluster.yml) records it (C(set_stats) C(acceptance_exit_code)) for the callback
      C(gpufleet.acceptance.exit_code), so ansible-playbook exits with it.
  returned: unless validate_only
  type: int
  sample: 3
profiles:
  description: The names of the profiles available.
  returned: when validate_only
  type: list
  elements: str
  sample: [generic, hgx-h100-8]
hosts:
  description: How many hosts were validated.
  returned: when validate_only
  type: int
  sample: 12
"""
