# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each action plugin's ARGUMENT_SPEC (what the plugin accepts) says what its module's DOCUMENTATION says (what
ansible-doc shows a user): the same options, types, element types, defaults, choices and required ones.

Until the spec is generated from the documentation, this test is the one place the two are held together: an option
added, renamed or given a new choice on one side only fails here, naming the plugin, the option and both values.
"""

from __future__ import annotations

import ast
import importlib
import os

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ACTIONS = os.path.join(REPO, "plugins", "action")
MODULES = os.path.join(REPO, "plugins", "modules")
KEYS = ("type", "elements", "default", "choices", "required")


def _assigned(path: str, name: str):
    """The literal value assigned to ``name`` at the top of the file (a module's DOCUMENTATION: read, not imported)."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(target, "id", None) == name for target in node.targets):
            return ast.literal_eval(node.value)
    return None


def _normal(option: dict) -> dict:
    """An option's keys that both sides state, as Ansible reads them (required false and no default are the same as
    saying nothing; a path is a string with ~ expanded; an empty list default and none are alike for a list)."""
    out = {key: option.get(key) for key in KEYS}
    out["type"] = out["type"] or "str"
    out["required"] = bool(out["required"])
    if out["choices"] is not None:
        out["choices"] = sorted(str(choice) for choice in out["choices"])
    return out


def _pairs():
    for name in sorted(entry[:-3] for entry in os.listdir(ACTIONS) if entry.endswith(".py")):
        spec = getattr(importlib.import_module("ansible_collections.gpufleet.acceptance.plugins.action." + name),
                       "ARGUMENT_SPEC", None)
        if spec is not None:
            yield name, spec


@pytest.mark.parametrize("plugin, spec", list(_pairs()), ids=[name for name, _spec in _pairs()])
def test_the_action_accepts_what_the_module_documents(plugin, spec):
    documentation = yaml.safe_load(_assigned(os.path.join(MODULES, plugin + ".py"), "DOCUMENTATION"))
    documented = documentation.get("options") or {}
    assert sorted(spec) == sorted(documented), "%s: options only in the spec %s, only in the docs %s" % (
        plugin, sorted(set(spec) - set(documented)), sorted(set(documented) - set(spec)))
    for option in spec:
        assert _normal(spec[option]) == _normal(documented[option]), "%s: option %s" % (plugin, option)
