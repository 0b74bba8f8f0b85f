# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An action plugin's argument spec, generated from its module's DOCUMENTATION: each option is declared once.

An action plugin of the collection (plugins/action/<name>.py) is documented by the module file of the same name
(plugins/modules/<name>.py: what ``ansible-doc`` shows). Its spec is read from there, not written again. A module
that also runs on the node keeps its own argument spec in code (the node has no YAML parser), and ansible-test's
validate-modules holds that one to the same DOCUMENTATION.
"""

from __future__ import annotations

import ast
import os
from typing import Any

import yaml

# The keys of a documented option that are also keys of Ansible's argument spec, with the same meaning.
SPEC_KEYS = ("type", "elements", "default", "choices", "required", "aliases", "no_log")


class DocumentationError(ValueError):
    """A module file whose DOCUMENTATION cannot give a spec (a packaging error, named with the file)."""


def documentation_of(module_path: str) -> dict[str, Any]:
    """The DOCUMENTATION of a module file as data, read without importing the module (it may need the node's
    libraries)."""
    try:
        with open(module_path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), filename=module_path)
    except (OSError, SyntaxError) as exc:
        raise DocumentationError("%s: cannot read the module's DOCUMENTATION: %s" % (module_path, exc)) from None
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        if "DOCUMENTATION" in [getattr(target, "id", None) for target in node.targets]:
            document = yaml.safe_load(ast.literal_eval(node.value))
            if isinstance(document, dict):
                return document
    raise DocumentationError("%s: no DOCUMENTATION mapping at the top of the file" % module_path)


def argument_spec(options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Ansible's argument spec from documented ``options`` (their ``suboptions`` become nested ``options``)."""
    spec: dict[str, dict[str, Any]] = {}
    for name, documented in (options or {}).items():
        entry = {key: documented[key] for key in SPEC_KEYS if key in documented}
        if documented.get("suboptions"):
            entry["options"] = argument_spec(documented["suboptions"])
        spec[name] = entry
    return spec


def module_file(action_path: str) -> str:
    """plugins/modules/<name>.py beside plugins/action/<name>.py."""
    plugins = os.path.dirname(os.path.dirname(os.path.abspath(action_path)))
    return os.path.join(plugins, "modules", os.path.basename(action_path))


def documented_spec(action_path: str) -> dict[str, dict[str, Any]]:
    """The argument spec of the action plugin at ``action_path`` (its ``__file__``), from its module's documentation."""
    return argument_spec(documentation_of(module_file(action_path)).get("options") or {})
