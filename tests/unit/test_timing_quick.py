# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""benchmarks/timing_quick.py without Ansible: the figures it takes from the harness, and the budget rule."""

from __future__ import annotations

import json
import os
import sys

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "benchmarks"))

import fleet_scale  # noqa: E402  pylint: disable=import-error,wrong-import-position
import timing_quick  # noqa: E402  pylint: disable=import-error,wrong-import-position

BUDGET = {"tolerance": 0.25, "figures": {"fleet_64_cpu_ratio": 0.6, "report_1024_cpu_s": 8.0}}


def test_a_figure_within_a_quarter_of_its_budget_passes():
    # 0.6 * 1.25 = 0.75 and 8.0 * 1.25 = 10.0: both exactly at the edge still pass
    assert timing_quick.over_budget({"fleet_64_cpu_ratio": 0.75, "report_1024_cpu_s": 10.0}, BUDGET) == []


def test_a_figure_more_than_a_quarter_above_fails_naming_it_and_the_budget():
    problems = timing_quick.over_budget({"fleet_64_cpu_ratio": 0.9, "report_1024_cpu_s": 4.0}, BUDGET, "budget.json")
    assert len(problems) == 1
    assert problems[0].startswith("fleet_64_cpu_ratio = 0.900 is 50 % above its budget 0.600")
    assert "budget.json" in problems[0]


def test_a_figure_not_measured_or_not_budgeted_fails():
    problems = timing_quick.over_budget({"fleet_64_cpu_ratio": 0.5}, {"figures": {"fleet_64_cpu_ratio": 0.6}}, "b.json")
    assert problems == ["b.json: no budget for report_1024_cpu_s (%s); run with --update-budget"
                        % timing_quick.FIGURES["report_1024_cpu_s"]]
    problems = timing_quick.over_budget({"report_1024_cpu_s": 1.0}, BUDGET)
    assert problems[0].startswith("fleet_64_cpu_ratio (") and "was not measured" in problems[0]


def test_the_figures_are_the_cpu_ratio_at_64_local_hosts_and_the_report_cpu_at_1024(tmp_path):
    harness = fleet_scale.Harness(fleet_scale.parse_args(["--quick", "--out", str(tmp_path)]))
    run = {"wall_s": 1.0, "maxrss_mib": 1.0}
    harness.rows = [
        {"fleet": "local", "hosts": 8, "ours": [dict(run, cpu_s=1.0)], "baseline": [dict(run, cpu_s=9.0)],
         "failed": None},
        {"fleet": "local", "hosts": 64, "ours": [dict(run, cpu_s=30.0)], "baseline": [dict(run, cpu_s=40.0)],
         "failed": None},
    ]
    harness.report_rows = [{"nodes": 1024, "failed": None, "runs": [dict(run, cpu_s=6.5)]}]
    assert timing_quick.measured_figures(harness) == {"fleet_64_cpu_ratio": 0.75, "report_1024_cpu_s": 6.5}
    harness.rows[1]["failed"] = "ours: rc 2"
    assert timing_quick.measured_figures(harness) == {"report_1024_cpu_s": 6.5}


def test_the_checked_in_budget_names_every_figure():
    with open(timing_quick.BUDGET_FILE, "r", encoding="utf-8") as handle:
        budget = json.load(handle)
    assert set(budget["figures"]) == set(timing_quick.FIGURES)
    assert budget["tolerance"] == 0.25
