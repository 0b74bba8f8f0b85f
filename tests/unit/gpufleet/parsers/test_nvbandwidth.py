# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the nvbandwidth parser; expected values read by hand from the recording."""

from __future__ import annotations

import json

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.nvbandwidth import parse_nvbandwidth
from gpufleet.parsers.registry import parse

README = "perf/nvbandwidth-readme-8gpu-d2d-write-ce-matrix.txt"

# A small synthetic capture in the current output layout (version/device header, right-aligned
# row labels, N/A diagonal, SUM line, a waived testcase), built for the variants the README
# example lacks. Values are made up; SUM lines are the totals of their matrices.
CURRENT_LAYOUT = """nvbandwidth Version: v0.7
Built from Git version:\x20

CUDA Runtime Version: 12040
CUDA Driver Version: 12040
Driver Version: 550.54.15

Device 0: NVIDIA H100 80GB HBM3 (00000000:1b:00)
Device 1: NVIDIA H100 80GB HBM3 (00000000:43:00)

Running host_to_device_memcpy_ce.
memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
           0         1
 0     24.66     24.71

SUM host_to_device_memcpy_ce 49.37

Running device_to_device_memcpy_read_ce.
memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)
           0         1
 0       N/A    100.00
 1    100.50       N/A

SUM device_to_device_memcpy_read_ce 200.50

Running host_device_latency_sm.
Waived: not supported on this platform

NOTE: The reported results may not reflect the full capabilities of the platform.
"""


def _lines(text):
    return text.split("\n")


def test_readme_8gpu_d2d_write_ce(fixture_text):
    result = parse_nvbandwidth(fixture_text(README))
    assert len(result["testcases"]) == 1
    case = result["testcases"][0]
    assert case["name"] == "device_to_device_memcpy_write_ce"
    assert case["description"] == "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)"
    assert case["unit"] == "GB/s"
    assert case["status"] == "ok"
    assert case["columns"] == ["0", "1", "2", "3", "4", "5", "6", "7"]
    assert case["rows"] == ["0", "1", "2", "3", "4", "5", "6", "7"]
    matrix = case["matrix"]
    assert matrix["0"]["1"] == 276.07
    assert matrix["6"]["0"] == 274.89
    assert matrix["4"]["3"] == 276.76
    assert matrix["7"]["6"] == 276.45
    # this README-era output printed 0.00 on the diagonal (not N/A): kept as printed
    assert all(matrix[str(i)][str(i)] == 0.0 for i in range(8))
    assert case["sum"] is None  # no SUM line in this version
    assert result["devices"] == []
    assert result["device_count"] is None
    json.dumps(result)


def test_registry_kind(fixture_text):
    assert parse("nvbandwidth", fixture_text(README))["testcases"][0]["matrix"]["2"]["3"] == 276.38


def test_current_layout_synthetic():
    result = parse_nvbandwidth(CURRENT_LAYOUT)
    assert result["version"] == "v0.7"
    assert result["git_version"] is None
    assert result["cuda_runtime_version"] == 12040
    assert result["driver_version"] == "550.54.15"
    assert result["device_count"] == 2
    assert result["devices"][1] == {"index": 1, "name": "NVIDIA H100 80GB HBM3", "pci": "00000000:43:00"}
    assert len(result["testcases"]) == 3
    h2d, d2d, waived = result["testcases"][0], result["testcases"][1], result["testcases"][2]
    assert h2d["rows"] == ["0"] and h2d["matrix"]["0"]["1"] == 24.71 and h2d["sum"] == 49.37
    assert d2d["matrix"]["0"]["0"] is None and d2d["matrix"]["1"]["0"] == 100.50 and d2d["sum"] == 200.50
    assert waived["status"] == "waived" and waived["message"] == "not supported on this platform"
    assert waived["matrix"] == {}


def test_crlf_ansi_prefix(fixture_text):
    # synthetic: CRLF, an ANSI-bold description and srun -l prefixes
    text = fixture_text(README).replace("memcpy CE", "\x1b[1mmemcpy CE").replace("(GB/s)", "(GB/s)\x1b[0m")
    text = "\r\n".join("0: " + line for line in _lines(text))
    case = parse_nvbandwidth(text)["testcases"][0]
    assert case["matrix"]["6"]["0"] == 274.89
    assert case["unit"] == "GB/s"


def test_truncated_matrix(fixture_text):
    # synthetic: the README output cut after line 9 (row 6 of 8)
    text = "\n".join(_lines(fixture_text(README))[:9])
    with pytest.raises(ParseError) as info:
        parse_nvbandwidth(text)
    assert info.value.line == 9


def test_truncated_mid_row(fixture_text):
    # synthetic: line 10 (row 7) cut after three cells
    lines = _lines(fixture_text(README))
    text = "\n".join(lines[:9] + ["7    276.12    276.45    276.12"])
    with pytest.raises(ParseError) as info:
        parse_nvbandwidth(text)
    assert info.value.line == 10


def test_damaged_cell(fixture_text):
    # synthetic: "274.89" on line 9 damaged
    text = fixture_text(README).replace("274.89", "27#.89")
    with pytest.raises(ParseError) as info:
        parse_nvbandwidth(text)
    assert info.value.line == 9


def test_sum_mismatch_raises():
    # synthetic: the d2d SUM (line 24) no longer matches its matrix
    text = CURRENT_LAYOUT.replace("SUM device_to_device_memcpy_read_ce 200.50", "SUM device_to_device_memcpy_read_ce 300.50")
    with pytest.raises(ParseError) as info:
        parse_nvbandwidth(text)
    assert info.value.line == 24


def test_description_without_matrix():
    # synthetic: cut right after the description on line 12
    text = "\n".join(_lines(CURRENT_LAYOUT)[:12])
    with pytest.raises(ParseError) as info:
        parse_nvbandwidth(text)
    assert info.value.line == 12


def test_column_header_without_rows():
    # synthetic: cut right after the column header on line 13
    text = "\n".join(_lines(CURRENT_LAYOUT)[:13])
    with pytest.raises(ParseError) as info:
        parse_nvbandwidth(text)
    assert info.value.line == 13


def test_running_without_result():
    # synthetic: cut right after "Running host_to_device_memcpy_ce." (line 11)
    text = "\n".join(_lines(CURRENT_LAYOUT)[:11])
    with pytest.raises(ParseError) as info:
        parse_nvbandwidth(text)
    assert info.value.line == 11


def test_error_instead_of_matrix():
    # synthetic: an error printed instead of the matrix is kept as the testcase's status
    text = "Running device_to_device_memcpy_read_ce.\nERROR: cudaErrorPeerAccessUnsupported\n"
    case = parse_nvbandwidth(text)["testcases"][0]
    assert case["status"] == "error"
    assert case["message"] == "cudaErrorPeerAccessUnsupported"


def test_empty_and_noise():
    with pytest.raises(ParseError):
        parse_nvbandwidth("")
    with pytest.raises(ParseError):
        parse_nvbandwidth("hello\nworld\n")


def test_foreign_lines_are_listed_and_change_no_value(fixture_text):
    # EDITED: the README output (11 lines) behind a prompt, with a note between rows 3 and 4 and a banner after it
    text = fixture_text(README)
    edited = insert_lines(text, {
        1: "(venv) ubuntu@node-07:~/nvbandwidth$ ./nvbandwidth -t device_to_device_memcpy_write_ce",
        9: "<-- GPUs 4-7 on the second board",
        14: "===== node-07 done =====",
    })
    result = parse_nvbandwidth(edited)
    assert result.pop("ignored_lines") == [
        {"line": 1, "text": "(venv) ubuntu@node-07:~/nvbandwidth$ ./nvbandwidth -t device_to_device_memcpy_write_ce",
         "why": "shell prompt"},
        {"line": 9, "text": "<-- GPUs 4-7 on the second board", "why": "note"},
        {"line": 14, "text": "===== node-07 done =====", "why": "banner"},
    ]
    assert result == parse_nvbandwidth(text)
    case = result["testcases"][0]
    assert case["rows"] == ["0", "1", "2", "3", "4", "5", "6", "7"] and case["matrix"]["6"]["0"] == 274.89


def test_damage_beside_foreign_lines_is_still_refused_at_its_line(fixture_text):
    lines = _lines(fixture_text(README))
    # EDITED: a prompt first, and row 6 (line 10, 11 with the prompt) cut after three cells
    cut = "\n".join(lines[:9] + ["6    274.89    276.41    276.38"] + lines[10:])
    with pytest.raises(ParseError) as info:
        parse_nvbandwidth(insert_lines(cut, {1: "$ ./nvbandwidth"}))
    assert info.value.line == 11 and "3 cells" in str(info.value)
    # EDITED: row 4 (line 8) replaced by an elision: skipped, and the GPU x GPU matrix is then short of a row
    elided = "\n".join(lines[:7] + ["..."] + lines[8:])
    with pytest.raises(ParseError) as info:
        parse_nvbandwidth(elided)
    assert "7 rows for 8 columns" in str(info.value)
