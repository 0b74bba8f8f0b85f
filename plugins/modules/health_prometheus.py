#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: health_prometheus
short_description: Render a host's latest NVML metrics as Prometheus text for node_exporter's textfile collector
description:
  - Controller-side only; the action plugin of the same name does the work, writes nothing and never contacts the node.
    Run it per host with C(delegate_to=localhost), then write RV(content) onto the node with M(ansible.builtin.copy)
    (which writes atomically - a temporary file renamed over the target - so node_exporter never reads half a file) into
    its textfile-collector directory, as C(gpufleet.prom).
  - Reads the host's burn-in record (M(gpufleet.acceptance.burn_in_record)) and its samples from O(run_dir) and renders the
    last sample of each GPU in the Prometheus text exposition format - C(gpufleet_gpu_temperature_celsius),
    C(gpufleet_gpu_sm_clock_hertz), C(gpufleet_gpu_power_watts) (gauges), C(gpufleet_gpu_clock_event_seconds_total{reason}),
    C(gpufleet_gpu_ecc_errors_total{scope,type}), C(gpufleet_gpu_nvlink_errors_total{type}) (counters, since the driver
    loaded), C(gpufleet_gpu_lost), C(gpufleet_gpu_findings{status}) (the GPU's burn-in and drift findings) and
    C(gpufleet_health_last_sample_timestamp_seconds) - each with C(# HELP) and C(# TYPE), per-GPU labels C(gpu), C(uuid), C(name).
  - Values NVML did not give are left out, never written as 0. Label values from the node (a GPU's name) are escaped as
    the format requires. The output passes C(promtool check metrics).
  - The metrics are listed in C(docs/burn-in.md) in the collection.
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  run_dir:
    description:
      - The results directory of this run.
    type: path
    required: true
  host:
    description:
      - The host to render. Defaults to the task's C(inventory_hostname).
    type: str
  record_name:
    description:
      - The burn-in record to render. Defaults to the host's last record.
    type: str
  thresholds:
    description:
      - Burn-in thresholds for C(gpufleet_gpu_findings) when the host has not been judged yet (otherwise its judged C(burn_in)
        checks are counted). Defaults to the host's C(gpufleet_burn_in_thresholds).
    type: dict
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.controller
attributes:
  check_mode:
    support: full
    description: Only reads; the same in check mode.
seealso:
  - module: gpufleet.acceptance.burn_in_record
  - module: gpufleet.acceptance.health_history
  - name: Prometheus text exposition format
    description: The format and its escaping rules.
    link: https://prometheus.io/docs/instrumenting/exposition_formats/
"""

EXAMPLES = r"""
- name: Render this host's metrics
  gpufleet.acceptance.health_prometheus:
    run_dir: "{{ gpufleet_run.run_dir }}"
  delegate_to: localhost
  register: gpufleet_prom

- name: Write them into node_exporter's textfile-collector directory
  ansible.builtin.copy:
    content: "{{ gpufleet_prom.content }}"
    dest: "{{ gpufleet_textfile_dir | default('/var/lib/prometheus/node-exporter') }}/{{ gpufleet_prom.file_name }}"
    mode: "0644"
"""

RETURN = r"""
host:
  description: The host rendered.
  returned: success
  type: str
  sample: node-a
content:
  description: The Prometheus exposition text.
  returned: success
  type: str
  sample: "# HELP gpufleet_gpu_temperature_celsius GPU core temperature (NVML, the latest sample).\n# TYPE gpufleet_gpu_temperature_celsius gauge\n..."
gpus:
  description: How many GPUs the text covers.
  returned: success
  type: int
  sample: 8
file_name:
  description: The file name to use in the textfile-collector directory.
  returned: success
  type: str
  sample: gpufleet.prom
"""
