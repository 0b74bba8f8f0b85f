# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Python distribution ships the whole gpufleet library: every package and its data files.

pyproject.toml finds the packages (``packages.find``: a directory without ``__init__.py`` would be
left out of a plain ``pip install .`` while the editable install still worked) and names the data
files by pattern (``package-data``): a profile, template or schema that no pattern matches would be
missing from the wheel. tests/install/ builds and installs the real wheel.
"""

from __future__ import annotations

import fnmatch
import os
import tomllib

import setuptools

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PACKAGE = os.path.join(REPO_ROOT, "gpufleet")


def _pyproject():
    with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as handle:
        return tomllib.load(handle)


def _library_files():
    for directory, subdirs, files in os.walk(PACKAGE):
        subdirs[:] = [d for d in subdirs if d not in ("__pycache__", "_collection")]
        for name in files:
            yield os.path.relpath(os.path.join(directory, name), PACKAGE)


def test_every_directory_with_python_is_a_found_package():
    found = set(setuptools.find_packages(REPO_ROOT, include=_pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]))
    with_python = set("gpufleet" + ("." + os.path.dirname(path).replace(os.sep, ".") if os.path.dirname(path) else "")
                      for path in _library_files() if path.endswith(".py"))
    assert "gpufleet.checks" in with_python and "gpufleet.report" in with_python
    assert sorted(with_python - found) == []


def test_every_data_file_is_matched_by_a_package_data_pattern():
    patterns = _pyproject()["tool"]["setuptools"]["package-data"]["gpufleet"]
    data = [path for path in _library_files() if not path.endswith((".py", ".pyc"))]
    assert "profiles/hgx-h100-8.yml" in data and "report/templates/report.html.j2" in data
    assert [path for path in data if not any(fnmatch.fnmatch(path, pattern) for pattern in patterns)] == []
