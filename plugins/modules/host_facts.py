#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_facts
short_description: Collect the host preconditions that silently slow GPU nodes down
description:
  - Reads, in one call, what decides whether GPUDirect and RDMA can run at full speed on a node
    and returns it raw; the action plugin of the same name parses it on the controller and sets
    C(gpufleet_host).
  - Files read under O(procfs_root) - C(modules), C(driver/nvidia/version), C(cmdline),
    C(self/limits) (the collector's own limits), C(sys/kernel/osrelease), C(uptime) - and under
    O(sysfs_root) - the NVIDIA GPUs (C(bus/pci/devices/*/vendor) C(0x10de), C(class) C(0x0300xx) or
    C(0x0302xx)) and RDMA devices (C(class/infiniband/*/device)) with the chain of PCI bridges
    above each, C(class/iommu/*) and C(kernel/iommu_groups/*/type).
  - Tools run as argv lists with C(LC_ALL=C) and a timeout each, never through a shell -
    C(lspci -vvv) (ACS control of the bridges), C(journalctl -k --no-pager -o short-iso) or, when
    it is absent, fails or prints no kernel line, C(dmesg --time-format iso) (Xid events), and when
    present C(ofed_info -s), C(mpirun --version), C(ldconfig -p) (the C(libnccl.so) link is resolved
    on the node to its versioned file name).
  - Also returns the memlock limit of the collector process as Python's C(resource.getrlimit) reads it, and
    what C(os.uname) says.
  - Nothing is changed on the node. A missing tool or unreadable file is reported, not fatal.
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  sysfs_root:
    description:
      - Where sysfs is mounted on the node.
    type: path
    default: /sys
  procfs_root:
    description:
      - Where procfs is mounted on the node.
    type: path
    default: /proc
  lspci_path:
    description:
      - Name or path of C(lspci) on the node.
    type: str
    default: lspci
  journalctl_path:
    description:
      - Name or path of C(journalctl) on the node.
    type: str
    default: journalctl
  dmesg_path:
    description:
      - Name or path of C(dmesg) on the node; used when C(journalctl) gives no kernel line.
    type: str
    default: dmesg
  ofed_info_path:
    description:
      - Name or path of C(ofed_info) (MLNX_OFED / DOCA-OFED); optional on the node.
    type: str
    default: ofed_info
  mpirun_path:
    description:
      - Name or path of C(mpirun); optional on the node.
    type: str
    default: mpirun
  ldconfig_path:
    description:
      - Name or path of C(ldconfig), asked for the C(libnccl.so) it would load; optional.
    type: str
    default: ldconfig
  nccl_include_dirs:
    description:
      - Directories searched for C(nccl.h) when C(ldconfig) names no versioned C(libnccl.so).
    type: list
    elements: path
    default: [/usr/include, /usr/local/include, /usr/local/cuda/include, /opt/nvidia/nccl/include]
  timeout:
    description:
      - Seconds each tool may run before it is stopped.
    type: int
    default: 60
  kernel_log_lines:
    description:
      - Only the last this many lines of the kernel log are returned and parsed.
    type: int
    default: 20000
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.collector
  - gpufleet.acceptance.fact_phase
attributes:
  facts:
    support: full
    description: Sets C(gpufleet_host).
notes:
  - Run it with C(become=true). As an ordinary user C(lspci) hides the PCI capabilities, so the
    ACS state is reported as C(unknown) (never as disabled), and the kernel log may be unreadable
    (C(dmesg_restrict), journal permissions), reported as C(kernel_log) unreadable, never as no Xids.
  - The memlock limit is the collector's own, that is of the Ansible session. Jobs started by a
    scheduler (Slurm, PBS) inherit the scheduler daemon's limit, which can differ.
  - Parsing happens on the controller; the node needs only its OS Python (3.8 or later).
seealso:
  - module: gpufleet.acceptance.gpu_topology_facts
  - module: gpufleet.acceptance.nic_facts
"""

EXAMPLES = r"""
- name: Read the host preconditions of every rented node
  gpufleet.acceptance.host_facts:
  become: true

- name: Keep more of a long kernel log, and use a driver container's tools
  gpufleet.acceptance.host_facts:
    kernel_log_lines: 100000
    lspci_path: /usr/sbin/lspci
    nccl_include_dirs: [/opt/nccl/include]
  become: true

- name: Refuse nodes without GPUDirect RDMA
  ansible.builtin.assert:
    that: gpufleet_host.gpudirect_rdma.ok
    fail_msg: "{{ gpufleet_host.gpudirect_rdma.reasons }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts set by the action plugin.
  returned: success
  type: complex
  contains:
    gpufleet_host:
      description: The host preconditions and the findings that follow from them.
      returned: success
      type: complex
      contains:
        kernel:
          description: Kernel release (from C(osrelease), else C(os.uname())), its major and minor, machine.
          type: dict
          sample: {"release": "5.15.0-112-generic", "major": 5, "minor": 15, "machine": "x86_64"}
        driver:
          description: NVIDIA driver version and whether the open kernel module is loaded (None when unknown).
          type: dict
          sample: {"version": "570.158.01", "open_kernel_module": true, "nvrm": "NVIDIA UNIX Open Kernel Module for x86_64 ...", "reason": null}
        gpudirect_rdma:
          description:
            - C(peermem_loaded) (nvidia_peermem or nv_peer_mem in C(/proc/modules)), C(dmabuf_possible)
              (kernel 5.12 or later and the open kernel module), C(ok) (either) and the C(reasons) against.
          type: dict
          sample: {"peermem_loaded": true, "peermem_module": "nvidia_peermem", "dmabuf_possible": true, "ok": true, "reasons": []}
        acs:
          description:
            - C(state) is C(disabled), C(enabled_on_path) or C(unknown) (with C(reason)); the bridges
              between the GPUs/RDMA devices and the root ports whose ACS control redirects peer traffic.
          type: dict
          sample:
            state: disabled
            bridges_with_acs_on_path: []
            bridges_on_path: ["0000:15:01.0", "0000:16:00.0", "0000:17:01.0"]
            unknown_bridges: []
            reason: null
        iommu:
          description: C(mode) (C(off), C(passthrough), C(translated), C(unknown)), IOMMU units, group count and types, command-line flags.
          type: dict
          sample: {"mode": "passthrough", "enabled": true, "passthrough": true, "units": ["dmar0"], "groups": 2,
                   "group_types": {"identity": 2}, "cmdline_flags": {"intel_iommu": "on", "iommu": "pt"}, "reason": null}
        memlock:
          description: The collector's C(Max locked memory) in bytes (None when unlimited); C(ok) only when unlimited.
          type: dict
          sample: {"soft": 65536, "hard": 65536, "unit": "bytes", "unlimited": false, "ok": false, "source": "limits"}
        uptime_s:
          description:
            - Seconds since boot (the first field of C(/proc/uptime)); None when the file is missing, unreadable or
              not a number.
            - The time base of the GPUs' cumulative counters - each starts after boot, so count / uptime is a lower
              bound of its rate.
          type: float
          sample: 350735.47
        versions:
          description: C(ofed) (C(ofed_info -s)), C(mpi) (first line of C(mpirun --version)), C(nccl); None when absent.
          type: dict
          sample: {"ofed": "MLNX_OFED_LINUX-23.10-1.1.9.0", "mpi": {"text": "mpirun (Open MPI) 4.1.5", "version": "4.1.5"},
                   "nccl": {"version": "2.18.3", "source": "/usr/lib/x86_64-linux-gnu/libnccl.so.2"}}
        xid:
          description:
            - NVIDIA Xid events of the kernel log - C(state) C(read) or C(unreadable) (with C(reason)),
              the last 50 C(events), C(events_total), C(counts) per Xid, C(fallen_off_bus) addresses,
              C(critical) (Xids 46, 48, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140 - those NVIDIA's Xid
              catalog answers with a GPU reset, reboot or support case), C(peermem_errors).
          type: dict
          sample:
            state: read
            source: dmesg
            counts: {"48": 1, "63": 1, "94": 9}
            critical: [{"xid": 48, "count": 1, "meaning": "double-bit ECC error (DBE)"}]
            fallen_off_bus: []
            peermem_errors: 30
        endpoints:
          description: The GPUs and RDMA devices found in sysfs, with the PCI bridges above each (root port first).
          type: list
          elements: dict
          sample: [{"kind": "gpu", "name": "0000:19:00.0", "address": "0000:19:00.0", "bridges": ["0000:15:01.0", "0000:16:00.0", "0000:17:01.0"]}]
        summary:
          description: One-line findings, empty when nothing needs attention.
          type: list
          elements: str
          sample: ["memlock: soft limit 65536 bytes, not unlimited (RDMA needs unlimited)", "xid: critical 48 x1, 63 x1, 94 x9"]
raw:
  description: What the node returned, for the results directory and dispute bundles.
  returned: always
  type: dict
  contains:
    files:
      description: Per file read - C(cmd) (its path), C(rc) (0 when read), C(stdout) (its text), C(error).
      type: dict
    lspci:
      description: C(cmd), C(rc), C(stdout), C(stderr), C(duration_s), C(error) of C(lspci -vvv).
      type: dict
    journalctl:
      description: The same for C(journalctl -k --no-pager -o short-iso); C(dropped_lines) counts lines cut by O(kernel_log_lines).
      type: dict
    dmesg:
      description: The same for C(dmesg --time-format iso), or None when journalctl gave kernel lines.
      type: dict
    endpoints:
      description: GPUs and RDMA devices found in sysfs with their PCI address, sysfs path and upstream bridges.
      type: list
      elements: dict
"""

from ansible_collections.gpufleet.acceptance.plugins.module_utils.fact_module import run_fact_module

# The node-side code lives in module_utils/host_collect.py, shared with node_facts (all groups in one run);
# its names stay importable from here.
from ansible_collections.gpufleet.acceptance.plugins.module_utils.host_collect import (  # noqa: F401 pylint: disable=unused-import
    ARGUMENT_SPEC,
    collect,
    nccl_headers,
    nccl_libraries,
    read_endpoints,
    read_entry,
    read_iommu,
    read_memlock_rlimit,
    run,
    tail_lines,
)


def main():
    run_fact_module(ARGUMENT_SPEC, run)


if __name__ == "__main__":
    main()
