#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: bench_record
short_description: Record a benchmark that was skipped on a host, or the failed side of a pair run
description:
  - Controller-side only; the action plugin of the same name writes one benchmark record (C(docs/results-schema.md)) into
    the results directory O(run_dir), in the record of O(record_host), and never contacts the node.
  - For a benchmark that was asked for but does not apply to the host (no second rack for a concurrent C(iperf3), no active
    RDMA rail for C(ib_write_bw)), O(outcome=skipped) with O(reason); the C(bench_network) checks report it as SKIP with
    that reason.
  - For the side of a pair run whose own output is not the measurement (the server of C(ib_write_bw) or C(iperf3)) when it
    did not end well, O(result) is the registered result of M(gpufleet.acceptance.bench_run), whose outcome, reason,
    exit status, command, start and duration are recorded (for example V(missing_binary) on the server).
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  run_dir:
    description:
      - The results directory of this run.
    type: path
    required: true
  kind:
    description:
      - The record's C(kind).
    type: str
    required: true
    choices: [allreduce_single, allreduce_multi, allreduce_pair, iperf3, iperf3_concurrent, ib_write_bw, ib_write_lat,
              nvbandwidth, ib_counters, gpu_compute]
  name:
    description:
      - The record's C(name). Defaults to O(kind) (C(iperf3 concurrent) for V(iperf3_concurrent)).
    type: str
  record_host:
    description:
      - The host whose record gets it. Defaults to C(inventory_hostname).
    type: str
  hosts:
    description:
      - The inventory names of the hosts the run involves. Defaults to O(record_host) alone.
    type: list
    elements: str
  outcome:
    description:
      - The outcome to record when O(result) is not given.
    type: str
    choices: [skipped, hang, missing_binary, launcher_error, crash, failed, unreachable]
    default: skipped
  reason:
    description:
      - Why, in one line. Required for V(skipped); with O(result), its reason is used when this is left out.
    type: str
  result:
    description:
      - A registered result of M(gpufleet.acceptance.bench_run); its C(outcome), C(reason), C(rc), C(cmd), C(started),
        C(duration_s) and C(job_id) are recorded.
    type: dict
  repeat:
    description:
      - Which repeat this is (1 for the first).
    type: int
    default: 1
  round:
    description:
      - The round of the pair schedule.
    type: int
  group:
    description:
      - A label for runs that belong together (rack pair, HCA pair).
    type: str
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.controller
attributes:
  check_mode:
    support: full
    description: Writes the results directory in check mode too (it is controller-side, not node state).
notes:
  - Run it with C(delegate_to=localhost); nothing is sent to the node.
seealso:
  - module: gpufleet.acceptance.bench_run
"""

EXAMPLES = r"""
- name: No second rack labelled, so no concurrent iperf3 for this host
  gpufleet.acceptance.bench_record:
    run_dir: results/acceptance-2026-01
    kind: iperf3_concurrent
    reason: "concurrent iperf3 needs hosts labelled with at least two racks (gpufleet_claim.rack or gpufleet_rack)"
  delegate_to: localhost

- name: The ib_write_bw server could not start
  gpufleet.acceptance.bench_record:
    run_dir: results/acceptance-2026-01
    kind: ib_write_bw
    hosts: [node-a, node-b]
    result: "{{ perftest_server_result }}"
  delegate_to: localhost
  when: perftest_server_result.outcome | default('ok') != 'ok'
"""

RETURN = r"""
record:
  description: The benchmark record written.
  returned: success
  type: dict
  sample: {"name": "iperf3 concurrent", "kind": "iperf3_concurrent", "outcome": "skipped", "reason": "only one rack labelled: A"}
"""
