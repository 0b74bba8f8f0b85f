# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node's fact collection as one Python program, fed to the node's interpreter on stdin.

Ansible runs a module through its wrapper (AnsiballZ), which imports ``ansible.module_utils.basic`` on the node before
the module's first line: 0.25-0.31 CPU-s a run, compiled from the zip each time (python -X importtime; most of a
trivial module's cost, docs/performance.md). node_facts' own work is stdlib code (plugins/module_utils/node_run.py and
the collectors), so the action plugin sends that code alone: :func:`program` is a short script holding those files as
a zip (base64) and the checked options as JSON; it writes the zip to a temporary file, imports ``node_run`` from it,
prints ``{"changed": false, "groups": ...}`` as the module would, and removes the file. The same interpreter, the same
command line and the same stdin as Ansible's pipelining, so become, the environment and the connection behave alike.
"""

from __future__ import annotations

import base64
import io
import json
import os
import zipfile
from typing import Any

# the collection's package path inside the zip, each level a regular package (zipimport needs the __init__.py)
PACKAGE = ("ansible_collections", "gpufleet", "acceptance", "plugins", "module_utils")
# the module_utils the collection runs on the node: node_run and what it imports (stdlib besides these)
NODE_FILES = ("node_run", "node_collect", "topology_collect", "gpu_collect", "nic_collect", "host_collect")

BOOTSTRAP = '''import base64, json, os, sys, tempfile
PAYLOAD = %(payload)r
PARAMS = json.loads(%(params)r)


def _main():
    handle, path = tempfile.mkstemp(prefix="gpufleet-facts-", suffix=".zip")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(base64.b64decode(PAYLOAD))
        sys.path.insert(0, path)
        from ansible_collections.gpufleet.acceptance.plugins.module_utils import node_run
        groups = node_run.collect(node_run.expand_paths(PARAMS))
    finally:
        os.unlink(path)
    sys.stdout.write(json.dumps({"changed": False, "groups": groups}))


_main()
'''

_PAYLOADS: dict[tuple[str, tuple[float, ...]], str] = {}


def payload(module_utils_dir: str) -> str:
    """The node files of ``module_utils_dir`` as a zip, base64; built once per process and set of file times."""
    paths = [os.path.join(module_utils_dir, name + ".py") for name in NODE_FILES]
    key = (module_utils_dir, tuple(os.stat(path).st_mtime for path in paths))
    if key not in _PAYLOADS:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for depth in range(1, len(PACKAGE) + 1):
                archive.writestr("/".join(PACKAGE[:depth] + ("__init__.py",)), "")
            for name, path in zip(NODE_FILES, paths):
                archive.write(path, "/".join(PACKAGE + (name + ".py",)))
        _PAYLOADS[key] = base64.b64encode(buffer.getvalue()).decode("ascii")
    return _PAYLOADS[key]


def program(module_utils_dir: str, params: dict[str, Any]) -> bytes:
    """The script for the node's interpreter: ``params`` (the module's options, checked and defaulted) collected
    by node_run; it prints the module's result."""
    return (BOOTSTRAP % {"payload": payload(module_utils_dir), "params": json.dumps(params, sort_keys=True)}).encode()
