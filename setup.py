# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The wheel of the ``gpufleet`` library carries a copy of the gpufleet.acceptance collection.

Everything about the package (name, packages, package data, dependencies) is in pyproject.toml;
this file only adds what pyproject.toml cannot say: ``build_py`` also copies the collection (the
repository root) into ``gpufleet/_collection/ansible_collections/gpufleet/acceptance/`` of the
build, where ``gpufleet.collection`` looks for it in an installed wheel, and ``sdist`` ships the
same files so that a wheel built from the sdist carries them too. An editable install gets no copy:
it runs from the checkout, which is the collection.
"""

from __future__ import annotations

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
# Where gpufleet/collection.py looks for the copy (relative to the build's top directory).
BUNDLE_DIR = os.path.join("gpufleet", "_collection", "ansible_collections", "gpufleet", "acceptance")
# The collection as an installed wheel needs it: the collection itself, and for `gpufleet demo` the
# demo inventory, the replay tooling and the recordings it replays.
# ansible.cfg: the settings gpufleet validate gives ansible-playbook where the user has none (cli/validate.py
# ansible_settings): forks, pipelining, the ssh keepalives that end a dropped node's task, the exit-code callback
COLLECTION_FILES = ("galaxy.yml", "README.md", "COPYING", "ansible.cfg")
COLLECTION_DIRS = ("meta", "plugins", "roles", "playbooks", "inventories", os.path.join("tests", "fixtures"))
REPLAY_DIR = os.path.join("tests", "replay")


def _replay_scripts(root: str) -> list[str]:
    """The replay tooling of tests/replay/ (its own tests are left out)."""
    folder = os.path.join(root, REPLAY_DIR)
    return sorted(os.path.join(REPLAY_DIR, name) for name in os.listdir(folder)
                  if name.endswith(".py") and not name.startswith("test_"))


def collection_files(root: str) -> list[str]:
    """Every file of the collection copy, relative to ``root`` (the repository root)."""
    files = list(COLLECTION_FILES) + _replay_scripts(root)
    for folder in COLLECTION_DIRS:
        for current, dirs, names in os.walk(os.path.join(root, folder)):
            dirs[:] = sorted(name for name in dirs if name != "__pycache__")
            files.extend(os.path.relpath(os.path.join(current, name), root) for name in sorted(names)
                         if not name.endswith((".pyc", ".pyo")))
    missing = [name for name in files if not os.path.isfile(os.path.join(root, name))]
    if missing:
        raise RuntimeError("the collection copy needs files this tree lacks: %s" % ", ".join(missing[:10]))
    return files


class BuildPyWithCollection(build_py):
    """build_py, then the collection copied into the build (not for an editable install)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = os.path.join(self.build_lib, BUNDLE_DIR)
        if os.path.isdir(target):
            shutil.rmtree(target)  # a rebuild never keeps a file the collection no longer has
        for name in collection_files(HERE):
            destination = os.path.join(target, name)
            os.makedirs(os.path.dirname(destination), exist_ok=True)
            # copy2 follows symlinks: the wheel gets plain files
            shutil.copy2(os.path.join(HERE, name), destination)


class SdistWithCollection(sdist):
    """sdist, with the collection's files added so that a wheel built from it can copy them."""

    # The file list itself comes from egg_info's manifest (MANIFEST.in rules), not from this command:
    # the collection's files join where the release tree is written.
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, sorted(set(files) | set(collection_files(HERE))))


setup(cmdclass={"build_py": BuildPyWithCollection, "sdist": SdistWithCollection})
