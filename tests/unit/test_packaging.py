# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Python distribution lists every package the gpufleet CLI imports.

pyproject.toml names its packages explicitly (discovery would walk the collections/ link back
into the repository). A new controller-side package that is not listed works in the editable
install and breaks a plain `pip install .`: this test catches that.
"""

from __future__ import annotations

import os
import tomllib

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PREFIX = "ansible_collections.gpufleet.acceptance"


def test_every_plugin_utils_package_is_listed():
    with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as handle:
        listed = set(tomllib.load(handle)["tool"]["setuptools"]["packages"])
    found = set()
    top = os.path.join(REPO_ROOT, "plugins", "plugin_utils")
    for directory, subdirs, files in os.walk(top):
        subdirs[:] = [d for d in subdirs if d != "__pycache__"]
        if any(name.endswith(".py") for name in files):
            relative = os.path.relpath(directory, REPO_ROOT).replace(os.sep, ".")
            found.add("%s.%s" % (PREFIX, relative))
    assert found, "no packages found under plugins/plugin_utils"
    assert sorted(found - listed) == []
