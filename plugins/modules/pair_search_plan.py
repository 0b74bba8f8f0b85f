#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: pair_search_plan
short_description: Plan the next round of the all-reduce bad-node search from the rounds recorded so far
description:
  - Controller-side only; the action plugin of the same name does the work and never contacts a node. Run it once
    (C(run_once=true)).
  - Rebuilds the pairwise bad-node search (C(gpufleet/plan/pair_search.py) in the collection) from
    O(hosts), O(seed), O(mode), O(tolerance) and O(confirm), and from the C(allreduce_pair) benchmark records of this
    search in O(run_dir) (those whose C(job_id) starts with O(job)C(-pair-)), then returns the pairs of round
    O(round). The same inputs always give the same plan; an empty plan means the search is settled.
  - The pairs of one round are disjoint, so they can run at the same time.
  - A pair is slow when it is more than O(tolerance) below the median of the best pairs, or below the absolute floor
    that the C(benchmarks.pair_search) check judges by (the NIC-bound floor of the hosts, from their claim, profile
    and NIC facts recorded in O(run_dir); none when no host's NIC aggregate is known), so a pair slow only by the
    floor gets its confirmation run too.
  - V(adaptive) plans two random matchings, then re-measures the slow pairs that would convict (with O(confirm)) and
    pairs each remaining suspect with a node proven good. V(round_robin) plans every pair once (circle method,
    N - 1 rounds, N for odd N), then the confirmation runs.
  - A recorded pair that the rebuilt plan never scheduled (another seed, other hosts or settings) fails the task.
  - The search, its fault model and the rounds it takes are described in C(docs/benchmarks.md) in the collection.
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  run_dir:
    description:
      - The results directory of the run (written by M(gpufleet.acceptance.results_record) and
        M(gpufleet.acceptance.bench_run)).
    type: path
    required: true
  job:
    description:
      - The job tag of the benchmarks of this run; the pair runs of this search have job ids C(<job>-pair-...).
    type: str
    required: true
  hosts:
    description:
      - The hosts of the search, in a fixed order (the order is part of what makes the plan reproducible).
    type: list
    elements: str
    required: true
  round:
    description:
      - The round to plan, from 0. Rounds 0 to O(round) - 1 are rebuilt from the records.
    type: int
    required: true
  seed:
    description:
      - The seed of the search's random choices. Fix it once per search (and keep it to reproduce a plan).
    type: str
    required: true
  mode:
    description:
      - V(adaptive) tests the pairs it needs; V(round_robin) tests every pair once (and so names every bad link).
    type: str
    choices: [adaptive, round_robin]
    default: adaptive
  tolerance:
    description:
      - A pair is slow when its best figure is more than this fraction below the median of the best pairs.
    type: float
    default: 0.25
  confirm:
    description:
      - Re-measure a slow pair once (a confirmation run) before it may convict a node or a link.
    type: bool
    default: true
  max_rounds:
    description:
      - The most rounds the search plans. Default N - 1 + 2 (adaptive) or the round-robin rounds + 2, each + 2 with
        O(confirm).
    type: int
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.controller
attributes:
  bypass_host_loop:
    support: none
    description: Use C(run_once=true); one plan serves every host of the play.
  check_mode:
    support: full
    description: Reads the results directory only; runs the same in check mode.
notes:
  - The checks (C(benchmarks.pair_search)) judge the same records with the same rules and the label in the records'
    C(group) field (RV(group)), so the verdict names what the search found.
seealso:
  - module: gpufleet.acceptance.bench_run
  - module: gpufleet.acceptance.fleet_verdict
"""

EXAMPLES = r"""
- name: Plan round 3 of the search
  gpufleet.acceptance.pair_search_plan:
    run_dir: results/acceptance-2026-01
    job: gpufleet-20260131T120000Z
    hosts: "{{ ansible_play_hosts }}"
    round: 3
    seed: "12345"
  run_once: true
  delegate_to: localhost
  register: gpufleet_pair_step

- name: Run its pairs (one all-reduce per pair, started by the pair's first host)
  ansible.builtin.debug:
    msg: "{{ gpufleet_pair_step.pairs }}"
  when: not gpufleet_pair_step.done
"""

RETURN = r"""
pairs:
  description: The pairs of round O(round), each C([first, second]) in sorted order; empty when the search is settled.
  returned: success
  type: list
  elements: list
  sample: [["node-a", "node-c"], ["node-b", "node-d"]]
done:
  description: True when there is nothing left to measure (or O(max_rounds) rounds were planned).
  returned: success
  type: bool
  sample: false
round:
  description: The round planned (O(round)).
  returned: success
  type: int
  sample: 3
rounds_used:
  description: Rounds planned so far, this one included when it is not empty.
  returned: success
  type: int
  sample: 4
max_rounds:
  description: The most rounds this search plans.
  returned: success
  type: int
  sample: 11
mode:
  description: O(mode).
  returned: success
  type: str
  sample: adaptive
seed:
  description: The seed as used (a whole number when O(seed) is one).
  returned: success
  type: raw
  sample: 12345
confirm:
  description: Measurements a slow pair needs before it may convict (2 with O(confirm), else 1).
  returned: success
  type: int
  sample: 2
group:
  description: The label for the C(group) field of every pair record of this search (mode, confirmation, seed).
  returned: success
  type: str
  sample: pair_search mode=adaptive confirm=2 seed=12345
floor:
  description: The absolute floor in GB/s the search planned with; null when no host's NIC aggregate is known.
  returned: success
  type: float
  sample: 338.4
floor_source:
  description: Where the floor comes from (efficiency, margin and the per-node NIC aggregate); null without a floor.
  returned: success
  type: str
  sample: "docs/baselines.md 3b NIC-bound floors: 0.94 x the per-node NIC aggregate (...); aggregate 8 x 400 Gb/s
    InfiniBand = 400 GB/s (claim)"
bad_nodes:
  description: The nodes convicted by the rounds recorded so far.
  returned: success
  type: list
  elements: str
  sample: [node-b]
bad_links:
  description: The links (C([a, b])) convicted by the rounds recorded so far.
  returned: success
  type: list
  elements: list
  sample: [["node-a", "node-f"]]
suspects:
  description: Nodes in a slow pair that are neither proven good nor convicted yet.
  returned: success
  type: list
  elements: str
  sample: [node-e]
pending:
  description: Slow pairs (C([a, b])) that would convict once their confirmation run is slow too.
  returned: success
  type: list
  elements: list
  sample: [["node-b", "node-d"]]
"""
