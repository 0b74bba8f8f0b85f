# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The program node_facts' action feeds to a node's interpreter: it runs without Ansible on the node and prints what
the module would."""

from __future__ import annotations

import ast
import base64
import io
import json
import os
import subprocess
import sys
import zipfile

from ansible_collections.gpufleet.acceptance.plugins.module_utils import node_run
from gpufleet.adapter.node_program import NODE_FILES, PACKAGE, payload, program

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MODULE_UTILS = os.path.join(REPO_ROOT, "plugins", "module_utils")
TOPO = os.path.join(REPO_ROOT, "tests", "fixtures", "topo", "azure-ncads-a100-v4-style-4x-a100-pcie-nv12-bridge-pairs-4numa.txt")


def _fake_nvidia_smi(tmp_path):
    """nvidia-smi that answers ``topo -m`` with a recorded matrix and nothing else, as the replay wrappers do."""
    path = tmp_path / "nvidia-smi"
    path.write_text('#!/bin/sh\n[ "$*" = "topo -m" ] && exec cat %s\necho "no output for $*" >&2\nexit 127\n' % TOPO)
    path.chmod(0o755)
    return str(path)


def _params(**overrides):
    params = {key: option.get("default") for key, option in node_run.argument_spec().items()}
    params.update(overrides)
    return params


def test_the_program_needs_no_ansible_and_prints_the_modules_result(tmp_path):
    params = _params(groups=["topology"], nvidia_smi_path=_fake_nvidia_smi(tmp_path), timeout=20)
    # -I -S: no site-packages, so no Ansible to import on this "node"
    node_tmp = tmp_path / "node-tmp"
    node_tmp.mkdir()
    proc = subprocess.run([sys.executable, "-I", "-S"], input=program(MODULE_UTILS, params), capture_output=True,
                          timeout=60, check=False,
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TMPDIR": str(node_tmp)})
    assert proc.returncode == 0, proc.stderr.decode()
    result = json.loads(proc.stdout)
    with open(TOPO, encoding="utf-8") as handle:
        recorded = handle.read()
    assert result["changed"] is False and list(result["groups"]) == ["topology"]
    topology = result["groups"]["topology"]
    assert (topology["failed"], topology["msg"]) == (False, None)
    assert topology["raw"]["topo_m"]["stdout"] == recorded
    # what the module prints for the same options (it calls the same function), but for the tool's own duration
    in_process = json.loads(json.dumps(node_run.collect(params)))
    for outcome in (result, {"groups": in_process}):
        del outcome["groups"]["topology"]["raw"]["topo_m"]["duration_s"]
    assert result["groups"] == in_process
    # the zip was written to the node's temporary directory, and removed
    assert not os.listdir(str(node_tmp))


def test_a_crash_on_the_node_is_a_traceback_and_a_non_zero_exit(tmp_path):
    # a group that is no collector's: node_run raises, as the module would, and nothing is printed on stdout
    proc = subprocess.run([sys.executable, "-I", "-S"], input=program(MODULE_UTILS, {"groups": ["topology"]}),
                          capture_output=True, timeout=60, check=False)
    assert proc.returncode == 1 and proc.stdout == b""
    assert b"KeyError" in proc.stderr


def test_the_zip_holds_the_node_files_as_a_package():
    archive = zipfile.ZipFile(io.BytesIO(base64.b64decode(payload(MODULE_UTILS))))
    prefix = "/".join(PACKAGE) + "/"
    assert sorted(archive.namelist()) == sorted(
        ["/".join(PACKAGE[:depth] + ("__init__.py",)) for depth in range(1, 6)] + [prefix + n + ".py" for n in NODE_FILES])


def test_the_node_files_import_only_each_other_and_the_standard_library():
    for name in NODE_FILES:
        with open(os.path.join(MODULE_UTILS, name + ".py"), encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ansible_collections"):
                imported = [node.module.rsplit(".", 1)[-1]] if not node.module.endswith("module_utils") \
                    else [alias.name for alias in node.names]
                assert set(imported) <= set(NODE_FILES), (name, node.module)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                assert not (module or "").startswith("ansible"), (name, module)


def test_paths_are_expanded_with_the_nodes_home(monkeypatch):
    monkeypatch.setenv("HOME", "/home/node")
    expanded = node_run.expand_paths({"sysfs_root": "~/sys", "procfs_root": "/proc", "nvidia_smi_path": "~/bin/x"})
    # sysfs_root is a path option (AnsibleModule expands it); nvidia_smi_path a string, kept as given
    assert expanded == {"sysfs_root": "/home/node/sys", "procfs_root": "/proc", "nvidia_smi_path": "~/bin/x"}
