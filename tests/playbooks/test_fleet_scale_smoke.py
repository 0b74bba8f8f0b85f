# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Smoke run of the fleet-scale harness: benchmarks/fleet_scale.py --quick on 2 replayed local hosts.

validate_cluster.yml and the 5-trivial-task baseline run once each, the report renders over a
SYNTHETIC directory of 16 cloned records and headless Chromium opens it; the harness must exit 0 and write its
table. ~15 s (two
ansible-playbook runs on 2 hosts and one report: a smoke needs the sizes passed through, not large
ones); the SSH fleet and the search are left out here
(tests/unit/test_fleet_scale.py covers the search).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_quick_run_measures_ours_and_the_baseline(tmp_path):
    doc = tmp_path / "perf.md"
    doc.write_text("before\n<!-- fleet-scale:begin -->\n<!-- fleet-scale:end -->\nafter\n")
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "benchmarks", "fleet_scale.py"), "--quick", "--sections", "fleet,report",
                           "--local-sizes", "2", "--ssh-sizes", "", "--report-nodes", "16",
                           "--out", str(tmp_path / "out"), "--update-doc", str(doc)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    with open(tmp_path / "out" / "fleet_scale.json", encoding="utf-8") as handle:
        data = json.load(handle)
    (row,) = data["rows"]
    assert (row["fleet"], row["hosts"], row["failed"]) == ("local", 2, None)
    assert len(row["ours"]) == len(row["baseline"]) == 1
    assert all(run["wall_s"] > 0 and run["cpu_s"] > 0 and run["rc"] == 0 for run in row["ours"] + row["baseline"])
    (report,) = data["report"]
    assert report["nodes"] == 16 and report["failed"] is None and report["runs"][0]["sizes"]["report.html"] > 0
    # headless Chromium opened that report.html (seconds; "-" or "over ..." when it could not)
    assert float(report["runs"][0]["browser_load"]) > 0
    text = doc.read_text()
    assert text.startswith("before\n<!-- fleet-scale:begin -->\nMeasured ") and text.endswith("<!-- fleet-scale:end -->\nafter\n")
    assert "| local | 2 | facts + checks + report |" in text and "| 16 (SYNTHETIC) |" in text
