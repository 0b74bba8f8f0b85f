# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node-side collection of gpufleet.acceptance.host_facts (also run by gpufleet.acceptance.node_facts).

Standard library only, Python 3.8+. Reads files and runs tools; parses nothing (the controller does).
"""

from __future__ import annotations

import errno
import os
import re

try:
    import resource
except ImportError:  # not on this platform; reported, not fatal
    resource = None

from ansible_collections.gpufleet.acceptance.plugins.module_utils.node_collect import (
    MAX_FILE_BYTES,
    OutputBudgetSpent,
    list_dir,
    module_phase,
    phase_problem,
    read_bounded,
    read_error,
    read_text,
    real_path,
    run_tool,
)

PCI_ADDRESS = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
GPU_CLASSES = ("0x0300", "0x0302")
NVIDIA_VENDOR = "0x10de"
_NCCL_SONAME = re.compile(r"^\s*(libnccl\.so[.0-9]*)\s.*=>\s*(/\S+)\s*$")
_NCCL_DEFINE = re.compile(r"^\s*#\s*define\s+NCCL_(MAJOR|MINOR|PATCH|SUFFIX|VERSION_CODE)\b")


def read_entry(path):
    """A file read in the shape of a tool run: cmd [path], rc 0 when read, stdout its text; one the fact phase's
    output budget had no room left for is read and kept empty, marked ``truncated`` as a tool's output would be."""
    entry = {"cmd": [path], "rc": None, "stdout": "", "stderr": "", "duration_s": 0.0, "error": None}
    try:
        data = read_bounded(path, MAX_FILE_BYTES)
    except OutputBudgetSpent as exc:
        entry.update(rc=0, truncated=True, stdout_bytes=exc.size, stderr_bytes=0, truncated_reason=str(exc))
        return entry
    except (IOError, OSError) as exc:
        entry["error"] = "not_found" if exc.errno == errno.ENOENT else read_error(exc)
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


def read_endpoints(sysfs_root, errors=None):
    """NVIDIA GPUs and RDMA devices with their upstream PCI bridges, read from sysfs.

    ``errors`` (a dict) gets the files that are not regular files (a FIFO would block the read),
    by path under ``sysfs_root``, with the reason; the other devices are still read.
    """
    errors = {} if errors is None else errors
    endpoints = []
    devices_dir = os.path.join(sysfs_root, "bus", "pci", "devices")
    for address in list_dir(devices_dir):
        base = os.path.join(devices_dir, address)
        unreadable = {}
        vendor = (read_text(os.path.join(base, "vendor"), errors=unreadable) or "").strip().lower()
        pci_class = (read_text(os.path.join(base, "class"), errors=unreadable) or "").strip().lower()
        for name, reason in unreadable.items():
            errors["bus/pci/devices/%s/%s" % (address, name)] = reason
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


def read_iommu(sysfs_root, errors=None):
    """IOMMU units, group count and the count of groups per default-domain type (``errors`` as in read_endpoints)."""
    errors = {} if errors is None else errors
    groups_dir = os.path.join(sysfs_root, "kernel", "iommu_groups")
    groups = list_dir(groups_dir)
    types = {}
    for group in groups:
        unreadable = {}
        kind = read_text(os.path.join(groups_dir, group, "type"), errors=unreadable)
        for name, reason in unreadable.items():
            errors["kernel/iommu_groups/%s/%s" % (group, name)] = reason
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
    # uptime: the time base of the GPUs' cumulative counters (each counts from a driver load or reset after boot)
    for key, relative in (("modules", "modules"), ("nvidia_version", "driver/nvidia/version"), ("cmdline", "cmdline"),
                          ("self_limits", "self/limits"), ("osrelease", "sys/kernel/osrelease"), ("uptime", "uptime")):
        files[key] = read_entry(os.path.join(procfs, *relative.split("/")))
    uname = os.uname()
    sysfs_errors = {}
    raw = {
        "files": files,
        "uname": {"sysname": uname[0], "release": uname[2], "version": uname[3], "machine": uname[4]},
        "rlimit_memlock": read_memlock_rlimit(),
        "endpoints": read_endpoints(sysfs, sysfs_errors),
        "iommu": read_iommu(sysfs, sysfs_errors),
        "lspci": run_tool([params["lspci_path"], "-vvv"], timeout),
        "journalctl": tail_lines(run_tool([params["journalctl_path"], "-k", "--no-pager", "-o", "short-iso"], timeout), params["kernel_log_lines"]),
        "dmesg": None,
        "ofed_info": run_tool([params["ofed_info_path"], "-s"], timeout),
        "mpirun": run_tool([params["mpirun_path"], "--version"], timeout),
        "ldconfig": run_tool([params["ldconfig_path"], "-p"], timeout),
    }
    if not _has_kernel_lines(raw["journalctl"]):
        raw["dmesg"] = tail_lines(run_tool([params["dmesg_path"], "--time-format", "iso"], timeout), params["kernel_log_lines"])
    if sysfs_errors:
        raw["sysfs_read_errors"] = sysfs_errors
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
    "phase_timeout": {"type": "int"},
    "phase_output_budget": {"type": "bytes"},
}


def run(params):
    """``(raw, failure message or None)`` for the module's parameters (ARGUMENT_SPEC's keys, defaults applied)."""
    if params["timeout"] < 1:
        return {}, "timeout must be at least 1 second"
    if params["kernel_log_lines"] < 1:
        return {}, "kernel_log_lines must be at least 1"
    problem = phase_problem(params)
    if problem:
        return {}, problem
    with module_phase(params):
        return collect(params), None
