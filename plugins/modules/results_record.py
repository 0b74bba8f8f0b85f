#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: results_record
short_description: Write an acceptance run's results directory as results arrive
description:
  - Controller-side only; the action plugin of the same name does the work and never contacts the node.
  - With O(phase=start) (run once, on the controller), creates the run directory O(run_dir) with its C(run.json)
    (schema C(gpufleet.results/v1), run id, start time, inventory, playbook, profile choices, gpufleet version),
    or reopens an existing one of the same schema and reports which hosts already have a complete facts
    phase, so that a rerun can skip them.
  - With O(phase=facts) (per host, with C(delegate_to=localhost)), writes the host's C(hosts/<host>.json) from the
    registered results of the four fact tasks (facts per group, the message of each group that failed, or the
    connection error when the node answered nothing) and every raw tool output under C(raw/<host>/<group>/)
    with its command, exit code and duration. Each file is written atomically, at once, so an interrupted run
    keeps every host it finished.
  - The layout and every field are documented in C(docs/results-schema.md) in the collection.
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  run_dir:
    description:
      - The results directory of this run (created when missing).
    type: path
    required: true
  phase:
    description:
      - V(start) creates or reopens the run directory; V(facts) writes one host's facts.
    type: str
    choices: [start, facts]
    default: facts
  host:
    description:
      - O(phase=facts) only. The host the facts belong to. Defaults to the task's C(inventory_hostname)
        (which stays the node's name under C(delegate_to)).
    type: str
  results:
    description:
      - O(phase=facts) only. Fact group (V(topology), V(gpu), V(nic), V(host)) to the registered result of
        M(gpufleet.acceptance.gpu_topology_facts), M(gpufleet.acceptance.gpu_facts),
        M(gpufleet.acceptance.nic_facts) and M(gpufleet.acceptance.host_facts). A group left out or skipped is
        recorded as not gathered.
    type: dict
  claim:
    description:
      - O(phase=facts) only. The seller's claim for the host (C(gpufleet_claim)), recorded with its facts.
    type: dict
  settings:
    description:
      - With O(phase=facts), other inventory settings the checks read (for example C(gpufleet_nccl_env)), recorded with the host.
      - >-
        With O(phase=start), the run's settings, recorded as C(settings) in C(run.json) (replacing those of an earlier start of
        the same run): C(level) (the validation level, V(quick), V(standard) or V(full)), C(benchmarks) (the explicit
        C(gpufleet_benchmarks), or null for the level's) and C(burn_in) (the explicit C(gpufleet_burn_in), or null).
    type: dict
  profile:
    description:
      - With O(phase=facts), the profile the host asked for (C(gpufleet_profile)), recorded as asked.
      - With O(phase=start), the profile choices of the run as a mapping, recorded in C(run.json).
    type: raw
  profile_overrides:
    description:
      - O(phase=facts) only. The host's C(gpufleet_profile_overrides), recorded as asked.
    type: dict
  inventory:
    description:
      - O(phase=start) only. The inventory sources to record. Defaults to C(ansible_inventory_sources).
    type: list
    elements: str
  playbook:
    description:
      - O(phase=start) only. The playbook to record.
    type: str
  hosts:
    description:
      - O(phase=start) only. The hosts of the run. Defaults to C(ansible_play_hosts_all).
    type: list
    elements: str
  resume:
    description:
      - O(phase=start) only. When V(true), hosts whose facts phase is already complete in an existing O(run_dir)
        are returned in RV(complete_hosts) for the playbook to skip; V(false) returns none (everything is gathered again).
    type: bool
    default: true
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.controller
attributes:
  check_mode:
    support: full
    description: Writes the results directory in check mode too (it is controller-side, not node state).
notes:
  - Run O(phase=facts) with C(delegate_to=localhost) so that nothing is sent to the node.
seealso:
  - module: gpufleet.acceptance.fleet_verdict
"""

EXAMPLES = r"""
- name: Create the results directory
  gpufleet.acceptance.results_record:
    run_dir: results/acceptance-2026-01
    phase: start
    playbook: validate_cluster.yml
  run_once: true
  delegate_to: localhost
  register: gpufleet_run

- name: Record this host's facts as they arrive
  gpufleet.acceptance.results_record:
    run_dir: results/acceptance-2026-01
    results:
      topology: "{{ facts_topology_result }}"
      gpu: "{{ facts_gpu_result }}"
      nic: "{{ facts_nic_result }}"
      host: "{{ facts_host_result }}"
    claim: "{{ gpufleet_claim | default(omit) }}"
  delegate_to: localhost
"""

RETURN = r"""
run_dir:
  description: Absolute path of the results directory.
  returned: phase is start
  type: str
  sample: /home/buyer/results/20260131T120000Z
run_id:
  description: The run's id (the directory's name when it was created).
  returned: phase is start
  type: str
  sample: 20260131T120000Z
resume:
  description: What an existing directory already holds, by host.
  returned: phase is start
  type: dict
  contains:
    complete:
      description: Hosts whose facts phase is complete.
      type: list
      elements: str
    incomplete:
      description: Hosts with a record whose facts phase is not complete.
      type: list
      elements: str
    unreachable:
      description: Hosts recorded as unreachable.
      type: list
      elements: str
    damaged:
      description: Host record files that cannot be read.
      type: list
      elements: str
    missing:
      description: Hosts of the run without a record.
      type: list
      elements: str
complete_hosts:
  description: The hosts a rerun may skip (empty when O(resume=false)).
  returned: phase is start
  type: list
  elements: str
  sample: [node-a, node-b]
started:
  description: >-
    When the run was first started (C(run.json) C(started), kept when resumed); the job tag of its benchmarks.
  returned: phase is start
  type: str
  sample: "2026-01-31T12:00:00Z"
recorded_jobs:
  description: >-
    The job ids of the benchmark runs already recorded in the directory (not those recorded unreachable): a resumed
    run does not run them again.
  returned: phase is start
  type: list
  elements: str
  sample: [gpufleet-20260131T120000Z-single-node-a-0]
host:
  description: The host recorded.
  returned: phase is facts
  type: str
  sample: node-a
record:
  description: Path of the host's record.
  returned: phase is facts
  type: str
  sample: /home/buyer/results/20260131T120000Z/hosts/node-a.json
unreachable_reason:
  description: The connection error when the node answered no fact task, else null.
  returned: phase is facts
  type: str
  sample: "Failed to connect to the host via ssh: ssh: connect to host 10.0.0.7 port 22: Connection refused"
fact_errors:
  description: Fact group to the message it failed with.
  returned: phase is facts
  type: dict
  sample: {"gpu": "node-a: `nvidia-smi -q -x` exited 9: NVIDIA-SMI has failed"}
facts_complete:
  description: Whether every fact group was gathered or failed on a reachable node.
  returned: phase is facts
  type: bool
  sample: true
raw_files:
  description: How many raw outputs were written under C(raw/<host>/).
  returned: phase is facts
  type: int
  sample: 9
results_write_error:
  description: >-
    A file of the results directory the controller could not write (a full disk, a quota, a read-only or unwritable
    directory, an I/O error): the file, the errno and what is on disk of it, and what frees it. The task fails with
    it: the controller's failure, not the node's.
  returned: when a write failed
  type: str
  sample: >-
    results directory /r is full (ENOSPC: No space left on device) writing hosts/node-a.json, which was not written;
    free space and resume: gpufleet validate --out /r
"""
