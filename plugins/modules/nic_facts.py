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

import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.acceptance.plugins.module_utils.node_collect import (
    link_target,
    list_dir,
    read_text,
    real_path,
    run_tool,
)

# Only these interface names go to ethtool as an argv element (IFNAMSIZ is 16 with the NUL);
# a leading "-" would read as an ethtool option, so it is refused too.
SAFE_IFNAME = re.compile(r"^(?!-)[A-Za-z0-9_.:@-]{1,15}$")
PCI_ADDRESS = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")

NET_ATTRS = ("operstate", "carrier", "speed", "duplex", "mtu", "address", "type", "dev_port", "dev_id")
PCI_ATTRS = ("numa_node", "current_link_speed", "current_link_width", "max_link_speed", "max_link_width")
IB_ATTRS = ("fw_ver", "board_id", "hca_type", "node_guid", "sys_image_guid")
PORT_ATTRS = ("state", "phys_state", "rate", "link_layer", "lid", "sm_lid")
COUNTER_DIRS = ("counters", "hw_counters")
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


def _read_attrs(base, names):
    return dict((name, read_text(os.path.join(base, name))) for name in names)


def _pci_function(device_link):
    """The PCI function directory a ``device`` link leads to (walking up from e.g. virtio0)."""
    path = real_path(device_link)
    while path and path != os.path.dirname(path):
        if PCI_ADDRESS.match(os.path.basename(path)):
            return path
        path = os.path.dirname(path)
    return None


def _relative(path, root):
    if path is None:
        return None
    try:
        return os.path.relpath(path, root)
    except ValueError:
        return path


def _device_part(base):
    """PCI address, driver and PCIe/NUMA attributes behind ``base/device``."""
    device_link = os.path.join(base, "device")
    pci_dir = _pci_function(device_link)
    return {
        "device": os.path.lexists(device_link),
        "driver": link_target(os.path.join(device_link, "driver")),
        "pci_address": os.path.basename(pci_dir) if pci_dir else None,
        "pci": _read_attrs(pci_dir, PCI_ATTRS) if pci_dir else None,
    }


def read_net(sysfs_root):
    """One entry per ``class/net`` interface: attributes as read, device/PCI part, kind marks."""
    root = os.path.realpath(sysfs_root)
    entries = []
    for name in list_dir(os.path.join(sysfs_root, "class", "net")):
        base = os.path.join(sysfs_root, "class", "net", name)
        entry = {
            "name": name,
            "sysfs_path": _relative(real_path(base), root),
            "attrs": _read_attrs(base, NET_ATTRS),
            "bridge": os.path.isdir(os.path.join(base, "bridge")),
            "bonding": os.path.isdir(os.path.join(base, "bonding")),
            "tun": os.path.exists(os.path.join(base, "tun_flags")),
            "rdma_devices": list_dir(os.path.join(base, "device", "infiniband")),
        }
        entry.update(_device_part(base))
        entries.append(entry)
    return entries


def _read_gids(port_dir):
    """Non-zero GIDs with their type and netdev (reading the attributes of an unused GID fails)."""
    gids = []
    for index in list_dir(os.path.join(port_dir, "gids")):
        gid = read_text(os.path.join(port_dir, "gids", index))
        if gid is None or gid.strip() == ZERO_GID:
            continue
        gids.append({
            "index": index,
            "gid": gid.strip(),
            "type": read_text(os.path.join(port_dir, "gid_attrs", "types", index)),
            "ndev": read_text(os.path.join(port_dir, "gid_attrs", "ndevs", index)),
        })
    return gids


def read_infiniband(sysfs_root):
    """One entry per ``class/infiniband`` device with its ports, counters and GIDs."""
    devices = []
    for name in list_dir(os.path.join(sysfs_root, "class", "infiniband")):
        base = os.path.join(sysfs_root, "class", "infiniband", name)
        entry = {
            "name": name,
            "attrs": _read_attrs(base, IB_ATTRS),
            "netdevs": list_dir(os.path.join(base, "device", "net")),
            "ports": [],
        }
        entry.update(_device_part(base))
        for port in list_dir(os.path.join(base, "ports")):
            port_dir = os.path.join(base, "ports", port)
            port_entry = {"port": port, "attrs": _read_attrs(port_dir, PORT_ATTRS), "gids": _read_gids(port_dir)}
            for counters in COUNTER_DIRS:
                names = list_dir(os.path.join(port_dir, counters))
                port_entry[counters] = dict((c, read_text(os.path.join(port_dir, counters, c))) for c in names)
            entry["ports"].append(port_entry)
        devices.append(entry)
    return devices


def collect(sysfs_root, ethtool_path, ibstat_path, ibv_devinfo_path, ip_path, timeout):
    """Everything this phase needs from the node, in one call."""
    net = read_net(sysfs_root)
    raw = {
        "sysfs": {"root": sysfs_root, "net": net, "infiniband": read_infiniband(sysfs_root)},
        "ethtool": {},
        "ethtool_driver": {},
        "skipped_names": [],
    }
    for entry in net:
        if not entry["device"]:
            continue
        name = entry["name"]
        if not SAFE_IFNAME.match(name):
            raw["skipped_names"].append(name)
            continue
        raw["ethtool"][name] = run_tool([ethtool_path, name], timeout)
        if raw["ethtool"][name]["error"] == "not_found":
            break
        raw["ethtool_driver"][name] = run_tool([ethtool_path, "-i", name], timeout)
    raw["ibstat"] = run_tool([ibstat_path], timeout)
    raw["ibv_devinfo"] = run_tool([ibv_devinfo_path], timeout)
    raw["ip_addr"] = run_tool([ip_path, "-j", "addr"], timeout)
    return raw


def main():
    module = AnsibleModule(
        argument_spec={
            "sysfs_root": {"type": "path", "default": "/sys"},
            "ethtool_path": {"type": "str", "default": "ethtool"},
            "ibstat_path": {"type": "str", "default": "ibstat"},
            "ibv_devinfo_path": {"type": "str", "default": "ibv_devinfo"},
            "ip_path": {"type": "str", "default": "ip"},
            "timeout": {"type": "int", "default": 30},
        },
        supports_check_mode=True,
    )
    params = module.params
    if not os.path.isdir(os.path.join(params["sysfs_root"], "class", "net")):
        module.fail_json(msg="no class/net under %s: is sysfs mounted there?" % params["sysfs_root"], raw={})
    raw = collect(params["sysfs_root"], params["ethtool_path"], params["ibstat_path"], params["ibv_devinfo_path"], params["ip_path"],
                  params["timeout"])
    module.exit_json(changed=False, raw=raw)


if __name__ == "__main__":
    main()
