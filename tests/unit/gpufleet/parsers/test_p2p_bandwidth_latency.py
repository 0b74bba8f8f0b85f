# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the p2pBandwidthLatencyTest parser; expected values read by hand."""

from __future__ import annotations

import json

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.p2p_bandwidth_latency import (
    parse_p2p_bandwidth_latency,
)
from gpufleet.parsers.registry import parse

A100 = "perf/p2pBandwidthLatencyTest-4x-a100-pcie-nvlink-bridge-pairs.txt"
RTX = "perf/rtx5090x2-p2pBandwidthLatencyTest-no-p2p.txt"

ALL_MATRICES = [
    "connectivity_matrix",
    "unidirectional_p2p_disabled_gbs",
    "unidirectional_p2p_enabled_gbs",
    "bidirectional_p2p_disabled_gbs",
    "bidirectional_p2p_enabled_gbs",
    "latency_p2p_disabled_gpu_us",
    "latency_p2p_disabled_cpu_us",
    "latency_p2p_enabled_gpu_us",
    "latency_p2p_enabled_cpu_us",
]


def _lines(text):
    return text.split("\n")


def test_a100_nvlink_bridge_pairs(fixture_text):
    result = parse_p2p_bandwidth_latency(fixture_text(A100))
    assert result["device_count"] == 4
    assert [d["name"] for d in result["devices"]] == ["NVIDIA A100 80GB PCIe"] * 4
    assert [d["pci_domain_id"] for d in result["devices"]] == [1, 2, 3, 4]
    assert result["devices"][2]["pci"] == "0003:00:00"
    assert len(result["peer_access"]) == 12
    assert {"src": 0, "dst": 1, "can_access": True} in result["peer_access"]
    assert {"src": 0, "dst": 2, "can_access": False} in result["peer_access"]
    assert {"src": 3, "dst": 2, "can_access": True} in result["peer_access"]
    assert result["connectivity_matrix"]["0"] == {"0": 1, "1": 1, "2": 0, "3": 0}
    assert result["connectivity_matrix"]["2"]["3"] == 1
    assert result["matrices"] == ALL_MATRICES
    assert result["complete"] is True
    assert result["unidirectional_p2p_disabled_gbs"]["0"]["1"] == 21.51
    assert result["unidirectional_p2p_disabled_gbs"]["3"]["3"] == 1511.12
    assert result["unidirectional_p2p_enabled_gbs"]["0"]["1"] == 275.07
    assert result["unidirectional_p2p_enabled_gbs"]["3"]["2"] == 274.11
    assert result["bidirectional_p2p_disabled_gbs"]["1"]["0"] == 26.00
    assert result["bidirectional_p2p_enabled_gbs"]["0"]["1"] == 516.19
    assert result["bidirectional_p2p_enabled_gbs"]["2"]["3"] == 517.45
    assert result["latency_p2p_disabled_gpu_us"]["0"]["1"] == 21.89
    assert result["latency_p2p_disabled_cpu_us"]["1"]["0"] == 7.10
    assert result["latency_p2p_enabled_gpu_us"]["1"]["0"] == 2.22
    assert result["latency_p2p_enabled_cpu_us"]["2"]["3"] == 1.63
    assert result["latency_p2p_enabled_cpu_us"]["3"]["3"] == 2.07
    json.dumps(result)


def test_rtx5090_no_p2p(fixture_text):
    result = parse_p2p_bandwidth_latency(fixture_text(RTX))
    assert result["device_count"] == 2
    assert result["devices"][0]["name"] == "NVIDIA Graphics Device"
    # pciBusID is printed with %x: 21 and 61 are hexadecimal
    assert result["devices"][0]["pci_bus_id"] == 0x21
    assert result["devices"][1]["pci"] == "0000:61:00"
    assert result["peer_access"] == [{"src": 0, "dst": 1, "can_access": False},
                                     {"src": 1, "dst": 0, "can_access": False}]
    assert result["connectivity_matrix"] == {"0": {"0": 1, "1": 0}, "1": {"0": 0, "1": 1}}
    assert result["unidirectional_p2p_disabled_gbs"]["0"]["1"] == 38.24
    assert result["unidirectional_p2p_enabled_gbs"]["1"]["0"] == 38.66
    assert result["bidirectional_p2p_disabled_gbs"]["0"]["1"] == 43.03
    assert result["bidirectional_p2p_enabled_gbs"]["1"]["1"] == 1539.36
    assert result["latency_p2p_disabled_gpu_us"]["1"]["0"] == 12.75
    assert result["latency_p2p_enabled_gpu_us"]["1"]["0"] == 12.87
    assert result["latency_p2p_enabled_cpu_us"]["0"]["1"] == 5.67
    assert result["complete"] is True


def test_registry_kind(fixture_text):
    assert parse("p2p-bandwidth", fixture_text(RTX))["unidirectional_p2p_disabled_gbs"]["1"]["0"] == 38.92


def test_crlf_ansi_prefix(fixture_text):
    # synthetic: CRLF, mpirun --tag-output prefixes and an ANSI-coloured title
    text = fixture_text(RTX).replace("P2P Connectivity Matrix", "\x1b[33mP2P Connectivity Matrix\x1b[0m")
    text = "\r\n".join("[1,0]<stdout>:" + line for line in _lines(text))
    result = parse_p2p_bandwidth_latency(text)
    assert result["connectivity_matrix"]["1"]["0"] == 0
    assert result["latency_p2p_disabled_cpu_us"]["0"]["1"] == 5.91


def test_older_titles_without_p2p_writes(fixture_text):
    # synthetic: titles as older samples printed them (no "(P2P Writes)")
    text = fixture_text(RTX).replace(" (P2P Writes)", "")
    result = parse_p2p_bandwidth_latency(text)
    assert result["unidirectional_p2p_enabled_gbs"]["0"]["0"] == 1509.66
    assert result["latency_p2p_enabled_gpu_us"]["0"]["1"] == 12.76


def test_truncated_mid_matrix(fixture_text):
    # synthetic: the A100 output cut after line 37 (row 1 of the P2P=Enabled matrix)
    text = "\n".join(_lines(fixture_text(A100))[:37])
    with pytest.raises(ParseError) as info:
        parse_p2p_bandwidth_latency(text)
    assert info.value.line == 37


def test_truncated_mid_row(fixture_text):
    # synthetic: line 33 cut after two cells
    lines = _lines(fixture_text(A100))
    text = "\n".join(lines[:32] + ["     3  21.49  21.6"])
    with pytest.raises(ParseError) as info:
        parse_p2p_bandwidth_latency(text)
    assert info.value.line == 33


def test_latency_gpu_without_cpu(fixture_text):
    # synthetic: the RTX output cut right after the P2P=Disabled GPU latency matrix (line 34)
    lines = _lines(fixture_text(RTX))
    assert lines[33].strip().startswith("1  12.75")
    with pytest.raises(ParseError) as info:
        parse_p2p_bandwidth_latency("\n".join(lines[:34]))
    assert info.value.line == 34


def test_damaged_cell(fixture_text):
    # synthetic: "275.07" on line 36 damaged
    text = fixture_text(A100).replace("275.07", "27x.07")
    with pytest.raises(ParseError) as info:
        parse_p2p_bandwidth_latency(text)
    assert info.value.line == 36


def test_bad_connectivity_cell(fixture_text):
    # synthetic: a "2" in the connectivity matrix (line 25)
    lines = _lines(fixture_text(A100))
    lines[24] = lines[24].replace("0     0", "2     0")
    with pytest.raises(ParseError) as info:
        parse_p2p_bandwidth_latency("\n".join(lines))
    assert info.value.line == 25


def test_device_list_size_mismatch(fixture_text):
    # synthetic: the "Device: 3" line removed, matrices still 4x4 (its title is line 21 of the edited text)
    lines = [line for line in _lines(fixture_text(A100)) if not line.startswith("Device: 3")]
    with pytest.raises(ParseError) as info:
        parse_p2p_bandwidth_latency("\n".join(lines))
    assert info.value.line == 21


def test_cuda_error_instead_of_results():
    # synthetic: the sample dying before printing anything useful
    text = "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\nCuda failure p2pBandwidthLatencyTest.cu:651: 'no CUDA-capable device is detected'\n"
    with pytest.raises(ParseError) as info:
        parse_p2p_bandwidth_latency(text)
    assert "no CUDA-capable device" in str(info.value)


def test_empty_and_noise():
    with pytest.raises(ParseError):
        parse_p2p_bandwidth_latency("")
    with pytest.raises(ParseError):
        parse_p2p_bandwidth_latency("nothing\nhere\n")


def test_foreign_lines_are_listed_and_change_no_value(fixture_text):
    # EDITED: the A100 output (77 lines) behind a prompt, with a note between rows 1 and 2 of the
    # P2P=Disabled unidirectional matrix and a banner after it
    text = fixture_text(A100)
    edited = insert_lines(text, {
        1: "[root@node-07 ~]# ./p2pBandwidthLatencyTest",
        33: "     <-- pairs 0-1 and 2-3 bridged",
        80: "===== node-07 done =====",
    })
    result = parse_p2p_bandwidth_latency(edited)
    assert result.pop("ignored_lines") == [
        {"line": 1, "text": "[root@node-07 ~]# ./p2pBandwidthLatencyTest", "why": "shell prompt"},
        {"line": 33, "text": "<-- pairs 0-1 and 2-3 bridged", "why": "note"},
        {"line": 80, "text": "===== node-07 done =====", "why": "banner"},
    ]
    assert result == parse_p2p_bandwidth_latency(text)
    assert result["unidirectional_p2p_disabled_gbs"]["2"]["1"] == 21.55 and result["complete"] is True


def test_damage_beside_foreign_lines_is_still_refused_at_its_line(fixture_text):
    # EDITED: a prompt first, and row 3 of the P2P=Disabled unidirectional matrix (line 33, 34 with it) cut short
    lines = _lines(fixture_text(A100))
    text = "\n".join(lines[:32] + ["     3  21.49  21.6"] + lines[33:])
    with pytest.raises(ParseError) as info:
        parse_p2p_bandwidth_latency(insert_lines(text, {1: "$ ./p2pBandwidthLatencyTest"}))
    assert info.value.line == 34 and "2 cells for 4 columns" in str(info.value)
