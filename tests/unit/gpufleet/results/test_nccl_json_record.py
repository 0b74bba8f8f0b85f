# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An nccl-tests run read from its JSON document first, from its text where there is no readable document
(gpufleet/results/bench.py parse_nccl_run): which was used, why not the document, and where the two disagree.

The documents are the SYNTHETIC ones of tests/fixtures/nccl-json/ (each holds the figures of a real text recording of
tests/fixtures/nccl/, named in its SOURCES.md), read beside that recording."""

from __future__ import annotations

import json

import pytest

from gpufleet.results.bench import nccl_tests_binary, parse_nccl_run, same_figure

GCM_DOC = "nccl-json/SYNTHETIC-v3-a100-8rank-allreduce-32M-1G-from-gcm-recording.json"
GCM_TEXT = "nccl/gcm-a100-sxm4-80gb-1node-8rank-mpi-allreduce-32M-1G.txt"
AZURE_DOC = "nccl-json/SYNTHETIC-v1-h200-8rank-allreduce-8G-validation0-from-azure-recording.json"
AZURE_TEXT = "nccl/azure-nd-h200-v5-8gpu-single-size-8G-allreduce.txt"
CUT_DOC = "nccl-json/SYNTHETIC-v3-cut-off-after-two-rows.json"


def test_document_and_table_that_agree(fixture_text):
    parsed, error = parse_nccl_run(fixture_text(GCM_TEXT), {"document": fixture_text(GCM_DOC), "reason": ""})
    assert error is None
    assert parsed["parsed_from"] == "json"
    assert (parsed["json_fallback_reason"], parsed["json_text_disagreements"]) == (None, [])
    # the recording's last row (1 GiB: 231.72 / 231.70 GB/s) and average (210.99), six rows from 32 MiB
    assert parsed["busbw_at_largest_size_gbs"] == 231.72 and parsed["rows"][-1]["in_place"]["busbw_gbs"] == 231.70
    assert parsed["avg_busbw_gbs"] == 210.99 and [row["size_bytes"] for row in parsed["rows"]][0] == 33554432
    assert len(parsed["rows"]) == 6 and parsed["json_version"] == 3 and parsed["ranks"] == 8
    assert parsed["failed"] is False and parsed["cause"] is None
    # what only the text has stays: its device lines (with their line numbers) and its header format
    assert parsed["devices"][0]["line"] is not None and parsed["header_format"] == "new"


def test_where_they_disagree_the_document_is_kept_and_the_difference_noted(fixture_text):
    doc = json.loads(fixture_text(AZURE_DOC))
    doc["results"][0]["in_place"]["bus_bw"] = 480.5  # the table printed 478.11
    parsed, _error = parse_nccl_run(fixture_text(AZURE_TEXT), {"document": json.dumps(doc), "reason": ""})
    assert parsed["parsed_from"] == "json"
    assert parsed["rows"][0]["in_place"]["busbw_gbs"] == 480.5 and parsed["max_busbw_gbs"] == 480.5
    # the document ran without validation (-c 0: nwrong null), the recording with it (#wrong 0)
    assert parsed["json_text_disagreements"] == [
        {"field": "rows[0].out_of_place.wrong", "json": None, "text": 0},
        {"field": "rows[0].in_place.busbw_gbs", "json": 480.5, "text": 478.11},
        {"field": "rows[0].in_place.wrong", "json": None, "text": 0},
    ]
    assert parsed["validated"] is False  # the document's config.validation 0


def test_unreadable_document_falls_back_to_the_text_and_says_why(fixture_text):
    parsed, error = parse_nccl_run(fixture_text(GCM_TEXT), {"document": fixture_text(CUT_DOC), "reason": ""})
    assert error is None and parsed["parsed_from"] == "text" and parsed["json_text_disagreements"] == []
    assert parsed["json_fallback_reason"].startswith("the document could not be read as nccl-json: line 1: not one "
                                                     "complete JSON document")
    assert parsed["busbw_at_largest_size_gbs"] == 231.72 and "json_version" not in parsed


@pytest.mark.parametrize("nccl_json, reason", [
    ({"document": None, "reason": "/opt/x/all_reduce_perf -h lists no -J,--output_file (nccl-tests before 2.17.3)"},
     "/opt/x/all_reduce_perf -h lists no -J,--output_file (nccl-tests before 2.17.3)"),
    (None, "no JSON document was asked for"),
])
def test_no_document_reads_the_text(fixture_text, nccl_json, reason):
    parsed, error = parse_nccl_run(fixture_text(GCM_TEXT), nccl_json)
    assert error is None and (parsed["parsed_from"], parsed["json_fallback_reason"]) == ("text", reason)
    assert parsed["avg_busbw_gbs"] == 210.99


def test_a_document_without_readable_text_is_still_the_record(fixture_text):
    parsed, error = parse_nccl_run("", {"document": fixture_text(GCM_DOC), "reason": ""})
    assert error is None and parsed["parsed_from"] == "json" and parsed["busbw_at_largest_size_gbs"] == 231.72
    assert parsed["json_text_disagreements"] == []
    assert parse_nccl_run("", {"document": None, "reason": "no document"}) == (None, "no output to parse")


@pytest.mark.parametrize("from_json, from_text, cell, same", [
    (476.724999, 476.72, "bandwidth", True),   # %6.2f of it is 476.72
    (476.7251, 476.72, "bandwidth", False),    # would print 476.73
    (1234.56, 1234.6, "bandwidth", True),      # getFloatStr(6): one decimal from 1000
    (1234.56, 1234.6, "time", True),           # 2.17.1: %7.1f from 100 us
    (12345.4, 12345.0, "time", True),          # 2.17.1: %7.0f from 10000 us
    (12345.6, 12345.0, "time", False),
    (156.741666, 156.742, "average", True),    # %g: six significant digits
    (156.7426, 156.742, "average", False),
    (None, None, "time", True),
    (None, 0.0, "bandwidth", False),
])
def test_same_figure_within_what_the_table_prints(from_json, from_text, cell, same):
    assert same_figure(from_json, from_text, cell) is same


def test_nccl_tests_binary_in_argv():
    argv = ["mpirun", "-np", "2", "-x", "NCCL_DEBUG", "/opt/nccl-tests/build/all_reduce_perf", "-b", "8"]
    assert nccl_tests_binary(argv) == "/opt/nccl-tests/build/all_reduce_perf"
    assert nccl_tests_binary(["all_gather_perf_mpi", "-b", "8"]) == "all_gather_perf_mpi"  # a NAME_SUFFIX build
    assert nccl_tests_binary(["python3", "tests/standin/all_reduce_perf_standin.py"]) is None
    assert nccl_tests_binary(["ib_write_bw", "-d", "mlx5_0"]) is None and nccl_tests_binary(None) is None
