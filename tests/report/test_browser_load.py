# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""benchmarks/browser_load.py in headless Chromium: a page's load time, and a page too slow for its timeout."""

from __future__ import annotations

import os
import sys

import pytest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "tools"))

import browser_load  # noqa: E402  pylint: disable=import-error,wrong-import-position
from system_programs import require_programs  # noqa: E402  pylint: disable=import-error,wrong-import-position


@pytest.fixture(name="chromium_installed", scope="module", autouse=True)
def chromium_installed_fixture():
    require_programs(["chromium"], "browser_load.py opens pages in it")


def test_a_page_in_a_directory_with_a_space_loads_and_leaves_no_probe_behind(tmp_path):
    folder = tmp_path / "a report"
    folder.mkdir()
    page = folder / "report.html"
    page.write_text("<!DOCTYPE html><title>r</title><table>%s</table>" % ("<tr><td>x" * 2000))
    seconds = browser_load.load_ms(str(page)) / 1000.0
    # a load time, within the 120 s the call allows
    assert 0.0 < seconds < 120.0
    assert sorted(os.listdir(str(folder))) == ["report.html"]


def test_a_page_that_is_still_loading_at_the_timeout_is_named(tmp_path):
    page = tmp_path / "slow.html"
    # an image from a port nobody listens on would fail fast; a sleep in the page holds its load event instead
    page.write_text("<!DOCTYPE html><title>s</title><script>const end = Date.now() + 60000; while (Date.now() < end) {}"
                    "</script>")
    with pytest.raises(browser_load.BrowserTimeout, match="slow.html did not load within 3 s"):
        browser_load.load_ms(str(page), timeout=3)
