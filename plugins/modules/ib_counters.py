#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ib_counters
short_description: Read the InfiniBand/RDMA port counters of a node, before and after a network benchmark
description:
  - Reads, in one call, every C(class/infiniband/<device>/ports/<port>/counters/*) and C(hw_counters/*) file under
    O(sysfs_root), with each port's C(state) and C(link_layer). Nothing is run; only sysfs files are read.
  - With the action plugin of the same name the values are turned into numbers on the controller and, given O(before)
    (the RV(snapshot) of an earlier call), O(run_dir) and O(benchmark), a benchmark record of kind C(ib_counters) with
    both snapshots is written into the results directory, in the record of O(record_host). The check
    C(bench_network.ib_counters) fails a node whose IB error counter grew between the two, naming the port.
  - A node without C(class/infiniband) (no RDMA device) returns no ports; then no record is written.
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  sysfs_root:
    description:
      - Where sysfs is mounted.
    type: path
    default: /sys
  devices:
    description:
      - Read only these RDMA devices (for example V(mlx5_0)). Default every device under C(class/infiniband).
    type: list
    elements: str
  before:
    description:
      - Action plugin only. The RV(snapshot) an earlier call returned; with O(run_dir), the record holds both.
    type: dict
  benchmark:
    description:
      - Action plugin only. The network benchmark the two snapshots surround (for example V(ib_write_bw)); the record's C(parsed.benchmark).
    type: str
  run_dir:
    description:
      - Action plugin only. The results directory to record in. Nothing is recorded without it or without O(before).
    type: path
  record_host:
    description:
      - Action plugin only. The host whose record gets the snapshots. Defaults to C(inventory_hostname).
    type: str
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.collector
notes:
  - Stdlib only, Python 3.8 or later on the node; the numbers are read on the controller.
  - A counter file that cannot be read, or reads C(N/A (no PMA)), is reported as null and never compared.
seealso:
  - module: gpufleet.acceptance.bench_run
  - module: gpufleet.acceptance.nic_facts
"""

EXAMPLES = r"""
- name: IB counters before the perftest runs
  gpufleet.acceptance.ib_counters:
  register: counters_before

- name: Run ib_write_bw here
  ansible.builtin.debug:
    msg: the benchmark

- name: IB counters after, recorded with the ones before
  gpufleet.acceptance.ib_counters:
    before: "{{ counters_before.snapshot }}"
    benchmark: ib_write_bw
    run_dir: results/acceptance-2026-01
"""

RETURN = r"""
ports:
  description: One entry per RDMA port as read from sysfs (strings as read, null where a file could not be read).
  returned: always
  type: list
  elements: dict
  sample:
    - device: mlx5_0
      port: "1"
      state: "4: ACTIVE"
      link_layer: InfiniBand
      counters:
        symbol_error: "0"
        port_rcv_errors: "14"
      hw_counters:
        out_of_sequence: "0"
snapshot:
  description:
    - Action plugin. The numbers of RV(ports) with when they were read, C(counters) and C(hw_counters) as
      C(<device>/<port>) to counter name to an integer, or null when unreadable; pass it as O(before) of the later call.
  returned: success
  type: dict
  sample:
    taken: "2026-01-31T12:00:00Z"
    counters:
      mlx5_0/1:
        symbol_error: 0
    hw_counters:
      mlx5_0/1:
        out_of_sequence: 0
record:
  description: Action plugin. The benchmark record written (null when nothing was recorded).
  returned: success
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.acceptance.plugins.module_utils.node_collect import list_dir, read_text

PORT_ATTRS = ("state", "link_layer")
COUNTER_DIRS = ("counters", "hw_counters")
MAX_COUNTER_BYTES = 64


def read_ports(sysfs_root, devices=None):
    """Every port of every (chosen) device under ``class/infiniband``, with its raw counter files."""
    base = os.path.join(sysfs_root, "class", "infiniband")
    wanted = set(devices) if devices else None
    ports = []
    for device in list_dir(base):
        if wanted is not None and device not in wanted:
            continue
        for port in list_dir(os.path.join(base, device, "ports")):
            port_dir = os.path.join(base, device, "ports", port)
            entry = {"device": device, "port": port}
            for attr in PORT_ATTRS:
                entry[attr] = read_text(os.path.join(port_dir, attr))
            for kind in COUNTER_DIRS:
                entry[kind] = dict((name, read_text(os.path.join(port_dir, kind, name), MAX_COUNTER_BYTES))
                                   for name in list_dir(os.path.join(port_dir, kind)))
            ports.append(entry)
    return ports


def main():
    module = AnsibleModule(
        argument_spec={
            "sysfs_root": {"type": "path", "default": "/sys"},
            "devices": {"type": "list", "elements": "str"},
            "before": {"type": "dict"},
            "benchmark": {"type": "str"},
            "run_dir": {"type": "path"},
            "record_host": {"type": "str"},
        },
        supports_check_mode=True,
    )
    params = module.params
    if not os.path.isdir(params["sysfs_root"]):
        module.fail_json(msg="sysfs_root %s is not a directory" % params["sysfs_root"])
    module.exit_json(changed=False, ports=read_ports(params["sysfs_root"], params["devices"]))


if __name__ == "__main__":
    main()
