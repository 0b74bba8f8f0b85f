# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the parser of perftest's --out_json report (KIND perftest-json); expected values read by hand from the
documents (tests/fixtures/perf/SOURCES.md: one real document, EDITED by its author's indentation, and SYNTHETIC ones
holding the figures of real text recordings in the writer's format)."""

from __future__ import annotations

import json

import pytest

from gpufleet.parsers.common import ParseError
from gpufleet.parsers.perftest import parse_perftest_bw, parse_perftest_lat
from gpufleet.parsers.perftest_json import banner, parse_perftest_json
from gpufleet.parsers.registry import parse

# perftest MB/sec = 2^20 bytes/s -> Gb/s
MB = 2 ** 20 * 8 / 1e9

DOCA = "perf/ib_write_bw-out_json-doca-platform-64K-client-EDITED-indented.json"
ROCE_DOC = "perf/SYNTHETIC-ib_write_bw-out_json-25.04-from-roce-cx7-cuda-client-181gbps.json"
ROCE_TEXT = "perf/ib_write_bw-roce-cx7-cuda-a40-16qp-rdma_cm-client-181gbps.txt"
LEGACY_DOC = "perf/SYNTHETIC-ib_write_bw-out_json-pre-24.01-syntax-from-gdr-a100-all-sizes-last-8M.json"
GDR_TEXT = "perf/ib_write_bw-gdr-a100-k8s-pod-all-sizes-report_gbits.txt"
LAT_DOC = "perf/SYNTHETIC-ib_read_lat-out_json-24.01-from-mlx4-fdr-client.json"
LAT_TEXT = "perf/ib_read_lat-mlx4-fdr-client-cpu-freq-warning.txt"


def _refused(text):
    with pytest.raises(ParseError) as caught:
        parse_perftest_json(text)
    return caught.value


# ------------------------------------------------------------------ documents


def test_real_document_in_megabytes(fixture_text):
    result = parse("perftest-json", fixture_text(DOCA))
    assert (result["kind"], result["document_syntax"], result["test"]) == ("ib-bw", "json", "RDMA_Write BW Test")
    assert (result["device"], result["link_type"], result["connection_type"]) == ("mlx5_11", "Ethernet", "RC")
    assert (result["qps"], result["mtu"], result["gid_index"], result["tx_depth"]) == (1, 1024, 1, 128)
    assert (result["rdma_cm"], result["data_exchange"], result["side"]) == (False, "Ethernet", "client")
    # 2229.27 / (0.035668 x 65536) = 0.9537: MiB/s (10^6 / 2^20), not Gb/s (0.008)
    assert result["unit_printed"] == "MB/sec" and result["peak_measured"] is True
    row = result["results"][0]
    assert (row["bytes"], row["iterations"], row["msg_rate_mpps"]) == (65536, 5000, 0.035668)
    assert row["bw_avg_gbps"] == pytest.approx(2229.27 * MB) and row["bw_peak_gbps"] == pytest.approx(5293.52 * MB)
    # nothing in a document before 24.10 says CUDA; the settings are the test_info members as strings
    assert result["gpu_direct"] is None and result["cuda_device"] is None
    assert result["settings"]["Max_inline_data"] == "0" and result["settings"]["test"] == "RDMA_Write_BW_Test"
    assert result["sections"] == [{key: value for key, value in result.items() if key in result["sections"][0]}]
    assert result["section_count"] == 1 and result["errors"] == [] and result["warnings"] == []


def test_duration_mode_gigabits_cuda(fixture_text):
    result = parse_perftest_json(fixture_text(ROCE_DOC))
    assert result["unit_printed"] == "Gb/sec"  # 181.46 / (0.3461 x 65536) = 0.0080
    # -D: BW_peak 0.00 beside a measured average is no peak
    assert result["peak_measured"] is False
    assert result["results"] == [{"bytes": 65536, "iterations": 10384867, "bw_peak_gbps": None, "bw_avg_gbps": 181.46,
                                  "msg_rate_mpps": 0.3461}]
    assert (result["gpu_direct"], result["cuda_device"], result["qps"], result["gid_index"]) == (True, 0, 16, 3)
    assert (result["rdma_cm"], result["data_exchange"], result["settings"]["TOS"]) == (True, "rdma_cm", "41")


def test_pre_24_01_syntax_is_read_member_by_member(fixture_text):
    text = fixture_text(LEGACY_DOC)
    with pytest.raises(ValueError):
        json.loads(text)
    result = parse_perftest_json(text)
    assert result["document_syntax"] == "relaxed"
    assert (result["device"], result["tx_depth"], result["qps"], result["mtu"]) == ("mlx5_0", 128, 2, 4096)
    assert result["settings"]["CQ_Moderation"] == "100" and result["link_type"] == "IB"
    # the sweep's last size only (-a rewrites the report at every size)
    assert result["results"] == [{"bytes": 8388608, "iterations": 10000, "bw_peak_gbps": 81.02, "bw_avg_gbps": 80.96,
                                  "msg_rate_mpps": 0.001206}]
    assert result["unit_printed"] == "Gb/sec"


def test_latency_report(fixture_text):
    result = parse_perftest_json(fixture_text(LAT_DOC))
    assert (result["kind"], result["test"], result["side"]) == ("ib-lat", "RDMA_Read Latency Test", "client")
    assert "unit_printed" not in result and result["settings"]["Outstand_reads"] == "16"
    assert result["results"] == [{"bytes": 2, "iterations": 1000, "t_min_us": 1.76, "t_max_us": 6.12,
                                  "t_typical_us": 1.79, "t_avg_us": 1.80, "t_stdev_us": 0.06, "p99_us": 1.88,
                                  "p99_9_us": 6.12}]


def test_duration_latency_and_cpu_util():
    text = ('{\n"test_info": {\n"test": "Send_Latency_Test",\n"Device": "mlx5_0",\n"Data_ex_method": "Ethernet"\n},\n'
            '"results": {\n"MsgSize": 2,\n"n_iterations": 5123456,\n"t_avg": 1.12,\n"tps_average": 446428.57,\n'
            '"CPU_util": 99.50\n}\n}\n')
    result = parse_perftest_json(text)
    assert result["side"] == "server" and result["tx_depth"] is None and result["cpu_util_percent"] == 99.5
    assert result["results"] == [{"bytes": 2, "iterations": 5123456, "t_min_us": None, "t_max_us": None,
                                  "t_typical_us": None, "t_avg_us": 1.12, "t_stdev_us": None, "p99_us": None,
                                  "p99_9_us": None, "tps_average": 446428.57}]


@pytest.mark.parametrize("test, expected", [
    ("RDMA_Write_BW_Test", "RDMA_Write BW Test"),
    ("RDMA_Write_imm_Bidirectional_Post_List_BW_Test", "RDMA_Write_imm Bidirectional Post List BW Test"),
    ("Atomic_FETCH_AND_ADD_Latency_Test", "Atomic FETCH_AND_ADD Latency Test"),
    ("Send_Multicast_Latency_Test", "Send Multicast Latency Test"),
])
def test_banner_spelling(test, expected):
    assert banner(test) == expected


# ------------------------------------------------------------------ the report and the text of one run


@pytest.mark.parametrize("doc, text, text_parser", [
    (ROCE_DOC, ROCE_TEXT, parse_perftest_bw),
    (LEGACY_DOC, GDR_TEXT, parse_perftest_bw),
    (LAT_DOC, LAT_TEXT, parse_perftest_lat),
])
def test_report_and_text_of_one_run_give_the_same_figures(fixture_text, doc, text, text_parser):
    from_json = parse_perftest_json(fixture_text(doc))
    from_text = text_parser(fixture_text(text))
    row = from_json["results"][0]
    assert row == [item for item in from_text["results"] if item["bytes"] == row["bytes"]][0]
    for key in ("test", "device", "link_type", "connection_type", "qps", "mtu", "gid_index", "tx_depth", "rdma_cm",
                "side"):
        assert from_json[key] == from_text[key], key
    if "unit_printed" in from_text:
        assert (from_json["unit_printed"], from_json["peak_measured"]) == (from_text["unit_printed"],
                                                                           from_text["peak_measured"])


# ------------------------------------------------------------------ the writer's quirks


def test_output_bandwidth_trailing_comma_is_named():
    # --output bandwidth: "bw_avg": %lf, then "\n" and "}": not JSON, and no row
    text = '{\n"test_info": {\n"test": "RDMA_Write_BW_Test"\n},\n"results": {\n"bw_avg": 11.020000,\n\n}\n}\n'
    refused = _refused(text)
    assert refused.message == "results.MsgSize: missing: a report written with --output holds bw_avg alone, not a row"


def test_nan_figure_is_refused_by_its_path():
    text = ('{\n"test_info": {\n"test": "RDMA_Write_BW_Test"\n},\n"results": {\n"MsgSize": 65536,\n'
            '"n_iterations": 5000,\n"BW_peak": -nan,\n"BW_average": 2229.27,\n"MsgRate": 0.035668\n}\n}\n')
    assert _refused(text).message == 'results.BW_peak: "-nan" is not a figure'


def test_raw_qos_unquoted_sl_is_read():
    text = ('{\n"test_info": {\n"test": "Send_BW_Test"\n},\n"results": {\n"MsgSize": 64,\nsl: 3,\n'
            '"n_iterations": 1000,\n"BW_peak": 12.00,\n"BW_average": 11.90,\n "MsgRate": 0.194969\n}\n}\n')
    result = parse_perftest_json(text)
    assert result["document_syntax"] == "relaxed" and result["unit_printed"] == "MB/sec"
    assert result["results"][0]["bw_avg_gbps"] == pytest.approx(11.90 * MB)


# ------------------------------------------------------------------ refusals


def _doc(results=None, info=None):
    results = results or {"MsgSize": 65536, "n_iterations": 5000, "BW_peak": 5293.52, "BW_average": 2229.27,
                          "MsgRate": 0.035668}
    return json.dumps({"test_info": info or {"test": "RDMA_Write_BW_Test", "Device": "mlx5_0"}, "results": results})


@pytest.mark.parametrize("doc, message", [
    (_doc({"MsgSize": 65536, "n_iterations": 5000, "BW_peak": "fast", "BW_average": 1.0, "MsgRate": 1.0}),
     'results.BW_peak: "fast" is not a figure'),
    (_doc({"MsgSize": 65536, "n_iterations": 5000, "BW_peak": 1.0, "BW_average": -1.0, "MsgRate": 1.0}),
     "results.BW_average: -1.0 is not a figure"),
    (_doc({"MsgSize": "64K", "n_iterations": 5000, "BW_peak": 1.0, "BW_average": 1.0, "MsgRate": 1.0}),
     'results.MsgSize: "64K" is not a count'),
    (_doc({"n_iterations": 5000, "BW_peak": 1.0, "BW_average": 1.0, "MsgRate": 1.0}), "results.MsgSize: missing"),
    (_doc(info={"test": "RDMA_Write_BW_Test", "Number_of_qps": 1.5}), "test_info.Number_of_qps: 1.5 is not a count"),
    (_doc(info={"test": "RDMA_Write_BW_Test", "Device": 5}), "test_info.Device: 5 is not a word"),
    (_doc(info={"test": "RDMA_Write_Flow_Test"}), 'test_info.test: "RDMA_Write_Flow_Test" is neither a BW nor a '
                                                  'Latency test'),
    (_doc(info={"Device": "mlx5_0"}), "test_info.test: missing"),
    (json.dumps({"test_info": {"test": "RDMA_Write_BW_Test"}, "results": [1]}), "results: [1] is not an object"),
    # 5000 MB/s of 0.035668 Mpps x 65536 bytes is neither unit (2229 MiB/s or 18.7 Gb/s)
    (_doc({"MsgSize": 65536, "n_iterations": 5000, "BW_peak": 5293.52, "BW_average": 5000.0, "MsgRate": 0.035668}),
     "results.BW_average: 5000.0 is neither MB/s nor Gb/s of MsgRate 0.035668 x MsgSize 65536"),
])
def test_unusable_document_is_refused_by_path(doc, message):
    assert _refused(doc).message == message


def test_a_second_member_of_one_name_is_refused():
    text = '{\n"test_info": {\n"test": "RDMA_Write_BW_Test",\n"Device": "mlx5_0",\n"Device": "mlx5_1"\n}\n}\n'
    assert _refused(text).message == "test_info.Device: a second member of this name (line 5)"


def test_cut_off_report_is_refused(fixture_text):
    text = fixture_text(ROCE_DOC)
    cut_at_line = text[:text.index('"BW_peak"')]
    assert _refused(cut_at_line).message == ("the report ends inside results: a run ended while writing it leaves it "
                                             "open")
    cut_mid_line = text[:text.index('"BW_peak"') + 5]
    refused = _refused(cut_mid_line)
    assert refused.line == 27 and refused.text == '"BW_p'
    assert refused.message.startswith("neither JSON (") and refused.message.endswith(
        ") nor a member of perftest's report")


def test_not_a_report_and_limits():
    assert _refused("").message == "empty input"
    assert _refused("# ib_write_bw -a\n").message.startswith("neither JSON (")
    assert _refused('["test_info"]').message == "the document is a JSON list, not perftest's report object"
    assert _refused("[" * 40 + "]" * 40).message == "the report is nested 40 deep, deeper than the 32 this reader takes"
    assert _refused(" " * (1024 * 1024 + 1)).message == "empty input"
    too_large = "1048577 characters, more than the 1048576 of any perftest report"
    assert _refused("{" + " " * (1024 * 1024)).message == too_large
