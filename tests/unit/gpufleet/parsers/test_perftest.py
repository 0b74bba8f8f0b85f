# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the perftest (ib_*_bw / ib_*_lat) parsers; expected values read by hand."""

from __future__ import annotations

import json

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.perftest import parse_perftest_bw, parse_perftest_lat
from gpufleet.parsers.registry import parse

# perftest MB/sec = 2^20 bytes/s -> Gb/s
MB = 2 ** 20 * 8 / 1e9

LAT = "perf/ib_read_lat-mlx4-fdr-client-cpu-freq-warning.txt"
GDR = "perf/ib_write_bw-gdr-a100-k8s-pod-all-sizes-report_gbits.txt"
ROCE_CLIENT = "perf/ib_write_bw-roce-cx7-cuda-a40-16qp-rdma_cm-client-181gbps.txt"
ROCE_SERVER = "perf/ib_write_bw-roce-cx7-cuda-a40-16qp-rdma_cm-server-181gbps.txt"
SB_8M = "perf/superbench-ib_write_bw-loopback-8M-HDR.txt"
SB_ALL = "perf/superbench-ib_write_bw-loopback-allsizes-interleaved.txt"


def _lines(text):
    return text.split("\n")


def _row(result, size):
    rows = [r for r in result["results"] if r["bytes"] == size]
    assert len(rows) == 1
    return rows[0]


def test_factor_is_mebibytes():
    assert MB == pytest.approx(0.008388608)


# ------------------------------------------------------------------ recorded outputs


def test_read_lat_mlx4_cpu_freq_warning(fixture_text):
    result = parse_perftest_lat(fixture_text(LAT))
    assert result["test"] == "RDMA_Read Latency Test"
    assert result["device"] == "mlx4_0"
    assert result["link_type"] == "IB"
    assert result["connection_type"] == "RC"
    assert result["qps"] == 1
    assert result["mtu"] == 2048
    assert result["tx_depth"] == 1
    assert result["side"] == "client"
    assert result["settings"]["Outstand reads"] == "16"
    assert len(result["results"]) == 1
    row = result["results"][0]
    assert row["bytes"] == 2
    assert row["iterations"] == 1000
    assert row["t_min_us"] == 1.76
    assert row["t_max_us"] == 6.12
    assert row["t_typical_us"] == 1.79
    assert row["t_avg_us"] == 1.80
    assert row["t_stdev_us"] == 0.06
    assert row["p99_us"] == 1.88
    assert row["p99_9_us"] == 6.12
    assert any(w.startswith("Conflicting CPU frequency values detected") for w in result["warnings"])
    json.dumps(result)


def test_write_bw_gdr_a100_all_sizes_gbits(fixture_text):
    result = parse_perftest_bw(fixture_text(GDR))
    assert result["test"] == "RDMA_Write BW Test"
    assert result["device"] == "mlx5_0"
    assert result["link_type"] == "IB"
    assert result["qps"] == 2
    assert result["mtu"] == 4096
    assert result["tx_depth"] == 128
    assert result["side"] == "client"
    assert result["unit_printed"] == "Gb/sec"
    assert result["gpu_direct"] is True
    assert result["gpu_name"] == "NVIDIA A100-SXM4-80GB"
    assert result["gpu_pci"] == "D5:00"
    assert len(result["results"]) == 23
    first = result["results"][0]
    assert first == {"bytes": 2, "iterations": 10000, "bw_peak_gbps": 0.061867, "bw_avg_gbps": 0.060962,
                     "msg_rate_mpps": 3.810117}
    assert _row(result, 2048)["bw_peak_gbps"] == 78.28
    assert _row(result, 2048)["bw_avg_gbps"] == 67.50
    assert _row(result, 65536)["bw_peak_gbps"] == 81.79
    last = result["results"][-1]
    assert last["bytes"] == 8388608
    assert last["bw_peak_gbps"] == 81.02
    assert last["bw_avg_gbps"] == 80.96
    assert last["msg_rate_mpps"] == 0.001206


def test_write_bw_roce_client_duration_mode(fixture_text):
    result = parse_perftest_bw(fixture_text(ROCE_CLIENT))
    assert result["side"] == "client"
    assert result["device"] == "mlx5_1"
    assert result["link_type"] == "Ethernet"
    assert result["qps"] == 16
    assert result["mtu"] == 1024
    assert result["gid_index"] == 3
    assert result["rdma_cm"] is True
    assert result["data_exchange"] == "rdma_cm"
    assert result["settings"]["TOS"] == "41"
    assert result["gpu_direct"] is True
    assert result["gpu_name"] == "NVIDIA A40"
    assert result["gpu_pci"] == "E1:00"
    assert result["unit_printed"] == "Gb/sec"
    assert result["peak_measured"] is False
    assert result["results"] == [{"bytes": 65536, "iterations": 10384867, "bw_peak_gbps": None,
                                  "bw_avg_gbps": 181.46, "msg_rate_mpps": 0.346100}]
    assert "WARNING: BW peak won't be measured in this run." in result["warnings"]
    assert any("Requested mtu is higher than active mtu" in w for w in result["warnings"])


def test_write_bw_roce_server(fixture_text):
    result = parse_perftest_bw(fixture_text(ROCE_SERVER))
    assert result["side"] == "server"
    assert result["tx_depth"] is None
    assert result["device"] == "mlx5_1"
    assert result["qps"] == 16
    assert result["gpu_pci"] == "61:00"
    assert result["results"][0]["bw_avg_gbps"] == 181.46
    assert result["results"][0]["bw_peak_gbps"] is None
    assert result["results"][0]["iterations"] == 10384867


def test_superbench_8m_concatenated(fixture_text):
    result = parse_perftest_bw(fixture_text(SB_8M))
    assert result["section_count"] == 2
    client, server = result["sections"]
    assert client["side"] == "client" and client["tx_depth"] == 128
    assert server["side"] == "server" and server["tx_depth"] is None
    # the top level is the client section
    assert result["side"] == "client"
    assert result["line"] == 1
    assert result["device"] == "ib0"
    assert result["unit_printed"] == "MB/sec"
    assert result["gpu_direct"] is None
    row = result["results"][0]
    assert row["bytes"] == 8388608
    assert row["iterations"] == 20000
    assert row["bw_peak_gbps"] == pytest.approx(24056.74 * MB)
    assert row["bw_avg_gbps"] == pytest.approx(24056.72 * MB)
    assert row["bw_avg_gbps"] == pytest.approx(201.80, abs=0.01)  # not 192.45 (x0.008)
    assert row["msg_rate_mpps"] == 0.003007
    assert server["results"][0]["bw_avg_gbps"] == pytest.approx(24056.72 * MB)


def test_superbench_allsizes_interleaved(fixture_text):
    result = parse_perftest_bw(fixture_text(SB_ALL))
    assert result["section_count"] == 1
    assert result["interleaved"] is True
    assert result["side"] is None
    assert result["device"] == "ib0"
    assert result["mtu"] == 4096
    assert result["unit_printed"] == "MB/sec"
    assert len(result["results"]) == 23
    assert result["results"][0]["bytes"] == 2
    assert result["results"][0]["bw_peak_gbps"] == pytest.approx(5.32 * MB)
    assert result["results"][0]["msg_rate_mpps"] == 2.778732
    assert _row(result, 4096)["bw_peak_gbps"] == pytest.approx(10034.02 * MB)
    assert _row(result, 4096)["bw_avg_gbps"] == pytest.approx(9948.41 * MB)
    assert _row(result, 65536)["bw_peak_gbps"] == pytest.approx(23330.56 * MB)
    assert _row(result, 8388608)["bw_avg_gbps"] == pytest.approx(23240.68 * MB)


def test_registry_kinds(fixture_text):
    assert parse("ib-bw", fixture_text(GDR))["results"][-1]["bw_avg_gbps"] == 80.96
    assert parse("ib-lat", fixture_text(LAT))["results"][0]["t_typical_us"] == 1.79


# ------------------------------------------------------------------ synthetic variants and damage


def test_crlf_and_ansi(fixture_text):
    # synthetic: CRLF line endings and a coloured banner
    text = fixture_text(GDR).replace("RDMA_Write BW Test", "\x1b[1mRDMA_Write BW Test\x1b[0m").replace("\n", "\r\n")
    result = parse_perftest_bw(text)
    assert result["test"] == "RDMA_Write BW Test"
    assert result["results"][-1]["bw_avg_gbps"] == 80.96


def test_srun_prefix(fixture_text):
    # synthetic: srun -l prefix on every line
    text = "\n".join("3: " + line for line in _lines(fixture_text(LAT)))
    assert parse_perftest_lat(text)["results"][0]["t_min_us"] == 1.76


def test_respaced_banner_and_rows(fixture_text):
    # synthetic: TABs replaced by single spaces everywhere
    text = fixture_text(ROCE_CLIENT).replace("\t", " ")
    result = parse_perftest_bw(text)
    assert result["device"] == "mlx5_1"
    assert result["qps"] == 16
    assert result["results"][0]["bw_avg_gbps"] == 181.46


def test_truncated_in_table(fixture_text):
    # synthetic: the A100 run cut after line 45 (a result row, before the closing ----)
    text = "\n".join(_lines(fixture_text(GDR))[:45])
    with pytest.raises(ParseError) as info:
        parse_perftest_bw(text)
    assert info.value.line == 45


def test_truncated_mid_row(fixture_text):
    # synthetic: cut in the middle of line 42 ("2048  10000  78.28  67.50 ...")
    lines = _lines(fixture_text(GDR))
    text = "\n".join(lines[:41] + [" 2048       10000            78.2"])
    with pytest.raises(ParseError) as info:
        parse_perftest_bw(text)
    assert info.value.line == 42


def test_truncated_before_table(fixture_text):
    # synthetic: cut after line 20 (inside the banner)
    text = "\n".join(_lines(fixture_text(GDR))[:20])
    with pytest.raises(ParseError) as info:
        parse_perftest_bw(text)
    assert info.value.line == 20


def test_damaged_cell(fixture_text):
    # synthetic: "78.28" on line 42 damaged to "78.2x"
    text = fixture_text(GDR).replace("78.28", "78.2x")
    with pytest.raises(ParseError) as info:
        parse_perftest_bw(text)
    assert info.value.line == 42


def test_unknown_unit(fixture_text):
    # synthetic: header unit changed on line 31
    text = fixture_text(GDR).replace("BW peak[Gb/sec]    BW average[Gb/sec]", "BW peak[KB/sec]    BW average[KB/sec]")
    with pytest.raises(ParseError) as info:
        parse_perftest_bw(text)
    assert info.value.line == 31


def test_conflicting_banner_value(fixture_text):
    # synthetic: a second "Mtu" line with another value inserted as line 21
    lines = _lines(fixture_text(GDR))
    lines.insert(20, " Mtu             : 1024[B]")
    with pytest.raises(ParseError) as info:
        parse_perftest_bw("\n".join(lines))
    assert info.value.line == 21


def test_wrong_parser_for_the_test(fixture_text):
    with pytest.raises(ParseError) as info:
        parse_perftest_bw(fixture_text(LAT))
    assert info.value.line == 3
    with pytest.raises(ParseError) as info:
        parse_perftest_lat(fixture_text(GDR))
    assert info.value.line == 12


def test_interleaved_rows_disagree(fixture_text):
    # synthetic: the server's copy of the 8388608 row (line 65) differs from the client's
    lines = _lines(fixture_text(SB_ALL))
    lines[64] = lines[64].replace("0.002905", "0.002906")
    with pytest.raises(ParseError) as info:
        parse_perftest_bw("\n".join(lines))
    assert info.value.line == 65


def test_error_only_output():
    # synthetic: what a client prints when the server is not there
    text = "$ ib_write_bw -d mlx5_0 10.0.0.2\nCouldn't connect to 10.0.0.2:18515\nUnable to open file descriptor for socket connection\n"
    result = parse_perftest_bw(text)
    assert result["results"] == []
    assert result["errors"][0] == "Couldn't connect to 10.0.0.2:18515"
    assert result["test"] is None


def test_hostile_device_name(fixture_text):
    # synthetic: markup as the device name
    text = fixture_text(LAT).replace("Device         : mlx4_0", "Device         : <b>mlx4_0</b>")
    assert parse_perftest_lat(text)["device"] == "<b>mlx4_0</b>"


def test_empty_and_noise():
    with pytest.raises(ParseError):
        parse_perftest_bw("")
    with pytest.raises(ParseError):
        parse_perftest_lat("just some text\n")


# --- foreign lines: what a collecting script or a person put around the output ----------------


def _gdr_with_foreign_lines(fixture_text):
    # edited: a script's banner as line 1 (before the banner perftest reads nothing: never listed), a note
    # after the 2048-byte row (line 44) and a banner before the 524288-byte row (line 52), both in the table
    return _lines(insert_lines(fixture_text(GDR), {
        1: "===== node-07 : ib_write_bw =====",
        44: "<-- the peak levels off from 4 KiB",
        52: "===== node-07 : 512 KiB and up =====",
    }))


def test_foreign_lines_in_the_table_are_skipped_and_listed(fixture_text):
    result = parse_perftest_bw("\n".join(_gdr_with_foreign_lines(fixture_text)))
    assert result["device"] == "mlx5_0"
    assert result["gpu_name"] == "NVIDIA A100-SXM4-80GB"
    assert len(result["results"]) == 23
    assert (_row(result, 2048)["bw_peak_gbps"], _row(result, 2048)["bw_avg_gbps"]) == (78.28, 67.50)
    assert _row(result, 524288)["bw_avg_gbps"] == 80.98
    assert result["results"][-1]["bw_avg_gbps"] == 80.96
    assert result["ignored_lines"] == [
        {"line": 44, "text": "<-- the peak levels off from 4 KiB", "why": "note"},
        {"line": 52, "text": "===== node-07 : 512 KiB and up =====", "why": "banner"},
    ]


def test_damage_among_foreign_lines_still_names_its_line(fixture_text):
    lines = _gdr_with_foreign_lines(fixture_text)
    # edited: the 2048-byte row (line 43 once the lines are in) loses its last two cells
    assert lines[42].split()[:3] == ["2048", "10000", "78.28"]
    lines[42] = " 2048       10000            78.28"
    with pytest.raises(ParseError) as info:
        parse_perftest_bw("\n".join(lines))
    assert info.value.line == 43


def test_placeholder_cell_is_no_number(fixture_text):
    # edited: the peak of the 4096-byte row (line 43) masked
    text = fixture_text(GDR).replace(" 4096       10000            80.53", " 4096       10000            <masked>")
    with pytest.raises(ParseError) as info:
        parse_perftest_bw(text)
    assert info.value.line == 43
