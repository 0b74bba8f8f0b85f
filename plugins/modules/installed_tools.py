#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: installed_tools
short_description: Where the provisioned benchmark tools and the launcher are on a node, and whether each is there
description:
  - >-
    Reads the install manifest the provisioning roles write on the node (one JSON file per role in O(manifest_dir):
    C(nccl_tests.json) from role C(gpufleet.acceptance.nccl_tests), C(mpi_fabric.json) from role C(gpufleet.acceptance.mpi_fabric))
    and, for each tool of O(tools), decides its path - the override given, else the manifest's, else the tool's default - and
    whether that path is an executable file on the node (a bare name is looked up on C(PATH)).
  - The launcher multi-node benchmarks use is O(launcher) when given (the C(gpufleet_launcher) variable), else the one the
    manifest records; its program (C(mpirun) or C(srun)) is checked the same way.
  - >-
    One call per host before any benchmark starts: the benchmark playbooks record a tool that is not there once per host,
    with the fix, instead of once per run.
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  manifest_dir:
    description:
      - The directory of the manifest files. A missing directory is a node nothing was provisioned on (RV(manifest) empty).
    type: path
    default: /var/lib/gpufleet/installed.d
  tools:
    description:
      - Tool name to how to find it, with the keys C(override) (a path given by the user; wins when not empty), C(manifest)
        (the dotted key of its path in the manifest, for example V(nccl_tests.binaries.all_reduce_perf)) and C(default)
        (the path or name used when neither gives one).
    type: dict
    default: {}
  launcher:
    description:
      - The launcher given by the user (C(gpufleet_launcher)), which wins over the manifest's.
    type: dict
  launcher_manifest:
    description:
      - The dotted key of the launcher in the manifest.
    type: str
    default: mpi_fabric.launcher
extends_documentation_fragment:
  - gpufleet.acceptance.attributes.collector
attributes:
  check_mode:
    support: full
    description: Reads only; the same in check mode.
seealso:
  - module: gpufleet.acceptance.bench_run
"""

EXAMPLES = r"""
- name: Where all_reduce_perf and the launcher are on this node
  gpufleet.acceptance.installed_tools:
    tools:
      all_reduce_perf:
        override: "{{ gpufleet_all_reduce_perf_path | default('') }}"
        manifest: nccl_tests.binaries.all_reduce_perf
        default: /opt/gpufleet/nccl-tests-2.17.3/build/all_reduce_perf
      iperf3:
        default: iperf3
    launcher: "{{ gpufleet_launcher | default(omit) }}"
  register: gpufleet_installed
"""

RETURN = r"""
manifest:
  description: The manifest files read, by their name without C(.json).
  returned: always
  type: dict
  sample: {"nccl_tests": {"version": "2.17.3", "binaries": {"all_reduce_perf": "/opt/gpufleet/nccl-tests-2.17.3/build/all_reduce_perf"}}}
manifest_errors:
  description: Manifest files that could not be read or were not a JSON object, with why.
  returned: always
  type: list
  elements: str
tools:
  description: Per tool of O(tools) - C(path), C(source) (override, manifest or default), C(present) and, when not present, C(reason).
  returned: always
  type: dict
  sample: {"all_reduce_perf": {"path": "/opt/gpufleet/nccl-tests-2.17.3/build/all_reduce_perf", "source": "default", "present": false,
           "reason": "/opt/gpufleet/nccl-tests-2.17.3/build/all_reduce_perf: no such file"}}
launcher:
  description:
    - The launcher - C(value) (the O(launcher) or manifest dict, or null), C(source) (variable, manifest or none), C(program),
      C(present) and C(reason) when it cannot be used.
  returned: always
  type: dict
"""

import json
import os
import shutil

from ansible.module_utils.basic import AnsibleModule


def read_manifest(directory):
    """``({name: content}, [errors])`` from the ``*.json`` files of ``directory`` (nothing when it does not exist)."""
    manifest, errors = {}, []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return manifest, errors
    for name in names:
        if not name.endswith(".json"):
            continue
        path = os.path.join(directory, name)
        try:
            with open(path, encoding="utf-8") as handle:
                content = json.load(handle)
        except (OSError, ValueError) as exc:
            errors.append("%s: %s" % (path, exc))
            continue
        if not isinstance(content, dict):
            errors.append("%s: not a JSON object" % path)
            continue
        manifest[name[:-len(".json")]] = content
    return manifest, errors


def dig(tree, dotted):
    """The value at ``a.b.c`` in nested dicts, or None."""
    value = tree
    for key in (dotted or "").split("."):
        if not key or not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def executable(path):
    """``(found path or None, reason)``: an executable file at ``path``, or ``path`` looked up on PATH when it has no slash."""
    if not path:
        return None, "no path"
    if "/" not in path:
        found = shutil.which(path)
        return (found, "") if found else (None, "%s: not found on PATH (%s)" % (path, os.environ.get("PATH", "")))
    if not os.path.exists(path):
        return None, "%s: no such file" % path
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        return None, "%s: not an executable file" % path
    return path, ""


def resolve_tool(spec, manifest):
    """One tool of the ``tools`` option: its path, where the path came from, and whether it is there."""
    spec = spec if isinstance(spec, dict) else {}
    override = str(spec.get("override") or "")
    from_manifest = dig(manifest, spec.get("manifest"))
    if override:
        path, source = override, "override"
    elif isinstance(from_manifest, str) and from_manifest:
        path, source = from_manifest, "manifest"
    else:
        path, source = str(spec.get("default") or ""), "default"
    found, reason = executable(path)
    out = {"path": path, "source": source, "present": found is not None}
    if found is None:
        out["reason"] = reason
    return out


def launcher_program(launcher):
    """The program a launcher's argv starts: ``program`` when recorded, else the first word that is not ``env`` or NAME=VALUE."""
    if launcher.get("program"):
        return str(launcher["program"])
    for word in launcher.get("argv_prefix") or []:
        word = str(word)
        if word != "env" and "=" not in word:
            return word
    return None


def resolve_launcher(given, manifest, key):
    """The launcher to use (the given one, else the manifest's) and whether its program is there."""
    if isinstance(given, dict) and given:
        value, source = given, "variable"
    elif isinstance(dig(manifest, key), dict):
        value, source = dig(manifest, key), "manifest"
    else:
        return {"value": None, "source": "none", "program": None, "present": False,
                "reason": "no launcher: gpufleet_launcher is not set and the node has no %s in its install manifest" % key}
    if not isinstance(value.get("argv_prefix"), list) or not value["argv_prefix"]:
        return {"value": value, "source": source, "program": None, "present": False, "reason": "the launcher has no argv_prefix"}
    program = launcher_program(value)
    found, reason = executable(program)
    out = {"value": value, "source": source, "program": program, "present": found is not None}
    if found is None:
        out["reason"] = reason
    return out


def main():
    module = AnsibleModule(
        argument_spec={
            "manifest_dir": {"type": "path", "default": "/var/lib/gpufleet/installed.d"},
            "tools": {"type": "dict", "default": {}},
            "launcher": {"type": "dict"},
            "launcher_manifest": {"type": "str", "default": "mpi_fabric.launcher"},
        },
        supports_check_mode=True,
    )
    params = module.params
    manifest, errors = read_manifest(params["manifest_dir"])
    tools = {str(name): resolve_tool(spec, manifest) for name, spec in sorted((params["tools"] or {}).items())}
    module.exit_json(changed=False, manifest_dir=params["manifest_dir"], manifest=manifest, manifest_errors=errors, tools=tools,
                     launcher=resolve_launcher(params["launcher"], manifest, params["launcher_manifest"]))


if __name__ == "__main__":
    main()
