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
    C(self/limits) (the collector's own limits), C(sys/kernel/osrelease) - and under
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

import errno
import os
import re

try:
    import resource
except ImportError:  # not on this platform; reported, not fatal
    resource = None

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.acceptance.plugins.module_utils.node_collect import MAX_FILE_BYTES, list_dir, read_text, real_path, run_tool

PCI_ADDRESS = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
GPU_CLASSES = ("0x0300", "0x0302")
NVIDIA_VENDOR = "0x10de"
_NCCL_SONAME = re.compile(r"^\s*(libnccl\.so[.0-9]*)\s.*=>\s*(/\S+)\s*$")
_NCCL_DEFINE = re.compile(r"^\s*#\s*define\s+NCCL_(MAJOR|MINOR|PATCH|SUFFIX|VERSION_CODE)\b")


def read_entry(path):
    """A file read in the shape of a tool run: cmd [path], rc 0 when read, stdout its text."""
    entry = {"cmd": [path], "rc": None, "stdout": "", "stderr": "", "duration_s": 0.0, "error": None}
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES)
    except (IOError, OSError) as exc:
        entry["error"] = "not_found" if exc.errno == errno.ENOENT else "unreadable: %s" % (exc.strerror or exc)
        return entry
    entry["rc"] = 0
    entry["stdout"] = data.decode("utf-8", errors="replace")
    return entry


def _bridges(path):
    """PCI functions above the last one in a resolved sysfs device path (root port first)."""
    functions = [part for part in path.split(os.sep) if PCI_ADDRESS.match(part)]
    return [part.lower() for part in functions[:-1]]


def _pci_function_dir(path):
    while path and path != os.path.dirname(path):
        if PCI_ADDRESS.match(os.path.basename(path)):
            return path
        path = os.path.dirname(path)
    return None


def _relative(path, root):
    try:
        return os.path.relpath(path, os.path.realpath(root))
    except ValueError:
        return path


def read_endpoints(sysfs_root):
    """NVIDIA GPUs and RDMA devices with their upstream PCI bridges, read from sysfs."""
    endpoints = []
    devices_dir = os.path.join(sysfs_root, "bus", "pci", "devices")
    for address in list_dir(devices_dir):
        base = os.path.join(devices_dir, address)
        vendor = (read_text(os.path.join(base, "vendor")) or "").strip().lower()
        pci_class = (read_text(os.path.join(base, "class")) or "").strip().lower()
        if vendor != NVIDIA_VENDOR or not pci_class.startswith(GPU_CLASSES):
            continue
        resolved = real_path(base)
        endpoints.append({
            "kind": "gpu",
            "name": address.lower(),
            "address": address.lower(),
            "class": pci_class,
            "path": _relative(resolved, sysfs_root) if resolved else None,
            "bridges": _bridges(resolved) if resolved else [],
        })
    ib_dir = os.path.join(sysfs_root, "class", "infiniband")
    for name in list_dir(ib_dir):
        resolved = real_path(os.path.join(ib_dir, name, "device"))
        function_dir = _pci_function_dir(resolved) if resolved else None
        endpoints.append({
            "kind": "rdma",
            "name": name,
            "address": os.path.basename(function_dir).lower() if function_dir else None,
            "class": None,
            "path": _relative(function_dir, sysfs_root) if function_dir else None,
            "bridges": _bridges(function_dir) if function_dir else [],
        })
    return endpoints


def read_iommu(sysfs_root):
    """IOMMU units, group count and the count of groups per default-domain type."""
    groups_dir = os.path.join(sysfs_root, "kernel", "iommu_groups")
    groups = list_dir(groups_dir)
    types = {}
    for group in groups:
        kind = read_text(os.path.join(groups_dir, group, "type"))
        if kind is not None:
            types[kind.strip()] = types.get(kind.strip(), 0) + 1
    return {"units": list_dir(os.path.join(sysfs_root, "class", "iommu")), "groups": len(groups), "group_types": types}


def read_memlock_rlimit():
    """``{soft, hard}`` of RLIMIT_MEMLOCK in bytes, None meaning unlimited; ``error`` when unavailable."""
    if resource is None:
        return {"soft": None, "hard": None, "error": "resource module unavailable"}
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    except (ValueError, OSError) as exc:
        return {"soft": None, "hard": None, "error": str(exc)}
    infinity = resource.RLIM_INFINITY
    return {"soft": None if soft == infinity else soft, "hard": None if hard == infinity else hard, "error": None}


def tail_lines(entry, keep):
    """Keep the last ``keep`` lines of a tool's stdout; count what was dropped."""
    lines = entry["stdout"].splitlines(True)
    entry["dropped_lines"] = max(0, len(lines) - keep)
    if entry["dropped_lines"]:
        entry["stdout"] = "".join(lines[-keep:])
    return entry


def _has_kernel_lines(entry):
    if entry["error"] or entry["rc"] != 0:
        return False
    return any(line.strip() and not (line.startswith("-- ") and line.rstrip().endswith(" --")) for line in entry["stdout"].splitlines())


def nccl_libraries(ldconfig_entry):
    """``[{path, target}]`` for each libnccl.so in ``ldconfig -p``, the link resolved on the node."""
    found = []
    if ldconfig_entry["error"] or ldconfig_entry["rc"] != 0:
        return found
    for line in ldconfig_entry["stdout"].splitlines():
        match = _NCCL_SONAME.match(line)
        if match:
            path = match.group(2)
            target = os.path.basename(os.path.realpath(path)) if os.path.exists(path) else None
            found.append({"soname": match.group(1), "path": path, "target": target})
    return found


def nccl_headers(include_dirs):
    """``[{path, defines}]``: the ``#define NCCL_*`` version lines of each nccl.h found."""
    found = []
    for directory in include_dirs or []:
        path = os.path.join(directory, "nccl.h")
        text = read_text(path)
        if text is None:
            continue
        defines = [line for line in text.splitlines() if _NCCL_DEFINE.match(line)]
        found.append({"path": path, "defines": "\n".join(defines)})
    return found


def collect(params):
    """Everything this phase needs from the node, in one call."""
    procfs, sysfs, timeout = params["procfs_root"], params["sysfs_root"], params["timeout"]
    files = {}
    for key, relative in (("modules", "modules"), ("nvidia_version", "driver/nvidia/version"), ("cmdline", "cmdline"),
                          ("self_limits", "self/limits"), ("osrelease", "sys/kernel/osrelease")):
        files[key] = read_entry(os.path.join(procfs, *relative.split("/")))
    uname = os.uname()
    raw = {
        "files": files,
        "uname": {"sysname": uname[0], "release": uname[2], "version": uname[3], "machine": uname[4]},
        "rlimit_memlock": read_memlock_rlimit(),
        "endpoints": read_endpoints(sysfs),
        "iommu": read_iommu(sysfs),
        "lspci": run_tool([params["lspci_path"], "-vvv"], timeout),
        "journalctl": tail_lines(run_tool([params["journalctl_path"], "-k", "--no-pager", "-o", "short-iso"], timeout), params["kernel_log_lines"]),
        "dmesg": None,
        "ofed_info": run_tool([params["ofed_info_path"], "-s"], timeout),
        "mpirun": run_tool([params["mpirun_path"], "--version"], timeout),
        "ldconfig": run_tool([params["ldconfig_path"], "-p"], timeout),
    }
    if not _has_kernel_lines(raw["journalctl"]):
        raw["dmesg"] = tail_lines(run_tool([params["dmesg_path"], "--time-format", "iso"], timeout), params["kernel_log_lines"])
    raw["nccl_libraries"] = nccl_libraries(raw["ldconfig"])
    # ldconfig -p lists thousands of libraries: keep only the NCCL lines
    raw["ldconfig"]["stdout"] = "".join(line for line in raw["ldconfig"]["stdout"].splitlines(True) if "libnccl" in line)
    raw["nccl_headers"] = [] if any(lib["target"] for lib in raw["nccl_libraries"]) else nccl_headers(params["nccl_include_dirs"])
    return raw


ARGUMENT_SPEC = {
    "sysfs_root": {"type": "path", "default": "/sys"},
    "procfs_root": {"type": "path", "default": "/proc"},
    "lspci_path": {"type": "str", "default": "lspci"},
    "journalctl_path": {"type": "str", "default": "journalctl"},
    "dmesg_path": {"type": "str", "default": "dmesg"},
    "ofed_info_path": {"type": "str", "default": "ofed_info"},
    "mpirun_path": {"type": "str", "default": "mpirun"},
    "ldconfig_path": {"type": "str", "default": "ldconfig"},
    "nccl_include_dirs": {
        "type": "list",
        "elements": "path",
        "default": ["/usr/include", "/usr/local/include", "/usr/local/cuda/include", "/opt/nvidia/nccl/include"],
    },
    "timeout": {"type": "int", "default": 60},
    "kernel_log_lines": {"type": "int", "default": 20000},
}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    if module.params["timeout"] < 1:
        module.fail_json(msg="timeout must be at least 1 second")
    if module.params["kernel_log_lines"] < 1:
        module.fail_json(msg="kernel_log_lines must be at least 1")
    raw = collect(module.params)
    module.exit_json(changed=False, raw=raw)


if __name__ == "__main__":
    main()
