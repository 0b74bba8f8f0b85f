# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One node's data never takes the report down (report/model.py ``node_row``, render.py per file).

The absurd node ``echo`` is SYNTHETIC: the GPU facts of the recording smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt
(parsed by the real parser) with every GPU's memory set here to a 400-digit number of MiB, as a host record written
before the parsers bounded numbers holds it, and the all_reduce_perf record of the small run with its busbw set to
10^400. Every other node is the hand-built small run of conftest.py.
"""

from __future__ import annotations

import copy
import json
import os

import pytest

import gpufleet.report.gpu_view
from gpufleet.facts.gpu import build_inventory
from gpufleet.parsers.registry import parse
from gpufleet.report.model import ReportError, build_model, load_results
from gpufleet.report.render import render_report
from gpufleet.report.templating import TEMPLATES_DIR
from gpufleet.results.store import RunDir

H100_Q = "smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt"
ALLREDUCE = "nccl/azure-nd-h200-v5-8gpu-single-size-8G-allreduce.txt"
ABSURD = int("9" * 400)
OVERFLOW = "this node's details could not be shown: OverflowError: int too large to convert to float"


@pytest.fixture(name="absurd_run")
def absurd_run_fixture(small_run, fixture_text):
    """small_run plus the node ``echo`` described above, REJECTed with one passing check."""
    facts = build_inventory(text=parse("nvidia-smi-q", fixture_text(H100_Q)))
    for gpu in facts["gpus"]:
        gpu["memory_total_mib"] = ABSURD
    parsed = parse("nccl", fixture_text(ALLREDUCE))
    parsed["busbw_at_largest_size_gbs"] = parsed["max_busbw_gbs"] = 10 ** 400
    run = RunDir.open(small_run)
    record = run.new_host_record("echo")
    record["facts"].update({"gpu": facts})
    record.update({"claim": {"gpu_memory_gb": 80}, "verdict": "REJECT",
                   "profile": {"name": "hgx-h100-8", "reason": "test"},
                   "checks": [{"id": "gpu.count", "status": "pass", "subject": None, "measured": 8, "expected": 8,
                               "threshold_source": "claim", "message": "8 GPUs, expected 8"}],
                   "benchmarks": [{"name": "all_reduce_perf", "command": ["all_reduce_perf"], "parsed": parsed,
                                   "message_size_bytes": 8589934592, "started": "2026-01-31T12:00:00Z"}]})
    run.write_host(record)
    return small_run


def test_the_absurd_node_shows_its_error_and_the_others_render(absurd_run):
    model = build_model(load_results(absurd_run))
    by_host = {node["host"]: node for node in model["nodes"]}
    assert sorted(by_host) == ["alpha", "bravo", "charlie", "delta", "echo"]
    echo = by_host["echo"]
    assert (echo["verdict"], echo["error"], echo["reasons"]) == ("REJECT", OVERFLOW, [])
    # bravo, alike but for its figures, is whole: its two reasons, its claim rows, its eight GPU rows
    bravo_reasons = [item["id"] for item in by_host["bravo"]["reasons"]]
    assert bravo_reasons == ["benchmark.allreduce_single_node", "gpu.consistency"]
    assert by_host["bravo"]["error"] == "" and len(by_host["bravo"]["gpu_rows"]) == 8
    assert model["problems"] == []


def test_an_absurd_busbw_draws_no_bar(absurd_run):
    chart = build_model(load_results(absurd_run))["benchmarks"]["single"]
    # alpha and bravo: 476.72 GB/s at 8 GiB each (the recording); echo's 10^400 is no float
    assert [item["label"] for item in chart["bars"]] == ["bravo", "alpha"]


def test_every_file_is_written_and_results_json_holds_the_node(absurd_run, tmp_path):
    files = render_report(absurd_run, output_dir=str(tmp_path / "out"))["files"]
    assert sorted(files) == ["html", "json", "junit", "md"]
    html = open(files["html"], encoding="utf-8").read()
    assert "this node&#39;s details could not be shown: OverflowError: int too large to convert to float" in html
    markdown = open(files["md"], encoding="utf-8").read()
    assert "Not shown: " + OVERFLOW in markdown
    document = json.load(open(files["json"], encoding="utf-8"))
    # the node is there, judged; its readings (the facts, the parsed benchmark with the figure no float holds) stay in
    # the record results.json names, as they were measured
    echo = document["hosts"]["echo"]
    assert echo["verdict"] == "REJECT" and echo["record"] == "hosts/echo.json"
    assert "facts" not in echo and echo["benchmarks"][0]["name"] == "all_reduce_perf"
    assert "parsed" not in echo["benchmarks"][0]
    record = json.load(open(os.path.join(absurd_run, echo["record"]), encoding="utf-8"))
    assert record["benchmarks"][0]["parsed"]["max_busbw_gbs"] == 10 ** 400


def test_a_file_that_cannot_be_written_costs_no_other(small_run, tmp_path):
    broken = tmp_path / "templates"
    broken.mkdir()
    for name in os.listdir(TEMPLATES_DIR):
        text = open(os.path.join(TEMPLATES_DIR, name), encoding="utf-8").read()
        if name == "report.html.j2":
            text = text.replace("{{ report.title }}", "{{ report.no_such_key }}", 1)  # SYNTHETIC: a broken template
        (broken / name).write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    with pytest.raises(ReportError) as info:
        render_report(small_run, output_dir=str(out), templates_dir=str(broken))
    assert str(info.value).startswith("not written: report.html: UndefinedError: ")
    assert str(info.value).endswith("; written: report.md, results.json, junit.xml")
    assert sorted(os.listdir(out)) == ["junit.xml", "report.md", "results.json"]


def test_a_fleet_view_that_raises_is_left_out_and_named(small_run, monkeypatch):
    def broken(*_args):
        raise ValueError("a broken record")

    monkeypatch.setattr("gpufleet.report.cost_chart.cost_view", broken)
    model = build_model(load_results(small_run))
    assert model["cost"] is None
    assert model["problems"] == ["the cost to train could not be drawn: ValueError: a broken record"]
    assert len(model["nodes"]) == 4 and all(node["error"] == "" for node in model["nodes"])


def test_a_node_whose_gpu_rows_raise_keeps_its_row(small_run, monkeypatch):
    real = gpufleet.report.gpu_view._gpu_cells

    def broken_for_alpha(host, rows, fleet_majority):
        if host == "alpha":
            raise KeyError("temperature_c")
        return real(host, rows, fleet_majority)

    monkeypatch.setattr(gpufleet.report.gpu_view, "_gpu_cells", broken_for_alpha)
    model = build_model(load_results(small_run))
    by_host = {node["host"]: node for node in model["nodes"]}
    assert by_host["alpha"]["error"] == "its GPU rows could not be shown: KeyError: 'temperature_c'"
    assert by_host["alpha"]["gpu_rows"] == [] and by_host["alpha"]["verdict"] == "ACCEPT"
    assert len(by_host["bravo"]["gpu_rows"]) == 8 and by_host["bravo"]["error"] == ""
    assert [(item["host"], item["gpu"], item["field"]) for item in model["gpu_flagged"]] == [
        ("bravo", "3", "vbios_version")]  # bravo's edited VBIOS, against the majority of alpha's and bravo's 16 GPUs


def test_a_gpu_name_of_another_type_is_shown_as_text(small_run):
    results = load_results(small_run)
    alpha = copy.deepcopy(results["hosts"]["alpha"])
    alpha["facts"]["gpu"]["gpus"][0]["name"] = ["not", "text"]  # SYNTHETIC: a forged record; unhashable as a key
    results["hosts"]["alpha"] = alpha
    model = build_model(results)
    alpha_row = next(node for node in model["nodes"] if node["host"] == "alpha")["gpu_rows"][0]
    assert alpha_row[1].text == '["not", "text"]' and model["problems"] == []
