# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's burn-in section: per-GPU time series of the run and trends over a three-run history.

SYNTHETIC samples (tests/fixtures/nvml-samples/synthetic_nvml.py). Three runs of node-a, a week apart, two GPUs:
GPU 0 holds 1980 MHz; GPU 1 falls 1980 -> 1970 -> 1800 MHz. GPU 0's name is hostile markup.

Trend geometry (charts_series.py): plot x 80..580, y 20 (top)..170; three runs -> x = 80, 330, 580. The SM clock
chart's range is 1800..1980, so y(1980) = 170 - 180/180*150 = 20.0, y(1970) = 170 - 170/180*150 = 28.3,
y(1800) = 170.0.
"""

from __future__ import annotations

import json
import os
import re
import sys

import jsonschema

from gpufleet.history.store import append_run
from gpufleet.results import burn_in as records
from gpufleet.report import charts_series
from gpufleet.report.model import build_model, load_results
from gpufleet.report.render import render_report
from gpufleet.results.store import RunDir
from gpufleet.results.verdicts import judge_run

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "nvml-samples"))

import synthetic_nvml as synth  # noqa: E402  pylint: disable=import-error,wrong-import-position
from profile_double import FakeJudge  # noqa: E402  pylint: disable=import-error,wrong-import-position

HOSTILE = '<script>alert("gpu")</script><img src=x onerror=alert(1)>*bold*|pipe'
CLOCKS = (1980, 1970, 1800)


def three_runs(tmp_path):
    """Three runs into one history; returns the third run's directory (judged)."""
    db = str(tmp_path / "health.sqlite")
    for number, clock in enumerate(CLOCKS):
        run = RunDir.create(str(tmp_path / ("run%d" % (number + 1))), hosts=["node-a"])
        run.update_run(started="2026-01-%02dT00:00:00Z" % (1 + 7 * number))

        def change(gpu, tick, sample, clock=clock):
            if gpu == 1:
                sample["sm_clock_mhz"] = clock
            sample["temperature_c"] = 50 + tick     # 50..59 C over the run

        records.record_burn_in(run, "node-a", sample_records=synth.series(gpus=2, change=change, names={0: HOSTILE}),
                               load={"tool": "gpu-burn", "outcome": "ok", "reason": ""})
        append_run(run, db)
    hosts = ["node-a"]
    judge_run(run, hosts, set(hosts), {"node-a": {"claim": None, "profile": None, "overrides": None, "settings": {}}}, FakeJudge(),
              families=("burn_in",))
    return run


def svg_of(html, label):
    match = re.search(r'<svg [^>]*aria-label="%s".*?</svg>' % re.escape(label), html, re.S)
    assert match, "no chart %r" % label
    return match.group(0)


def series_of(svg, gpu_label):
    match = re.search(r'<g class="series" data-gpu="%s">(.*?)</g>' % re.escape(gpu_label), svg, re.S)
    assert match, "no series %r" % gpu_label
    return match.group(1)


def test_three_run_history_renders_trend_charts(tmp_path):
    run = three_runs(tmp_path)
    outcome = render_report(run.path, formats=("html", "md"))
    html = open(outcome["files"]["html"], encoding="utf-8").read()
    gpu1 = "GPU 1 (%s)" % synth.uuid_of(1)
    clock = svg_of(html, "node-a: SM clock median (MHz), one point per run")
    dots = re.findall(r'<circle class="point" cx="([\d.]+)" cy="([\d.]+)" r="3" fill="[^"]+"><title>([^<]*)</title>', series_of(clock, gpu1))
    assert [(x, y) for x, y, _title in dots] == [("80.0", "20.0"), ("330.0", "28.3"), ("580.0", "170.0")]
    assert [title for _x, _y, title in dots] == [
        "%s: run run1 (2026-01-01T00:00:00Z): 1980 MHz" % gpu1,
        "%s: run run2 (2026-01-08T00:00:00Z): 1970 MHz" % gpu1,
        "%s: run run3 (2026-01-15T00:00:00Z): 1800 MHz" % gpu1,
    ]
    gpu0 = series_of(clock, "GPU 0 (%s)" % synth.uuid_of(0))
    assert re.findall(r'cx="([\d.]+)" cy="([\d.]+)"', gpu0) == [("80.0", "20.0"), ("330.0", "20.0"), ("580.0", "20.0")]
    # three trend charts, each with three points for each of the two GPUs
    for label in ("p95 temperature (C), one point per run", "SM clock median (MHz), one point per run", "mean power (W), one point per run"):
        svg = svg_of(html, "node-a: " + label)
        for gpu in (0, 1):
            assert len(re.findall(r"<circle ", series_of(svg, "GPU %d (%s)" % (gpu, synth.uuid_of(gpu))))) == 3
    # the drift of GPU 1 is listed: 1800 < 0.95 x median(1980, 1970) = 0.95 x 1975 = 1876.25
    assert re.search(r'<ul id="drift"><li><span class="s-warn">warn</span> <span class="mono">node-a</span>: GPU 1 \([^)]*\): SM clock median 1800 MHz', html)
    md = open(outcome["files"]["md"], encoding="utf-8").read()
    assert "## Burn-in and health" in md and "SM clock median 1800 MHz" in md


def test_time_series_of_the_run(tmp_path):
    run = three_runs(tmp_path)
    html = open(render_report(run.path, formats=("html",))["files"]["html"], encoding="utf-8").read()
    svg = svg_of(html, "node-a: temperature (C) over the run")
    # 10 samples of GPU 1 at 50..59 C over 9 s: x = 80 + t/9*500, y = 170 - (C-50)/9*150
    points = re.search(r'points="([^"]+)"', series_of(svg, "GPU 1 (%s)" % synth.uuid_of(1))).group(1).split()
    assert len(points) == 10 and points[0] == "80.0,170.0" and points[-1] == "580.0,20.0" and points[3] == "246.7,120.0"
    assert "seconds since the first sample, 0 to 9" in svg


def test_a_hostile_gpu_name_stays_text(tmp_path):
    run = three_runs(tmp_path)
    outcome = render_report(run.path, formats=("html", "md"))
    html = open(outcome["files"]["html"], encoding="utf-8").read()
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&#34;gpu&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;*bold*|pipe" in html
    md = open(outcome["files"]["md"], encoding="utf-8").read()
    assert "<script>" not in md


def test_no_section_without_burn_in_or_history(tmp_path):
    run = RunDir.create(str(tmp_path / "plain"), hosts=["n"])
    assert build_model(load_results(run.path))["burn_in"] is None
    html = open(render_report(run.path, formats=("html",))["files"]["html"], encoding="utf-8").read()
    assert 'id="burn-in"' not in html


def test_long_runs_are_averaged_into_buckets():
    points = [(float(t), float(t % 2)) for t in range(1000)]
    out = charts_series.downsample(points, limit=240)
    # buckets of ceil(1000 / 240) = 5 points: the first is t 0..4 -> mean t 2.0, values 0,1,0,1,0 -> 0.4
    assert len(out) == 200 and out[0] == (2.0, 0.4)


def test_results_json_with_burn_in_records_still_follows_its_schema(tmp_path):
    run = three_runs(tmp_path)
    document = json.loads(open(render_report(run.path, formats=("json",))["files"]["json"], encoding="utf-8").read())
    with open(os.path.join(REPO_ROOT, "gpufleet", "report", "schemas", "results.schema.json"), encoding="utf-8") as handle:
        jsonschema.validate(document, json.load(handle))
    record = document["hosts"]["node-a"]["burn_in"][0]
    assert record["samples_path"] == "raw/node-a/burn_in/burn_in.jsonl" and record["gpus"][1]["sm_clock_median_mhz"] == 1800
