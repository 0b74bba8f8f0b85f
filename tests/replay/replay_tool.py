# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test double: answers a tool invocation from a simulated node's recordings.

Usage: ``replay_tool.py [--bin-dir DIR] NODE_FILE TOOL [ARG...]``. The command line ``TOOL ARG...``
(joined by single spaces) is looked up in the node file's ``commands:`` map; the recorded output
file is printed byte for byte and the recorded exit code returned. A command the node file
lacks exits 127 with no output and the line ``TOOL: no output for `COMMAND``` on stderr: a replayed node never
invents output, and its words are what an operator reads of a real node's tool that printed nothing (the report's
reasons carry them; the simulation's own file names stay out of them).

``{bin}`` in a ``commands:`` key stands for ``DIR``, the built node's ``bin/`` (build_fleet.py
passes it): a launcher's recorded command line names the benchmark binary by the absolute path
the product gives it (``srun ... {bin}/all_reduce_perf -b 8M ...``), which is only known once
the node is built.

An entry may answer later calls differently (a counter that grows between two readings of the same node): ``then:``
lists further answers (each ``stdout``/``stderr``/``rc``, like the entry); the first call of that command line answers
the entry itself, call N (N >= 2) answers ``then[N-2]``, and once the list is used up its last answer repeats. The
calls are counted per node and command line in ``DIR/../replay-calls/`` (a rebuilt node starts again at the first).
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
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
# what a command the node has no recording for prints on stderr (TOOL, the command line); a printf format as well:
# build_fleet.py's shell wrappers print it with the same words
NO_OUTPUT = "%s: no output for `%s`\n"


def find_entry(commands, command, bin_dir=None):
    """The ``commands:`` entry recorded for ``command``, a key's ``{bin}`` read as ``bin_dir``; None if none."""
    if command in commands and BIN_PLACEHOLDER not in command:
        return commands[command]
    if bin_dir:
        for key, entry in commands.items():
            if BIN_PLACEHOLDER in key and key.replace(BIN_PLACEHOLDER, bin_dir) == command:
                return entry
    return None


def call_number(bin_dir, command):
    """This call's number (1, 2, ...) of ``command`` on the node built at ``bin_dir``: counted in a file, under a lock."""
    calls = os.path.join(os.path.dirname(os.path.abspath(bin_dir)), "replay-calls")
    os.makedirs(calls, exist_ok=True)
    path = os.path.join(calls, hashlib.sha1(command.encode("utf-8")).hexdigest())
    with open(path, "a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        number = int(handle.read().strip() or 0) + 1
        handle.seek(0)
        handle.truncate()
        handle.write("%d\n" % number)
    return number


def answer_of(entry, bin_dir, command):
    """The answer of this call: the entry, or with ``then:`` the one for this call's number (module docstring)."""
    later = entry.get("then") or []
    if not later or not bin_dir:
        return entry
    number = call_number(bin_dir, command)
    return entry if number == 1 else later[min(number - 2, len(later) - 1)]


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
        sys.stderr.write(NO_OUTPUT % (tool, command))
        return 127
    entry = answer_of(entry, bin_dir, command)
    if entry.get("stdout"):
        sys.stdout.buffer.write(read_recording(entry["stdout"]))
    if entry.get("stderr"):
        sys.stderr.buffer.write(read_recording(entry["stderr"]))
    return int(entry.get("rc", 0))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
