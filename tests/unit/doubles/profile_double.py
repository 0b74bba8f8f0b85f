# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""TEST DOUBLE of the profiles loader for the tests that judge a run (the profiles are not what they test)."""

from __future__ import annotations


class FakeJudge:
    """Stands in for the profiles loader: every reachable node gets profile 'demo' (no expectations)."""

    module = None
    warnings: list = []

    @staticmethod
    def choose(facts, choice):
        del facts, choice
        return {"name": "demo"}, "test profile"
