# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The timing guard (``make timing-quick``): two figures of fleet_scale.py against their budget.

- **fleet**: ``validate_cluster.yml`` at level quick on 64 replayed local hosts, and beside it, on the same hosts, the
  5-trivial-task baseline; the figure is the ratio of their controller CPU seconds (ours / baseline). A ratio, not
  seconds: load on the machine falls on both runs, and a slower or faster machine moves both.
- **report**: ``render_report`` over a SYNTHETIC results directory of 1,024 host records cloned from that run; the
  figure is its CPU seconds (a process of its own; nothing else runs in it).

Each is compared with ``benchmarks/budget.json``; a figure more than its tolerance (25 %) above its budget fails the
guard (exit 1), naming the figure, the budget and the file. It takes about 3 minutes on 2 cores, so it is not in
``make test``: run it before and after a change to a run's hot path (the fact task, the plays' per-host tasks, the
verdict, the report) and quote both lines in the change's note. ``--update-budget`` writes today's figures as the
budget (after a change that is meant to move them, on a quiet machine).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fleet_scale  # noqa: E402  pylint: disable=import-error,wrong-import-position

BUDGET_FILE = os.path.join(HERE, "budget.json")
# figure -> what it is, for the messages
FIGURES = {
    "fleet_64_cpu_ratio": ("controller CPU-s of validate_cluster.yml (level quick) over the 5-task baseline, "
                           "64 local hosts"),
    "report_1024_cpu_s": "CPU-s of render_report over 1,024 SYNTHETIC host records",
}
DEFAULT_TOLERANCE = 0.25


def over_budget(measured: Dict[str, float], budget: Dict[str, Any], source: str = BUDGET_FILE) -> List[str]:
    """One message per figure above its budget by more than the tolerance, or missing; [] when all are within."""
    tolerance = float(budget.get("tolerance", DEFAULT_TOLERANCE))
    problems = []
    for name, what in FIGURES.items():
        limit = budget.get("figures", {}).get(name)
        if limit is None:
            problems.append("%s: no budget for %s (%s); run with --update-budget" % (source, name, what))
            continue
        value = measured.get(name)
        if value is None:
            problems.append("%s (%s) was not measured: its run failed (see the log above)" % (name, what))
        elif value > float(limit) * (1.0 + tolerance):
            problems.append("%s = %.3f is %.0f %% above its budget %.3f (%s; tolerance %.0f %%, %s)" % (
                name, value, (value / float(limit) - 1.0) * 100.0, float(limit), what, tolerance * 100.0, source))
    return problems


def measured_figures(harness: "fleet_scale.Harness") -> Dict[str, float]:
    """The guard's figures from a harness that ran the fleet (64 local hosts) and report sections."""
    figures = {}
    for row in harness.rows:
        if row["fleet"] == "local" and row["hosts"] == 64 and not row["failed"] and row["ours"] and row["baseline"]:
            figures["fleet_64_cpu_ratio"] = row["ours"][0]["cpu_s"] / row["baseline"][0]["cpu_s"]
    for row in harness.report_rows:
        if row["nodes"] == 1024 and not row["failed"] and row["runs"]:
            figures["report_1024_cpu_s"] = row["runs"][0]["cpu_s"]
    return figures


def parse_args(argv: List[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", default=BUDGET_FILE, help="the budget file (default benchmarks/budget.json)")
    parser.add_argument("--update-budget", action="store_true", help="write today's figures into the budget file")
    parser.add_argument("--out", default=os.path.join(fleet_scale.REPO_ROOT, "tests", "output", "timing_quick"),
                        help="logs and runs (default tests/output/timing_quick)")
    return parser.parse_args(argv)


def main(argv: List[str] | None = None) -> int:
    args = parse_args(argv)
    harness_args = fleet_scale.parse_args(["--sections", "fleet,report", "--local-sizes", "64", "--ssh-sizes", "",
                                           "--repeats", "1", "--report-nodes", "1024", "--out", args.out])
    harness = fleet_scale.Harness(harness_args)
    harness.run()
    measured = measured_figures(harness)
    for name in FIGURES:
        shown = "%.3f" % measured[name] if name in measured else "not measured"
        print("timing-quick: %s = %s" % (name, shown), flush=True)
    if args.update_budget:
        if set(measured) != set(FIGURES):
            print("timing-quick: not every figure was measured; %s left as it was" % args.budget, file=sys.stderr)
            return 1
        figures = {name: round(value, 3) for name, value in measured.items()}
        budget = {"tolerance": DEFAULT_TOLERANCE, "figures": figures,
                  "measured": "%s on %s" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), harness.machine())}
        with open(args.budget, "w", encoding="utf-8") as handle:
            json.dump(budget, handle, indent=2, sort_keys=True)
            handle.write("\n")
        print("timing-quick: budget written to %s" % args.budget)
        return 0
    with open(args.budget, "r", encoding="utf-8") as handle:
        budget = json.load(handle)
    problems = over_budget(measured, budget, os.path.relpath(args.budget, fleet_scale.REPO_ROOT))
    for problem in problems:
        print("timing-quick: FAIL: %s" % problem, file=sys.stderr)
    if not problems:
        print("timing-quick: within budget (%s)" % os.path.relpath(args.budget, fleet_scale.REPO_ROOT))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
