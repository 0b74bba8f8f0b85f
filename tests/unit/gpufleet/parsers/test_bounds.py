# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Absurd numbers, sizes and depth are refused at the parser (docs/parsers.md "Bounds"), naming the line or path.

Inputs are real recordings of tests/fixtures/ with ONE value edited here (SYNTHETIC: each test says which), or
documents built here whose only point is their size or depth. Expected lines were read by hand from the recordings.
"""

from __future__ import annotations

import json

import pytest

from gpufleet.parsers.common import (MAX_GPUS_PER_NODE, MAX_NUMBER, ImplausibleNumber, ParseError, json_depth,
                                     parse_number, refuse_deep_json)
from gpufleet.parsers.registry import parse

# line 8 "Attached GPUs : 8"; line 95 GPU0's FB "Total : 81559 MiB"
H100_Q = "smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt"
# line 7 <attached_gpus>4 over one <gpu>; line 229 its <total>81920 MiB
A100_XML = "smi/telegraf-nvidia-smi-q-x-a100-sxm4-80gb-mig-535-v12.xml.txt"
H100_CSV = "smi/exporter-capture-query-gpu-csv-allfields-h100-590.txt"  # line 3: the one row, memory.total "81559 MiB"
# line 2 the header; line 7 GPU4's row, ending "52-103,156-207  1"
H100_TOPO = "topo/mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt"
NCCL_8G = "nccl/azure-nd-h200-v5-8gpu-single-size-8G-allreduce.txt"  # line 17 the 8 GiB row, out-of-place busbw 476.72
IPERF_JSON = "perf/iperf3-json-3.9-MULTIPLE-CONCATENATED-documents.json.txt"  # first document: line 1 to 859
IPERF_TEXT = "perf/iperf3-text-tcp-1gbe-baseline-934mbps.txt"  # line 17 sender summary "934 Mbits/sec"
DCGM = "dcgm/gb10-dcgm-4.5.2-diag-r2-j-all-Pass-synthetic-EDITED.json"
DIGITS_400 = "9" * 400


def _refused(kind, text):
    with pytest.raises(ParseError) as info:
        parse(kind, text)
    return info.value


# -- common.parse_number ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("cell", [DIGITS_400, "18446744073709551616", "1e308", "-1e20", "0x1" + "0" * 16, "1e400"])
def test_a_number_above_2_to_the_64_is_refused_naming_the_line(cell):
    with pytest.raises(ImplausibleNumber) as info:
        parse_number(cell, line=12, kind="k")
    assert info.value.line == 12 and "out of range" in info.value.message


def test_the_widest_counter_a_tool_prints_still_reads():
    # 2^64 - 1: a saturated unsigned 64-bit counter (NVML, InfiniBand) is a reading, not damage
    assert parse_number("18446744073709551615") == MAX_NUMBER == 18446744073709551615
    assert parse_number("0xffffffffffffffff") == MAX_NUMBER
    assert parse_number("81559", unit="MiB") == 81559 and parse_number("476.72") == 476.72


def test_a_5000_digit_cell_is_refused_without_converting_it():
    # int() of more than 4,300 digits raises a plain ValueError in Python 3.11: the length is checked first
    with pytest.raises(ImplausibleNumber):
        parse_number("1" * 5000, line=3)


# -- nvidia-smi -q (text), -q -x, --query-gpu ---------------------------------------------------------------------

def test_smi_q_a_400_digit_memory_total_is_refused_with_its_line(fixture_text):
    text = fixture_text(H100_Q).replace("81559 MiB", DIGITS_400 + " MiB", 1)  # SYNTHETIC: GPU0's FB Total
    error = _refused("nvidia-smi-q", text)
    assert error.line == 95 and "'Total'" in error.message and "out of range" in error.message


def test_smi_q_attached_gpus_of_10_to_the_20_over_eight_sections_is_refused(fixture_text):
    text = fixture_text(H100_Q).replace(": 8\n", ": 100000000000000000000\n", 1)  # SYNTHETIC: line 8
    assert "Attached GPUs                             : 100000000000000000000" in text
    error = _refused("nvidia-smi-q", text)
    assert error.line == 8 and "out of range" in error.message


def test_smi_q_attached_gpus_above_what_a_system_holds_is_an_inconsistent_count(fixture_text):
    text = fixture_text(H100_Q).replace(": 8\n", ": 100\n", 1)  # SYNTHETIC: line 8 claims 100 GPUs over 8 sections
    error = _refused("nvidia-smi-q", text)
    assert error.line == 8 and "inconsistent count" in error.message and "over 8 GPU section(s)" in error.message
    assert MAX_GPUS_PER_NODE == 32


def test_smi_q_attached_gpus_within_what_a_system_holds_stays_a_warning(fixture_text):
    # nvidia-smi -q -i 0..7 on a 16-GPU node prints 8 sections under "Attached GPUs : 16": legal, as before
    parsed = parse("nvidia-smi-q", fixture_text(H100_Q).replace(": 8\n", ": 16\n", 1))  # SYNTHETIC: line 8
    assert parsed["attached_gpus"] == 16 and len(parsed["gpus"]) == 8


def test_smi_xml_a_400_digit_total_and_too_many_attached_gpus_are_refused(fixture_text):
    text = fixture_text(A100_XML)
    error = _refused("nvidia-smi-xml", text.replace("<total>81920 MiB", "<total>%s MiB" % DIGITS_400, 1))  # SYNTHETIC
    assert error.line == 229 and "<total>" in error.message and "out of range" in error.message
    error = _refused("nvidia-smi-xml", text.replace("<attached_gpus>4<", "<attached_gpus>100<", 1))  # SYNTHETIC: line 7
    assert error.line == 7 and "inconsistent count" in error.message


def test_query_gpu_csv_a_400_digit_memory_total_is_refused(fixture_text):
    text = fixture_text(H100_CSV).replace("81559 MiB", DIGITS_400 + " MiB", 1)  # SYNTHETIC: the row's memory.total
    error = _refused("query-gpu", text)
    assert error.line == 3 and "memory.total" in error.message and "out of range" in error.message


# -- topo -m -----------------------------------------------------------------------------------------------------

def _square_matrix(gpus):
    """A ``topo -m`` text of ``gpus`` GPUs all joined by NV1 (SYNTHETIC: its only point is its size)."""
    names = ["GPU%d" % index for index in range(gpus)]
    rows = ["\t" + "\t".join(names) + "\tCPU Affinity\tNUMA Affinity"]
    for row in range(gpus):
        cells = ["X" if row == col else "NV1" for col in range(gpus)]
        rows.append("GPU%d\t%s\t0-7\t0" % (row, "\t".join(cells)))
    return "\n".join(rows) + "\n"


def test_topo_a_1000_gpu_matrix_is_refused_at_its_header():
    error = _refused("topo", _square_matrix(1000))
    assert error.line == 1 and "a matrix of 1000 GPUs" in error.message and "32" in error.message


def test_topo_33_gpus_are_refused_and_32_still_read():
    assert "a matrix of 33 GPUs" in _refused("topo", _square_matrix(33)).message
    parsed = parse("topo", _square_matrix(32))
    assert len(parsed["gpus"]) == 32 and parsed["links"]["GPU31"]["GPU0"] == "NV1"


def test_topo_a_400_digit_numa_node_is_refused(fixture_text):
    text = fixture_text(H100_TOPO).replace("52-103,156-207  1", "52-103,156-207  " + DIGITS_400, 1)  # SYNTHETIC
    error = _refused("topo", text)
    assert error.line == 7 and "out of range" in error.message


# -- nccl-tests text -----------------------------------------------------------------------------------------------

def test_nccl_a_400_digit_busbw_is_refused_with_its_row(fixture_text):
    text = fixture_text(NCCL_8G).replace("476.72", DIGITS_400, 1)  # SYNTHETIC: the 8 GiB row's out-of-place busbw
    error = _refused("nccl", text)
    assert error.line == 17 and "busbw" in error.message and "out of range" in error.message


# -- iperf3 --------------------------------------------------------------------------------------------------------

def _first_document(fixture_text):
    text = fixture_text(IPERF_JSON)
    return text[: text.index("\n}\n") + 3]


@pytest.mark.parametrize("value, words", [("1e400", "is not a finite number: inf"), ("1e308", "out of range")])
def test_iperf3_json_a_rate_that_is_not_finite_or_absurd_is_refused_by_its_path(fixture_text, value, words):
    # SYNTHETIC: end.sum_received.bits_per_second (118245453.61021909 in the recording)
    text = _first_document(fixture_text).replace("118245453.61021909", value)
    error = _refused("iperf3", text)
    assert error.line == 1 and "end.sum_received.bits_per_second" in error.message and words in error.message


def test_iperf3_json_negative_bytes_are_refused_by_their_path(fixture_text):
    text = _first_document(fixture_text).replace('"bytes":\t149852892', '"bytes":\t-149852892')  # SYNTHETIC
    error = _refused("iperf3", text)
    assert "end.sum_received.bytes is negative: -149852892" in error.message


def test_iperf3_output_is_json_again(fixture_text):
    # the recording's own figures read; json.dumps(allow_nan=False) is what "valid JSON" means
    parsed = parse("iperf3", _first_document(fixture_text))
    assert parsed["received_bps"] == 118245453.61021909 and parsed["received_bytes"] == 149852892
    json.dumps(parsed, allow_nan=False)


def test_iperf3_text_a_400_digit_rate_is_refused_with_its_line(fixture_text):
    text = fixture_text(IPERF_TEXT).replace("934 Mbits/sec", DIGITS_400 + " Mbits/sec", 1)  # SYNTHETIC: line 17
    error = _refused("iperf3", text)
    assert error.line == 17 and "out of range" in error.message


# -- JSON depth: dcgmi diag -j, and the scan itself ----------------------------------------------------------------

def test_dcgmi_a_100000_deep_document_is_refused_naming_its_depth(fixture_text):
    deep = "[" * 100000 + "]" * 100000
    text = fixture_text(DCGM).replace('"test_categories"', '"deep": %s, "test_categories"' % deep, 1)  # SYNTHETIC
    assert text != fixture_text(DCGM)
    error = _refused("dcgmi-diag", text)
    assert "nested 100002 deep" in error.message and "32" in error.message


def test_dcgmi_the_recording_still_reads(fixture_text):
    assert parse("dcgmi-diag", fixture_text(DCGM))["counts"]


def test_json_depth_skips_brackets_inside_strings():
    assert json_depth('{"a": [1, {"b": "[[[\\"[" }]}') == 3
    assert json_depth('["]]]]", [[]]]') == 3
    assert json_depth("") == 0
    with pytest.raises(ParseError) as info:
        refuse_deep_json("[" * 33 + "]" * 33, what="the job")
    assert info.value.message == "the job is nested 33 deep, deeper than the 32 this reader takes"
    refuse_deep_json("[" * 32 + "]" * 32)
