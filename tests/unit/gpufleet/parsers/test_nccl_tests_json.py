# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl-tests' ``-J`` document (KIND ``nccl-json``): its odd types read right, the same figures as the text of the
same run, and every refusal named by its path in the document.

The documents are SYNTHETIC (tests/fixtures/nccl-json/SOURCES.md): the figures of two real text recordings in the
format of nccl-tests' JSON writer. Expected values are read by hand from those recordings.
"""

from __future__ import annotations

import json
import os

import pytest

from gpufleet.parsers.common import ParseError
from gpufleet.parsers.nccl_tests import parse_nccl_tests
from gpufleet.parsers.nccl_tests_json import parse_nccl_tests_json
from gpufleet.parsers.registry import parse

V3 = "nccl-json/SYNTHETIC-v3-a100-8rank-allreduce-32M-1G-from-gcm-recording.json"
V1 = "nccl-json/SYNTHETIC-v1-h200-8rank-allreduce-8G-validation0-from-azure-recording.json"
CUT = "nccl-json/SYNTHETIC-v3-cut-off-after-two-rows.json"
GCM_TEXT = "nccl/gcm-a100-sxm4-80gb-1node-8rank-mpi-allreduce-32M-1G.txt"


def test_version_3_document(fixture_text):
    out = parse("nccl-json", fixture_text(V3))
    assert (out["failed"], out["complete"], out["cause"], out["errors"]) == (False, True, None, [])
    assert (out["json_version"], out["nccl_version"], out["collective"], out["ranks"]) == (
        3, "2.16.2", "all_reduce_perf", 8)
    assert out["hosts"] == ["node-a100"] and [device["pid"] for device in out["devices"]][:2] == [66421, 66422]
    assert out["params"]["min_bytes"] == 33554432 and out["params"]["step"] == 2 and out["params"]["iters"] == 20
    assert len(out["rows"]) == 6
    first = out["rows"][0]
    # "root": "    -1" (a padded string) and "nwrong": 0.000000 (a float) read as the integers they are
    assert (first["size_bytes"], first["count"], first["type"], first["redop"], first["root"]) == (
        33554432, 8388608, "float", "sum", -1)
    assert first["out_of_place"] == {"time_us": 344.8, "algbw_gbs": 97.32, "busbw_gbs": 170.31, "wrong": 0}
    assert first["in_place"]["busbw_gbs"] == 167.99 and first["iterations"] == 20 and first["path"] == "results[0]"
    assert (out["largest_size_bytes"], out["busbw_at_largest_size_gbs"], out["max_busbw_gbs"]) == (
        1073741824, 231.72, 231.72)
    assert (out["avg_busbw_gbs"], out["wrong_total"], out["out_of_bounds"], out["out_of_bounds_status"]) == (
        210.99, 0, 0, "OK")
    assert out["validated"] is True


def test_the_document_and_the_text_of_one_run_give_the_same_figures(fixture_text):
    from_json = parse_nccl_tests_json(fixture_text(V3))
    from_text = parse_nccl_tests(fixture_text(GCM_TEXT))
    keys = ("size_bytes", "count", "type", "redop", "root", "out_of_place", "in_place")
    assert [{key: row[key] for key in keys} for row in from_json["rows"]] == [
        {key: row[key] for key in keys} for row in from_text["rows"]]
    for key in ("ranks", "largest_size_bytes", "busbw_at_largest_size_gbs", "max_busbw_gbs", "wrong_total",
                "avg_busbw_gbs", "out_of_bounds", "nccl_version"):
        assert from_json[key] == from_text[key], key


def test_version_1_spelling_and_validation_off(fixture_text):
    out = parse_nccl_tests_json(fixture_text(V1))
    # "average_bus_bandwidith": {"bandwidith": 477.416} of document version 1
    assert (out["json_version"], out["avg_busbw_gbs"], out["nccl_version"]) == (1, 477.416, "2.19.3")
    [row] = out["rows"]
    assert row["out_of_place"] == {"time_us": 31533.0, "algbw_gbs": 272.41, "busbw_gbs": 476.72, "wrong": None}
    # -c 0: nwrong null, never a count of 0
    assert (out["validated"], out["wrong_total"], out["failed"]) == (False, None, False)
    assert out["busbw_at_largest_size_gbs"] == 476.72 and out["params"]["validation"] == 0


def test_a_document_cut_off_mid_run_is_refused_so_the_text_is_read(fixture_text):
    with pytest.raises(ParseError) as caught:
        parse("nccl-json", fixture_text(CUT))
    assert caught.value.kind == "nccl-json" and caught.value.line == 1
    assert caught.value.message.startswith("not one complete JSON document: Expecting ',' delimiter (column ")


def _document(fixture_text, edit):
    doc = json.loads(fixture_text(V3))
    edit(doc)
    return json.dumps(doc)


@pytest.mark.parametrize("edit, message", [
    (lambda doc: doc["results"][3]["out_of_place"].update(bus_bw="fast"),
     'results[3].out_of_place.bus_bw: "fast" is not a figure'),
    (lambda doc: doc["results"][1]["in_place"].update(alg_bw=-2.5), "results[1].in_place.alg_bw: -2.5 is not a figure"),
    (lambda doc: doc["results"][0].update(root="root"), 'results[0].root: "root" is not an integer'),
    (lambda doc: doc["results"][2].update(count=12.5), "results[2].count: 12.5 is not an integer"),
    (lambda doc: doc["results"][4]["out_of_place"].pop("time"), "results[4].out_of_place.time: missing"),
    (lambda doc: doc["config"]["devices"][5].update(hostname=7), "config.devices[5].hostname: 7 is not a str"),
    (lambda doc: doc.update(results={"size": 8}), 'results: {"size": 8} is not a list'),
    (lambda doc: doc["out_of_bounds"].update(okay="maybe"),
     'out_of_bounds.okay: "maybe" is not true, false or unchecked'),
])
def test_a_field_of_the_wrong_type_is_refused_by_its_path(fixture_text, edit, message):
    with pytest.raises(ParseError) as caught:
        parse_nccl_tests_json(_document(fixture_text, edit))
    assert caught.value.message == message


def test_nan_is_no_figure_and_errors_fail_the_run(fixture_text):
    def edit(doc):
        doc["results"][5]["out_of_place"]["bus_bw"] = "nan"
        doc["errors"] = ["NCCL WARN Cuda failure 'out of memory'"]

    out = parse_nccl_tests_json(_document(fixture_text, edit))
    assert out["rows"][5]["out_of_place"]["busbw_gbs"] is None
    # the largest size's out-of-place figure is NaN: no figure there, never the in-place one or 0
    assert out["busbw_at_largest_size_gbs"] is None and out["max_busbw_gbs"] == 231.70
    assert (out["failed"], out["cause"]) == (True, "NCCL WARN Cuda failure 'out of memory'")


def test_out_of_bounds_values_and_no_end_time_fail_the_run(fixture_text):
    def edit(doc):
        doc["out_of_bounds"] = {"count": 108, "okay": "false"}
        del doc["end_time"]

    out = parse_nccl_tests_json(_document(fixture_text, edit))
    assert (out["failed"], out["complete"], out["out_of_bounds"], out["out_of_bounds_status"]) == (
        True, False, 108, "FAILED")
    assert [error["text"] for error in out["errors"]] == [
        "no end_time: the run did not finish writing its document", "out of bounds values: 108"]


@pytest.mark.parametrize("text, message", [
    ("", "empty input"),
    ("[1, 2]", "the document is a JSON list, not nccl-tests' object"),
    ("[" * 100000 + "]" * 100000, "nested 100000 deep, deeper than the 32 of any nccl-tests document"),
    ('{"results": []}', "version: missing"),
])
def test_what_is_not_an_nccl_tests_document_is_refused(text, message):
    with pytest.raises(ParseError) as caught:
        parse_nccl_tests_json(text)
    assert caught.value.message == message


def test_gpufleet_parse_reads_the_document_and_names_the_path_it_refuses(capsys, tmp_path):
    from gpufleet.cli import main as cli  # pylint: disable=import-outside-toplevel

    fixtures = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
    assert cli.main(["parse", "nccl-json", os.path.join(fixtures, V1)]) == 0
    out, _err = capsys.readouterr()
    assert json.loads(out)["rows"][0]["in_place"]["busbw_gbs"] == 478.11
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 3, "results": [{"size": "big"}]}', encoding="utf-8")
    assert cli.main(["parse", "nccl-json", str(bad)]) == 1
    assert 'results[0].size: "big" is not an integer' in capsys.readouterr().err
