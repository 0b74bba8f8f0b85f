# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the iperf3 parser against recorded outputs (expected values read by hand)."""

from __future__ import annotations

import json

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.iperf3 import parse_iperf3
from gpufleet.parsers.registry import parse

GIB = 1024 ** 3
MIB = 1024 ** 2
KIB = 1024

JSON_36 = "perf/iperf3-json-3.6-INTERRUPTED-caret-C-prefix-error-field.json.txt"
JSON_39 = "perf/iperf3-json-3.9-MULTIPLE-CONCATENATED-documents.json.txt"
OLD_P4 = "perf/iperf3-old-Bandwidth-header-P4-46gbps-PARTIAL.txt"
GBE = "perf/iperf3-text-tcp-1gbe-baseline-934mbps.txt"
RATELIMITED = "perf/iperf3-text-tcp-tc-ratelimited-128kbit-zero-intervals-kbits.txt"
P3 = "perf/moler-iperf3-text-tcp-P3-SUM-lines.txt"
LOOPBACK = "perf/moler-iperf3-text-tcp-loopback-1stream.txt"
UDP = "perf/moler-iperf3-text-udp-client-kbits.txt"


def _lines(text):
    return text.split("\n")


# ------------------------------------------------------------------ recorded outputs


def test_json_36_interrupted_caret_c(fixture_text):
    result = parse_iperf3(fixture_text(JSON_36))
    assert result["format"] == "json"
    assert result["run_count"] == 1
    assert result["version"] == "iperf 3.6"
    assert result["protocol"] == "TCP"
    assert result["role"] == "client"
    assert result["remote_host"] == "34.83.34.168"
    assert result["remote_port"] == 5500
    assert result["local_host"] == "10.84.1.5"
    assert result["streams"] == 1
    assert result["error"] == "interrupt - the client has terminated"
    assert result["interrupted"] is True
    assert result["sent_bps"] == pytest.approx(160287232.32821622)
    assert result["sent_bytes"] == 210922112
    # sum_received printed 0 bytes / 0 bps: the server's figures never arrived -> None, not 0
    assert result["received_bps"] is None
    assert result["received_bytes"] is None
    assert result["retransmits"] == 0
    assert result["duration_s"] == pytest.approx(10.527207136154175)
    assert len(result["intervals"]) == 11
    assert result["intervals"][0]["bps"] == pytest.approx(21812631.808039602)
    assert result["intervals"][0]["bytes"] == 2727296
    assert result["intervals"][1]["start"] == pytest.approx(1.000262975692749)
    assert result["intervals"][-1]["start"] == pytest.approx(10.091312170028687)
    assert result["intervals"][-1]["bytes"] == 0
    json.dumps(result)


def test_json_39_concatenated_documents(fixture_text):
    result = parse_iperf3(fixture_text(JSON_39))
    assert result["format"] == "json"
    assert result["run_count"] == 2
    assert len(result["runs"]) == 2
    for run in result["runs"]:
        assert run["version"] == "iperf 3.9"
        assert run["remote_host"] == "52.42.211.54"
        assert run["remote_port"] == 5500
        assert run["local_host"] == "172.30.160.211"
        assert run["sent_bps"] == pytest.approx(118490415.09264903)
        assert run["received_bps"] == pytest.approx(118245453.61021909)
        assert run["sent_bytes"] == 148111360
        assert run["received_bytes"] == 149852892
        assert run["duration_s"] == pytest.approx(9.999888)
        assert run["receiver_duration_s"] == pytest.approx(10.138429)
        assert run["error"] is None
        assert run["interrupted"] is False
    # top level = the last document
    assert result["sent_bps"] == pytest.approx(118490415.09264903)
    intervals = result["intervals"]
    assert len(intervals) == 13
    # "omit": 3 -> the first three intervals are flagged omitted, then the clock restarts
    assert [i["omitted"] for i in intervals[:4]] == [True, True, True, False]
    assert intervals[1]["retransmits"] == 16
    assert intervals[1]["bytes"] == 18350080
    assert intervals[3]["start"] == pytest.approx(6.4e-05)
    assert intervals[-1]["bps"] == pytest.approx(125856178.31737463)


def test_old_bandwidth_header_p4_partial(fixture_text):
    result = parse_iperf3(fixture_text(OLD_P4))
    assert result["format"] == "text"
    assert result["protocol"] == "TCP"
    assert result["streams"] == 4
    assert result["sent_bps"] == pytest.approx(46.3e9)
    assert result["received_bps"] == pytest.approx(46.3e9)
    assert result["sent_bytes"] == pytest.approx(53.9 * GIB)
    assert result["retransmits"] == 0
    assert result["duration_s"] == pytest.approx(10.0)
    # PARTIAL: the author trimmed the interval lines
    assert result["intervals"] == []
    # only the command line names the server
    assert result["remote_host"] == "10.0.32.34"
    assert result["error"] is None


def test_text_1gbe_baseline(fixture_text):
    result = parse_iperf3(fixture_text(GBE))
    assert result["protocol"] == "TCP"
    assert result["role"] == "client"
    assert result["remote_host"] == "192.168.0.5"
    assert result["remote_port"] == 5201
    assert result["local_host"] == "192.168.0.4"
    assert result["streams"] == 1
    assert result["sent_bps"] == pytest.approx(934e6)
    assert result["received_bps"] == pytest.approx(928e6)
    assert result["sent_bytes"] == pytest.approx(1.09 * GIB)
    assert result["received_bytes"] == pytest.approx(1.08 * GIB)
    assert result["retransmits"] == 0
    assert result["duration_s"] == pytest.approx(10.0)
    assert result["receiver_duration_s"] == pytest.approx(10.04)
    assert len(result["intervals"]) == 10
    first = result["intervals"][0]
    assert first["start"] == 0.0 and first["end"] == 1.0
    assert first["bps"] == pytest.approx(939e6)
    assert first["bytes"] == 112 * MIB
    assert first["retransmits"] == 0
    assert result["intervals"][4]["bps"] == pytest.approx(928e6)
    assert result["intervals"][9]["bps"] == pytest.approx(941e6)
    assert result["intervals"][9]["end"] == 10.0
    assert result["jitter_ms"] is None


def test_text_ratelimited_zero_intervals_mixed_units(fixture_text):
    result = parse_iperf3(fixture_text(RATELIMITED))
    assert result["sent_bps"] == pytest.approx(438e3)
    assert result["received_bps"] == pytest.approx(311e3)
    assert result["sent_bytes"] == 535 * KIB
    assert result["received_bytes"] == 395 * KIB
    assert result["receiver_duration_s"] == pytest.approx(10.39)
    intervals = result["intervals"]
    assert len(intervals) == 10
    assert intervals[0]["bps"] == pytest.approx(3.33e6)  # Mbits/sec
    assert intervals[0]["bytes"] == 407 * KIB
    assert intervals[1]["bps"] == 0.0  # "0.00 bits/sec"
    assert intervals[1]["bytes"] == 0
    assert intervals[2]["bps"] == pytest.approx(1.04e6)
    assert intervals[2]["bytes"] == 127 * KIB
    assert sum(1 for i in intervals if i["bps"] == 0.0) == 8


def test_moler_p3_sum_lines(fixture_text):
    result = parse_iperf3(fixture_text(P3))
    assert result["streams"] == 3
    assert result["remote_host"] == "127.0.0.1"
    assert result["sent_bps"] == pytest.approx(22.3e9)
    assert result["received_bps"] == pytest.approx(22.2e9)
    assert result["sent_bytes"] == pytest.approx(26.0 * GIB)
    assert result["duration_s"] == pytest.approx(10.0)
    assert result["receiver_duration_s"] == pytest.approx(10.04)
    assert result["retransmits"] == 0
    intervals = result["intervals"]
    # the [SUM] lines, not the per-stream ones
    assert len(intervals) == 10
    assert intervals[0]["bps"] == pytest.approx(25.2e9)
    assert intervals[0]["bytes"] == pytest.approx(2.93 * GIB)
    assert intervals[6]["bps"] == pytest.approx(25.0e9)
    assert intervals[8]["bps"] == pytest.approx(20.8e9)
    assert intervals[9]["start"] == 9.0


def test_moler_loopback_single_stream(fixture_text):
    result = parse_iperf3(fixture_text(LOOPBACK))
    assert result["streams"] == 1
    assert result["sent_bps"] == pytest.approx(25.0e9)
    assert result["received_bps"] == pytest.approx(24.9e9)
    assert result["sent_bytes"] == pytest.approx(29.1 * GIB)
    assert result["receiver_duration_s"] == pytest.approx(10.05)
    assert len(result["intervals"]) == 10
    assert result["intervals"][1]["bps"] == pytest.approx(35.8e9)
    assert result["intervals"][8]["bps"] == pytest.approx(33.4e9)
    assert result["intervals"][0]["bytes"] == pytest.approx(3.16 * GIB)


def test_moler_udp_kbits(fixture_text):
    result = parse_iperf3(fixture_text(UDP))
    assert result["protocol"] == "UDP"
    assert result["remote_port"] == 5017
    assert result["sent_bps"] == pytest.approx(5020e3)
    assert result["received_bps"] == pytest.approx(4984e3)
    assert result["sent_bytes"] == pytest.approx(3.59 * MIB)
    assert result["duration_s"] == pytest.approx(6.0)
    assert result["receiver_duration_s"] == pytest.approx(6.04)
    assert result["jitter_ms"] == pytest.approx(0.046)
    assert result["lost_packets"] == 0
    assert result["total_packets"] == 171
    assert result["lost_percent"] == 0.0
    assert result["retransmits"] is None
    assert [i["packets"] for i in result["intervals"]] == [29, 28, 29, 28, 28, 29]
    assert result["intervals"][0]["bps"] == pytest.approx(5107e3)
    assert result["intervals"][0]["bytes"] == 624 * KIB
    assert result["intervals"][0]["retransmits"] is None


def test_registry_kind(fixture_text):
    assert parse("iperf3", fixture_text(GBE))["sent_bps"] == pytest.approx(934e6)


# ------------------------------------------------------------------ synthetic variants


def test_crlf_copy(fixture_text):
    # synthetic: the 1GbE recording with CRLF line endings
    result = parse_iperf3(fixture_text(GBE).replace("\n", "\r\n"))
    assert result["received_bps"] == pytest.approx(928e6)
    assert len(result["intervals"]) == 10


def test_ansi_escapes(fixture_text):
    # synthetic: bold header rows and coloured summary lines
    text = fixture_text(GBE).replace("[ ID]", "\x1b[1m[ ID]").replace("sender", "sender\x1b[0m")
    text = text.replace("[  5]   0.00-10.04", "\x1b[32m[  5]   0.00-10.04")
    result = parse_iperf3(text)
    assert result["sent_bps"] == pytest.approx(934e6)
    assert result["received_bps"] == pytest.approx(928e6)


def test_srun_rank_prefix(fixture_text):
    # synthetic: every line prefixed by srun -l's "0: "
    text = "\n".join("0: " + line for line in _lines(fixture_text(P3)))
    result = parse_iperf3(text)
    assert result["sent_bps"] == pytest.approx(22.3e9)
    assert result["streams"] == 3


def test_mpirun_tag_output_prefix_json(fixture_text):
    # synthetic: the 3.9 JSON with mpirun --tag-output prefixes
    text = "\n".join("[1,0]<stdout>:" + line for line in _lines(fixture_text(JSON_39)))
    assert parse_iperf3(text)["run_count"] == 2


def test_two_ranks_interleaved_raise(fixture_text):
    # synthetic: rank 0 and rank 1 lines mixed -> line 2 is the first of another rank
    lines = _lines(fixture_text(GBE))
    text = "\n".join(("1: " if i == 1 else "0: ") + line for i, line in enumerate(lines))
    with pytest.raises(ParseError) as info:
        parse_iperf3(text)
    assert info.value.line == 2


def test_text_truncated_in_intervals(fixture_text):
    # synthetic: the 1GbE recording cut after line 10 (an interval line)
    text = "\n".join(_lines(fixture_text(GBE))[:10])
    with pytest.raises(ParseError) as info:
        parse_iperf3(text)
    assert info.value.line == 10


def test_text_truncated_after_sender_line(fixture_text):
    # synthetic: cut after line 17 (sender summary), the receiver line is lost
    text = "\n".join(_lines(fixture_text(GBE))[:17]) + "\n"
    with pytest.raises(ParseError) as info:
        parse_iperf3(text)
    assert info.value.line == 17


def test_text_truncated_in_p3_summary(fixture_text):
    # synthetic: P3 cut after line 63 ([  9] receiver), before the [SUM] summary lines
    lines = _lines(fixture_text(P3))
    assert lines[62].startswith("[  9]") and lines[62].rstrip().endswith("receiver")
    with pytest.raises(ParseError) as info:
        parse_iperf3("\n".join(lines[:63]))
    assert info.value.line == 63


def test_damaged_interval_line(fixture_text):
    # synthetic: line 7's rate "930" replaced by "9x0"
    lines = _lines(fixture_text(GBE))
    lines[6] = lines[6].replace("930 Mbits", "9x0 Mbits")
    with pytest.raises(ParseError) as info:
        parse_iperf3("\n".join(lines))
    assert info.value.line == 7


def test_unknown_rate_unit(fixture_text):
    # synthetic: a rate unit iperf3 never prints on line 17
    text = fixture_text(GBE).replace("934 Mbits/sec", "934 Pbits/sec")
    with pytest.raises(ParseError) as info:
        parse_iperf3(text)
    assert info.value.line == 17


def test_json_truncated(fixture_text):
    # synthetic: the 3.9 file cut after its line 200 (inside the first document)
    text = "\n".join(_lines(fixture_text(JSON_39))[:200])
    with pytest.raises(ParseError) as info:
        parse_iperf3(text)
    assert info.value.line == 200


def test_json_broken_at_line(fixture_text):
    # synthetic: a doubled comma on line 50
    lines = _lines(fixture_text(JSON_39))
    lines[49] = lines[49] + ","
    with pytest.raises(ParseError) as info:
        parse_iperf3("\n".join(lines))
    assert info.value.line == 50


def test_json_garbage_between_documents(fixture_text):
    # synthetic: a stray line inserted as line 431, between the two documents
    lines = _lines(fixture_text(JSON_39))
    lines.insert(430, "Segmentation fault")
    with pytest.raises(ParseError) as info:
        parse_iperf3("\n".join(lines))
    assert info.value.line == 431


def test_json_number_as_string_raises(fixture_text):
    # synthetic: sum_sent bits_per_second turned into a string
    text = fixture_text(JSON_36).replace('"bits_per_second":\t160287232.32821622', '"bits_per_second":\t"fast"')
    with pytest.raises(ParseError):
        parse_iperf3(text)


def test_json_hostile_strings_kept_as_strings(fixture_text):
    # synthetic: markup in the remote host name
    text = fixture_text(JSON_39).replace('"host":\t"52.42.211.54"', '"host":\t"<script>alert(1)</script>"')
    result = parse_iperf3(text)
    assert result["remote_host"] == "<script>alert(1)</script>"


def test_two_text_runs(fixture_text):
    # synthetic: the 1GbE and the rate-limited captures appended to one file
    result = parse_iperf3(fixture_text(GBE) + fixture_text(RATELIMITED))
    assert result["run_count"] == 2
    assert result["runs"][0]["sent_bps"] == pytest.approx(934e6)
    assert result["sent_bps"] == pytest.approx(438e3)


def test_error_only_text():
    # synthetic: what a refused connection prints
    text = "$ iperf3 -c 10.0.0.9\niperf3: error - unable to connect to server: Connection refused\n"
    result = parse_iperf3(text)
    assert result["error"] == "error - unable to connect to server: Connection refused"
    assert result["sent_bps"] is None
    assert result["received_bps"] is None
    assert result["remote_host"] == "10.0.0.9"


def test_interrupted_text(fixture_text):
    # synthetic: 1GbE capture with ^C after the 3rd interval and iperf3's interrupt summary
    lines = _lines(fixture_text(GBE))
    text = "\n".join(lines[:7] + [
        "^C[  5]   3.00-3.52   sec  58.2 MBytes   937 Mbits/sec    0    382 KBytes",
        "- - - - - - - - - - - - - - - - - - - - - - - - -",
        "[ ID] Interval           Transfer     Bitrate         Retr",
        "[  5]   0.00-3.52   sec   392 MBytes   934 Mbits/sec    0             sender",
        "[  5]   0.00-3.52   sec  0.00 Bytes  0.00 bits/sec                  receiver",
        "iperf3: interrupt - the client has terminated",
    ])
    result = parse_iperf3(text)
    assert result["interrupted"] is True
    assert result["error"] == "interrupt - the client has terminated"
    assert result["sent_bps"] == pytest.approx(934e6)
    assert result["received_bps"] is None
    assert len(result["intervals"]) == 4


def test_iperf2_output_raises():
    # synthetic: iperf (2) client banner
    text = "------------------------------------------------------------\nClient connecting to 10.0.0.1, TCP port 5001\n"
    with pytest.raises(ParseError) as info:
        parse_iperf3(text)
    assert info.value.line == 2


def test_empty_and_noise_raise():
    with pytest.raises(ParseError):
        parse_iperf3("")
    with pytest.raises(ParseError):
        parse_iperf3("\n  \n")
    with pytest.raises(ParseError):
        parse_iperf3("hello world\nnothing here\n")


# ------------------------------------------------------------------ foreign lines


def _json_39_with_foreign_lines(fixture_text):
    # edited: a script's banner as line 1 (it must not make the capture read as text), a note between the
    # two documents (line 432) and a rule after the last line (line 863; the recording has 860 lines)
    return _lines(insert_lines(fixture_text(JSON_39), {
        1: "===== client-07 : run 1 =====",
        432: "<-- second run, same server",
        863: "-----",
    }))


def test_json_foreign_lines_are_skipped_and_listed(fixture_text):
    result = parse_iperf3("\n".join(_json_39_with_foreign_lines(fixture_text)))
    assert result["format"] == "json"
    assert result["run_count"] == 2
    for run in result["runs"]:
        assert (run["remote_host"], run["local_host"]) == ("52.42.211.54", "172.30.160.211")
        assert run["sent_bps"] == pytest.approx(118490415.09264903)
        assert run["received_bytes"] == 149852892
    assert len(result["intervals"]) == 13
    assert result["ignored_lines"] == [
        {"line": 1, "text": "===== client-07 : run 1 =====", "why": "banner"},
        {"line": 432, "text": "<-- second run, same server", "why": "note"},
        {"line": 863, "text": "-----", "why": "separator"},
    ]


def test_json_foreign_line_inside_a_document_is_damage(fixture_text):
    lines = _json_39_with_foreign_lines(fixture_text)
    # edited: a banner inside the second document (line 501, between two keys of an interval): that document
    # cannot be read any more
    lines.insert(500, "===== client-07 : run 2 =====")
    with pytest.raises(ParseError) as info:
        parse_iperf3("\n".join(lines))
    assert info.value.line == 501


def test_placeholders_are_no_hosts_or_numbers(fixture_text):
    text = fixture_text(JSON_39)
    # edited: both hosts masked everywhere (lines 5, 7, 17 and their copies in the second document)
    result = parse_iperf3(text.replace("52.42.211.54", "<masked>").replace("172.30.160.211", "<masked>"))
    assert (result["remote_host"], result["local_host"], result["remote_port"]) == (None, None, 5500)
    assert result["sent_bps"] == pytest.approx(118490415.09264903)
    # edited: the sender's byte count in end.sum_sent (line 406) masked as a string: no number, the run is refused
    lines = _lines(text)
    assert lines[405].strip() == '"bytes":\t148111360,'
    lines[405] = lines[405].replace("148111360", '"<masked>"')
    with pytest.raises(ParseError) as info:
        parse_iperf3("\n".join(lines))
    assert "end.sum_sent.bytes is not a number" in info.value.message
    # edited: the text capture's local address masked (line 3)
    result = parse_iperf3(fixture_text(GBE).replace("local 192.168.0.4", "local <masked>"))
    assert (result["local_host"], result["remote_host"]) == (None, "192.168.0.5")
