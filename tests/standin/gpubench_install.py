# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Install the gpubench TEST DOUBLE (gpubench_standin.py) on a replayed node as provisioning installs gpubench.

roles/gpu_bench builds gpubench into ``<gpu_bench_prefix>/gpubench-<gpu_bench_version>/bin/gpubench`` and writes the
install manifest ``<manifest dir>/gpu_bench.json`` (roles/gpu_bench/tasks/build.yml); the benchmark playbooks find it
there (benchmark_tasks/installed.yml). Here the prefix is inside the node's built directory and a wrapper that runs
the double (with this Python, by its absolute path: no interpreter is looked up on the PATH) takes the binary's place,
so the product runs it with no test-only path override.
"""

from __future__ import annotations

import json
import os
import shlex
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
STANDIN = os.path.join(HERE, "gpubench_standin.py")
ROLE_DEFAULTS = os.path.join(REPO_ROOT, "roles", "gpu_bench", "defaults", "main.yml")


def install_gpubench_double(node_dir: str, manifest_dir: str) -> str:
    """Copy the double to ``<node_dir>/opt/gpufleet/gpubench-<version>/bin/gpubench`` and record it in
    ``<manifest_dir>/gpu_bench.json`` with the keys the role writes; return the binary's path."""
    with open(ROLE_DEFAULTS, encoding="utf-8") as handle:
        version = str(yaml.safe_load(handle)["gpu_bench_version"])
    install_dir = os.path.join(node_dir, "opt", "gpufleet", "gpubench-%s" % version)
    binary = os.path.join(install_dir, "bin", "gpubench")
    os.makedirs(os.path.dirname(binary))
    with open(binary, "w", encoding="utf-8") as handle:
        handle.write("#!/bin/sh\n# TEST DOUBLE of gpubench (tests/standin/gpubench_install.py)\nexec %s %s \"$@\"\n" % (
            shlex.quote(sys.executable), shlex.quote(STANDIN)))
    os.chmod(binary, 0o755)
    os.makedirs(manifest_dir, exist_ok=True)
    manifest = {"role": "gpufleet.acceptance.gpu_bench", "version": version, "prefix": install_dir,
                "bin_dir": os.path.join(install_dir, "bin"), "binaries": {"gpubench": binary}}
    with open(os.path.join(manifest_dir, "gpu_bench.json"), "w", encoding="utf-8") as handle:
        handle.write(json.dumps(manifest, indent=4, sort_keys=True) + "\n")
    return binary
