# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test double: answers a tool invocation from a simulated node's recordings.

Usage: ``replay_tool.py [--bin-dir DIR] NODE_FILE TOOL [ARG...]``. The command line ``TOOL ARG...``
(joined by single spaces) is looked up in the node file's ``commands:`` map; the recorded output
file is printed byte for byte and the recorded exit code returned. A command the node file
lacks exits 127 naming the node file and the command: a replayed node never invents output.

``{bin}`` in a ``commands:`` key stands for ``DIR``, the built node's ``bin/`` (build_fleet.py
passes it): a launcher's recorded command line names the benchmark binary by the absolute path
the product gives it (``srun ... {bin}/all_reduce_perf -b 8M ...``), which is only known once
the node is built.
"""

from __future__ import annotations

import gzip
import os
import sys

import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def load_node(path):
    with open(path, "r", encoding="utf-8") as handle:
        node = yaml.safe_load(handle)
    if not isinstance(node, dict) or not isinstance(node.get("commands"), dict):
        raise ValueError("%s: a node file needs a 'commands:' map" % path)
    return node


def recording_path(relative):
    """Absolute path of a recording named relative to the repository root (.gz allowed)."""
    path = os.path.join(REPO_ROOT, relative)
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        return path + ".gz"
    return path


def read_recording(relative):
    path = recording_path(relative)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as handle:
        return handle.read()


BIN_PLACEHOLDER = "{bin}"


def find_entry(commands, command, bin_dir=None):
    """The ``commands:`` entry recorded for ``command``, a key's ``{bin}`` read as ``bin_dir``; None if none."""
    if command in commands and BIN_PLACEHOLDER not in command:
        return commands[command]
    if bin_dir:
        for key, entry in commands.items():
            if BIN_PLACEHOLDER in key and key.replace(BIN_PLACEHOLDER, bin_dir) == command:
                return entry
    return None


def main(argv):
    bin_dir = None
    if argv[:1] == ["--bin-dir"] and len(argv) > 1:
        bin_dir, argv = argv[1], argv[2:]
    if len(argv) < 2:
        sys.stderr.write("usage: replay_tool.py [--bin-dir DIR] NODE_FILE TOOL [ARG...]\n")
        return 2
    node_file, tool, args = argv[0], argv[1], argv[2:]
    node = load_node(node_file)
    command = " ".join([tool] + args)
    entry = find_entry(node["commands"], command, bin_dir)
    if entry is None:
        sys.stderr.write("replay: %s has no recording for `%s`\n" % (node_file, command))
        return 127
    if entry.get("stdout"):
        sys.stdout.buffer.write(read_recording(entry["stdout"]))
    if entry.get("stderr"):
        sys.stderr.buffer.write(read_recording(entry["stderr"]))
    return int(entry.get("rc", 0))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
