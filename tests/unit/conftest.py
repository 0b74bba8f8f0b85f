# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test set-up: make the collection importable and give tests the recorded outputs."""

from __future__ import annotations

import gzip
import os
import sys

import pytest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(REPO_ROOT, "tests", "fixtures")


def _ensure_collection_importable():
    """Import ``ansible_collections.gpufleet.acceptance`` from this checkout.

    ansible-test runs from ``.../ansible_collections/gpufleet/acceptance`` and already has
    it on sys.path; a plain ``pytest`` in the checkout uses the untracked link that
    ``make`` creates under collections/.
    """
    parts = REPO_ROOT.split(os.sep)
    if len(parts) > 3 and parts[-3] == "ansible_collections":
        base = os.sep.join(parts[:-3])
    else:
        base = os.path.join(REPO_ROOT, "collections")
        link = os.path.join(base, "ansible_collections", "gpufleet", "acceptance")
        if not os.path.exists(link):
            os.makedirs(os.path.dirname(link), exist_ok=True)
            os.symlink(os.path.relpath(REPO_ROOT, os.path.dirname(link)), link)
    if base not in sys.path:
        sys.path.insert(0, base)


_ensure_collection_importable()


def read_fixture(relative_path):
    """Text of ``tests/fixtures/<relative_path>`` exactly as recorded, line endings included.

    Recordings with CRLF line endings are stored gzip-compressed (``<name>.gz``) so they
    stay byte-exact while ansible-test's ``line-endings`` check reads only LF text files.
    """
    path = os.path.join(FIXTURES, relative_path)
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        with gzip.open(path + ".gz", "rb") as handle:
            return handle.read().decode("utf-8")
    with open(path, "r", encoding="utf-8", newline="") as handle:
        return handle.read()


@pytest.fixture(name="fixture_text")
def fixture_text_fixture():
    """``fixture_text("topo/x.txt")`` returns the recording's text."""
    return read_fixture
