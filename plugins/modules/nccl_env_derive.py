#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nccl_env_derive
short_description: Derive each node's NCCL networking variables from the whole fleet's NIC facts
description:
  - Controller-side only; the action plugin of the same name does the work. Run it once (C(run_once=true)); it reads
    every host's C(gpufleet_nic) and C(gpufleet_host) facts (set by M(gpufleet.acceptance.nic_facts) and
    M(gpufleet.acceptance.host_facts)), C(gpufleet_topology) (the parsed C(nvidia-smi topo -m), when it was
    gathered) and C(gpufleet_claim) from hostvars. Nothing is changed anywhere.
  - C(NCCL_SOCKET_IFNAME) - the interface on the cluster network, written with C(=) (exact match) so C(eth1) cannot
    also match C(eth10). With O(cluster_cidr), the fastest up interface with an IPv4 address inside it; without, the
    fastest up interface in the IPv4 subnet every node shares with its peers (the subnet whose slowest node is
    fastest). Never C(lo), C(docker*), C(veth*), C(virbr*), C(br-*), or a link-local 169.254/16 address. A node
    whose addresses are unknown (C(ip) not installed) gets its fastest up interface and a warning.
  - C(NCCL_IB_DISABLE) - set per node - V(0) on each node with Active RDMA ports on its compute rails, V(1) on a node
    without one. A node without rails never turns InfiniBand/RoCE off for the others - it runs over sockets and the
    benchmarks leave it out of the RDMA runs (and fail it for that by name).
  - C(NCCL_IB_HCA) - the Active compute-rail ports as an exact list C(=mlx5_0:1,mlx5_3:1,...). Compute rails are the
    ports with the claim's compute NIC link layer and rate (C(gpufleet_claim.nics)), or else the fleet's most common
    link layer and rate among Active ports. Left out, each with its reason - ports of another rate or link layer
    (storage, front-end), bonds (C(mlx5_bond_*)), management devices such as Azure's C(mlx5_an0), ports not Active,
    and - when C(gpufleet_topology) maps the NICs to RDMA devices - ports at the compute rate whose device is not
    PIX or PXB to any GPU (a storage or front-end card off the GPUs' PCIe paths). When no port is PIX/PXB (a
    virtualised PCIe tree) or no topology is known, none is left out for its path and the explanation says so.
  - C(NCCL_IB_GID_INDEX) - RoCE only, and only when the installed NCCL predates automatic GID selection (2.21) or
    its version is unknown - the lowest index that is RoCE v2 with an IPv4-mapped GID on every rail port; when the
    GID tables do not show one, nothing is set and a warning says so.
  - Nodes whose fabric goes through an NCCL net plugin - AWS EFA (C(rdmap*)/C(efa*) devices or the C(efa) driver),
    GCP GPUDirect-TCPX/TCPXO (two or more gVNIC C(gve) interfaces) - are reported as such and get no variable.
  - Overrides win. An override of C(NCCL_SOCKET_IFNAME) or C(NCCL_IB_HCA) is checked with NCCL's own matching rules
    (prefix, C(=) exact for the whole list, C(^) exclude, C(^=), comma lists, C(:port)); one that matches no
    interface or RDMA port on a node, or only ones that are down, fails the task naming the host.
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  hosts:
    description:
      - The hosts to derive settings for (the fleet that runs NCCL together). Defaults to C(ansible_play_hosts).
    type: list
    elements: str
  cluster_cidr:
    description:
      - The cluster network (for example V(10.0.0.0/16)); C(NCCL_SOCKET_IFNAME) is then the interface with an
        address inside it on each node.
    type: str
  overrides:
    description:
      - C(NCCL_*) variables to set on every host instead of the derived ones; a value of V(null) removes the variable.
      - "Values may hold only letters, digits and C(_ . , : = ^ @ + / % -) (they are written into files a shell may read)."
    type: dict
  host_overrides:
    description:
      - Per host, C(NCCL_*) variables applied on top of O(overrides).
    type: dict
attributes:
  action:
    support: full
    description: All the work is done by the action plugin on the controller.
  bypass_host_loop:
    support: none
    description: Use C(run_once=true); it derives every host of the play at once.
  check_mode:
    support: full
    description: Pure derivation; the same in check mode.
  diff_mode:
    support: none
    description: Returns no diff.
  platform:
    support: full
    platforms: posix
    description: Runs on the controller.
notes:
  - The role C(gpufleet.acceptance.nccl_env) runs this module and writes the result to C(/etc/nccl.conf) and an
    env file.
seealso:
  - module: gpufleet.acceptance.nic_facts
  - module: gpufleet.acceptance.host_facts
  - name: NCCL environment variables
    description: What each variable means and how NCCL matches interface and HCA lists.
    link: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
"""

EXAMPLES = r"""
- name: Derive NCCL settings for the whole play
  gpufleet.acceptance.nccl_env_derive:
    cluster_cidr: 10.10.0.0/16
  run_once: true
  delegate_to: localhost
  register: nccl_env_derived

- name: Use the derived settings on each host
  ansible.builtin.set_fact:
    gpufleet_nccl_env: "{{ nccl_env_derived.hosts[inventory_hostname].env }}"

- name: Force two rails on every node (refused if a node has no such Active port)
  gpufleet.acceptance.nccl_env_derive:
    overrides:
      NCCL_IB_HCA: "=mlx5_0:1,mlx5_3:1"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
hosts:
  description:
    - Per host - C(env) (the variables to write, values as strings), C(why) (a sentence per variable), C(fabric)
      (V(ib), V(roce), V(socket), V(aws-efa), V(gcp-tcpx), V(gcp-tcpxo)), C(rails) (C(device:port) of the compute
      rails), C(excluded) (C(device:port) -> why it is not a rail), C(warnings), C(overridden) (the variables set
      by an override).
  returned: always
  type: dict
  sample:
    node-a:
      env: {"NCCL_SOCKET_IFNAME": "=ens1f0", "NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "=mlx5_0:1,mlx5_3:1"}
      why: {"NCCL_IB_DISABLE": "0: every node has Active RDMA ports on its compute rails"}
      fabric: ib
      rails: ["mlx5_0:1", "mlx5_3:1"]
      excluded: {"mlx5_1:1": "100 Gb/s Ethernet, the compute rails are 400 Gb/s InfiniBand: storage/front-end"}
      warnings: []
      overridden: []
lines:
  description: Per host, what it got and why, one line per variable, for a person to read.
  returned: always
  type: dict
  sample: {"node-a": ["node-a: fabric ib", "  NCCL_IB_DISABLE=0 - 0: every node has Active RDMA ports on its compute rails"]}
fleet:
  description: C(ib) (true when at least one node has Active compute rails and so C(NCCL_IB_DISABLE=0); the
    variable itself is per node, in C(hosts[host].env)), C(rdma_hosts) (the hosts with C(NCCL_IB_DISABLE=0), those
    the RDMA runs take), C(without_rails) (hosts without an Active compute rail, C(NCCL_IB_DISABLE=1), or with an
    NCCL net plugin), C(plugin_fabrics) (host -> fabric).
  returned: unless an input is invalid
  type: dict
  sample: {"ib": true, "rdma_hosts": ["node-a", "node-b"], "without_rails": ["node-c"], "plugin_fabrics": {}}
problems:
  description: Why the settings are refused, each naming its host; the task fails when there is one.
  returned: always
  type: list
  elements: str
  sample: ["node-b: override NCCL_IB_HCA==mlx5_7:1 matches no RDMA device/port on the node (NCCL matching rules; ports: mlx5_0:1)"]
"""
