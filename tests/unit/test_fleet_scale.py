# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""benchmarks/fleet_scale.py without Ansible: arguments, tables, the synthetic report run, the search section, the doc markers."""

from __future__ import annotations

import json
import os
import sys

import pytest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "benchmarks"))

import fleet_scale  # noqa: E402  pylint: disable=import-error,wrong-import-position


def _harness(tmp_path, *extra):
    return fleet_scale.Harness(fleet_scale.parse_args(["--quick", "--out", str(tmp_path / "out")] + list(extra)))


def test_quick_and_full_defaults():
    quick = fleet_scale.parse_args(["--quick"])
    assert (quick.local_sizes, quick.ssh_sizes, quick.repeats) == ([4, 8], [4], 1)
    full = fleet_scale.parse_args(["--ssh-sizes", ""])
    assert (full.local_sizes, full.ssh_sizes, full.repeats, full.report_nodes) == ([16, 64, 256], [], 3, [1024, 10000])
    assert fleet_scale.parse_args(["--report-nodes", "1024"]).report_nodes == [1024]
    assert full.sections == ["fleet", "report", "search"]
    with pytest.raises(SystemExit):
        fleet_scale.parse_args(["--sections", "fleet,speed"])
    with pytest.raises(SystemExit):
        fleet_scale.parse_args(["--sections", "report", "--report-nodes", ""])


def _run(wall, cpu):
    return {"wall_s": wall, "cpu_s": cpu, "maxrss_mib": 100.0}


def test_ratio_and_growth_are_medians(tmp_path):
    harness = _harness(tmp_path)
    harness.rows = [
        {"fleet": "local", "hosts": 64, "failed": None, "ours": [_run(10, 20), _run(12, 30), _run(30, 25)], "baseline": [_run(20, 50), _run(24, 40)]},
        {"fleet": "local", "hosts": 256, "failed": None, "ours": [_run(48, 100)], "baseline": [_run(110, 200)]},
        {"fleet": "ssh", "hosts": 32, "failed": "ours: rc 2: boom", "ours": [], "baseline": []},
    ]
    table = harness.fleet_table()
    # medians: ours 12 s / 25 CPU-s, baseline 22 s / 45 CPU-s -> 0.55 (0.56)
    assert "| local | 64 | facts + checks + report | 12.0 (10.0–30.0) | 25.0 | 100 | 3 | **0.55** (0.56) |" in table
    assert "| ssh | 32 | FAILED: ours: rc 2: boom |" in table
    # 48 / 12 = 4.00x for ours, 110 / 22 = 5.00x for the baseline
    assert harness.growth_lines() == ["- growth 64 -> 256 hosts (local, wall, x4.0 hosts): facts + checks + report **4.00x**, baseline 5.00x"]


def test_synthetic_run_clones_records_round_robin(tmp_path):
    source = tmp_path / "source"
    (source / "hosts").mkdir(parents=True)
    for host, verdict in (("n0001-alpha", "ACCEPT"), ("n0002-beta", "REJECT")):
        (source / "hosts" / (host + ".json")).write_text(json.dumps({"host": host, "verdict": verdict, "failed": [], "profile": {"name": "p"}}))
    (source / "run.json").write_text(json.dumps({"schema": "gpufleet.results/v1", "run_id": "r", "hosts": []}))
    (source / "fleet.json").write_text(json.dumps({"schema": "gpufleet.results/v1", "counts": {"ACCEPT": 1, "REJECT": 1}, "node_verdicts": {}}))
    target = _harness(tmp_path).synthetic_run(str(source), 5)
    names = sorted(name[:-5] for name in os.listdir(os.path.join(target, "hosts")))
    assert names == ["s0001-alpha", "s0002-beta", "s0003-alpha", "s0004-beta", "s0005-alpha"]
    with open(os.path.join(target, "fleet.json"), encoding="utf-8") as handle:
        fleet = json.load(handle)
    assert fleet["nodes"] == 5 and fleet["counts"] == {"ACCEPT": 3, "REJECT": 2}
    with open(os.path.join(target, "run.json"), encoding="utf-8") as handle:
        run = json.load(handle)
    assert run["hosts"] == names and run["inventory"][0].startswith("SYNTHETIC: 5 host records cloned from")


def _one_host_run(tmp_path):
    """A source run of one host record, for the report section to clone."""
    source = tmp_path / "source"
    (source / "hosts").mkdir(parents=True)
    (source / "hosts" / "n0001-alpha.json").write_text(json.dumps({"host": "n0001-alpha", "verdict": "ACCEPT"}))
    (source / "run.json").write_text(json.dumps({"run_id": "r", "hosts": []}))
    (source / "fleet.json").write_text(json.dumps({"counts": {}, "node_verdicts": {}}))
    return str(source)


def test_report_section_renders_each_size_of_report_nodes_after_an_unmeasured_render(tmp_path, monkeypatch):
    rendered = []

    def measured(argv, _env, _log_path, _timeout, cleanup=None):
        first = os.path.basename(argv[-1]) not in rendered
        rendered.append(os.path.basename(argv[-1]))
        # the unmeasured first render of each size is the slow one
        return {"wall_s": 9.0 if first else 1.0, "cpu_s": 1.5, "maxrss_mib": 50.0, "rc": 0, "timed_out": False}

    monkeypatch.setattr(fleet_scale.tgf, "run_measured", measured)
    harness = _harness(tmp_path, "--report-nodes", "3,5", "--repeats", "2")
    harness.source_run = _one_host_run(tmp_path)
    monkeypatch.setattr(harness, "browser_load", lambda _page: "0.5")
    harness.run_report()
    assert rendered == ["report-synthetic-3"] * 3 + ["report-synthetic-5"] * 3
    rows = [(row["nodes"], len(row["runs"]), row["failed"], row["warmup"]["wall_s"]) for row in harness.report_rows]
    assert rows == [(3, 2, None, 9.0), (5, 2, None, 9.0)]
    assert "| 5 (SYNTHETIC) | 1.0 (1.0–1.0) | 1.5 | 50 |" in harness.report_table()


def test_a_report_render_that_fails_fails_its_row_with_the_logs_last_line(tmp_path, monkeypatch):

    def measured(_argv, _env, log_path, _timeout, cleanup=None):
        with open(log_path, "w", encoding="utf-8") as handle:
            handle.write("Traceback ...\nReportError: hosts/ is empty\n")
        return {"wall_s": 0.1, "cpu_s": 0.1, "maxrss_mib": 20.0, "rc": 2, "timed_out": False}

    monkeypatch.setattr(fleet_scale.tgf, "run_measured", measured)
    harness = _harness(tmp_path, "--report-nodes", "3")
    harness.source_run = _one_host_run(tmp_path)
    harness.run_report()
    assert [(row["nodes"], row["runs"], row["failed"]) for row in harness.report_rows] == [
        (3, [], "rc 2: ReportError: hosts/ is empty")]
    assert "| 3 (SYNTHETIC) | FAILED: rc 2: ReportError: hosts/ is empty |" in harness.report_table()


def test_search_section_names_bad_nodes_and_links_without_false_accusation(tmp_path):
    harness = _harness(tmp_path, "--search-sizes", "16,32", "--rr-sizes", "10", "--search-seeds", "4")
    harness.run_search()
    assert [(row["n"], row["k"]) for row in harness.search_rows] == [(16, 1), (16, 2), (16, 3), (16, 4), (32, 1), (32, 2), (32, 3), (32, 4)]
    for row in harness.search_rows:
        assert row["false_nodes"] == row["false_links"] == 0 and row["missed"] == 0, row
        assert row["round_robin"] == row["n"] - 1
    # round robin over 10 nodes: 9 rounds, the one bad link named as that link in every placement
    assert harness.rr_rows == [{"n": 10, "seeds": 3, "named_right": 3, "rounds": [9], "seconds": harness.rr_rows[0]["seconds"]}]


def test_update_doc_rewrites_between_the_markers_only(tmp_path):
    doc = tmp_path / "perf.md"
    doc.write_text("head\n%s\nold table\n%s\ntail\n" % (fleet_scale.DOC_BEGIN, fleet_scale.DOC_END))
    fleet_scale.update_doc(str(doc), "new table\n")
    assert doc.read_text() == "head\n%s\nnew table\n%s\ntail\n" % (fleet_scale.DOC_BEGIN, fleet_scale.DOC_END)
    doc.write_text("no markers\n")
    with pytest.raises(fleet_scale.HarnessError):
        fleet_scale.update_doc(str(doc), "x")
