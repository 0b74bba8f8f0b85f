#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: health_history
short_description: Append a run's per-GPU health summaries to the SQLite history and flag drift
description:
  - Controller-side only; the action plugin of the same name does the work and never contacts a node. Run it once
    (C(run_once=true), C(delegate_to=localhost)) after M(gpufleet.acceptance.burn_in_record) has recorded every host,
    and before M(gpufleet.acceptance.fleet_verdict) so that the drift flags become C(burn_in.drift) check results.
  - Appends one row per (run, host, GPU UUID) to the SQLite file O(db) - temperature mean/min/max/p95, SM clock median,
    power mean, and every ECC and NVLink counter at the end of the run - from each host's burn-in record in O(run_dir).
    Appending the same run again replaces its rows (a rerun).
  - Flags drift of this run against the GPU's earlier runs of the same kind (V(burn_in) or V(health_check)) - an SM clock
    median more than O(clock_drop_share) below the median of its previous runs (warn), ECC counters that grew since the
    previous run (uncorrected fail, corrected warn), NVLink error counters that grew (warn); a counter lower than before
    is a reset and counts its new value, never a negative growth.
  - Writes C(history.json) into O(run_dir) (unless O(write_history=false)) - each GPU's last O(max_points) runs and the
    flags - which the checks and the report's trend charts read, so the report can be rendered again from the directory alone.
  - The store is safe for concurrent writers (two health runs at once) - WAL journal, a write lock taken at the start of each
    transaction, waits up to O(timeout) seconds for the other writer. Keep O(db) on a local filesystem (SQLite locking
    is not reliable over NFS).
  - The schema and the drift rules are documented in C(docs/burn-in.md) in the collection.
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  db:
    description:
      - The SQLite history file on the controller; created with its directory when missing.
    type: path
    required: true
  run_dir:
    description:
      - The results directory of this run.
    type: path
    required: true
  run_id:
    description:
      - The run's id in the history. Defaults to the C(run_id) of O(run_dir)'s C(run.json).
    type: str
  hosts:
    description:
      - The hosts to append. Defaults to every host of O(run_dir) with a burn-in record.
    type: list
    elements: str
  record_name:
    description:
      - The burn-in record to append per host (M(gpufleet.acceptance.burn_in_record)'s O(gpufleet.acceptance.burn_in_record#module:name)).
        Defaults to each host's last record.
    type: str
  clock_drop_share:
    description:
      - An SM clock median more than this share below the median of the GPU's previous runs is drift (warn).
    type: float
    default: 0.05
  min_previous_runs:
    description:
      - How many previous runs of the same kind a GPU needs before its clock is judged for drift.
    type: int
    default: 1
  max_points:
    description:
      - How many runs per GPU C(history.json) keeps for the trend charts (the store keeps every run).
    type: int
    default: 104
  timeout:
    description:
      - Seconds to wait for another writer's lock on O(db).
    type: float
    default: 60
  write_history:
    description:
      - Whether to write C(history.json) into O(run_dir).
    type: bool
    default: true
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.controller
attributes:
  check_mode:
    support: full
    description: Writes the history in check mode too (it is controller-side, not node state).
seealso:
  - module: gpufleet.acceptance.burn_in_record
  - module: gpufleet.acceptance.health_prometheus
"""

EXAMPLES = r"""
- name: Append this health check to the history and flag drift
  gpufleet.acceptance.health_history:
    db: "{{ gpufleet_history_db | default('~/.local/share/gpufleet/health.sqlite') }}"
    run_dir: "{{ gpufleet_run.run_dir }}"
  run_once: true
  delegate_to: localhost
  register: gpufleet_history

- name: Say what drifted
  ansible.builtin.debug:
    msg: "{{ gpufleet_history.flags_by_host[inventory_hostname] | default([]) | map(attribute='message') | list }}"
"""

RETURN = r"""
run_id:
  description: The run's id in the history.
  returned: success
  type: str
  sample: 20260131T120000Z
db:
  description: Absolute path of the history file.
  returned: success
  type: str
  sample: /home/buyer/.local/share/gpufleet/health.sqlite
rows:
  description: How many (host, GPU) rows were appended.
  returned: success
  type: int
  sample: 64
hosts:
  description: The hosts appended.
  returned: success
  type: list
  elements: str
  sample: [node-a, node-b]
flags:
  description: The drift flags - host, uuid, gpu (index), name, run_id, check (C(burn_in.drift)), status (V(warn) or V(fail)),
    metric (V(sm_clock) or the counter's column), message, measured, expected, source.
  returned: success
  type: list
  elements: dict
  sample: [{"host": "node-a", "gpu": 3, "uuid": "GPU-...", "status": "warn", "metric": "sm_clock",
            "message": "GPU 3 (GPU-...): SM clock median 1710 MHz in this burn-in, 13.6% below the median 1980 MHz of its 2 previous run(s)"}]
flags_by_host:
  description: RV(flags) grouped by host.
  returned: success
  type: dict
history_file:
  description: The C(history.json) written into the run directory, or null with O(write_history=false).
  returned: success
  type: str
  sample: /home/buyer/results/20260131T120000Z/history.json
"""
