#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nic_facts
short_description: Collect the network interfaces and RDMA devices of a node, with link, PCIe and error-counter state
description:
  - Reads C(class/net) and C(class/infiniband) under O(sysfs_root) and runs C(ethtool IFACE) and
    C(ethtool -i IFACE) for every physical interface, C(ibstat), C(ibv_devinfo) and C(ip -j addr),
    each as an argv list with C(LC_ALL=C) and a timeout, in one module call. The node returns what
    it read; the action plugin of the same name parses and merges it on the controller.
  - Per interface the facts give whether it is virtual (and why), operstate, carrier, speed, MTU, MAC,
    NUMA node, PCI address, driver, the PCI function's own PCIe generation and width (current and
    maximum), the parsed C(ethtool) output and the addresses.
  - Per RDMA device they give firmware, board id, HCA type, node GUID, and per port the state,
    physical state, rate, link layer, LIDs, the netdev, the non-zero GIDs with their RoCE type, the
    port counters (C(counters/) and C(hw_counters/)) and the non-zero error counters.
  - A tool that is not installed is not an error (its part of the facts is null and
    C(summary.tools_missing) names it). A tool that runs and fails, or prints what cannot be read,
    fails the task with the host, the command and what it printed; C(ethtool) failing on one
    interface only marks that interface (C(ethtool_error)).
  - Interface names come from the node and are not trusted; only names matching
    C(^[A-Za-z0-9_.:@-]{1,15}$) and not starting with C(-) are passed to C(ethtool), as one argv
    element, never through a shell.
  - Nothing is changed on the node.
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  sysfs_root:
    description:
      - Directory holding C(class/net) and C(class/infiniband).
    type: path
    default: /sys
  procfs_root:
    description:
      - Where procfs is mounted; a bond's C(net/bonding/<name>) under it gives its mode, active aggregator and each
        member's link state and speed.
    type: path
    default: /proc
  ethtool_path:
    description:
      - Name or path of C(ethtool) on the node.
    type: str
    default: ethtool
  ibstat_path:
    description:
      - Name or path of C(ibstat) on the node (infiniband-diags).
    type: str
    default: ibstat
  ibv_devinfo_path:
    description:
      - Name or path of C(ibv_devinfo) on the node (rdma-core / libibverbs-utils).
    type: str
    default: ibv_devinfo
  ip_path:
    description:
      - Name or path of C(ip) on the node (iproute2, with JSON output support).
    type: str
    default: ip
  timeout:
    description:
      - Seconds each tool invocation may run before it is stopped.
    type: int
    default: 30
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.collector
  - gpufleet.acceptance.fact_phase
attributes:
  facts:
    support: full
    description: Sets C(gpufleet_nic).
notes:
  - Parsing happens on the controller, so the node needs only its OS Python (3.8 or later).
  - Run as root for complete C(ethtool) output (as a user it may print C(netlink error) lines).
  - The module itself fails only when O(sysfs_root) has no C(class/net) directory.
  - When sysfs lists no RDMA device, what C(ibstat) and C(ibv_devinfo) print (C(No IB devices found)
    and their exit code) is not read, since there is nothing to merge.
seealso:
  - module: gpufleet.acceptance.gpu_topology_facts
"""

EXAMPLES = r"""
- name: Read the NICs and RDMA devices of every rented node
  gpufleet.acceptance.nic_facts:

- name: Use tools from a container image and a longer timeout
  gpufleet.acceptance.nic_facts:
    ibstat_path: /opt/mellanox/bin/ibstat
    ethtool_path: /usr/sbin/ethtool
    timeout: 60

- name: Show the RDMA ports that are not Active
  ansible.builtin.debug:
    msg: "{{ gpufleet_nic.summary.rdma_inactive_ports }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts set by the action plugin.
  returned: success
  type: complex
  contains:
    gpufleet_nic:
      description: Interfaces, RDMA devices and a summary.
      returned: success
      type: complex
      contains:
        interfaces:
          description:
            - One entry per C(class/net) interface, in name order. C(operstate) as sysfs spells it
              (C(up), C(down), C(unknown)); C(speed_mbps) null when sysfs says unknown (C(-1)) or the
              file cannot be read (link down); C(pcie) null without a PCI function; C(ipv4)/C(ipv6)
              null when C(ip) is not installed; C(ethtool) the C(ethtool) parser's result or null.
          type: list
          elements: dict
          sample:
            - name: ibp26s0
              virtual: false
              virtual_kind: null
              virtual_reason: null
              operstate: up
              carrier: true
              speed_mbps: 400000
              duplex: null
              mtu: 4092
              mac: "00:00:10:29:fe:80:00:00:00:00:00:00:58:a2:e1:03:00:a7:82:0e"
              arp_type: 32
              numa_node: 0
              pci_address: "0000:1a:00.0"
              driver: mlx5_core
              pcie: {"gen_current": 5, "width_current": 16, "gen_max": 5, "width_max": 16,
                     "speed_current": "32.0 GT/s PCIe", "speed_max": "32.0 GT/s PCIe"}
              ethtool: null
              ethtool_driver: null
              ethtool_error: null
              ethtool_driver_error: null
              ipv4: []
              ipv6: []
              rdma_device: mlx5_0
              rdma_port: 1
        rdma:
          description:
            - One entry per RDMA device (sysfs C(class/infiniband), plus any only C(ibstat) or
              C(ibv_devinfo) listed). Port C(state) in ibstat's spelling (C(Active), C(Down), ...);
              C(gids) skips all-zero GIDs; C(errors) holds the non-zero IB error counters;
              C(sources) names where the values came from.
          type: list
          elements: dict
          sample:
            - device: mlx5_0
              fw_ver: "28.41.1000"
              board_id: MT_0000000838
              node_guid: "58a2:e103:00a7:820e"
              sys_image_guid: "58a2:e103:00a7:820e"
              hca_type: MT4129
              pci_address: "0000:1a:00.0"
              netdevs: [ibp26s0]
              sources: [sysfs, ibstat]
              ports:
                - port: 1
                  state: Active
                  state_code: 4
                  physical_state: LinkUp
                  physical_state_code: 5
                  rate_gbps: 400
                  rate_text: 4X NDR
                  link_layer: InfiniBand
                  lid: 128
                  sm_lid: 1
                  netdev: ibp26s0
                  gids: []
                  counters: {"symbol_error": 0, "link_downed": 0, "port_rcv_errors": 14}
                  hw_counters: {"roce_adp_retrans": 3}
                  errors: {"port_rcv_errors": 14}
                  port_guid: "58a2:e103:00a7:820e"
                  capability_mask: "0xa751e848"
                  sources: [sysfs, ibstat]
        summary:
          description: Counts and judgement-ready lists.
          type: dict
          sample:
            interface_count: 12
            physical_count: 10
            virtual_count: 2
            physical_up: [enp1s0f0, ibp26s0]
            physical_down: [enp1s0f1]
            fastest_mbps: 400000
            pcie_degraded: [enp1s0f0, enp1s0f1]
            ethtool_failed: []
            rdma_device_count: 9
            rdma_port_count: 9
            rdma_active_ports: ["mlx5_0/1"]
            rdma_inactive_ports: []
            rdma_ports_with_errors: ["mlx5_0/1"]
            tools_missing: [ethtool, ibv_devinfo, ip]
raw:
  description: What the node read and printed, for the results directory and dispute bundles.
  returned: always
  type: dict
  contains:
    sysfs:
      description: C(net) and C(infiniband) lists of what was read under O(sysfs_root) (strings as read, null when unreadable).
      type: dict
    ethtool:
      description: Per interface name, C(cmd), C(rc), C(stdout), C(stderr), C(duration_s), C(error) of C(ethtool IFACE).
      type: dict
    ethtool_driver:
      description: Per interface name, the same for C(ethtool -i IFACE).
      type: dict
    skipped_names:
      description: Interface names not passed to C(ethtool) because they do not look like interface names.
      type: list
      elements: str
    ibstat:
      description: C(cmd), C(rc), C(stdout), C(stderr), C(duration_s), C(error) of C(ibstat).
      type: dict
    ibv_devinfo:
      description: The same for C(ibv_devinfo).
      type: dict
    ip_addr:
      description: The same for C(ip -j addr).
      type: dict
"""

from ansible_collections.gpufleet.acceptance.plugins.module_utils.fact_module import run_fact_module

# The node-side code lives in module_utils/nic_collect.py, shared with node_facts (all groups in one run);
# its names stay importable from here.
from ansible_collections.gpufleet.acceptance.plugins.module_utils.nic_collect import (  # noqa: F401 pylint: disable=unused-import
    ARGUMENT_SPEC,
    SAFE_IFNAME,
    collect,
    read_infiniband,
    read_net,
    run,
)


def main():
    run_fact_module(ARGUMENT_SPEC, run)


if __name__ == "__main__":
    main()
