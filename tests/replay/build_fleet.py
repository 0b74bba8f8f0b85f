# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test double: lay out replayed nodes so the product can run against them unchanged.

For each node file it writes ``OUT/<node>/bin/<tool>`` wrappers that call replay_tool.py
with that node file. The product only gets ordinary options (tool paths, sysfs root)
pointing there: it has no simulation code path. A node file naming a recording that does
not exist is rejected here, before anything runs.
"""

from __future__ import annotations

import argparse
import os
import shlex
import stat
import sys

from replay_tool import REPO_ROOT, load_node, recording_path  # pylint: disable=import-error

HERE = os.path.dirname(os.path.abspath(__file__))


class FleetError(Exception):
    """A node file that cannot be replayed."""


def check_node(path):
    node = load_node(path)
    for command, entry in node["commands"].items():
        if not isinstance(entry, dict):
            raise FleetError("%s: command `%s` needs a map with stdout/stderr/rc" % (path, command))
        for stream in ("stdout", "stderr"):
            if entry.get(stream) and not os.path.exists(recording_path(entry[stream])):
                raise FleetError("%s: command `%s` names a missing recording %s" % (path, command, entry[stream]))
    sysfs = node.get("sysfs_root")
    if sysfs and not os.path.isdir(os.path.join(REPO_ROOT, sysfs)):
        raise FleetError("%s: sysfs_root %s is not a directory" % (path, sysfs))
    return node


def tools_of(node):
    return sorted({command.split(" ", 1)[0] for command in node["commands"]})


def build_node(node_file, out_dir):
    """Write the wrappers for one node; return its layout (bin dir, sysfs root)."""
    node = check_node(node_file)
    name = os.path.splitext(os.path.basename(node_file))[0]
    bin_dir = os.path.join(out_dir, name, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    for tool in tools_of(node):
        wrapper = os.path.join(bin_dir, tool)
        with open(wrapper, "w", encoding="utf-8") as handle:
            argv = [sys.executable, os.path.join(HERE, "replay_tool.py"), os.path.abspath(node_file), tool]
            handle.write("#!/bin/sh\nexec %s \"$@\"\n" % " ".join(shlex.quote(part) for part in argv))
        os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    sysfs = node.get("sysfs_root")
    return {
        "name": name,
        "bin_dir": bin_dir,
        "sysfs_root": os.path.join(REPO_ROOT, sysfs) if sysfs else None,
        "node": node,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("node_files", nargs="+")
    args = parser.parse_args(argv)
    try:
        for node_file in args.node_files:
            layout = build_node(node_file, args.out_dir)
            print("%s %s" % (layout["name"], layout["bin_dir"]))
    except (FleetError, ValueError, OSError) as exc:
        sys.stderr.write("build_fleet: %s\n" % exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
