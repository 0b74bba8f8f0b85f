# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test set-up: give the unit tests the recorded outputs (tests/conftest.py makes the collection importable)."""

from __future__ import annotations

import gzip
import os
import sys

import pytest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(REPO_ROOT, "tests", "fixtures")
# the unit tests' shared test doubles (doubles/profile_double.py) import by name; only that folder: tests/unit itself
# holds a gpufleet/ folder that would shadow the package
DOUBLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "doubles")
if DOUBLES not in sys.path:
    sys.path.insert(0, DOUBLES)


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
