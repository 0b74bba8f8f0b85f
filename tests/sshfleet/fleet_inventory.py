# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test double: the replay nodes and the inventory of an SSH fleet brought up by fleet.sh.

Each host I gets its own replay wrappers (tests/replay/build_fleet.py) under
``DIR/h<I>/replay`` from the node file assigned to it (the list is used in turn), its node
file's synthetic sysfs/procfs trees (rendered by build_fleet, empty when it names none), and
inventory variables that only set ordinary product options: tool paths and the roots. A tool
the node has no recording for points at a wrapper path that does not exist, so the product
sees the tool as absent on that node instead of running this machine's real tool. mpirun is
left alone: on this fleet it is the real one.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position

# Tools the fact modules take a path for: inventory variable -> tool name.
TOOL_VARS = {
    "gpufleet_nvidia_smi_path": "nvidia-smi",
    "gpufleet_lspci_path": "lspci",
    "gpufleet_ethtool_path": "ethtool",
    "gpufleet_ibstat_path": "ibstat",
    "gpufleet_ibv_devinfo_path": "ibv_devinfo",
    "gpufleet_ip_path": "ip",
    "gpufleet_journalctl_path": "journalctl",
    "gpufleet_dmesg_path": "dmesg",
    "gpufleet_ofed_info_path": "ofed_info",
    "gpufleet_ldconfig_path": "ldconfig",
}

# A 3-host default when inventories/simulated/nodes/ does not exist: GPUs, topology, NICs.
DEFAULT_NODES = ["gpu-h100-590-1gpu.yml", "dgx-a100-topo.yml", "nic-h100-ndr-ib.yml"]


def default_node_files():
    simulated = sorted(glob.glob(os.path.join(REPO_ROOT, "inventories", "simulated", "nodes", "*.yml")))
    if simulated:
        return simulated
    return [os.path.join(REPO_ROOT, "tests", "replay", "nodes", name) for name in DEFAULT_NODES]


def _runs(python):
    try:
        return subprocess.run([python, "-c", "pass"], capture_output=True, timeout=30, check=False).returncode == 0
    except OSError:
        return False


def node_python():
    """The interpreter modules run with on the hosts: the oldest supported (3.8) where it runs.

    A pyenv shim on PATH may not run (no version selected), so candidates are tried, not trusted.
    """
    candidates = sorted(glob.glob("/root/.pyenv/versions/3.8*/bin/python3.8"))
    for candidate in candidates + ["/usr/bin/python3"]:
        if os.path.exists(candidate) and _runs(candidate):
            return candidate
    return sys.executable


def host_roots(layout, host_dir):
    """``(sysfs_root, procfs_root)`` of a built node: build_fleet renders the node's trees (empty
    directories when it names none); an older build_fleet only gives ``sysfs_root``."""
    if layout.get("procfs_root"):
        return layout["sysfs_root"], layout["procfs_root"]
    empty = os.path.join(host_dir, "empty")
    for part in ("sys", "proc"):
        os.makedirs(os.path.join(empty, part), exist_ok=True)
    return layout.get("sysfs_root") or os.path.join(empty, "sys"), os.path.join(empty, "proc")


def query_formats(node):
    """The ``nvidia-smi -q`` renderings the node has recordings of (gpu_facts' query_formats)."""
    formats = [fmt for command, fmt in (("nvidia-smi -q -x", "xml"), ("nvidia-smi -q", "text")) if command in node["commands"]]
    return formats or ["xml", "text"]


def build(state, fleet_id, hosts, node_files):
    python = node_python()
    net = "198.18.%d" % fleet_id
    inventory_hosts = {}
    hostfile = []
    ssh_args = "-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes" % os.path.join(state, "known_hosts")
    for index in range(1, hosts + 1):
        name = "gf%dh%d" % (fleet_id, index)
        node_file = os.path.abspath(node_files[(index - 1) % len(node_files)])
        host_dir = os.path.join(state, "h%d" % index)
        layout = build_fleet.build_node(node_file, os.path.join(host_dir, "replay"))
        sysfs_root, procfs_root = host_roots(layout, host_dir)
        host_vars = {
            "ansible_host": "%s.%d" % (net, index),
            "ansible_user": "root",
            "ansible_ssh_private_key_file": os.path.join(state, "fleet_key"),
            "ansible_ssh_common_args": ssh_args,
            "ansible_control_path_dir": os.path.join(state, "cp"),
            "ansible_python_interpreter": python,
            "gpufleet_fleet_node_file": node_file,
            "gpufleet_sysfs_root": sysfs_root,
            "gpufleet_procfs_root": procfs_root,
            "gpufleet_gpu_query_formats": query_formats(layout["node"]),
        }
        for var, tool in TOOL_VARS.items():
            host_vars[var] = os.path.join(layout["bin_dir"], tool)
        inventory_hosts[name] = host_vars
        hostfile.append("%s.%d slots=1" % (net, index))
    inventory = {"all": {"children": {"sshfleet": {"hosts": inventory_hosts}}}}
    with open(os.path.join(state, "inventory.yml"), "w", encoding="utf-8") as handle:
        handle.write("---\n# SSH test fleet %d, written by tests/sshfleet/fleet.sh: replayed nodes, real sshd per host\n" % fleet_id)
        yaml.safe_dump(inventory, handle, sort_keys=False, width=1000)
    with open(os.path.join(state, "hostfile"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(hostfile) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", required=True)
    parser.add_argument("--fleet-id", type=int, required=True)
    parser.add_argument("--hosts", type=int, required=True)
    parser.add_argument("--node-files", help="comma-separated node files (default: inventories/simulated/nodes or a test set)")
    args = parser.parse_args(argv)
    node_files = [path for path in (args.node_files or "").split(",") if path] or default_node_files()
    node_files = [path if os.path.isabs(path) else os.path.join(REPO_ROOT, path) if not os.path.exists(path) else path for path in node_files]
    try:
        build(os.path.abspath(args.state), args.fleet_id, args.hosts, node_files)
    except Exception as exc:  # pylint: disable=broad-except
        sys.stderr.write("fleet_inventory: %s\n" % exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
