# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the gpufleet.acceptance collection is that this library serves: the one place that knows.

Two layouts, tried in this order:

- an installed wheel (``pip install .`` or the built wheel): the build copies the collection into the
  package as ``gpufleet/_collection/ansible_collections/gpufleet/acceptance`` (``setup.py``);
- a source checkout (``pip install -e .``, ``make``): the package's parent directory is the collection
  (it holds ``galaxy.yml``), and ``collections/ansible_collections/gpufleet/acceptance`` links back to it
  so that Ansible finds it by name (``make link``; :func:`collections_path` makes the link when missing).
"""

from __future__ import annotations

import importlib.util
import os
from types import ModuleType

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_BUNDLED_PATH = os.path.join(PACKAGE_DIR, "_collection")
_BUNDLED_ROOT = os.path.join(_BUNDLED_PATH, "ansible_collections", "gpufleet", "acceptance")
_CHECKOUT_ROOT = os.path.dirname(PACKAGE_DIR)


def collection_root() -> str:
    """The collection's directory (the one holding ``galaxy.yml`` or ``MANIFEST.json`` and ``playbooks/``)."""
    if os.path.isdir(os.path.join(_BUNDLED_ROOT, "playbooks")):
        return _BUNDLED_ROOT
    return _CHECKOUT_ROOT


def is_bundled() -> bool:
    """Whether this library runs from an installed wheel's copy of the collection (not from a source checkout)."""
    return collection_root() == _BUNDLED_ROOT


def collections_path() -> str:
    """The directory holding ``ansible_collections/`` for ANSIBLE_COLLECTIONS_PATH (the checkout's link made when missing)."""
    root = collection_root()
    if root == _BUNDLED_ROOT:
        return _BUNDLED_PATH
    link = os.path.join(root, "collections", "ansible_collections", "gpufleet", "acceptance")
    if not os.path.lexists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.join(os.pardir, os.pardir, os.pardir), link)
    return os.path.join(root, "collections")


def playbook(name: str) -> str:
    """The path of the collection's playbook ``name`` (e.g. ``validate_cluster.yml``)."""
    return os.path.join(collection_root(), "playbooks", name)


def module_utils(name: str) -> ModuleType:
    """The collection's stdlib-only ``plugins/module_utils/<name>.py``, loaded by its path.

    For the tables the node-side code and the library share (``launcher_words``): the file is the one copy, and the
    library needs no ``ansible_collections`` package on its path to read it.
    """
    path = os.path.join(collection_root(), "plugins", "module_utils", name + ".py")
    spec = importlib.util.spec_from_file_location("gpufleet_module_utils_" + name, path)
    if spec is None or spec.loader is None:
        raise ImportError("no module_utils file %s" % path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
