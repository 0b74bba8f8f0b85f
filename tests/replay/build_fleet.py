# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test double: lay out replayed nodes so the product can run against them unchanged.

For each node file it writes ``OUT/<node>/bin/<tool>`` wrappers that answer as replay_tool.py does with that
node file (a plain recording from the shell, see wrapper_text; a ``then:`` or gzipped one through replay_tool.py),
and ``OUT/<node>/sysfs`` and ``OUT/<node>/procfs``: the node's synthetic trees rendered by
tests/fixtures/sysfs/render_tree.py, or empty directories when the node file names none (a replayed node shows
only what was recorded, never this machine's /sys).
The product only gets ordinary options (tool paths, sysfs/procfs roots) pointing there: it
has no simulation code path. A node file naming a recording or tree that does not exist is
rejected here, before anything runs. A tool the node has no recording for gets no wrapper,
so the product finds it missing, as on a node without that tool.

Node file keys besides ``commands:``: ``present:`` (tools the node has although no command line
of theirs was recorded on their own, e.g. the ``all_reduce_perf`` a recorded ``srun`` started on
every node: they get a wrapper, which answers every command line with the 127 "no recording"),
``sysfs_tree:`` / ``procfs_tree:`` (a tree directory
holding ``tree.txt``, relative to the repository root) with optional ``sysfs_subdir:`` /
``procfs_subdir:`` (the part of the rendered tree that is the root, e.g. ``sys`` and ``proc``
of a host tree), or ``sysfs_root:`` (an existing directory, used as it is). A ``commands:`` entry's
``then:`` (later answers of the same command line, replay_tool.py) is checked like the entry.

Usage::

    build_fleet.py OUT NODE_FILE...                     one directory per node file
    build_fleet.py --inventory HOSTS.yml --out OUT      one per host naming gpufleet_sim_node
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import stat
import sys

import yaml

from replay_tool import BIN_PLACEHOLDER, NO_OUTPUT, REPO_ROOT, load_node, recording_path  # pylint: disable=import-error

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs"))

import render_tree  # noqa: E402  pylint: disable=import-error,wrong-import-position

# Written into every built node directory: only directories carrying it are ever removed.
MARKER = ".gpufleet-replayed-node"
NODE_VAR = "gpufleet_sim_node"
TREES = ("sysfs", "procfs")


class FleetError(Exception):
    """A node file or inventory that cannot be replayed."""


def _tree_dir(path, node, kind):
    tree = node.get(kind + "_tree")
    if not tree:
        return None
    full = os.path.join(REPO_ROOT, tree)
    if not os.path.isfile(os.path.join(full, "tree.txt")):
        raise FleetError("%s: %s_tree %s has no tree.txt" % (path, kind, tree))
    return full


def check_node(path):
    node = load_node(path)
    for command, entry in node["commands"].items():
        if not isinstance(entry, dict):
            raise FleetError("%s: command `%s` needs a map with stdout/stderr/rc" % (path, command))
        later = entry.get("then") or []
        if not isinstance(later, list) or not all(isinstance(answer, dict) for answer in later):
            raise FleetError("%s: command `%s`: then: needs a list of maps with stdout/stderr/rc" % (path, command))
        for answer in [entry] + later:
            for stream in ("stdout", "stderr"):
                if answer.get(stream) and not os.path.exists(recording_path(answer[stream])):
                    raise FleetError("%s: command `%s` names a missing recording %s" % (path, command, answer[stream]))
    present = node.get("present") or []
    if not isinstance(present, list) or not all(isinstance(tool, str) and tool and "/" not in tool for tool in present):
        raise FleetError("%s: present: needs a list of tool names" % path)
    sysfs = node.get("sysfs_root")
    if sysfs and not os.path.isdir(os.path.join(REPO_ROOT, sysfs)):
        raise FleetError("%s: sysfs_root %s is not a directory" % (path, sysfs))
    if sysfs and node.get("sysfs_tree"):
        raise FleetError("%s: give sysfs_tree or sysfs_root, not both" % path)
    for kind in TREES:
        _tree_dir(path, node, kind)
    return node


def _plain_answer(entry):
    """The shell lines answering ``entry`` without Python, or None: an entry with later answers (``then:``, counted by
    replay_tool.py) or a gzipped recording goes through replay_tool.py."""
    if entry.get("then"):
        return None
    lines = []
    for stream, redirect in (("stdout", ""), ("stderr", " >&2")):
        if entry.get(stream):
            path = recording_path(entry[stream])
            if path.endswith(".gz"):
                return None
            lines.append("cat %s%s" % (shlex.quote(path), redirect))
    return lines + ["exit %d" % int(entry.get("rc", 0))]


def wrapper_text(tool, node, node_file, bin_dir):
    """The ``bin/<tool>`` wrapper. It reads the command line as replay_tool.py does (the tool and its arguments joined
    by single spaces) and answers each plain recorded one with ``cat`` in a shell ``case``, and when every command line
    of the tool is plain, the rest with replay_tool.py's 127 line; anything else runs replay_tool.py. A replayed tool
    then costs what reading its output costs, not a Python start and a YAML parse: the fleet-scale harness counts every
    process of a local fleet as the controller's (docs/performance.md)."""
    argv = [sys.executable, os.path.join(HERE, "replay_tool.py"), "--bin-dir", bin_dir, os.path.abspath(node_file),
            tool]
    cases, every_plain = [], True
    for command, entry in sorted(node["commands"].items()):
        command = command.replace(BIN_PLACEHOLDER, bin_dir)
        if command.split(" ", 1)[0] != tool:
            continue
        answer = _plain_answer(entry)
        every_plain = every_plain and answer is not None
        if answer is not None:
            # "$*" alone cannot tell no argument from one empty one: the command line is the tool and "$*" joined
            cases.append("  %s) %s;;" % (shlex.quote(command), "; ".join(answer)))
    name = shlex.quote(tool)
    lines = ["#!/bin/sh", "IFS=' '", "line=%s" % name, '[ $# -gt 0 ] && line=%s" $*"' % name]
    if cases:
        lines += ['case "$line" in'] + cases + ["esac"]
    if every_plain:
        lines += ["printf %s %s \"$line\" >&2" % (shlex.quote(NO_OUTPUT.replace("\n", "\\n")), name), "exit 127"]
    else:
        lines.append('exec %s "$@"' % " ".join(shlex.quote(part) for part in argv))
    return "\n".join(lines) + "\n"


def tools_of(node):
    return sorted({command.split(" ", 1)[0] for command in node["commands"]} | set(node.get("present") or []))


def _render(node_file, node, kind, dest):
    """Render the node's ``<kind>_tree`` (or its ``<kind>_subdir``) at ``dest``; empty dir if none."""
    tree = _tree_dir(node_file, node, kind)
    if tree is None:
        os.makedirs(dest)
        return dest
    subdir = node.get(kind + "_subdir")
    if not subdir:
        return render_tree.render(tree, dest)
    scratch = dest + ".render"
    render_tree.render(tree, scratch)
    part = os.path.join(scratch, subdir)
    if not os.path.isdir(part):
        raise FleetError("%s: %s_tree %s renders no %s/ directory" % (node_file, kind, node[kind + "_tree"], subdir))
    os.replace(part, dest)
    shutil.rmtree(scratch)
    return dest


def _fresh_dir(path):
    """Empty ``path`` for a rebuild; refuses a non-empty directory this script did not build."""
    if os.path.isdir(path):
        if os.listdir(path) and not os.path.exists(os.path.join(path, MARKER)):
            raise FleetError("%s exists and was not built by build_fleet.py; not removing it" % path)
        shutil.rmtree(path)
    os.makedirs(path)


def build_node(node_file, out_dir, name=None):
    """Write the wrappers and trees of one node; return its layout.

    The layout: ``name``, ``dir``, ``bin_dir``, ``sysfs_root`` and ``procfs_root`` (rendered
    trees, or empty directories; ``sysfs_root:`` in the node file is used as it is), ``tools``
    (the wrappers written) and ``node`` (the node file's data). Building again replaces the
    directory, so a rebuild never keeps a stale wrapper.
    """
    node = check_node(node_file)
    name = name or os.path.splitext(os.path.basename(node_file))[0]
    node_dir = os.path.join(os.path.abspath(out_dir), name)
    _fresh_dir(node_dir)
    with open(os.path.join(node_dir, MARKER), "w", encoding="utf-8") as handle:
        handle.write(os.path.abspath(node_file) + "\n")
    bin_dir = os.path.join(node_dir, "bin")
    os.makedirs(bin_dir)
    tools = tools_of(node)
    for tool in tools:
        wrapper = os.path.join(bin_dir, tool)
        with open(wrapper, "w", encoding="utf-8") as handle:
            handle.write(wrapper_text(tool, node, node_file, bin_dir))
        os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    roots = {kind: _render(node_file, node, kind, os.path.join(node_dir, kind)) for kind in TREES}
    if node.get("sysfs_root"):
        roots["sysfs"] = os.path.join(REPO_ROOT, node["sysfs_root"])
    return {
        "name": name,
        "dir": node_dir,
        "bin_dir": bin_dir,
        "sysfs_root": roots["sysfs"],
        "procfs_root": roots["procfs"],
        "tools": tools,
        "node": node,
    }


# The fact tools a replayed node answers for (each a wrapper in the node's bin dir, named as the facts role's
# gpufleet_<tool>_path variables name them).
FACT_TOOLS = ("nvidia-smi", "lspci", "ethtool", "ibstat", "ibv_devinfo", "ip", "journalctl", "dmesg", "ofed_info",
              "mpirun", "ldconfig")


def local_host_vars(layout):
    """The inventory variables of a built node run with a local connection: its fact tools' wrappers, its sysfs and
    procfs trees, the playbook's own Python, and the one rendering of ``nvidia-smi -q`` the recordings hold (text)."""
    host = {"gpufleet_%s_path" % tool.replace("-", "_"): os.path.join(layout["bin_dir"], tool) for tool in FACT_TOOLS}
    host.update({"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                 "gpufleet_sysfs_root": layout["sysfs_root"], "gpufleet_procfs_root": layout["procfs_root"],
                 "gpufleet_gpu_query_formats": ["text"]})
    return host


def _load_yaml(path):
    with open(path, "r", encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def inventory_hosts(inventory):
    """``{host: node file}`` of a YAML inventory's hosts that set ``gpufleet_sim_node``.

    Host variables come from the inventory file (group ``vars:`` then the host's own) and from
    ``host_vars/<host>.yml`` beside it; a relative node path is relative to the inventory's
    directory. Hosts without the variable are not replayed nodes and are left out.
    """
    base = os.path.dirname(os.path.abspath(inventory))
    found = {}

    def walk(group, inherited):
        group = group or {}
        if not isinstance(group, dict):
            raise FleetError("%s: a group must be a map" % inventory)
        merged = dict(inherited)
        merged.update(group.get("vars") or {})
        for host, host_vars in (group.get("hosts") or {}).items():
            values = dict(merged)
            values.update(found.get(host, {}))
            values.update(host_vars or {})
            found[host] = values
        for child in (group.get("children") or {}).values():
            walk(child, merged)

    data = _load_yaml(inventory)
    if not isinstance(data, dict):
        raise FleetError("%s: not a YAML inventory" % inventory)
    for group in data.values():
        walk(group, {})
    nodes = {}
    for host, values in found.items():
        host_file = os.path.join(base, "host_vars", host + ".yml")
        if os.path.isfile(host_file):
            values.update(_load_yaml(host_file))
        node = values.get(NODE_VAR)
        if node:
            nodes[host] = node if os.path.isabs(node) else os.path.join(base, node)
    return nodes


def build_inventory(inventory, out_dir):
    """Build every host of ``inventory`` that names a node file; remove stale built hosts."""
    nodes = inventory_hosts(inventory)
    if not nodes:
        raise FleetError("%s: no host sets %s" % (inventory, NODE_VAR))
    for node_file in nodes.values():
        check_node(node_file)
    os.makedirs(out_dir, exist_ok=True)
    for entry in sorted(os.listdir(out_dir)):
        path = os.path.join(out_dir, entry)
        if entry not in nodes and os.path.exists(os.path.join(path, MARKER)):
            shutil.rmtree(path)
    return [build_node(node_file, out_dir, name=host) for host, node_file in sorted(nodes.items())]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", help="a YAML inventory: build each host that sets %s" % NODE_VAR)
    parser.add_argument("--out", help="output directory (with --inventory)")
    parser.add_argument("paths", nargs="*", help="OUT NODE_FILE... (without --inventory)")
    args = parser.parse_args(argv)
    try:
        if args.inventory:
            if not args.out or args.paths:
                parser.error("--inventory takes --out and no node files")
            layouts = build_inventory(args.inventory, args.out)
        else:
            if len(args.paths) < 2:
                parser.error("give OUT and at least one NODE_FILE")
            layouts = [build_node(node_file, args.paths[0]) for node_file in args.paths[1:]]
        for layout in layouts:
            print("%s %s tools=%s" % (layout["name"], layout["dir"], ",".join(layout["tools"]) or "-"))
    except (FleetError, render_tree.TreeError, ValueError, OSError, yaml.YAMLError) as exc:
        sys.stderr.write("build_fleet: %s\n" % exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
