# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node-side collection of gpufleet.acceptance.nic_facts (also run by gpufleet.acceptance.node_facts).

Standard library only, Python 3.8+. Reads sysfs and runs tools; parses nothing (the controller does).
"""

from __future__ import annotations

import os
import re

from ansible_collections.gpufleet.acceptance.plugins.module_utils.node_collect import (
    link_target,
    list_dir,
    module_phase,
    phase_problem,
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


def _read_attrs(base, names, errors=None):
    """``{name: text or None}``; a FIFO or device in a name's place reads None, its reason in ``errors``."""
    return dict((name, read_text(os.path.join(base, name), errors=errors)) for name in names)


def _with_errors(entry, errors):
    # only when something could not be read: a clean node's raw output stays as it was
    if errors:
        entry["read_errors"] = errors
    return entry


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


def _device_part(base, errors=None):
    """PCI address, driver and PCIe/NUMA attributes behind ``base/device``."""
    device_link = os.path.join(base, "device")
    pci_dir = _pci_function(device_link)
    return {
        "device": os.path.lexists(device_link),
        "driver": link_target(os.path.join(device_link, "driver")),
        "pci_address": os.path.basename(pci_dir) if pci_dir else None,
        "pci": _read_attrs(pci_dir, PCI_ATTRS, errors) if pci_dir else None,
    }


def read_net(sysfs_root, procfs_root=None):
    """One entry per ``class/net`` interface: attributes as read, device/PCI part, kind marks.

    A bond (``bonding/`` in sysfs) also gets ``bonding_status``: the bonding driver's
    ``net/bonding/<name>`` under ``procfs_root`` (mode, active aggregator, each member's MII
    status and speed), when ``procfs_root`` is given.
    """
    root = os.path.realpath(sysfs_root)
    entries = []
    for name in list_dir(os.path.join(sysfs_root, "class", "net")):
        base = os.path.join(sysfs_root, "class", "net", name)
        errors = {}
        entry = {
            "name": name,
            "sysfs_path": _relative(real_path(base), root),
            "attrs": _read_attrs(base, NET_ATTRS, errors),
            "bridge": os.path.isdir(os.path.join(base, "bridge")),
            "bonding": os.path.isdir(os.path.join(base, "bonding")),
            "tun": os.path.exists(os.path.join(base, "tun_flags")),
            "rdma_devices": list_dir(os.path.join(base, "device", "infiniband")),
        }
        entry.update(_device_part(base, errors))
        if entry["bonding"] and procfs_root:
            entry["bonding_status"] = read_text(os.path.join(procfs_root, "net", "bonding", name), errors=errors)
        entries.append(_with_errors(entry, errors))
    return entries


def _read_gids(port_dir, errors=None):
    """Non-zero GIDs with their type and netdev (reading the attributes of an unused GID fails)."""
    gids = []
    for index in list_dir(os.path.join(port_dir, "gids")):
        gid = read_text(os.path.join(port_dir, "gids", index), errors=errors)
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
        errors = {}
        entry = {
            "name": name,
            "attrs": _read_attrs(base, IB_ATTRS, errors),
            "netdevs": list_dir(os.path.join(base, "device", "net")),
            "ports": [],
        }
        entry.update(_device_part(base, errors))
        for port in list_dir(os.path.join(base, "ports")):
            port_dir = os.path.join(base, "ports", port)
            port_errors = {}
            port_entry = {"port": port, "attrs": _read_attrs(port_dir, PORT_ATTRS, port_errors), "gids": _read_gids(port_dir, port_errors)}
            for counters in COUNTER_DIRS:
                names = list_dir(os.path.join(port_dir, counters))
                port_entry[counters] = dict((c, read_text(os.path.join(port_dir, counters, c), errors=port_errors)) for c in names)
            entry["ports"].append(_with_errors(port_entry, port_errors))
        devices.append(_with_errors(entry, errors))
    return devices


def collect(sysfs_root, ethtool_path, ibstat_path, ibv_devinfo_path, ip_path, timeout, procfs_root=None):
    """Everything this phase needs from the node, in one call."""
    net = read_net(sysfs_root, procfs_root)
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


ARGUMENT_SPEC = {
    "sysfs_root": {"type": "path", "default": "/sys"},
    "procfs_root": {"type": "path", "default": "/proc"},
    "ethtool_path": {"type": "str", "default": "ethtool"},
    "ibstat_path": {"type": "str", "default": "ibstat"},
    "ibv_devinfo_path": {"type": "str", "default": "ibv_devinfo"},
    "ip_path": {"type": "str", "default": "ip"},
    "timeout": {"type": "int", "default": 30},
    "phase_timeout": {"type": "int"},
    "phase_output_budget": {"type": "bytes"},
}


def run(params):
    """``(raw, failure message or None)`` for the module's parameters (ARGUMENT_SPEC's keys, defaults applied)."""
    problem = phase_problem(params)
    if problem:
        return {}, problem
    if not os.path.isdir(os.path.join(params["sysfs_root"], "class", "net")):
        return {}, "no class/net under %s: is sysfs mounted there?" % params["sysfs_root"]
    with module_phase(params):
        raw = collect(params["sysfs_root"], params["ethtool_path"], params["ibstat_path"], params["ibv_devinfo_path"],
                      params["ip_path"], params["timeout"], params.get("procfs_root"))
    return raw, None
