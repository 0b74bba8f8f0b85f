#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: burn_in_record
short_description: Record a host's burn-in or health-check NVML samples in the run's results directory
description:
  - Controller-side only; the action plugin of the same name does the work and never contacts the node. Run it per host with
    C(delegate_to=localhost).
  - Copies the host's NVML samples (JSON Lines of schema C(gpufleet.nvml-samples/v1), written by M(gpufleet.acceptance.nvml_sample))
    to C(raw/<host>/burn_in/<name>.jsonl) in O(run_dir), atomically, and adds a burn-in record to C(hosts/<host>.json)
    (list C(burn_in)) - what the GPU load did (O(load)), when, the sampler's header and per-GPU summaries (temperature mean, min,
    max and p95, SM clock median, power mean, every error counter at the start and the end).
  - A record of the same O(name) on the same host is replaced (a rerun), others are kept.
  - Returns the burn-in flags at once (the same judging the C(burn_in) check family of M(gpufleet.acceptance.fleet_verdict)
    runs later over the directory, which is what the verdict and the report use).
  - The checks, their thresholds and the record's fields are documented in C(docs/burn-in.md) in the collection.
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  run_dir:
    description:
      - The results directory of this run (created by M(gpufleet.acceptance.results_record) with O(gpufleet.acceptance.results_record#module:phase=start)).
    type: path
    required: true
  host:
    description:
      - The host the samples belong to. Defaults to the task's C(inventory_hostname) (which stays the node's name under C(delegate_to)).
    type: str
  name:
    description:
      - The record's name, unique per host (a second burn-in of the same host in the same run needs another name).
    type: str
    default: burn_in
  kind:
    description:
      - V(burn_in) (samples taken under a GPU load) or V(health_check) (no load). Defaults to V(health_check) when O(load) is
        left out and V(burn_in) otherwise. Drift is only judged between runs of the same kind.
    type: str
    choices: [burn_in, health_check]
  samples:
    description:
      - The samples file on the controller (for example fetched from the node with M(ansible.builtin.fetch)). It is copied into
        O(run_dir); a file that already is C(raw/<host>/burn_in/<name>.jsonl) is kept as it is.
      - Give O(samples), O(sample_records) or O(sampler_error).
    type: path
  sample_records:
    description:
      - The samples when the sampler returned them inline instead of writing a file - the registered result of
        M(gpufleet.acceptance.nvml_sample) run without its C(output) option (its C(header), C(samples) and C(end) are used), or
        the list of the sampler's JSON objects (header first). Written as C(raw/<host>/burn_in/<name>.jsonl).
    type: raw
  sampler_error:
    description:
      - Why there are no samples (the sampler failed, for example C(libnvidia-ml.so.1 not found)). The record is written
        without samples and the check C(burn_in.samples) is an error naming this.
    type: str
  load:
    description:
      - What the GPU load did, or omitted for a health check that ran none.
      - C(tool) is V(dcgmi), V(gpu-burn), V(torch) or null when no load tool was available; C(outcome) is V(ok), V(skipped)
        (no tool) or how it failed (V(failed), V(hang), V(crash), V(missing_binary), ...); C(reason) says why in one line.
        Optional C(level) (the C(dcgmi diag -r) level), C(rc), C(command), C(raw_output_path), C(duration_s), C(job_id) are kept as given.
      - Judged by C(burn_in.load) - an outcome other than V(ok) fails (a diag failure), no tool warns.
    type: dict
  started:
    description:
      - When the burn-in started (ISO 8601 UTC). Defaults to now.
    type: str
  duration_s:
    description:
      - How long the burn-in ran, in seconds.
    type: float
  thresholds:
    description:
      - Overrides of the burn-in thresholds for the flags returned here (keys of C(docs/burn-in.md), for example
        C(clock_sag_share)). Defaults to the host's C(gpufleet_burn_in_thresholds), which is also what the verdict uses.
    type: dict
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.controller
attributes:
  check_mode:
    support: full
    description: Writes the results directory in check mode too (it is controller-side, not node state).
notes:
  - Run it with C(delegate_to=localhost) so that nothing is sent to the node.
seealso:
  - module: gpufleet.acceptance.health_history
  - module: gpufleet.acceptance.health_prometheus
  - module: gpufleet.acceptance.fleet_verdict
"""

EXAMPLES = r"""
- name: Fetch the samples the sampler wrote on the node
  ansible.builtin.fetch:
    src: /var/tmp/gpufleet-burn-in.jsonl
    dest: "{{ gpufleet_run.run_dir }}/incoming/{{ inventory_hostname }}.jsonl"
    flat: true

- name: Record the burn-in and print what it flags
  gpufleet.acceptance.burn_in_record:
    run_dir: "{{ gpufleet_run.run_dir }}"
    samples: "{{ gpufleet_run.run_dir }}/incoming/{{ inventory_hostname }}.jsonl"
    load:
      tool: dcgmi
      outcome: failed
      reason: "Diagnostic test failed: GPU 3 memory"
      level: 3
    duration_s: 1800
  delegate_to: localhost
  register: burn_in

- name: A health check's single tick, returned inline by the sampler
  gpufleet.acceptance.burn_in_record:
    run_dir: "{{ gpufleet_run.run_dir }}"
    name: health
    sample_records: "{{ nvml_tick }}"
  delegate_to: localhost
"""

RETURN = r"""
host:
  description: The host recorded.
  returned: success
  type: str
  sample: node-a
samples_path:
  description: The samples file, relative to the results directory; null when there are none (O(sampler_error)).
  returned: success
  type: str
  sample: raw/node-a/burn_in/burn_in.jsonl
record:
  description: The burn-in record written (without its per-GPU summaries, which are in RV(gpus)).
  returned: success
  type: dict
  sample: {"name": "burn_in", "kind": "burn_in", "samples_path": "raw/node-a/burn_in/burn_in.jsonl", "sampler_error": null,
           "load": {"tool": "gpu-burn", "outcome": "ok", "reason": ""}, "started": "2026-01-31T12:00:00Z", "duration_s": 1800.0,
           "recorded": "2026-01-31T12:31:00Z", "sampler": {"samples": 2880, "ticks": 360, "span_s": 1795.0, "interval_s": 5.0}}
gpus:
  description: Per GPU - index, uuid, name, samples, lost, temperature mean/min/max/p95 (C), SM clock median/min/max (MHz),
    power mean/max (W), and every counter's first and last value.
  returned: success
  type: list
  elements: dict
  sample: [{"index": 0, "uuid": "GPU-6b9a...", "name": "NVIDIA H100 80GB HBM3", "samples": 360, "lost": false, "temp_p95_c": 71,
            "sm_clock_median_mhz": 1980, "power_mean_w": 688.2}]
findings:
  description: Every burn-in check result (results schema - id, status, subject, measured, expected, threshold_source,
    message - plus C(gpu) on per-GPU findings).
  returned: success
  type: list
  elements: dict
flagged:
  description: One line per finding that warns, fails or is an error.
  returned: success
  type: list
  elements: str
  sample: ["fail burn_in.clock_sag: GPU 3 (GPU-...): SM clock more than 20% below the node's median in 41 of 360 ticks (11.4% of the run, limit 10%) ..."]
"""
